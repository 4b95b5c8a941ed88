"""A mixed script as a user writes it, with no nsightwrap in it: a Triton kernel under
``triton.testing.do_bench``, CUDA-graph replays (50 replays of a graph of 8 kernels) inside one
CUDA-event window, work on two streams, host/device copies. About 8-10 s plain on an H200.

    python examples/mixed_graph_streams.py
    nsightwrap profile examples/mixed_graph_streams.py
"""

from __future__ import annotations

import time

import torch
import triton
import triton.language as tl
import triton.testing


@triton.jit
def _scale_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + y, mask=mask)


def scale_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    out = torch.empty_like(x)
    n = x.numel()
    _scale_add[(triton.cdiv(n, 1024),)](x, y, out, n, alpha, BLOCK=1024)
    return out


def graph_step(buf: torch.Tensor, w: torch.Tensor) -> None:
    # 8 kernels: the kind of small chain a decode step replays
    h = buf @ w
    h = torch.relu(h)
    h = h * 0.5
    h = h + buf
    h = torch.tanh(h)
    h = h - 0.1
    h = h.abs()
    buf.copy_(h)


def main() -> None:
    torch.manual_seed(0)
    dev = "cuda"
    # 1. a Triton kernel under do_bench, several sizes
    for n in (1 << 20, 1 << 24, 1 << 26):
        x = torch.randn(n, device=dev)
        y = torch.randn(n, device=dev)
        ms = triton.testing.do_bench(lambda x=x, y=y: scale_add(x, y, 2.0), rep=1500)
        print(f"scale_add n={n}: {ms * 1e3:.2f} us, {3 * 4 * n / (ms * 1e-3) / 1e9:.0f} GB/s", flush=True)

    # 2. CUDA-graph replays inside one event window
    buf = torch.randn(256, 1024, device=dev)
    w = torch.randn(1024, 1024, device=dev) * 0.01
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            graph_step(buf, w)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        graph_step(buf, w)
    for rnd in range(20):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(50):
            g.replay()
        end.record()
        end.synchronize()
        if rnd % 5 == 0:
            print(f"graph x50: {start.elapsed_time(end):.3f} ms", flush=True)

    # 3. two streams and copies
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    host = torch.randn(1 << 24).pin_memory()
    a = torch.randn(4096, 4096, device=dev)
    t0 = time.perf_counter()
    for _ in range(40):
        with torch.cuda.stream(s1):
            d = host.to(dev, non_blocking=True)
            d.mul_(2.0)
        with torch.cuda.stream(s2):
            c = a @ a
        torch.cuda.synchronize()
        back = d.to("cpu", non_blocking=False)
    print(f"streams+copies: {(time.perf_counter() - t0) * 1e3:.1f} ms total, {float(back[0]) + float(c[0, 0]):.3f}")

    # 4. filler work of a real script (a few seconds of GEMMs, not timed)
    big = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 3.0:
        big = (big @ big).clamp_(-1, 1)
    torch.cuda.synchronize()
    print(f"done: {float(big.float().abs().mean()):.4f}")


if __name__ == "__main__":
    main()
