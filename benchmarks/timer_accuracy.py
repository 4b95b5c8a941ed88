"""How close is each way of timing a kernel from Python to Nsight Compute, at one SM clock?

    python benchmarks/timer_accuracy.py [--out timer-accuracy.md] [--json raw.json] [--only K,...]

For kernels from ~2 us to ~1 ms (GEMMs, elementwise, a reduction, a Triton kernel) it measures,
in one run: (a) ``nsightwrap.bench``; (b) naive CUDA events, back to back, no flush; (c) the
do_bench_cuda recipe (zeroing L2 flush + a dummy 4096^3 fp32 matmul before each sample, events
around the call); (d) ``triton.testing.do_bench`` median; then it re-runs itself under
``ncu --clock-control none`` (child mode, iteration filter of nsightwrap.core.contract) and takes (e)
``gpu__time_duration.sum`` with ``sm__cycles_elapsed.avg.per_second`` per iteration. Every
method's error is against ncu brought to the timer's clock, ``d_ncu * f_ncu / f_timer``, for
kernels bound by SM cycles; for DRAM-bound kernels (ncu's DRAM throughput above its SM
throughput) the time does not follow the SM clock and the unscaled ncu duration is the
reference (the table says which). Markdown to stdout and ``--out``; raw samples to ``--json``.
Needs an NVIDIA GPU, torch, triton and ncu; imports none of them for ``--help``.
"""

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without installing
    sys.path.insert(0, str(ROOT))

from nsightwrap.core import contract  # noqa: E402  (after the path set-up above)

try:  # the Triton kernel must be defined at module level for @triton.jit to read its source
    import triton
    import triton.language as tl

    @triton.jit
    def _axpy_kernel(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        x = tl.load(x_ptr + offs, mask=mask)
        y = tl.load(y_ptr + offs, mask=mask)
        tl.store(out_ptr + offs, alpha * x + y, mask=mask)

except ImportError:  # CPU machines: --help and the table code still work
    triton = None

METRICS = (
    "gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,"
    "sm__throughput.avg.pct_of_peak_sustained_elapsed,"
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,"
    "dram__throughput.avg.pct_of_peak_sustained_elapsed"
)
# name -> what it is (the factories below build them)
KERNELS = {
    "add_4k": "elementwise add, 4096 fp32 (launch-bound, ~2-3 us)",
    "axpy_triton_1m": "Triton axpy, 1 Mi fp32 (~5 us)",
    "mm_small": "bf16 linear 64x4096x4096 (~12 us)",
    "mm_skinny": "bf16 linear 2x19456x2560 (memory-bound GEMV, ~29 us)",
    "sum_32m": "reduction torch.sum, 32 Mi fp32 (~40 us)",
    "add_16m": "elementwise add, 16 Mi fp32 (memory-bound, ~50 us)",
    "mm_large": "bf16 linear 2048x19456x2560 (compute-bound, ~285 us)",
    "mm_1ms": "bf16 linear 4096x16384x4096 (compute-bound, ~0.8 ms)",
}
METHODS = ("timer", "timer_raw", "naive", "do_bench_cuda", "triton")
METHOD_TITLES = {
    "timer": "nsightwrap",
    "timer_raw": "nsightwrap, nothing subtracted",
    "naive": "naive events",
    "do_bench_cuda": "do_bench_cuda recipe",
    "triton": "triton do_bench",
}


# ---------------------------------------------------------------------------------------------
# Kernels (torch imported only here)


def make_kernel(name: str) -> tuple[Callable[[], Any], float | None, float | None]:
    """(callable, flops, bytes) of a named kernel, inputs allocated on the GPU."""
    import torch

    torch.manual_seed(0)
    dev, bf16 = "cuda", torch.bfloat16

    def linear(m: int, n: int, k: int) -> tuple[Callable[[], Any], float, float]:
        x = torch.randn(m, k, device=dev, dtype=bf16)
        w = torch.randn(n, k, device=dev, dtype=bf16)
        return (lambda: torch.nn.functional.linear(x, w)), 2.0 * m * n * k, 2.0 * (m * k + n * k + m * n)

    if name == "mm_small":
        return linear(64, 4096, 4096)
    if name == "mm_skinny":
        return linear(2, 19456, 2560)
    if name == "mm_large":
        return linear(2048, 19456, 2560)
    if name == "mm_1ms":
        return linear(4096, 16384, 4096)
    if name in ("add_4k", "add_16m"):
        n = 4096 if name == "add_4k" else 16 * 2**20
        a, b = torch.randn(n, device=dev), torch.randn(n, device=dev)
        return (lambda: a + b), None, 12.0 * n
    if name == "sum_32m":
        s = torch.randn(32 * 2**20, device=dev)
        return (lambda: s.sum()), None, 4.0 * s.numel()
    if name == "axpy_triton_1m":
        if triton is None:
            raise SystemExit("axpy_triton_1m needs triton")
        n = 2**20
        x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
        out = torch.empty_like(x)
        grid = (triton.cdiv(n, 1024),)
        return (lambda: _axpy_kernel[grid](x, y, out, n, 2.0, BLOCK=1024)), None, 12.0 * n
    raise SystemExit(f"unknown kernel {name!r}; choose from {', '.join(KERNELS)}")


def naive_events(fn: Callable[[], Any], n: int = 100) -> list[float]:
    """(b) CUDA events around each call, back to back, no flush, no queue holding (ns)."""
    import torch

    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for s, e in ev:
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e6 for s, e in ev]


