"""NVML's power readings and energy counter on this GPU, raw: the evidence behind docs/power.md.

    python -m benchmarks.power_trace OUT.json

Runs a bf16 GEMM back to back for ~1.5 s (idle 0.3 s before and after) while nsightwrap's NVML
sampler reads clock, power, temperature and the total energy counter; then reads the energy
counter alone as fast as it can for 0.5 s under load (its step and update interval) and times
each NVML call. Writes the raw trace and those figures to OUT.json (the fixture
fixtures/power/h200-trace.json) and prints the key figures.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import pynvml
import torch

from nsightwrap.timer.energy import window_stats
from nsightwrap.timer.gpu import gpu_state
from nsightwrap.timer.nvml import NvmlSampler
from nsightwrap.timer.traces import counter_resolution, energy_between


def _cost_us(fn, n: int = 200) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t0) / n * 1e6


def main(out: str) -> None:
    gpu = gpu_state()
    h = gpu.nvml
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    y = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    marks = {}
    with NvmlSampler(h) as s:
        time.sleep(0.3)
        marks["load_start"] = time.perf_counter()
        ev0, ev1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ev0.record()
        calls = 0
        while time.perf_counter() - marks["load_start"] < 1.5:
            for _ in range(50):
                torch.mm(x, y)
            calls += 50
            torch.cuda.synchronize()
        ev1.record()
        torch.cuda.synchronize()
        marks["load_end"] = time.perf_counter()
        time.sleep(0.3)
    p, c = s.power_trace(), s.trace()
    # Does the power thread (energy reads take milliseconds) slow the clock thread? The clock
    # readings per second under load, with energy read every 20 ms and (almost) never.
    rates = {}
    for label, every in (("energy_every_20ms", 0.02), ("energy_never", 1e9)):
        with NvmlSampler(h, energy_interval_s=every) as q:
            t_a = time.perf_counter()
            while time.perf_counter() - t_a < 0.5:
                for _ in range(20):
                    torch.mm(x, y)
                torch.cuda.synchronize()
        rates[label] = len(q.trace()) / 0.5
    load = window_stats(p, marks["load_start"], marks["load_end"])
    step, every = counter_resolution(p)

    # The counter alone, as fast as NVML answers, under load.
    t, e = [], []
    t_end = time.perf_counter() + 0.5
    while time.perf_counter() < t_end:
        torch.mm(x, y)
        t.append(time.perf_counter())
        e.append(pynvml.nvmlDeviceGetTotalEnergyConsumption(h))
    torch.cuda.synchronize()
    t_arr, e_arr = np.array(t), np.array(e, dtype=float)
    ch = np.concatenate([[True], np.diff(e_arr) != 0])
    fast = {"reads": int(t_arr.size), "changes": int(ch.sum()),
            "median_update_s": float(np.median(np.diff(t_arr[ch]))) if ch.sum() > 2 else None,
            "median_step_mj": float(np.median(np.diff(e_arr[ch]))) if ch.sum() > 2 else None}
    field = getattr(pynvml, "NVML_FI_DEV_POWER_INSTANT", 186)
    costs = {
        "clock_us": _cost_us(lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)),
        "power_instant_us": _cost_us(lambda: pynvml.nvmlDeviceGetFieldValues(h, [field])),
        "power_usage_us": _cost_us(lambda: pynvml.nvmlDeviceGetPowerUsage(h)),
        "energy_us": _cost_us(lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(h)),
        "temperature_us": _cost_us(lambda: pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)),
    }
    limits = {}
    for name, fn in (
        ("slowdown_c", lambda: pynvml.nvmlDeviceGetTemperatureThreshold(h, pynvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN)),
        ("shutdown_c", lambda: pynvml.nvmlDeviceGetTemperatureThreshold(h, pynvml.NVML_TEMPERATURE_THRESHOLD_SHUTDOWN)),
        ("margin_c", lambda: getattr(pynvml.nvmlDeviceGetMarginTemperature(h), "margin", None)),
        ("temp_c", lambda: pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)),
        ("power_limit_w", lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1e3),
    ):
        try:
            limits[name] = fn()
        except Exception as exc:  # record what the GPU does not support
            limits[name] = f"error: {exc}"
    doc = {
        "what": "nsightwrap NvmlSampler trace around a back-to-back bf16 4096^3 GEMM (benchmarks/power_trace.py)",
        "gpu": gpu.device["name"],
        "nvidia_ml_py": getattr(pynvml, "__version__", None),
        "torch": torch.__version__,
        "power_kind": p.power_kind,
        "marks": marks,
        "gemm_calls": calls,
        "gemm_gpu_ms": ev0.elapsed_time(ev1),
        "load": load,
        "counter_step_j": step,
        "counter_update_s": every,
        "fast_counter": fast,
        "nvml_call_us": costs,
        "limits": limits,
        "clock_readings": len(c),
        "clock_readings_per_s": rates,
        "trace": {"time_s": p.time_s.tolist(), "power_w": p.power_w.tolist(), "temp_c": p.temp_c.tolist(),
                  "energy_j": p.energy_j.tolist()},
        "energy_load_j": energy_between(p, marks["load_start"], marks["load_end"]),
    }
    with open(out, "w") as f:
        json.dump(doc, f, allow_nan=True)
    print(json.dumps({k: v for k, v in doc.items() if k != "trace"}, indent=1, default=str))


if __name__ == "__main__":
    main(sys.argv[1])
