"""What the product benchmark (timer_accuracy) and the studies (studies/) share: the named
kernels, the do_bench_cuda recipe, the reference loop, and ncu's rows read back per benchmark.

Scripts import it as ``benchmarks.common``: run them from the repository root as modules
(``python -m benchmarks.timer_accuracy``, ``python -m studies.ncu_gap``); no ``sys.path`` edits.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nsightwrap.core import contract

#: The repository root (the reference loop, the studies' scratch folders).
ROOT = Path(__file__).resolve().parent.parent

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


# name -> what it is (make_kernel builds them)
KERNELS = {
    "add_4k": "elementwise add, 4096 fp32 (~2 us)",
    "relu_1m": "relu, 1 Mi fp32 (~4 us)",
    "axpy_triton_1m": "Triton axpy, 1 Mi fp32 (~5 us)",
    "mm_skinny": "bf16 linear 2x19456x2560 (memory-bound GEMV, ~29 us)",
    "softmax_4k": "softmax over rows, 4096x4096 fp32 (~35 us)",
    "layernorm_4k": "layer norm, 4096x4096 fp32 with weight and bias (~35 us)",
    "add_16m": "elementwise add, 16 Mi fp32 (memory-bound, ~45 us)",
    "attention": "torch SDPA flash attention, bf16 8x16x1024x64 (~80 us)",
    "mm_square": "bf16 matmul 4096x4096x4096 (compute-bound, ~180 us)",
}


def make_kernel(name: str) -> tuple[Callable[[], Any], float | None, float | None]:
    """(callable, flops, bytes) of a named kernel, inputs allocated on the GPU."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    dev, bf16 = "cuda", torch.bfloat16
    if name in ("add_4k", "add_16m"):
        n = 4096 if name == "add_4k" else 16 * 2**20
        a, b = torch.randn(n, device=dev), torch.randn(n, device=dev)
        return (lambda: a + b), None, 12.0 * n
    if name == "relu_1m":
        x = torch.randn(2**20, device=dev)
        return (lambda: torch.relu(x)), None, 8.0 * x.numel()
    if name == "axpy_triton_1m":
        if triton is None:
            raise SystemExit("axpy_triton_1m needs triton")
        n = 2**20
        x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
        out = torch.empty_like(x)
        grid = (triton.cdiv(n, 1024),)
        return (lambda: _axpy_kernel[grid](x, y, out, n, 2.0, BLOCK=1024)), None, 12.0 * n
    if name == "mm_skinny":
        x = torch.randn(2, 2560, device=dev, dtype=bf16)
        w = torch.randn(19456, 2560, device=dev, dtype=bf16)
        return (lambda: F.linear(x, w)), 2.0 * 2 * 19456 * 2560, 2.0 * (2 * 2560 + 19456 * 2560 + 2 * 19456)
    if name == "softmax_4k":
        s = torch.randn(4096, 4096, device=dev)
        return (lambda: torch.softmax(s, dim=-1)), None, 8.0 * s.numel()
    if name == "layernorm_4k":
        h = torch.randn(4096, 4096, device=dev)
        g, bias = torch.randn(4096, device=dev), torch.randn(4096, device=dev)
        return (lambda: F.layer_norm(h, (4096,), g, bias)), None, 8.0 * h.numel()
    if name == "attention":
        from torch.nn.attention import SDPBackend, sdpa_kernel

        q, k, v = (torch.randn(8, 16, 1024, 64, device=dev, dtype=bf16) for _ in range(3))

        def attn() -> Any:
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v)

        return attn, 4.0 * 8 * 16 * 1024 * 1024 * 64, 2.0 * 4 * q.numel()
    if name == "mm_square":
        a = torch.randn(4096, 4096, device=dev, dtype=bf16)
        b = torch.randn(4096, 4096, device=dev, dtype=bf16)
        return (lambda: a @ b), 2.0 * 4096**3, 2.0 * 3 * 4096**2
    raise SystemExit(f"unknown kernel {name!r}; choose from {', '.join(KERNELS)}")


_DBC: dict[str, Any] = {}