def do_bench_cuda(fn: Callable[[], Any], n: int = 50) -> list[float]:
    """(c) The well-known recipe: zero a 256 MB buffer (L2 flush) and run a dummy 4096^3 fp32
    matmul before each sample (so the GPU runs ahead of the host), events around the call (ns)."""
    import torch

    cache = torch.empty(256 * 2**20 // 4, dtype=torch.int32, device="cuda")
    a = torch.randn(4096, 4096, device="cuda")
    b = torch.randn(4096, 4096, device="cuda")
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for s, e in ev:
        cache.zero_()
        _ = a @ b
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1e6 for s, e in ev]


def triton_do_bench(fn: Callable[[], Any]) -> float:
    """(d) ``triton.testing.do_bench`` median, in ns."""
    if triton is None:
        return math.nan
    return float(triton.testing.do_bench(fn, return_mode="median")) * 1e6


def measure_plain(names: Sequence[str], quick: bool) -> dict[str, dict[str, Any]]:
    """Methods (a)-(d) for every kernel, in this process."""
    import nsightwrap as nw

    opts: dict[str, Any] = {"budget_s": 0.5, "min_samples": 10} if quick else {}
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        fn, flops, nbytes = make_kernel(name)
        r = nw.bench(fn, name=name, flops=flops, bytes=nbytes, **opts)
        out[name] = {
            "timer": r.to_dict(),
            "naive_ns": naive_events(fn),
            "do_bench_cuda_ns": do_bench_cuda(fn),
            "triton_ns": triton_do_bench(fn),
        }
        print(f"  {r}", file=sys.stderr)
        del fn
    return out


def child_ncu(names: Sequence[str]) -> None:
    """Under ncu: only the timer's profiled iterations (NSIGHTWRAP_PASS=ncu is set by the parent)."""
    import nsightwrap as nw

    for name in names:
        fn, flops, nbytes = make_kernel(name)
        nw.bench(fn, name=name, flops=flops, bytes=nbytes)
        del fn


def run_ncu(names: Sequence[str], workdir: Path, iters: int) -> Any:
    """Re-run this script under ncu in child mode; the parsed kernels frame."""
    from nsightwrap.parsers.ncu import read_ncu_rep

    ncu = shutil.which("ncu")
    if ncu is None:
        raise SystemExit("ncu is not on PATH; pass --no-ncu to skip the reference")
    rep = workdir / "timer_accuracy"
    argv = [
        ncu, "--clock-control", "none", *contract.ncu_iteration_filter(), "--metrics", METRICS,
        "-o", str(rep), "-f", sys.executable, str(Path(__file__).resolve()), "--child-ncu",
        "--only", ",".join(names),
    ]  # fmt: skip
    env = dict(os.environ)
    env.update({contract.ENV_PASS: contract.PASS_NCU, contract.ENV_NCU_ITERS: str(iters)})
    env.pop(contract.ENV_RUN_DIR, None)
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"ncu failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    print(f"ncu child run: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return read_ncu_rep(rep.with_suffix(".ncu-rep"))


# ---------------------------------------------------------------------------------------------
# Reference and table (pure Python: tested on CPU)


