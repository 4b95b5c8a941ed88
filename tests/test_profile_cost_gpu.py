"""Issue 29 on a GPU: a whole ``nsightwrap profile`` (all passes, analysis included) of the
unmodified GEMM sweep examples/gemm_sweep_plain.py takes <= 3x its plain run, and keeps its
benchmarks. Needs ncu, nsys, torch with CUDA and triton."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "gemm_sweep_plain.py"


@pytest.mark.gpu
def test_profile_of_the_gemm_sweep_within_3x_plain(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NSIGHTWRAP_")}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, str(EXAMPLE)], check=True, capture_output=True, env=env, timeout=300)
    plain = time.perf_counter() - t0
    assert plain >= 5, f"the example ran {plain:.1f} s plain: too short to measure the ratio"
    run = tmp_path / "run"
    t0 = time.perf_counter()
    cp = subprocess.run(
        [sys.executable, "-m", "nsightwrap", "profile", "-o", str(run), str(EXAMPLE)],
        capture_output=True, text=True, timeout=900, cwd=tmp_path, env={**env, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)},
    )  # fmt: skip
    whole = time.perf_counter() - t0
    assert cp.returncode == 0, cp.stderr[-3000:]
    m = json.loads((run / "manifest.json").read_text())
    walls = {p["name"]: round(sum(c["wall_s"] for c in p["commands"]), 1) for p in m["passes"]}
    assert whole <= 3 * plain, f"profile {whole:.1f} s > 3 x plain {plain:.1f} s; passes {walls}"
    sidecars = list((run / "plain").glob("timer-*.json"))
    assert sidecars
    names = {e.get("name") for f in sidecars for e in json.loads(f.read_text()).get("benchmarks", [])}
    assert len(names) >= 20, names  # 16 do_bench shapes + 4 Timer timings
