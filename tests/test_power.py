"""Energy, power and temperature on the CPU: NVML's counter model on a real H200 trace, the
power record, the thermal guard's wait, the result's round trip and text.

fixtures/power/h200-trace.json is nsightwrap's NVML sampler around 1.5 s of back-to-back bf16
4096^3 GEMMs on an H200 (benchmarks/power_trace.py, 2026-12-01): power, temperature and the
total energy counter, raw.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from nsightwrap.timer.energy import default_energy_s, power_record, window_stats
from nsightwrap.timer.result import BenchResult
from nsightwrap.timer.thermal import thermal_guard, wait_until_cool
from nsightwrap.timer.traces import ClockTrace, PowerTrace, counter_power, counter_resolution, energy_between

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "fixtures" / "power" / "h200-trace.json"
#: The same, with the sampler's own cadence (energy every 20 ms, on the power thread).
SAMPLER_TRACE = ROOT / "fixtures" / "power" / "h200-trace-sampler.json"


@pytest.fixture(scope="module")
def h200() -> dict:
    return json.loads(TRACE.read_text())


def _trace(doc: dict) -> PowerTrace:
    t = doc["trace"]
    return PowerTrace(*(np.asarray(t[k], dtype=float) for k in ("time_s", "power_w", "temp_c", "energy_j")))


def test_the_h200_counter_steps_every_100_ms(h200: dict) -> None:
    step, every = counter_resolution(_trace(h200))
    assert every == pytest.approx(0.100, abs=0.005)
    assert 60 < step < 80  # J per step under the GEMM (~700 W x 0.1 s)


def test_counter_power_over_the_load(h200: dict) -> None:
    p = _trace(h200)
    t0, t1 = h200["marks"]["load_start"], h200["marks"]["load_end"]
    cp = counter_power(p, t0, t1)
    assert cp is not None
    # Whole steps inside the 1.50 s load only: the idle steps before and the partial one after
    # are left out (one period of ramp at the start, the counter's lag at the end).
    assert len(cp.step_w) == 14 and cp.covered_s == pytest.approx(1.40, abs=0.01)
    assert all(500 < w < 850 for w in cp.step_w)
    assert cp.mean_w == pytest.approx(705.4, abs=0.5)
    # Energy = mean power x time, exactly: the steps are the counter's own energies.
    e = p.energy_j[np.isfinite(p.energy_j)]
    assert cp.mean_w * cp.covered_s == pytest.approx(sum(cp.step_w) * cp.period_s, rel=1e-12)
    assert sum(cp.step_w) * cp.period_s < e.max() - e.min()


def test_two_nvml_sources_agree_within_the_counters_resolution(h200: dict) -> None:
    """The energy counter and the instantaneous power field, over the same stretch of load."""
    p = _trace(h200)
    t0, t1 = h200["marks"]["load_start"], h200["marks"]["load_end"]
    w = window_stats(p, t0, t1)
    step, _ = counter_resolution(p)
    # Counter mean power vs the mean of the power readings (both ~100 ms granular): within 5%.
    assert w["sampled_mean_w"] == pytest.approx(w["mean_w"], rel=0.05)
    # And energy over the window, interpolated one lag late, against mean power x time: within
    # one step of the counter (~70 J at this load).
    e = energy_between(p, t0, t1, lag_s=0.1)
    assert e is not None and abs(e - w["mean_w"] * (t1 - t0)) < step
    assert w["peak_temp_c"] == 62.0 and w["start_temp_c"] == 39.0 and w["peak_w"] > w["mean_w"]


def test_the_samplers_own_cadence_gives_the_same_power() -> None:
    doc = json.loads(SAMPLER_TRACE.read_text())
    p = _trace(doc)
    reads = p.time_s[np.isfinite(p.energy_j)]
    assert np.median(np.diff(reads)) == pytest.approx(0.02, abs=0.005)  # energy read every 20 ms
    t0, t1 = doc["marks"]["load_start"], doc["marks"]["load_end"]
    w = window_stats(p, t0, t1)
    assert 12 <= len(w["step_w"]) <= 15 and w["mean_w"] == pytest.approx(666.9, abs=0.5)
    assert w["sampled_mean_w"] == pytest.approx(w["mean_w"], rel=0.05)
    # The power thread must not starve the clock thread: readings per second under load.
    rates = doc["clock_readings_per_s"]
    assert rates["energy_every_20ms"] > 0.7 * rates["energy_never"]


def test_a_window_shorter_than_a_step_has_no_counter_power(h200: dict) -> None:
    p = _trace(h200)
    t0 = h200["marks"]["load_start"] + 0.5
    one = counter_power(p, t0, t0 + 0.15)  # room for one whole 100 ms step
    assert one is not None and len(one.step_w) == 1
    assert counter_power(p, t0, t0 + 0.08) is None
    rec = power_record(
        ClockTrace(np.array([t0]), np.array([1.9e9]), np.array([0])),
        p, [(t0, t0 + 0.05)], {"steady": {"bounds_s": [t0, t0 + 0.08], "calls": 360, "gpu_ns_per_call": 221_000.0}},
    )  # fmt: skip
    assert rec is not None
    assert rec["steady"]["energy_per_call_j"] is None and "make energy_s longer" in rec["steady"]["why_no_energy"]
    assert rec["timed"]["energy_j"] is None and rec["timed"]["peak_w"] is not None


def test_power_record_of_the_gemm(h200: dict) -> None:
    """The load as an energy window: 6800 GEMMs in 1503 ms of GPU time."""
    p = _trace(h200)
    t0, t1 = h200["marks"]["load_start"], h200["marks"]["load_end"]
    ns = h200["gemm_gpu_ms"] * 1e6 / h200["gemm_calls"]
    clock = ClockTrace(np.linspace(t0, t1, 50), np.full(50, 1.6e9), np.r_[np.zeros(49), [0x4]].astype(np.int64))
    rec = power_record(clock, p, [], {"steady": {"bounds_s": [t0, t1], "calls": h200["gemm_calls"], "gpu_ns_per_call": ns}})
    assert rec is not None and rec["energy_source"] == "counter" and rec["power_kind"] == "instant"
    st = rec["steady"]
    assert st["energy_per_call_j"] == pytest.approx(705.4 * ns * 1e-9, rel=1e-3)
    assert st["energy_per_call_j"] == pytest.approx(0.156, abs=0.002)
    assert len(st["energy_samples_j"]) == 14
    assert np.median(st["energy_samples_j"]) == pytest.approx(st["energy_per_call_j"], rel=0.05)
    assert rec["throttle_reasons"] == ["sw_power_cap"]
    assert "timed" not in rec and rec["start_local"] < rec["end_local"]
    # 2 * 4096^3 FLOP per GEMM: about 1.1 pJ/FLOP on an H200 near its 700 W limit.
    assert st["energy_per_call_j"] / (2 * 4096**3) * 1e12 == pytest.approx(1.14, abs=0.03)


def test_no_power_at_all_is_no_record() -> None:
    empty = PowerTrace(np.array([]), np.array([]), np.array([]), np.array([]), "none")
    clock = ClockTrace(np.array([]), np.array([]), np.array([], dtype=np.int64))
    assert power_record(clock, empty, [(0.0, 1.0)], {}) is None


def test_energy_window_length_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NSIGHTWRAP_ENERGY_S", raising=False)
    assert default_energy_s() == 1.0
    monkeypatch.setenv("NSIGHTWRAP_ENERGY_S", "0")
    assert default_energy_s() == 0.0
    monkeypatch.setenv("NSIGHTWRAP_ENERGY_S", "2.5")
    assert default_energy_s() == 2.5
    monkeypatch.setenv("NSIGHTWRAP_ENERGY_S", "lots")
    assert default_energy_s() == 1.0


# ------------------------------------------------------------------------ thermal guard


class _Cooling:
    """A GPU cooling by 2 C a poll, on a clock that moves 0.5 s a poll (no real waiting)."""

    def __init__(self, start: float, step: float = 2.0) -> None:
        self.temp, self.step, self.now = start, step, 0.0

    def read(self) -> float:
        return self.temp

    def sleep(self, s: float) -> None:
        self.now += s
        self.temp -= self.step

    def clock(self) -> float:
        return self.now


def test_guard_waits_until_the_margin_is_reached() -> None:
    g = _Cooling(80.0)
    rec = wait_until_cool(g.read, 89.0, 15.0, 60.0, sleep=g.sleep, clock=g.clock)
    # 89 - 15 = 74 C: 80 -> 78 -> 76 -> 74, three polls of 0.5 s.
    assert rec == {"margin_c": 15.0, "slowdown_c": 89.0, "source": "slowdown_threshold", "target_c": 74.0,
                   "start_c": 80.0, "end_c": 74.0, "waited_s": 1.5, "timed_out": False}  # fmt: skip


def test_guard_gives_up_at_its_timeout() -> None:
    g = _Cooling(88.0, step=0.5)
    rec = wait_until_cool(g.read, 89.0, 30.0, 2.0, sleep=g.sleep, clock=g.clock)
    assert rec["timed_out"] is True and rec["waited_s"] == 2.0 and rec["end_c"] == 86.0


def test_guard_that_is_already_cool_does_not_wait() -> None:
    g = _Cooling(40.0)
    rec = wait_until_cool(g.read, 89.0, 10.0, 60.0, sleep=g.sleep, clock=g.clock)
    assert rec["waited_s"] == 0.0 and rec["timed_out"] is False and rec["end_c"] == 40.0


def test_guard_without_a_slowdown_temperature_or_nvml() -> None:
    rec = wait_until_cool(lambda: 50.0, None, 10.0, 60.0, source="none")
    assert rec["skipped"] == "the GPU reports no slowdown temperature" and rec["waited_s"] == 0.0
    assert thermal_guard(None, 10.0, 60.0) == {"margin_c": 10.0, "waited_s": 0.0, "timed_out": False,
                                               "skipped": "NVML is not available"}  # fmt: skip
    assert thermal_guard(None, None, 60.0) is None


def test_guard_refuses_a_negative_margin() -> None:
    from nsightwrap.core.errors import UsageError

    with pytest.raises(UsageError, match="must be 0 or more"):
        thermal_guard(None, -5.0, 60.0)


# ------------------------------------------------------------------------ the result


def test_result_keeps_power_and_says_it(h200: dict) -> None:
    p = _trace(h200)
    t0, t1 = h200["marks"]["load_start"], h200["marks"]["load_end"]
    ns = h200["gemm_gpu_ms"] * 1e6 / h200["gemm_calls"]
    clock = ClockTrace(np.array([t0]), np.array([1.6e9]), np.array([0]))
    power = power_record(clock, p, [(t0, t0 + 0.6)], {"steady": {"bounds_s": [t0, t1], "calls": 6800, "gpu_ns_per_call": ns}})
    guard = {"margin_c": 10.0, "slowdown_c": 89.0, "waited_s": 3.5, "timed_out": False}
    r = BenchResult.from_samples("mm", [ns] * 5, method={"flush_l2": True, "thermal_guard": guard}, power=power)
    back = BenchResult.from_dict(json.loads(json.dumps(r.to_dict(), allow_nan=False)))
    assert back.power == json.loads(json.dumps(power))
    text = str(r)
    assert "156 mJ/call at 705 W, peak 62 C" in text and "cooled 3.5 s" in text
    assert math.isfinite(back.power["steady"]["mean_w"])


def test_guard_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """NSIGHTWRAP_THERMAL_MARGIN_C turns the guard on for every benchmark of a run
    (`NSIGHTWRAP_THERMAL_MARGIN_C=10 nsightwrap profile bench.py`); bench's own argument wins."""
    from nsightwrap.core.errors import UsageError

    monkeypatch.delenv("NSIGHTWRAP_THERMAL_MARGIN_C", raising=False)
    assert thermal_guard(None, None, None) is None
    monkeypatch.setenv("NSIGHTWRAP_THERMAL_MARGIN_C", "12")
    assert thermal_guard(None, None, None) == {"margin_c": 12.0, "waited_s": 0.0, "timed_out": False,
                                               "skipped": "NVML is not available"}  # fmt: skip
    assert thermal_guard(None, 5.0, None)["margin_c"] == 5.0
    monkeypatch.setenv("NSIGHTWRAP_THERMAL_MARGIN_C", "warm")
    with pytest.raises(UsageError, match="NSIGHTWRAP_THERMAL_MARGIN_C='warm' is not a number"):
        thermal_guard(None, None, None)
