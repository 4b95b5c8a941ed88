"""A benchmark script of the kind nsightwrap is for: kernels of different character, timed with
``nsightwrap.bench``.

    python examples/bench_example.py [--quick] [--scale S] [--only NAME,...]
    nsightwrap profile examples/bench_example.py -- --quick

Benchmarks: mm_large (compute-bound bf16 GEMM 2048x19456x2560), mm_skinny (memory-bound
2x19456x2560), mm_small (64x4096x4096), add_small (launch-bound add of 4096 elements), copy_1g
(device-to-device copy: a memcpy, not a kernel), softmax_mlp (softmax + linear + gelu: several
kernels), two_streams (two independent GEMMs on two streams joined back), and, when named with
--only, mm_sweep (a parameter sweep over M). ``--scale`` multiplies every GEMM's M dimension,
to inject a known slowdown.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import torch

import nsightwrap as nw

BF16 = torch.bfloat16
#: (callable to time, flop count or None, bytes moved or None)
Case = tuple[Callable[[], Any], int | None, int | None]


def _m(m: int, scale: float) -> int:
    return max(1, round(m * scale))


def _gemm(m: int, n: int, k: int) -> Case:
    x = torch.randn(m, k, device="cuda", dtype=BF16)
    w = torch.randn(n, k, device="cuda", dtype=BF16)
    return (lambda: torch.nn.functional.linear(x, w)), 2 * m * n * k, 2 * (m * k + n * k + m * n)


def mm_large(scale: float) -> Case:
    return _gemm(_m(2048, scale), 19456, 2560)


def mm_skinny(scale: float) -> Case:
    return _gemm(_m(2, scale), 19456, 2560)


def mm_small(scale: float) -> Case:
    return _gemm(_m(64, scale), 4096, 4096)


def add_small(scale: float) -> Case:
    a = torch.randn(4096, device="cuda")
    b = torch.randn(4096, device="cuda")
    return (lambda: a + b), None, 3 * 4096 * 4


def copy_1g(scale: float) -> Case:
    src = torch.randn(256 * 1024 * 1024, device="cuda")  # 1 GiB of fp32: a cudaMemcpyAsync
    dst = torch.empty_like(src)
    return (lambda: dst.copy_(src)), None, 2 * src.numel() * 4


def softmax_mlp(scale: float) -> Case:
    h = torch.randn(_m(4096, scale), 4096, device="cuda", dtype=BF16)
    w2 = torch.randn(4096, 4096, device="cuda", dtype=BF16)

    def mlp() -> torch.Tensor:
        return torch.nn.functional.gelu(torch.nn.functional.linear(torch.softmax(h, -1), w2))

    return mlp, 2 * h.shape[0] * 4096 * 4096, None


def two_streams(scale: float) -> Case:
    f1, fl1, _ = _gemm(_m(1024, scale), 8192, 4096)
    f2, fl2, _ = _gemm(_m(1024, scale), 8192, 4096)
    side = torch.cuda.Stream()

    def both() -> None:
        main = torch.cuda.current_stream()
        side.wait_stream(main)  # the side stream starts after the flush and the start event
        with torch.cuda.stream(side):
            f2()
        f1()
        main.wait_stream(side)  # joined back: the end event waits for both

    return both, (fl1 or 0) + (fl2 or 0), None


CASES: dict[str, Callable[[float], Case]] = {
    f.__name__: f for f in (mm_large, mm_skinny, mm_small, add_small, copy_1g, softmax_mlp, two_streams)
}


def mm_sweep(scale: float, opts: dict[str, Any]) -> list[nw.BenchResult]:
    """The same GEMM over several M: one benchmark per point, named mm_sweep[M=...]."""

    @nw.benchmark(params={"M": [2, 64, 2048]}, flops=lambda M: 2 * _m(M, scale) * 19456 * 2560, **opts)
    def mm_sweep(M: int) -> Callable[[], Any]:
        return _gemm(_m(M, scale), 19456, 2560)[0]

    return mm_sweep()


def run(names: list[str], scale: float, opts: dict[str, Any]) -> list[nw.BenchResult]:
    """Run the named benchmarks; returns their results."""
    results: list[nw.BenchResult] = []
    for name in names:
        torch.manual_seed(0)
        if name == "mm_sweep":
            results.extend(mm_sweep(scale, opts))
            continue
        if name not in CASES:
            raise SystemExit(f"unknown benchmark {name!r}; choose from {', '.join([*CASES, 'mm_sweep'])}")
        fn, flops, nbytes = CASES[name](scale)
        results.append(nw.bench(fn, name=name, flops=flops, bytes=nbytes, **opts))
        del fn  # free this case's tensors before the next one
    return results


def table(results: list[nw.BenchResult]) -> str:
    """A plain-text table of the results."""
    head = f"{'benchmark':<18} {'median us':>10} {'min us':>9} {'IQR us':>8} {'n':>5} {'TFLOP/s':>8} {'GB/s':>7} {'SM GHz':>7}  method"
    lines = [head, "-" * len(head)]
    for r in results:
        if not r.timed:
            lines.append(f"{r.name:<18} not timed under the {r.method.get('pass')} pass")
            continue
        m = r.method
        how = ("flush" if m.get("flush_l2") else "warm") + (",held" if m.get("hold_queue") else "")
        how += f",-{m['overhead_ns'] / 1e3:.1f}us" if m.get("overhead_ns") else ""
        tf = f"{r.tflops:.1f}" if r.tflops else "-"
        gb = f"{r.gbps:.0f}" if r.gbps else "-"
        clk = f"{r.sm_clock_hz / 1e9:.2f}" if r.sm_clock_hz else "-"
        lines.append(
            f"{r.name:<18} {r.median_ns / 1e3:>10.2f} {r.min_ns / 1e3:>9.2f} {r.iqr_ns / 1e3:>8.2f} "
            f"{r.n:>5} {tf:>8} {gb:>7} {clk:>7}  {how}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="fewer samples (a smoke run)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every GEMM's M dimension by S")
    ap.add_argument("--only", default="", help="comma-separated benchmark names")
    args = ap.parse_args(argv)
    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(CASES)
    opts: dict[str, Any] = {}
    if args.quick:
        opts = {"min_samples": 5, "budget_s": 0.3, "rel_precision": 0.02}
    print(table(run(names, args.scale, opts)))


if __name__ == "__main__":
    main()