@dataclass(frozen=True)
class NcuRef:
    """ncu's view of one benchmark: per-iteration kernel-sum duration and SM cycles."""

    iterations_ns: tuple[float, ...]
    iterations_cycles: tuple[float, ...]
    sm_pct: float
    dram_pct: float

    @property
    def duration_ns(self) -> float:
        return statistics.median(self.iterations_ns)

    @property
    def clock_hz(self) -> float:
        return sum(self.iterations_cycles) / sum(self.iterations_ns) * 1e9

    @property
    def bound(self) -> str:
        """``memory`` when DRAM throughput exceeds SM throughput (time does not follow the SM
        clock), else ``sm`` (compute or latency: cycles are what is fixed)."""
        return "memory" if self.dram_pct > self.sm_pct else "sm"

    def at_clock(self, f_hz: float | None) -> float:
        """The reference time at clock ``f_hz``: scaled for SM-bound kernels, as is otherwise."""
        if self.bound == "memory" or not f_hz:
            return self.duration_ns
        return statistics.median(self.iterations_cycles) / f_hz * 1e9


def ncu_refs(rows: Sequence[dict[str, Any]]) -> dict[str, NcuRef]:
    """Group ncu kernel rows (``nvtx_path``, ``duration_ns``, ``sm_clock_hz``, throughput %) by
    benchmark and iteration (``nsightwrap:<bench>/iter<i>``)."""
    prefix = f"{contract.NVTX_DOMAIN}:"
    groups: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for row in rows:
        path = str(row.get("nvtx_path") or "")
        if not path.startswith(prefix) or "/" not in path:
            continue
        bench, _, it = path[len(prefix) :].rpartition("/")
        if not it.startswith(contract.ITER_PREFIX):
            continue
        groups.setdefault(bench, {}).setdefault(it, []).append(row)
    refs = {}
    for bench, iters in groups.items():
        durs, cycles, sm, dram = [], [], [], []
        for ks in iters.values():
            durs.append(sum(_num(k["duration_ns"]) for k in ks))
            cycles.append(sum(_num(k["duration_ns"]) * _num(k["sm_clock_hz"]) / 1e9 for k in ks))
            for k in ks:
                w = float(k["duration_ns"])  # duration-weighted throughput of the iteration
                sm.append((w, _num(k.get("sm_throughput_pct"))))
                dram.append((w, _num(k.get("dram_throughput_pct"))))
        refs[bench] = NcuRef(tuple(durs), tuple(cycles), _wmean(sm), _wmean(dram))
    return refs


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _wmean(pairs: list[tuple[float, float]]) -> float:
    good = [(w, v) for w, v in pairs if math.isfinite(v)]
    tot = sum(w for w, _ in good)
    return sum(w * v for w, v in good) / tot if tot else math.nan


def method_medians(m: dict[str, Any]) -> dict[str, float]:
    """Median ns of each method from one kernel's plain measurements."""
    t = m["timer"]
    meth = t["method"]
    k = meth.get("calls_per_sample", 1) or 1
    timer = float(t["median_ns"])
    return {
        "timer": timer,
        "timer_raw": timer + float(meth.get("overhead_ns", 0.0)) / k,
        "naive": statistics.median(m["naive_ns"]),
        "do_bench_cuda": statistics.median(m["do_bench_cuda_ns"]),
        "triton": float(m["triton_ns"]) if m.get("triton_ns") is not None else math.nan,
    }


def target_pct(ref_ns: float) -> float:
    """The timer's accuracy target: 3 % at >= 10 us, 10 % for shorter kernels."""
    return 3.0 if ref_ns >= 10_000 else 10.0


def build_rows(plain: dict[str, dict[str, Any]], refs: dict[str, NcuRef]) -> list[dict[str, Any]]:
    """One row per kernel: reference, each method's median and signed error in %."""
    rows = []
    for name, m in plain.items():
        med = method_medians(m)
        f_timer = m["timer"].get("sm_clock_hz")
        row: dict[str, Any] = {
            "kernel": name,
            "f_timer_hz": f_timer,
            **{f"{k}_ns": v for k, v in med.items()},
        }
        ref = refs.get(name)
        if ref is not None:
            ref_ns = ref.at_clock(f_timer)
            row.update(
                ncu_ns=ref.duration_ns,
                f_ncu_hz=ref.clock_hz,
                bound=ref.bound,
                scaled=ref.bound != "memory" and bool(f_timer),
                ref_ns=ref_ns,
            )
            for k, v in med.items():
                row[f"{k}_err_pct"] = (v / ref_ns - 1) * 100 if math.isfinite(v) else math.nan
            others = [abs(row[f"{k}_err_pct"]) for k in ("naive", "do_bench_cuda", "triton")]
            err = abs(row["timer_err_pct"])
            row["target_pct"] = target_pct(ref_ns)
            row["meets_target"] = err <= row["target_pct"]
            row["beats_others"] = all(err < o for o in others if math.isfinite(o))
        rows.append(row)
    return rows


