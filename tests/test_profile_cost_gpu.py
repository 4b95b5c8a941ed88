"""What a profile costs, on a GPU: the nsys pass of the unmodified GEMM sweep examples/gemm_sweep_plain.py
(16 do_bench calls of rep=400 ms, 4 Timer.blocked_autorange of 1 s) runs its loops capped at
100 ms (--nsys-loop-ms), costs at most 2x the plain pass (4.1x uncapped, 2026-12-04), and keeps
every benchmark. Needs nsys, torch with CUDA and triton."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "gemm_sweep_plain.py"


@pytest.mark.gpu
def test_nsys_pass_of_the_gemm_sweep_runs_capped_loops(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NSIGHTWRAP_")}
    run = tmp_path / "run"
    cp = subprocess.run(
        [sys.executable, "-m", "nsightwrap", "profile", "-o", str(run), "--passes", "plain,nsys", str(EXAMPLE)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env={**env, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)},
    )  # fmt: skip
    assert cp.returncode == 0, cp.stderr[-3000:]
    m = json.loads((run / "manifest.json").read_text())
    walls = {p["name"]: sum(c["wall_s"] for c in p["commands"]) for p in m["passes"]}
    assert walls["plain"] >= 8, f"the example ran {walls['plain']:.1f} s plain: too short to measure the ratio"
    assert walls["nsys"] <= 2 * walls["plain"], walls
    plain = {b["name"] for f in (run / "plain").glob("timer-*.json") for b in json.loads(f.read_text())["benchmarks"]}
    under = {b["name"]: b for f in (run / "nsys").glob("timer-*.json") for b in json.loads(f.read_text())["benchmarks"]}
    assert len(plain) == 20 and set(under) == plain  # 16 do_bench shapes + 4 Timer timings, in both passes
    for name, b in under.items():
        want = {"rep": [400.0, 100.0]} if "do_bench" in name else {"min_run_time": [1000.0, 100.0]}
        assert b["method"]["nsys_loop_ms"] == want, name
