"""The on-GPU SM clock probe: the clock WHILE fn runs, from a ``clock64`` spin beside it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nsightwrap.timer.gpu import Gpu
from nsightwrap.timer.stats import summarize

#: Shortest measured window (ns) the on-GPU clock probe can time to about 1%.
PROBE_MIN_WINDOW_NS = 20_000.0
#: How long (s) the main stream waits before fn so that the probe's spin is resident first.
PROBE_LEAD_S = 2e-6


def probe_clock(
    gpu: Gpu, runner: Callable[[], Any], flush_l2: bool, method: dict[str, Any], window_ns: float, reps: int = 5
) -> float | None:
    """The SM clock WHILE fn runs, measured on the GPU; None where it cannot be measured.

    NVML reports a clock the host sees between readings and misses throttling that lasts only as
    long as the kernel (on an H200 it read 1.98 GHz while a GEMM ran at 1.61 GHz, by ncu). So, in
    a few extra iterations that are not timing samples, a one-thread spin of C SM cycles
    (``torch.cuda._sleep`` counts ``clock64``) runs on a side stream concurrently with fn, and
    C / (its event-timed duration - the empty-window cost) is the clock.

    The spin must be resident before fn's blocks fill the SMs (a kernel that fills every thread
    slot would otherwise delay its start and the clock would read low), so the main stream waits
    a short spin of its own (PROBE_LEAD_S) before fn. A rep counts only if the spin ended before fn did.
    """
    if not gpu.has_sleep or window_ns < PROBE_MIN_WINDOW_NS or not method.get("hold_queue"):
        method["clock_probe"] = "skipped: needs torch.cuda._sleep, a held queue and a window >= 20 us"
        return None
    torch = gpu.torch
    main = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    lead_cycles = int(PROBE_LEAD_S * gpu.max_sm_hz)
    cycles = lead_cycles + int(0.6 * window_ns * 1e-9 * gpu.max_sm_hz)
    empty_ns = gpu.measure_empty_window()
    clocks: list[float] = []
    rejected = 0
    for _ in range(reps):
        ready, ps, pe, s, e = (gpu.event() for _ in range(5))
        torch.cuda._sleep(method["sleep_cycles"])
        if flush_l2:
            gpu.flush()
        ready.record(main)
        side.wait_event(ready)
        with torch.cuda.stream(side):
            ps.record(side)
            torch.cuda._sleep(cycles)
            pe.record(side)
        torch.cuda._sleep(lead_cycles)
        s.record(main)
        runner()
        e.record(main)
        main.wait_stream(side)
        e.synchronize()
        pe.synchronize()
        spin_ns = ps.elapsed_time(pe) * 1e6 - empty_ns
        inside = s.elapsed_time(pe) < s.elapsed_time(e)
        if spin_ns > 0 and inside:
            clocks.append(cycles / (spin_ns * 1e-9))
        else:
            rejected += 1
    torch.cuda.synchronize()
    method["clock_probe"] = {"cycles": cycles, "reps": reps, "rejected": rejected, "clock_hz": clocks}
    if len(clocks) < max(2, reps // 2):
        return None
    return float(summarize(clocks).median)
