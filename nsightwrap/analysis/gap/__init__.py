"""The gap between a timing and ncu, in measured parts that add up exactly.

For one benchmark, ``total = T - N``: ``T`` the timer's median per call (nsightwrap.bench or a
timing captured from the user's script), ``N`` ncu's per-iteration kernel sum at the clocks ncu
ran at. The parts, in order, each a difference of two measurements of this run and each in its
own module with the measurement it reads and its fix:

- ``clock`` (clock.py): ncu's kernels carried to the clock the timed loop ran at;
- ``cache_state`` (cache_state.py): the same kernels in the user's loop against ncu's
  clean-cache durations, where the two cache states differ by method;
- ``front_end`` (front_end.py): what every window holds before its first op beyond the
  dispatch ncu counts;
- ``launch_overhead`` (launch_overhead.py): time the GPU waited for the host in the window;
- ``gaps`` and ``overlap`` (gaps.py): idle time between ops, time saved by concurrent ops;
- ``non_kernel_work`` (non_kernel_work.py): memcpy and memset, which ncu cannot see;
- ``missed_work`` (missed_work.py): work on another stream that ended after the end event;
- ``ncu_front_end`` (ncu_front_end.py): ncu's own per-kernel front end the window never held;
- every part within its physical bound (limits.py: the L2 and the DRAM bandwidth for the cache
  state; host_bound.py: the window beside the GPU's busy time for the host-side parts, the empty
  window for the front end); what a bound cuts stays in the residual;
- parts of opposite sign that offset each other beyond the gap are named in one note (opposed.py);
- the residual: what no measurement explains, always shown.

The host-side parts read off the nsys timeline are brought to the plain pass by nsys's measured
slow-down of the same windows (slowdown.py); there is no part for the profiler itself. A part
whose measurement is missing is left out (never guessed as 0), and the residual carries its
share. Every value is rounded to 1/8 ns, so ``total_ns == sum(parts) + residual_ns`` holds
exactly in floating point, in any order. verdict.py turns a gap into the verdict and its causes.
docs/reconciliation.md explains each part with a worked example.
"""

from nsightwrap.analysis.gap.cache_state import front_end_offsets
from nsightwrap.analysis.gap.common import PART_ORDER, QUANTUM, q
from nsightwrap.analysis.gap.decomposition import decompose
from nsightwrap.analysis.gap.inputs import GapInputs, cache_states, flush_kind, infer_kind
from nsightwrap.analysis.gap.timeline import Timeline, nsys_timelines
from nsightwrap.analysis.gap.verdict import (
    ERRORS,
    PARTLY_SHARE,
    PHYSICAL,
    PLACE_SPREAD_NS,
    RESIDUAL_BOUND,
    causes_from_gap,
    judge,
    noise_floor_ns,
    residual_allowance,
)

__all__ = [
    "ERRORS", "PARTLY_SHARE", "PART_ORDER", "PHYSICAL", "PLACE_SPREAD_NS", "QUANTUM", "RESIDUAL_BOUND", "GapInputs",
    "Timeline", "cache_states", "causes_from_gap", "decompose", "flush_kind", "front_end_offsets", "infer_kind",
    "nsys_timelines", "judge", "noise_floor_ns", "q", "residual_allowance",
]  # fmt: skip
