# ruff: noqa: E731  (written as users write it)
"""Fused softmax in the style of Triton's tutorial: a Triton kernel against ``torch.softmax``,
swept over eight row lengths with ``triton.testing.perf_report`` (16 ``do_bench`` timings at one
call site). Unchanged for nsightwrap: ``nsightwrap profile`` names each timing from the sweep's
own parameters (``benchmark[N=1024, provider=torch]``).

    python examples/perf_report_sweep.py
    nsightwrap profile examples/perf_report_sweep.py
"""

import torch
import triton
import triton.language as tl

DEVICE = torch.device("cuda")


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_stride + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=mask)


def softmax(x):
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    softmax_kernel[(n_rows,)](
        y, x, x.stride(0), y.stride(0), n_cols, BLOCK_SIZE=triton.next_power_of_2(n_cols)
    )
    return y


@triton.testing.perf_report(
    triton.testing.Benchmark(
        x_names=["N"],
        x_vals=[256 * i for i in (1, 2, 4, 6, 8, 12, 16, 24)],
        line_arg="provider",
        line_vals=["triton", "torch"],
        line_names=["Triton", "Torch"],
        ylabel="GB/s",
        plot_name="softmax",
        args={"M": 4096},
    )
)
def benchmark(M, N, provider):
    x = torch.randn(M, N, device=DEVICE, dtype=torch.float32)
    fn = (lambda: torch.softmax(x, axis=-1)) if provider == "torch" else (lambda: softmax(x))
    ms, min_ms, max_ms = triton.testing.do_bench(fn, quantiles=[0.5, 0.2, 0.8])
    gbps = lambda ms: 2 * x.numel() * x.element_size() * 1e-9 / (ms * 1e-3)
    return gbps(ms), gbps(max_ms), gbps(min_ms)


if __name__ == "__main__":
    benchmark.run(show_plots=False, print_data=True)
