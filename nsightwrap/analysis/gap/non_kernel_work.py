"""The ``non_kernel_work`` part: memcpy and memset inside the window, which ncu cannot see
(nsys, else the plain pass's own CUPTI reading of a few calls)."""

from __future__ import annotations

from nsightwrap.analysis.gap.common import part, us
from nsightwrap.analysis.gap.loop import Loop
from nsightwrap.analysis.model import GapPart
from nsightwrap.core.contract import kernel_time_copies

FIX = "ncu profiles kernels only: judge this work by nsys busy time, or keep copies out of the measured range"


def measure(lp: Loop) -> GapPart | None:
    """Copies and memsets per call (None where none ran or nothing measured them)."""
    nsys = lp.nsys
    n_kernels = max(lp.ncu.kernels_per_iteration, default=0)
    if nsys is not None and any(v > 0 for v in nsys.non_kernel_ns):
        nk = lp.nsys_nk or 0.0
        copies = max(set(nsys.memcpy_per_iteration), key=nsys.memcpy_per_iteration.count)
        sets = max(set(nsys.memset_per_iteration), key=nsys.memset_per_iteration.count)
        ev: dict[str, object] = {"non_kernel_ns": nk, "memcpy_per_iteration": copies, "memset_per_iteration": sets,
              "ncu_kernels_per_iteration": n_kernels}  # fmt: skip
        msg = f"{copies} memcpy and {sets} memset per iteration took {us(nk)}, which ncu cannot see" + (
            " (ncu saw no kernel at all)" if not lp.has_kernels else ""
        )
        return part("non_kernel_work", nk, ev, msg, FIX)
    if nsys is None and (cupti := kernel_time_copies(lp.method)) is not None and cupti[1]:
        # No nsys pass: the timer's own CUPTI reading of a few calls counted the copies apart from
        # the kernels (cuBLAS's 4-byte memset before a cooperative GEMM kernel, for instance).
        n_copies, copy_ns = cupti[0], float(cupti[1])
        ev = {"non_kernel_ns": copy_ns, "copies_per_call": n_copies, "measured": "plain pass (CUPTI)",
              "ncu_kernels_per_iteration": n_kernels}  # fmt: skip
        msg = f"{n_copies:g} memcpy/memset per call took {us(copy_ns)} in the plain pass (CUPTI), which ncu cannot see"
        return part("non_kernel_work", copy_ns, ev, msg, FIX)
    return None
