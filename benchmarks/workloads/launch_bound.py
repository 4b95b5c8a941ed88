"""A launch-bound timing script, as users write one: ``do_bench`` over tiny element-wise kernels
and small GEMMs (2-25 us, where the host's launches decide the pace), a hand-written event loop
of a 1,024-element add, a ``Timer.timeit`` of a small GEMM and one large GEMM for contrast.
``benchmarks/plain_clock_cost.py`` profiles it plain with and without the plain pass's clock."""

import torch
import torch.utils.benchmark as benchmark
import triton.testing

dev = "cuda"
torch.manual_seed(0)
for n in (1 << 10, 1 << 14, 1 << 18, 1 << 20):
    x = torch.randn(n, device=dev)
    ms = triton.testing.do_bench(lambda x=x: x + x)
    print(f"add {n}: {ms * 1e3:.2f} us")
for m in (16, 64, 256):
    a = torch.randn(m, 4096, device=dev, dtype=torch.bfloat16)
    w = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    ms = triton.testing.do_bench(lambda a=a, w=w: torch.nn.functional.linear(a, w))
    print(f"linear {m}x4096x4096: {ms * 1e3:.2f} us")
x = torch.randn(1024, device=dev)
times = []
for _ in range(500):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    y = x * 2
    e.record()
    torch.cuda.synchronize()
    times.append(s.elapsed_time(e))
times.sort()
print(f"events mul 1024: {times[len(times) // 2] * 1e3:.2f} us")
a = torch.randn(512, 512, device=dev, dtype=torch.bfloat16)
m = benchmark.Timer(stmt="a @ a", globals={"a": a}, label="mm 512").timeit(2000)
print(f"timer mm 512: {m.median * 1e6:.2f} us")
big = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
ms = triton.testing.do_bench(lambda: big @ big, rep=300)
print(f"mm 8192: {ms * 1e3:.2f} us")
