"""Triton kernels of the microbenchmarks (imported only where triton is installed).

Each kernel does one thing the ceiling needs and nothing else, so its bytes or FLOPs are known
exactly: stream-read, stream-write and copy of fp32 (HBM bandwidth), a re-read of a working set
that fits in L2 with L1 bypassed (``.cg`` loads), a one-warp dependent load chain (latency), and
independent FMA chains in registers (fp32 FMA throughput).
"""

from __future__ import annotations

import triton
import triton.language as tl

#: fp32 elements per program of the streaming kernels: 32 per thread at 8 warps, enough loads in
#: flight per SM to saturate HBM.
STREAM_BLOCK = 8192
STREAM_WARPS = 8


@triton.jit
def read_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Sum one block per program (one fp32 written per program: negligible traffic)."""
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + pid, tl.sum(x, axis=0))


@triton.jit
def write_kernel(y_ptr, n, value, BLOCK: tl.constexpr):
    """Fill: every element written once, nothing read."""
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32) + value, mask=offs < n)


@triton.jit
def copy_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """y = x: every element read once and written once."""
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def l2_read_kernel(x_ptr, out_ptr, slice_elems, nprog, REPS: tl.constexpr, BLOCK: tl.constexpr):
    """Each program reads REPS slices of the working set, a different one each time (so no load
    can be hoisted out of the loop), through L2 only (``.cg``: L1 bypassed)."""
    pid = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for r in range(REPS):
        base = ((pid + r * 7) % nprog).to(tl.int64) * slice_elems
        for off in range(0, slice_elems, BLOCK):
            acc += tl.load(x_ptr + base + off + tl.arange(0, BLOCK), cache_modifier=".cg")
    tl.store(out_ptr + pid, tl.sum(acc, axis=0))


@triton.jit
def chase_kernel(buf_ptr, state_ptr, steps):
    """``idx = buf[idx]`` ``steps`` times: each load's address is the previous load's value.
    Launched as one program of one warp, so it is one dependent chain (the lanes load the same
    address, one transaction). The position is kept in ``state`` so successive calls walk on."""
    idx = tl.load(state_ptr)
    for _ in range(steps):
        idx = tl.load(buf_ptr + idx)
    tl.store(state_ptr, idx)


@triton.jit
def fma_kernel(out_ptr, a, b, iters, BLOCK: tl.constexpr):
    """8 independent FMA chains per element, ``iters`` times: 16 * BLOCK * iters FLOPs per program.
    ``a`` and ``b`` are run-time values, so nothing folds; the result is stored so nothing is dead."""
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x0 = offs.to(tl.float32) * 1e-9
    x1 = x0 + 0.1
    x2 = x0 + 0.2
    x3 = x0 + 0.3
    x4 = x0 + 0.4
    x5 = x0 + 0.5
    x6 = x0 + 0.6
    x7 = x0 + 0.7
    for _ in range(iters):
        x0 = tl.fma(x0, a, b)
        x1 = tl.fma(x1, a, b)
        x2 = tl.fma(x2, a, b)
        x3 = tl.fma(x3, a, b)
        x4 = tl.fma(x4, a, b)
        x5 = tl.fma(x5, a, b)
        x6 = tl.fma(x6, a, b)
        x7 = tl.fma(x7, a, b)
    tl.store(out_ptr + offs, ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7)))


#: FMA chains per element in ``fma_kernel`` (2 FLOPs each per iteration).
FMA_CHAINS = 8


def stream_grid(n: int) -> tuple[int]:
    """Programs for ``n`` fp32 elements of a streaming kernel."""
    return (triton.cdiv(n, STREAM_BLOCK),)
