"""Shared test set-up: fixture paths, the ``slow`` marker from tests/slow_tests.txt, and GPU tests
skipped where no GPU is present."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

# The tests read the run directories in fixtures/ in place: no test may store an analysis there
# (analysis/store.py), module- and session-scoped fixtures included, and the subprocesses the
# tests start inherit this. A test of the store turns it on (monkeypatch) for its own copy of a run.
os.environ["NSIGHTWRAP_ANALYSIS_STORE"] = "off"

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
REF = FIXTURES / "reference" / "h200-workload"


def _has_gpu() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        return subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


SLOW_LIST = Path(__file__).resolve().parent / "slow_tests.txt"


def slow_tests() -> set[str]:
    """The test functions tests/slow_tests.txt names (``tests/test_x.py::test_name``)."""
    lines = (ln.split("#", 1)[0].strip() for ln in SLOW_LIST.read_text().splitlines())
    return {ln for ln in lines if ln}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # `make test` runs -m "not gpu and not slow", `make test-slow` the rest: CI runs both.
    slow = slow_tests()
    for item in items:
        if item.nodeid.split("[", 1)[0] in slow:
            item.add_marker(pytest.mark.slow)
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="no NVIDIA GPU on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def ref_dir() -> Path:
    return REF
