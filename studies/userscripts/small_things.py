# ruff: noqa: E731  (written as users write it)
"""Small kernels timed the many ways people do: a first call, do_bench of tiny ops, a CUDA graph of
20 small adds replayed, Timer.timeit with labels, a side stream joined before the end event.
Written as users write it; nothing of nsightwrap in it."""

import torch
import torch.utils.benchmark as benchmark
import triton.testing

dev = "cuda"
x = torch.randn(1024, device=dev)
y = torch.randn(1024, device=dev)
big = torch.randn(1 << 22, device=dev)
a = torch.randn(2048, 2048, device=dev, dtype=torch.bfloat16)

# first call, timed once
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
s.record()
z = torch.cumsum(big, 0)
e.record()
torch.cuda.synchronize()
print(f"first cumsum: {s.elapsed_time(e) * 1e3:.1f} us")

for name, fn in (("add 1k", lambda: x + y), ("mul 4M", lambda: big * 2), ("gelu 4M", lambda: torch.nn.functional.gelu(big))):
    ms = triton.testing.do_bench(fn)
    print(f"{name}: {ms * 1e3:.2f} us")

# a CUDA graph of 20 small adds
static = torch.zeros(1024, device=dev)
g = torch.cuda.CUDAGraph()
torch.cuda.synchronize()
with torch.cuda.graph(g):
    for _ in range(20):
        static.add_(1.0)
for _ in range(10):
    g.replay()
torch.cuda.synchronize()
times = []
for _ in range(100):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    g.replay()
    e.record()
    torch.cuda.synchronize()
    times.append(s.elapsed_time(e))
times.sort()
print(f"graph of 20 adds: {times[len(times) // 2] * 1e3:.2f} us")

for label, stmt in (("mm 2048", "a @ a"), ("relu 4M", "torch.relu(big)")):
    t = benchmark.Timer(stmt=stmt, globals={"a": a, "big": big, "torch": torch}, label=label, sub_label="bf16" if "mm" in label else "fp32")
    m = t.timeit(200)
    print(f"{label}: {m.median * 1e6:.2f} us")

# side stream, joined before the end event
side = torch.cuda.Stream()
times = []
for _ in range(50):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        c = a @ a
    torch.cuda.current_stream().wait_stream(side)
    e.record()
    torch.cuda.synchronize()
    times.append(s.elapsed_time(e))
times.sort()
print(f"side stream mm: {times[len(times) // 2] * 1e3:.2f} us")