def do_bench_cuda(fn: Callable[[], Any], n: int = 30) -> list[float]:
    """(d) The well-known recipe: zero a 256 MB buffer (L2 flush) and run a dummy 4096^3 fp32
    matmul before each sample (so the GPU runs ahead of the host), events around the call (ns)."""
    import torch

    if not _DBC:
        _DBC["cache"] = torch.empty(256 * 2**20 // 4, dtype=torch.int32, device="cuda")
        _DBC["a"] = torch.randn(4096, 4096, device="cuda")
        _DBC["b"] = torch.randn(4096, 4096, device="cuda")
    cache, a, b = _DBC["cache"], _DBC["a"], _DBC["b"]
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


def round_line(name: str, r: int, row: dict[str, Any]) -> str:
    """Progress line of one study round: each variant's ``median_ns`` in us (hold_order, window_study)."""
    return f"{name} round {r}: " + ", ".join(f"{k} {v['median_ns'] / 1e3:.3f}" for k, v in row.items())


def reference_loop() -> Any:
    """The reference loop module (``.ref/reference_loop.py`` in the checkout), or None."""
    path = ROOT / ".ref" / "reference_loop.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location("reference_loop", path)
    if spec is None or spec.loader is None:
        return None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ncu_rows(
    argv: Sequence[str], env: dict[str, str], rep: Path, what: str, timeout: float
) -> list[dict[str, Any]]:
    """Run ``argv`` (ncu over a benchmark's child mode, writing ``rep``.ncu-rep) and return the
    report's kernel rows as JSON-ready dicts; SystemExit naming ``what`` when ncu fails."""
    from nsightwrap.parsers.ncu import read_ncu_rep

    t0 = time.perf_counter()
    done = subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise SystemExit(
            f"ncu ({what}) failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
    print(f"ncu {what} child run: {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    df = read_ncu_rep(rep.with_suffix(".ncu-rep"))
    rows: list[dict[str, Any]] = json.loads(
        df.drop(columns=["nvtx_ranges"], errors="ignore").to_json(orient="records")
    )
    return rows


# ---------------------------------------------------------------------------------------------
# Reference, elasticity, errors and tables (pure Python: tested on CPU)


@dataclass(frozen=True)
class NcuRef:
    """ncu's view of one benchmark: per-iteration kernel-sum duration (ns) and SM cycles."""

    iterations_ns: tuple[float, ...]
    iterations_cycles: tuple[float, ...]
    sm_pct: float = math.nan
    dram_pct: float = math.nan
    #: ncu's replay passes per kernel and the device memory it backed up for them (medians).
    passes: float = math.nan
    backed_up_bytes: float = math.nan

    @property
    def duration_ns(self) -> float:
        return statistics.median(self.iterations_ns)

    @property
    def clock_hz(self) -> float:
        return sum(self.iterations_cycles) / sum(self.iterations_ns) * 1e9

    @property
    def bound(self) -> str:
        """``memory`` when DRAM throughput exceeds SM throughput, else ``sm`` (the old guess)."""
        return "memory" if self.dram_pct > self.sm_pct else "sm"


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
        durs, cycles, sm, dram, passes, backed = [], [], [], [], [], []
        for ks in iters.values():
            durs.append(sum(_num(k["duration_ns"]) for k in ks))
            cycles.append(sum(_num(k["duration_ns"]) * _num(k["sm_clock_hz"]) / 1e9 for k in ks))
            for k in ks:
                w = _num(k["duration_ns"])  # duration-weighted throughput of the iteration
                sm.append((w, _num(k.get("sm_throughput_pct"))))
                dram.append((w, _num(k.get("dram_throughput_pct"))))
                passes.append(_num(k.get("profiler__replayer_passes")))
                # ncu leaves the metric out when it backed nothing up (one pass).
                backed.append(
                    _num(
                        k.get("profiler__replayer_bytes_mem_backed_up.sum", 0.0 if passes[-1] == 1 else None)
                    )
                )
        refs[bench] = NcuRef(
            tuple(durs),
            tuple(cycles),
            _wmean(sm),
            _wmean(dram),
            _finite_median(passes),
            _finite_median(backed),
        )
    return refs


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _finite_median(vals: Sequence[float]) -> float:
    good = [v for v in vals if math.isfinite(v)]
    return statistics.median(good) if good else math.nan


def _wmean(pairs: list[tuple[float, float]]) -> float:
    good = [(w, v) for w, v in pairs if math.isfinite(v) and math.isfinite(w)]
    tot = sum(w for w, _ in good)
    return sum(w * v for w, v in good) / tot if tot else math.nan


def module_argv(module: str, *args: str) -> list[str]:
    """``python -m module args``: how a script re-runs itself in a child (under ncu, nvbench)."""
    return [sys.executable, "-m", module, *args]


def child_env(env: dict[str, str]) -> dict[str, str]:
    """``env`` with the repository root first on ``PYTHONPATH``, so that a child started by ncu
    from any folder finds ``benchmarks`` and ``studies``."""
    out = dict(env)
    out["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return out