def _cell(v: Any, fmt: str) -> str:
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else format(v, fmt)


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """The accuracy table in Markdown (times in us, errors in % against ncu at the timer's clock)."""
    head = [
        "kernel", "ncu us", "f_ncu GHz", "f_timer GHz", "bound", "ncu at f_timer us",
        *(f"{METHOD_TITLES[k]} us (err %)" for k in METHODS), "target", "ok",
    ]  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        meth = [
            f"{_cell(r[f'{k}_ns'] / 1e3, '.2f')} ({_cell(r.get(f'{k}_err_pct'), '+.1f')})" for k in METHODS
        ]
        ok = "-"
        if "meets_target" in r:
            ok = ("yes" if r["meets_target"] else "NO") + ("" if r["beats_others"] else ", not best")
        f_ncu, f_t = r.get("f_ncu_hz"), r.get("f_timer_hz")
        cells = [
            r["kernel"].replace("|", "\\|"),
            _cell(r.get("ncu_ns", math.nan) / 1e3, ".2f"),
            _cell(f_ncu / 1e9 if f_ncu else None, ".3f"),
            _cell(f_t / 1e9 if f_t else None, ".3f"),
            (r.get("bound", "-") + ("" if r.get("scaled") else ", unscaled")) if "bound" in r else "-",
            _cell(r.get("ref_ns", math.nan) / 1e3, ".2f"),
            *meth,
            f"{r['target_pct']:.0f} %" if "target_pct" in r else "-",
            ok,
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description="Accuracy of nsightwrap's timer against ncu and other Python timing recipes.",
        epilog="Runs on a machine with an NVIDIA GPU, torch, triton and ncu (about 1-2 minutes).",
    )
    ap.add_argument("--out", type=Path, help="write the Markdown table here too")
    ap.add_argument(
        "--json", type=Path, help="raw results (every sample, every ncu kernel); default: --out with .json"
    )
    ap.add_argument("--only", default="", help=f"comma-separated kernels (default all: {', '.join(KERNELS)})")
    ap.add_argument("--ncu-iters", type=int, default=3, help="profiled iterations per kernel under ncu")
    ap.add_argument("--no-ncu", action="store_true", help="skip the ncu reference (no errors then)")
    ap.add_argument("--quick", action="store_true", help="shorter timer budget")
    ap.add_argument("--child-ncu", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    args.names = [n.strip() for n in args.only.split(",") if n.strip()] or list(KERNELS)
    unknown = [n for n in args.names if n not in KERNELS]
    if unknown:
        ap.error(f"unknown kernel(s) {', '.join(unknown)}; choose from {', '.join(KERNELS)}")
    return args


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    if args.child_ncu:
        child_ncu(args.names)
        return
    for key in (contract.ENV_PASS, contract.ENV_RUN_DIR):
        os.environ.pop(key, None)  # the plain measurements run as a standalone script
    t0 = time.perf_counter()
    plain = measure_plain(args.names, args.quick)
    frame_rows: list[dict[str, Any]] = []
    if not args.no_ncu:
        with tempfile.TemporaryDirectory() as tmp:
            df = run_ncu(args.names, Path(tmp), args.ncu_iters)
        frame_rows = json.loads(df.drop(columns=["nvtx_ranges"], errors="ignore").to_json(orient="records"))
    rows = build_rows(plain, ncu_refs(frame_rows))
    import torch

    header = (
        f"Timer accuracy on {torch.cuda.get_device_name()} (torch {torch.__version__}, "
        f"triton {getattr(triton, '__version__', 'absent')}), {time.strftime('%Y-%m-%d')}; "
        f"errors in % against ncu --clock-control none at the timer's SM clock.\n"
    )
    table = header + "\n" + markdown_table(rows) + "\n"
    print(table)
    if args.out:
        args.out.write_text(table)
    json_path = args.json or (args.out.with_suffix(".json") if args.out else None)
    if json_path:
        doc = {"kernels": KERNELS, "plain": plain, "ncu_kernels": frame_rows, "rows": rows}
        json_path.write_text(json.dumps(doc, indent=1, default=str))
    print(f"total {time.perf_counter() - t0:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
