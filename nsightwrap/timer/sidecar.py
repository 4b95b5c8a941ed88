"""Writing the timer sidecar: ``<run dir>/plain/timer-<pid>.json`` (read by ``parsers.sidecar``)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nsightwrap.core import contract
from nsightwrap.core.jsonfile import write_json_atomic
from nsightwrap.timer.result import BenchResult


def sidecar_path(run_dir: str | os.PathLike[str], pid: int | None = None) -> Path:
    """``<run dir>/plain/timer-<pid>.json``."""
    return Path(run_dir) / contract.PASS_PLAIN / f"timer-{os.getpid() if pid is None else pid}.json"


def write_sidecar(
    path: str | os.PathLike[str],
    results: Sequence[BenchResult],
    device: Mapping[str, Any],
    torch_version: str | None,
) -> None:
    """Write the sidecar atomically (temporary file in the same folder, then ``os.replace``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {
        "format": contract.SIDECAR_FORMAT,
        "version": contract.SIDECAR_VERSION,
        "pid": os.getpid(),
        "device": dict(device),
        "torch_version": torch_version,
        "benchmarks": [r.to_dict() for r in results],
    }
    # NaN is refused: a timing that is not a number is a bug, and strict JSON readers reject it.
    write_json_atomic(path, doc, indent=1, allow_nan=False)
