"""Energy, power and the thermal guard on a real GPU (NVML through nsightwrap.bench)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = textwrap.dedent(
    """
    import json, os, sys, torch
    import nsightwrap as nw
    n = 4096
    x = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    kw = json.loads(os.environ["BENCH_KW"])
    r = nw.bench(lambda: torch.mm(x, y), name="mm", flops=2 * n**3, budget_s=0.5, **kw)
    print("RESULT " + json.dumps(r.to_dict()))
    print(r)
    """
)


def _bench(tmp_path: Path, **kw: object) -> dict:
    script = tmp_path / "power_script.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NSIGHTWRAP_")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["BENCH_KW"] = json.dumps(kw)
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT ") :])


def test_energy_per_call_of_a_gemm(tmp_path: Path) -> None:
    r = _bench(tmp_path, energy_s=1.0)
    p = r["power"]
    assert p["source"] == "nvml" and p["energy_source"] == "counter"
    assert p["counter_update_s"] == pytest.approx(0.1, abs=0.03)  # an H200's counter
    st = p["steady"]
    # About 8 whole 100 ms steps fit in a 1 s window (one period of ramp, one of lag).
    assert 5 <= len(st["energy_samples_j"]) <= 10 and st["covered_s"] >= 0.5
    # A 4096^3 bf16 GEMM back to back keeps an H200 near its 700 W limit.
    assert 300 < st["mean_w"] < 800, st
    assert st["energy_per_call_j"] == pytest.approx(st["mean_w"] * st["gpu_ns_per_call"] * 1e-9, rel=1e-9)
    # Two NVML sources agree: the energy counter and the instantaneous power readings.
    assert st["sampled_mean_w"] == pytest.approx(st["mean_w"], rel=0.1)
    # pJ/FLOP of a dense bf16 GEMM on Hopper: about 1.
    assert 0.5 < st["energy_per_call_j"] / (2 * 4096**3) * 1e12 < 2.5
    assert 15 < st["peak_temp_c"] < 100
    t = p["timed"]
    assert t["duration_s"] > 0 and t["samples"] == r["n"] + len(r.get("rejected_ns") or [])
    assert t["peak_w"] is not None and t["peak_w"] > 50


def test_energy_window_off(tmp_path: Path) -> None:
    r = _bench(tmp_path, energy_s=0)
    assert "steady" not in r["power"] and r["power"]["timed"]["peak_w"] > 0


def test_thermal_guard_passes_and_times_out(tmp_path: Path) -> None:
    ok = _bench(tmp_path, energy_s=0, thermal_margin_c=0)
    g = ok["method"]["thermal_guard"]
    assert g["timed_out"] is False and g["waited_s"] < 1.0 and g["slowdown_c"] > 60
    # No GPU runs 150 C below its slowdown temperature: the guard waits its timeout and says so.
    hot = _bench(tmp_path, energy_s=0, thermal_margin_c=150, thermal_timeout_s=1.0)
    g = hot["method"]["thermal_guard"]
    assert g["timed_out"] is True and g["waited_s"] >= 1.0 and g["end_c"] > g["target_c"]
