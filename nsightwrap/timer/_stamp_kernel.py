"""The Triton kernel behind ``nsightwrap.timer.stamps`` (imported only when a GPU measurement runs).

Kept in its own module because ``@triton.jit`` reads the kernel's source and globals at import
time: importing this module imports Triton, which the rest of the timer never needs to import.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit(do_not_specialize=["slot"])
def nsightwrap_stamp(out_ptr, slot):  # type: ignore[no-untyped-def]
    """Write (%globaltimer, %clock64) of SM 0 to ``out_ptr[2 * slot : 2 * slot + 2]``.

    Launched with one program per SM so that one lands on SM 0 (as nvbench's timestamps kernel
    does): ``%clock64`` is a per-SM counter, and two readings are comparable only when they come
    from the same SM. ``slot`` is not specialized, so one compiled kernel serves every slot.
    """
    smid = tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r", [], dtype=tl.int32, is_pure=False, pack=1)
    if smid == 0:
        gt = tl.inline_asm_elementwise(
            "mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False, pack=1
        )
        ck = tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l", [], dtype=tl.int64, is_pure=False, pack=1)
        tl.store(out_ptr + slot * 2, gt)
        tl.store(out_ptr + slot * 2 + 1, ck)
