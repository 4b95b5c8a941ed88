"""The kernel-only reading: CUPTI kernel durations of a few extra, untimed calls of ``fn``.

CUDA events time a window that holds fn's kernels and the cost of the events and the launch
(an empty window alone measures ~1.3 us, docs/timer.md). CUPTI, which ``torch.profiler`` uses,
reports each kernel's own start and end on the GPU, so the sum over fn's kernels is the time the
kernels ran and nothing else: ``events 3.1 us, kernel 1.2 us, ncu 2.3 us`` on a tiny add, where
ncu's ``gpu__time_duration`` counts some of the launch too.

The calls run after the timed samples, each taken as a sample is (flush, hold, stamp, fn,
synchronize, stamp); the stamp kernels bracket each call in the profile, so fn's kernels are
exactly those between the two stamps of a call, whatever their names and streams. Only one
CUPTI subscriber can run in a process, so this is off under nsys and ncu and whenever another
profiler is active.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from nsightwrap.timer.stamps import STAMP_KERNEL

#: Extra calls profiled per benchmark: the reading is a median over them.
KERNEL_TIME_CALLS = 10


@dataclass(frozen=True)
class DeviceOp:
    """One GPU activity from the profile: name, start and end in us (the profiler's time base)."""

    name: str
    start_us: float
    end_us: float

    @property
    def is_copy(self) -> bool:
        # CUPTI names memcpy and memset activities this way; everything else is a kernel.
        return self.name.startswith(("Memcpy", "Memset", "memcpy", "memset"))


@dataclass(frozen=True)
class KernelCalls:
    """Per profiled call: the sum of its kernels' durations (ns), kernel and copy counts, and the
    sum of its copies' durations (ns: memcpy and memset, which the event window holds and ncu,
    which profiles kernels only, never sees; cuBLAS issues a 4-byte memset before its
    cooperative GEMM kernels, for instance)."""

    kernel_ns: tuple[float, ...]
    kernels: tuple[int, ...]
    copies: tuple[int, ...]
    copy_ns: tuple[float, ...] = ()


def split_calls(ops: Sequence[DeviceOp], calls: int) -> KernelCalls | None:
    """Attribute GPU activities to calls: the kernels between stamp 2j and stamp 2j+1 belong to
    call j. None when the profile does not hold ``2 * calls`` stamps (something else ran)."""
    ordered = sorted(ops, key=lambda o: o.start_us)
    stamps = [o for o in ordered if STAMP_KERNEL in o.name]
    if len(stamps) < 2 * calls:
        return None
    stamps = stamps[-2 * calls :]
    sums, nk, nc, copy_sums = [], [], [], []
    for j in range(calls):
        lo, hi = stamps[2 * j].end_us, stamps[2 * j + 1].start_us
        inside = [o for o in ordered if lo <= o.start_us < hi and STAMP_KERNEL not in o.name]
        kernels = [o for o in inside if not o.is_copy]
        copies = [o for o in inside if o.is_copy]
        sums.append(sum(o.end_us - o.start_us for o in kernels) * 1e3)
        copy_sums.append(sum(o.end_us - o.start_us for o in copies) * 1e3)
        nk.append(len(kernels))
        nc.append(len(copies))
    return KernelCalls(tuple(sums), tuple(nk), tuple(nc), tuple(copy_sums))


def profiler_busy(torch: Any) -> bool:
    """True when a torch profiler (and so a CUPTI subscriber) is already active in this process."""
    try:
        return bool(torch.autograd.profiler._is_profiler_enabled)
    except AttributeError:
        return False


def measure_kernel_time(
    torch: Any, take_call: Callable[[int], None], calls: int = KERNEL_TIME_CALLS
) -> tuple[KernelCalls | None, str | None]:
    """Profile ``calls`` calls (``take_call(j)`` takes the j-th, stamps included) with CUPTI.

    Returns (per-call figures, None) or (None, why not). Never raises: the reading is optional.
    """
    try:
        from torch.autograd import DeviceType
        from torch.profiler import ProfilerActivity, profile
    except Exception as exc:  # an old or CPU-only torch
        return None, f"torch.profiler unavailable ({type(exc).__name__})"
    try:
        with warnings.catch_warnings():
            # torch warns once per process that a profiler cycle clears its events: not news here.
            warnings.simplefilter("ignore", UserWarning)
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for j in range(calls):
                    take_call(j)
                torch.cuda.synchronize()
        ops = [
            DeviceOp(str(ev.name), float(ev.time_range.start), float(ev.time_range.end))
            for ev in prof.events()
            if ev.device_type == DeviceType.CUDA and not getattr(ev, "is_user_annotation", False)
        ]
    except Exception as exc:  # CUPTI refused (another subscriber, no permission): report, go on
        return None, f"torch.profiler failed ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''})"
    got = split_calls(ops, calls)
    if got is None:
        return None, "the profile did not hold the calls' stamp kernels"
    return got, None


