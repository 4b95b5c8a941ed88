"""A script that marks its own work with NVTX ranges and times nothing nsightwrap knows, except
one ``triton.testing.do_bench``: unchanged for nsightwrap.

    python examples/own_nvtx.py [--steps N]
    nsightwrap profile examples/own_nvtx.py

Ranges (nsys shows every one of them; ``nsightwrap profile`` makes each a benchmark):
  mydomain:myrange     start/end range of domain "mydomain" around a Triton kernel under do_bench
  graph_replay         push/pop (default domain) around a replay of a CUDA graph of 3 kernels
  step, step/mm, step/softmax
                       nested push/pop ranges (torch.cuda.nvtx, default domain) per step
  two_streams          push/pop around two GEMMs on two streams joined back
  copies               push/pop around a device-to-device copy (a memcpy: no kernel for ncu)
  worker               push/pop on a second thread around its own kernel
"""

from __future__ import annotations

import argparse
import threading

import nvtx
import torch
import triton
import triton.language as tl
import triton.testing


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def triton_add(x: torch.Tensor, y: torch.Tensor, out: torch.Tensor) -> None:
    n = x.numel()
    add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=4, help="instances of each range")
    args = ap.parse_args()
    torch.manual_seed(0)
    dev = "cuda"
    mine = nvtx.get_domain("mydomain")

    x, y, out = (torch.randn(1 << 24, device=dev) for _ in range(3))
    rid = mine.start_range(message="myrange")
    ms = triton.testing.do_bench(lambda: triton_add(x, y, out), rep=20)
    mine.end_range(rid)
    print(f"triton add of {x.numel()} floats: {ms * 1e3:.2f} us (do_bench mean)")

    g_in = torch.randn(1 << 22, device=dev)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):
            g_out = ((g_in * 2.0) + 1.0).relu()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        g_out = ((g_in * 2.0) + 1.0).relu()
    a = torch.randn(2048, 2048, device=dev, dtype=torch.bfloat16)
    b = torch.randn(2048, 2048, device=dev, dtype=torch.bfloat16)
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    src = torch.randn(1 << 24, device=dev)
    dst = torch.empty_like(src)
    torch.cuda.synchronize()

    for _ in range(args.steps):
        nvtx.push_range("graph_replay")
        graph.replay()
        nvtx.pop_range()
        with torch.cuda.nvtx.range("step"):
            with torch.cuda.nvtx.range("mm"):
                h = a @ b
            with torch.cuda.nvtx.range("softmax"):
                torch.softmax(h.float(), dim=-1)
        nvtx.push_range("two_streams")
        cur = torch.cuda.current_stream()
        s1.wait_stream(cur)
        s2.wait_stream(cur)
        with torch.cuda.stream(s1):
            y1 = a @ b
        with torch.cuda.stream(s2):
            y2 = b @ a
        cur.wait_stream(s1)
        cur.wait_stream(s2)
        nvtx.pop_range()
        with nvtx.annotate("copies"):
            dst.copy_(src)
    torch.cuda.synchronize()

    def worker() -> None:
        z = torch.randn(1 << 20, device=dev)
        torch.cuda.synchronize()
        for _ in range(args.steps):
            with nvtx.annotate("worker"):
                torch.sin(z)
        torch.cuda.synchronize()

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    print(f"done: {args.steps} steps, {float(g_out.sum()):.1f} {float(y1.sum() + y2.sum()):.1f}")


if __name__ == "__main__":
    main()
