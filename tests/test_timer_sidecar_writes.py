"""When the timer writes its sidecar in the plain pass: the first benchmark at once, later ones
when the spacing says so (the file is rewritten whole and grows), and everything at exit, also
when the script raises. Real subprocesses; the results are made without a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nsightwrap.core import contract

SCRIPT = """
import json, sys
from types import SimpleNamespace
from nsightwrap.timer import loop
from nsightwrap.timer.result import BenchResult
from nsightwrap.timer.sidecar import sidecar_path
gpu = SimpleNamespace(device={"name": "stand-in", "index": 0, "sm_count": 1, "l2_bytes": 1, "uuid": None},
                      torch=SimpleNamespace(__version__="0"))
for i in range(50):
    loop._register(BenchResult.from_samples(f"b{i}", [1000.0 + j for j in range(1000)]), gpu)
path = sidecar_path(sys.argv[1])
print("written before exit:", len(json.loads(path.read_text())["benchmarks"]))
if sys.argv[2] == "raise":
    raise RuntimeError("the script fails here")
"""


@pytest.mark.parametrize("end", ["exit", "raise"])
def test_sidecar_is_spaced_and_complete_at_exit(tmp_path: Path, end: str) -> None:
    env = {**os.environ, contract.ENV_PASS: contract.PASS_PLAIN, contract.ENV_RUN_DIR: str(tmp_path)}
    p = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), end], capture_output=True, text=True,
                       env=env, timeout=60)  # fmt: skip
    assert p.returncode == (1 if end == "raise" else 0), p.stderr
    before = int(p.stdout.split("written before exit:")[1])
    assert 1 <= before < 50  # not rewritten after each of the 50
    (f,) = (tmp_path / contract.PASS_PLAIN).glob("timer-*.json")
    assert [b["name"] for b in json.loads(f.read_text())["benchmarks"]] == [f"b{i}" for i in range(50)]
    if end == "raise":
        assert p.stderr.rstrip().endswith("RuntimeError: the script fails here") and "nsightwrap" not in p.stderr
