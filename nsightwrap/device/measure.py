"""The microbenchmarks of ``nsightwrap device``: each a short measurement with nsightwrap's timer.

Runs inside a process with torch (and triton for the kernels torch lacks); imports only
``nsightwrap.core`` and ``nsightwrap.timer``. docs/device.md says what each one measures and why
it is measured that way. Units: bytes/s, FLOP/s, ns, Hz, bytes.
"""

from __future__ import annotations

import inspect
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import partial
from typing import Any

from nsightwrap import __version__
from nsightwrap.core.errors import NoCudaError, NsightwrapError, UsageError
from nsightwrap.device.power import PowerSampler, nvml_text, other_processes, utilization_pct
from nsightwrap.device.result import (
    GROUPS,
    BandwidthPoint,
    DeviceFile,
    GpuId,
    LatencyPoint,
    Measurement,
)
from nsightwrap.timer.result import BenchResult

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

#: Buffer of the HBM read / write / copy measurements: far larger than any L2.
HBM_BYTES = 1 * GiB
#: Cache line the pointer chase steps by: every load touches a new 128-byte line.
CHASE_LINE = 128
#: Dependent loads in the short and long chase; latency = (t_long - t_short) / (difference), so
#: the kernel's fixed start and end cost cancels.
CHASE_SHORT = 256
CHASE_DELTA = {"full": 8192, "quick": 1024}
#: Working sets of the latency curve (bytes): L1, L2 and HBM plateaus and the steps between.
LATENCY_SETS = {
    "full": (4 * KiB, 16 * KiB, 32 * KiB, 64 * KiB, 256 * KiB, 1 * MiB, 4 * MiB, 16 * MiB, 32 * MiB, 64 * MiB,
             128 * MiB, 256 * MiB, 512 * MiB),
    "quick": (16 * KiB, 1 * MiB, 8 * MiB, 64 * MiB, 256 * MiB),
}  # fmt: skip
#: Transfer sizes of the bandwidth curve (bytes copied; the traffic is twice that).
CURVE_SIZES = {
    "full": tuple(4 * KiB * 4**i for i in range(10)),  # 4 KiB .. 1 GiB
    "quick": (4 * KiB, 64 * KiB, 1 * MiB, 16 * MiB, 256 * MiB),
}
#: Square matmul size of the compute peaks (2 * 8192^3 = 1.1 TFLOP per call).
MATMUL_N = 8192
#: fp32 FMA kernel: programs per SM, elements per program, loop trips.
FMA_PROGRAMS_PER_SM, FMA_BLOCK, FMA_ITERS = 8, 1024, 8192
#: Empty kernels per sample of the back-to-back launch measurement.
LAUNCH_BATCH = 100

#: Compute measurements: name -> label.
COMPUTE = {
    "bf16": "bf16 matmul",
    "fp16": "fp16 matmul",
    "tf32": "tf32 matmul (fp32 inputs)",
    "fp8": "fp8 e4m3 matmul (torch._scaled_mm)",
    "int8": "int8 matmul (torch._int_mm)",
    "fp32": "fp32 FMA (Triton kernel)",
}
#: Measurements that are Triton kernels (skipped, and marked so, without triton).
NEEDS_TRITON = frozenset({"hbm_read", "hbm_write", "hbm_copy", "l2_read", "curve", "chase", "fp32"})


@dataclass(frozen=True)
class Settings:
    """What to measure: ``quick`` (under 30 s) or full (under 3 minutes), and which groups."""

    quick: bool = False
    groups: frozenset[str] = frozenset(GROUPS)
    gpu_index: int | None = None

    @property
    def mode(self) -> str:
        return "quick" if self.quick else "full"


#: What one step yields: a ceiling, or a point of one of the curves.
Item = Measurement | BandwidthPoint | LatencyPoint
#: ``progress(done, total, label, what the step yielded last, or None)`` after each step.
Progress = Callable[[int, int, str, "Item | None"], None]


def parse_groups(text: str | None) -> frozenset[str]:
    """``bandwidth,compute`` -> the groups; UsageError names an unknown one."""
    if not text:
        return frozenset(GROUPS)
    names = {g.strip() for g in text.split(",") if g.strip()}
    bad = sorted(names - set(GROUPS))
    if bad or not names:
        raise UsageError(f"--only: unknown group {', '.join(bad) or '(none)'}", hint=f"choose from {','.join(GROUPS)}")
    return frozenset(names)


# ----------------------------------------------------------------------------- environment


@dataclass
class _Env:
    torch: Any
    triton_error: str | None
    gpu: Any  # nsightwrap.timer.gpu.Gpu
    props: Any
    nvml: Any
    warnings: list[str] = field(default_factory=list)
    busy: bool = False


def _open(settings: Settings) -> _Env:
    """torch, the GPU, triton, NVML; one clear error when there is no GPU to measure."""
    try:
        import torch
    except ImportError:
        raise NoCudaError(
            "nsightwrap device needs torch with CUDA, and torch is not installed",
            hint="install a CUDA build of torch (pip install torch) on the GPU machine",
        ) from None
    if not torch.cuda.is_available():
        raise NoCudaError(
            f"nsightwrap device found no CUDA GPU (torch {torch.__version__}, "
            f"CUDA build {torch.version.cuda or 'none'})",
            hint="run it on a machine with an NVIDIA GPU, driver and a CUDA build of torch",
        )
    count = torch.cuda.device_count()
    if settings.gpu_index is not None:
        if not 0 <= settings.gpu_index < count:
            raise UsageError(f"--gpu {settings.gpu_index}: this machine has {count} GPU(s)",
                             hint=f"choose 0..{count - 1}")  # fmt: skip
        torch.cuda.set_device(settings.gpu_index)
    from nsightwrap.timer.gpu import gpu_state

    gpu = gpu_state()
    env = _Env(torch=torch, triton_error=None, gpu=gpu, props=torch.cuda.get_device_properties(gpu.index), nvml=gpu.nvml)
    try:
        import triton  # noqa: F401

        from nsightwrap.device import kernels  # noqa: F401  (compiles nothing yet)
    except Exception as exc:  # ImportError, or a triton that cannot load its backend
        env.triton_error = f"{type(exc).__name__}: {exc}".splitlines()[0]
        env.warnings.append(
            f"triton is not usable ({env.triton_error}): HBM, L2, latency and fp32 FMA "
            "measurements are skipped; install triton (pip install triton) to measure them"
        )
    others = other_processes(env.nvml)
    util = utilization_pct(env.nvml)
    if others:
        pids = ", ".join(str(p) for p, _ in others[:5])
        env.warnings.append(
            f"{len(others)} other process(es) use this GPU (pid {pids}): every figure may be low; "
            "measure on an idle GPU"
        )
        env.busy = True
    elif util is not None and util > 20:
        env.warnings.append(f"the GPU was {util:.0f}% busy before measuring: figures may be low")
        env.busy = True
    return env


def _gpu_id(env: _Env) -> GpuId:
    p = env.props
    uuid = nvml_text(env.nvml, "uuid")
    if not uuid and getattr(p, "uuid", None):
        uuid = f"GPU-{p.uuid}"
    power = nvml_text(env.nvml, "power_limit_w")
    mem_clk = nvml_text(env.nvml, "max_mem_clock_hz")
    return GpuId(
        name=str(p.name), uuid=uuid, index=int(env.gpu.index), sm_count=int(p.multi_processor_count),
        l2_bytes=int(p.L2_cache_size), memory_bytes=int(p.total_memory),
        compute_capability=f"{p.major}.{p.minor}", driver=nvml_text(env.nvml, "driver"),
        max_sm_clock_hz=float(env.gpu.max_sm_hz), max_mem_clock_hz=float(mem_clk) if mem_clk else None,
        power_limit_w=float(power) if power else None,
    )  # fmt: skip


# ----------------------------------------------------------------------------- one measurement


#: Timer options of every device measurement: no energy tail (power is sampled here), no CUPTI
#: kernel time, every sample kept (a throttled ceiling is marked, not filtered out, and the
#: first samples of a ceiling under load count as they are).
_DEVICE_BENCH: dict[str, Any] = {
    "energy_s": 0.0, "kernel_time": False, "throttle_threshold": None, "settle_tolerance": None,
}


def _bench_opts(settings: Settings, kind: str = "") -> dict[str, Any]:
    # Short, precise enough measurements: a ceiling is a median known to ~1-2 %.
    if kind == "compute":  # long enough for the clock and power to settle under load
        return (dict(min_samples=5, max_samples=60, rel_precision=0.01, budget_s=0.25, warmup_s=0.1)
                if settings.quick else
                dict(min_samples=50, max_samples=1000, rel_precision=0.002, budget_s=2.0, warmup_s=1.0))  # fmt: skip
    if settings.quick:
        return dict(min_samples=5, max_samples=100, rel_precision=0.02, budget_s=0.1, warmup_s=0.01)
    return dict(min_samples=20, max_samples=1000, rel_precision=0.005, budget_s=0.6, warmup_s=0.05)


def _measurement(
    env: _Env, group: str, name: str, label: str, r: BenchResult, *, value: float | None, unit: str,
    work: float | None, params: dict[str, Any] | None = None, power: PowerSampler | None = None,
) -> Measurement:  # fmt: skip
    status, message = "ok", ""
    if _throttled(r):
        status = "throttled"
        clk = f" at {r.sm_clock_hz / 1e9:.2f} GHz" if r.sm_clock_hz else ""
        message = f"clock held down{clk} ({', '.join(r.throttle_reasons) or 'below the throttle threshold'}) while measured"
    if env.busy:
        status, message = "busy", "another process used the GPU: the figure may be low"
    rel_ci = r.method.get("rel_ci")
    return Measurement(
        group=group, name=name, label=label, value=value, unit=unit, status=status, message=message,
        median_ns=r.median_ns if math.isfinite(r.median_ns) else None, n=r.n,
        rel_ci=float(rel_ci) if isinstance(rel_ci, (int, float)) and math.isfinite(rel_ci) else None,
        sm_clock_hz=r.sm_clock_hz, clock_source=r.clock_source, throttle_reasons=tuple(r.throttle_reasons),
        power_mean_w=power.mean_w if power else None, power_max_w=power.max_w if power else None,
        work=work, params={**(params or {}), **({"power_source": power.source} if power and power.mean_w else {})},
    )  # fmt: skip


def _not_measured(group: str, name: str, label: str, unit: str, status: str, message: str) -> Measurement:
    return Measurement(group=group, name=name, label=label, value=None, unit=unit, status=status, message=message)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


# ----------------------------------------------------------------------------- the runner


class _Runner:
    def __init__(self, settings: Settings, env: _Env) -> None:
        self.s = settings
        self.env = env
        self.torch = env.torch
        self.dev = f"cuda:{env.gpu.index}"
        self.measurements: list[Measurement] = []
        self.curve: list[BandwidthPoint] = []
        self.latency: list[LatencyPoint] = []
        self._bufs: dict[str, Any] = {}

    # -- helpers
    @staticmethod
    def one(action: Callable[[Any], Item], arg: Any) -> Sequence[Item]:
        return [action(arg)]

    def bench(self, fn: Callable[[], Any], name: str, kind: str = "", **kw: Any) -> tuple[BenchResult, PowerSampler]:
        from nsightwrap.timer.loop import bench

        opts = {**_bench_opts(self.s, kind), **_DEVICE_BENCH, **kw}
        # Options this timer does not have are left out (an older nsightwrap.bench).
        known = inspect.signature(bench).parameters
        with PowerSampler(self.env.nvml) as power:
            r = bench(fn, name=f"device.{name}", **{k: v for k, v in opts.items() if k in known})
        return r, power

    def buf(self, key: str, nbytes: int) -> Any:
        if key not in self._bufs:
            self._bufs[key] = self.torch.ones(nbytes // 4, dtype=self.torch.float32, device=self.dev)
        return self._bufs[key]

    def free(self) -> None:
        self._bufs.clear()
        self.torch.cuda.synchronize()
        self.torch.cuda.empty_cache()

    def steps(self) -> list[tuple[str, str, str, Callable[[], Sequence[Item]]]]:
        """(group, name, label, action) of every step, in order."""
        mode = self.s.mode
        out: list[tuple[str, str, str, Callable[[], Sequence[Item]]]] = []
        g = self.s.groups
        if "bandwidth" in g:
            out += [
                ("bandwidth", "hbm_read", "HBM read", lambda: [self.hbm("hbm_read")]),
                ("bandwidth", "hbm_write", "HBM write", lambda: [self.hbm("hbm_write")]),
                ("bandwidth", "hbm_copy", "HBM copy", lambda: [self.hbm("hbm_copy")]),
                ("bandwidth", "l2_read", "L2 read", lambda: [self.l2_read()]),
            ]
            out += [("bandwidth", f"copy_{n}", f"copy {_size(n)}", partial(self.one, self.curve_point, n))
                    for n in CURVE_SIZES[mode]]
        if "latency" in g:
            out += [("latency", f"chase_{w}", f"pointer chase {_size(w)}", partial(self.one, self.chase, w))
                    for w in LATENCY_SETS[mode]]
            out.append(("latency", "plateaus", "plateaus", self.plateaus))
        if "launch" in g:
            out.append(("launch", "launch", "empty kernel launch", self.launch))
        if "compute" in g:
            out += [("compute", n, label, partial(self.one, self.compute, n)) for n, label in COMPUTE.items()]
        return out

    def _skip_no_triton(self, group: str, name: str, label: str, unit: str) -> Measurement | None:
        if self.env.triton_error is None:
            return None
        return _not_measured(group, name, label, unit, "skipped", f"needs triton ({self.env.triton_error})")

    # -- bandwidth
    def hbm(self, name: str) -> Measurement:
        labels = {"hbm_read": "HBM read", "hbm_write": "HBM write", "hbm_copy": "HBM copy (read + write counted)"}
        if (m := self._skip_no_triton("bandwidth", name, labels[name], "B/s")) is not None:
            return m
        from nsightwrap.device import kernels as K

        n = HBM_BYTES // 4
        grid = K.stream_grid(n)
        a = self.buf("a", HBM_BYTES)
        if name == "hbm_read":
            out = self.torch.empty(grid[0], dtype=self.torch.float32, device=self.dev)
            fn: Callable[[], Any] = lambda: K.read_kernel[grid](a, out, n, BLOCK=K.STREAM_BLOCK, num_warps=K.STREAM_WARPS)  # noqa: E731
            traffic = n * 4
        elif name == "hbm_write":
            fn = lambda: K.write_kernel[grid](a, n, 1.0, BLOCK=K.STREAM_BLOCK, num_warps=K.STREAM_WARPS)  # noqa: E731
            traffic = n * 4
        else:
            b = self.buf("b", HBM_BYTES)
            fn = lambda: K.copy_kernel[grid](a, b, n, BLOCK=K.STREAM_BLOCK, num_warps=K.STREAM_WARPS)  # noqa: E731
            traffic = 2 * n * 4
        r, power = self.bench(fn, name, bytes=traffic, flush_l2=True)
        return _measurement(self.env, "bandwidth", name, labels[name], r, value=traffic / (r.median_ns * 1e-9),
                            unit="B/s", work=traffic, params={"buffer_bytes": HBM_BYTES, "kernel": "triton"},
                            power=power)  # fmt: skip

    def l2_read(self) -> Measurement:
        label = "L2 read (working set in L2, L1 bypassed)"
        if (m := self._skip_no_triton("bandwidth", "l2_read", label, "B/s")) is not None:
            return m
        from nsightwrap.device import kernels as K

        block, reps = 1024, 32
        nprog = 4 * int(self.env.props.multi_processor_count)
        # A working set of about a quarter of the L2 (so it stays in the near and far partitions
        # with room to spare), in whole blocks per program.
        slice_elems = max(block, (int(self.env.props.L2_cache_size) // 4 // 4 // nprog) // block * block)
        x = self.torch.ones(nprog * slice_elems, dtype=self.torch.float32, device=self.dev)
        out = self.torch.empty(nprog, dtype=self.torch.float32, device=self.dev)
        traffic = reps * nprog * slice_elems * 4

        def fn() -> None:
            K.l2_read_kernel[(nprog,)](x, out, slice_elems, nprog, REPS=reps, BLOCK=block, num_warps=4)

        r, power = self.bench(fn, "l2_read", bytes=traffic, flush_l2=False)
        return _measurement(self.env, "bandwidth", "l2_read", label, r, value=traffic / (r.median_ns * 1e-9),
                            unit="B/s", work=traffic, power=power,
                            params={"working_set_bytes": nprog * slice_elems * 4, "reads": reps})  # fmt: skip

    def curve_point(self, nbytes: int) -> BandwidthPoint:
        if self.env.triton_error is not None:
            return BandwidthPoint(float(nbytes), None, None, "skipped", "needs triton")
        from nsightwrap.device import kernels as K

        n = nbytes // 4
        a, b = self.buf("a", HBM_BYTES), self.buf("b", HBM_BYTES)
        grid = K.stream_grid(n)

        def fn() -> None:
            K.copy_kernel[grid](a, b, n, BLOCK=K.STREAM_BLOCK, num_warps=K.STREAM_WARPS)

        r, _ = self.bench(fn, f"copy_{nbytes}", bytes=2 * nbytes, flush_l2=True)
        status = "busy" if self.env.busy else ("throttled" if _throttled(r) else "ok")
        return BandwidthPoint(float(nbytes), 2 * nbytes / (r.median_ns * 1e-9), r.median_ns, status)

    # -- latency
    def chase(self, ws: int) -> LatencyPoint:
        if self.env.triton_error is not None:
            return LatencyPoint(float(ws), None, None, None, "skipped", "needs triton")
        from nsightwrap.device import kernels as K

        torch = self.torch
        n = max(2, ws // CHASE_LINE)
        stride = CHASE_LINE // 8  # int64 elements per line
        # One random cycle through every line (a random permutation; perm[i] -> perm[i+1]):
        # no stride for a prefetcher to learn, and every line visited once per lap. Each line
        # holds the element index of the next, so a step is one load and one address add.
        perm = torch.randperm(n, device=self.dev)
        nxt = torch.empty_like(perm)
        nxt[perm] = perm.roll(-1)
        buf = torch.zeros(n * stride, dtype=torch.int64, device=self.dev)
        buf[torch.arange(n, device=self.dev) * stride] = nxt * stride
        state = (perm[:1] * stride).clone()
        l2 = int(self.env.props.L2_cache_size)
        if ws <= 2 * l2:  # one full lap first, so the caches hold the working set
            _launch_chase(K.chase_kernel, buf, state, n)
            torch.cuda.synchronize()
        delta = CHASE_DELTA[self.s.mode]
        res = []
        for steps in (CHASE_SHORT, CHASE_SHORT + delta):
            fn = partial(_launch_chase, K.chase_kernel, buf, state, steps)
            r, _ = self.bench(fn, f"chase_{ws}_{steps}", flush_l2=False)
            res.append(r)
        ns = (res[1].median_ns - res[0].median_ns) / delta
        clock = res[1].sm_clock_hz
        status = "busy" if self.env.busy else ("throttled" if any(_throttled(r) for r in res) else "ok")
        return LatencyPoint(float(ws), ns, ns * 1e-9 * clock if clock else None, clock, status)

    def plateaus(self) -> Sequence[Item]:
        l2 = int(self.env.props.L2_cache_size)
        bands = {
            "l1": ("L1 hit latency", lambda w: w <= 32 * KiB),
            "l2": ("L2 hit latency", lambda w: 1 * MiB <= w <= 0.3 * l2),
            "hbm": ("HBM latency (working set >= 4x L2)", lambda w: w >= 4 * l2),
        }
        out = []
        for name, (label, inside) in bands.items():
            pts = [p for p in self.latency if p.ns is not None and inside(p.working_set_bytes)]
            if not pts:
                why = "needs triton" if self.env.triton_error else "no working set of the curve falls in this band"
                out.append(_not_measured("latency", name, label, "ns", "skipped", why))
                continue
            cyc = [p.cycles for p in pts if p.cycles is not None]
            clocks = [p.sm_clock_hz for p in pts if p.sm_clock_hz]
            status = "busy" if self.env.busy else ("throttled" if any(p.status == "throttled" for p in pts) else "ok")
            out.append(Measurement(
                group="latency", name=name, label=label, value=statistics.median(p.ns for p in pts if p.ns is not None),
                unit="ns", status=status, n=len(pts), sm_clock_hz=statistics.median(clocks) if clocks else None,
                clock_source="timer", work=float(CHASE_DELTA[self.s.mode]),
                params={"cycles": statistics.median(cyc) if cyc else None,
                        "working_sets": [p.working_set_bytes for p in pts]},
            ))  # fmt: skip
        return out

    # -- launch
    def launch(self) -> Sequence[Item]:
        torch = self.torch
        if not hasattr(torch.cuda, "_sleep"):
            return [_not_measured("launch", n, n, "ns", "unsupported", "this torch has no torch.cuda._sleep")
                    for n in ("empty_held", "back_to_back", "unheld", "host_to_start")]  # fmt: skip

        def empty() -> None:
            torch.cuda._sleep(0)  # a one-thread kernel that spins 0 cycles: an empty kernel

        def batch() -> None:
            for _ in range(LAUNCH_BATCH):
                torch.cuda._sleep(0)

        held, _ = self.bench(empty, "launch_held", flush_l2=False)
        b2b, _ = self.bench(batch, "launch_b2b", flush_l2=False)
        unheld, _ = self.bench(empty, "launch_unheld", flush_l2=False, hold_queue=False, subtract_overhead=False)
        out = [
            _measurement(self.env, "launch", "empty_held", "empty kernel, queue held (GPU time)", held,
                         value=held.median_ns, unit="ns", work=1),
            _measurement(self.env, "launch", "back_to_back", f"empty kernels back to back, queue held ({LAUNCH_BATCH}/sample)",
                         b2b, value=b2b.median_ns / LAUNCH_BATCH, unit="ns", work=LAUNCH_BATCH),
            _measurement(self.env, "launch", "unheld", "empty kernel, queue not held (host-bound window)", unheld,
                         value=unheld.median_ns, unit="ns", work=1),
        ]  # fmt: skip
        h2s = replace(out[2], name="host_to_start", label="host launch cost seen by an unheld timing (unheld - held)",
                      value=unheld.median_ns - held.median_ns, params={"from": "unheld - empty_held"})  # fmt: skip
        return [*out, h2s]

    # -- compute
    def compute(self, name: str) -> Measurement:
        label = COMPUTE[name]
        unit = "OP/s" if name == "int8" else "FLOP/s"
        if name == "fp32":
            if (m := self._skip_no_triton("compute", name, label, unit)) is not None:
                return m
            return self.fma()
        p = self.env.props
        n = MATMUL_N
        if name == "fp8" and (p.major, p.minor) < (8, 9):
            return _not_measured("compute", name, label, unit, "unsupported",
                                 f"fp8 tensor cores need compute capability 8.9 or newer (this GPU: {p.major}.{p.minor})")  # fmt: skip
        fn, restore = self._matmul(name, n)
        if isinstance(fn, str):
            return _not_measured("compute", name, label, unit, "unsupported", fn)
        try:
            r, power = self.bench(fn, name, kind="compute", flops=2 * n**3, flush_l2=True)
        finally:
            restore()
        return _measurement(self.env, "compute", name, label, r, value=2 * n**3 / (r.median_ns * 1e-9), unit=unit,
                            work=2 * n**3, params={"shape": [n, n, n], "data": "random"}, power=power)  # fmt: skip

    def _matmul(self, name: str, n: int) -> tuple[Callable[[], Any] | str, Callable[[], None]]:
        """The call to time (or why it cannot run here) and what restores global settings."""
        torch = self.torch
        dev = self.dev
        nothing: Callable[[], None] = lambda: None  # noqa: E731
        try:
            if name in ("bf16", "fp16"):
                dt = torch.bfloat16 if name == "bf16" else torch.float16
                a = torch.randn(n, n, device=dev, dtype=dt)
                b = torch.randn(n, n, device=dev, dtype=dt)
                c = torch.empty(n, n, device=dev, dtype=dt)
                fn: Callable[[], Any] = lambda: torch.matmul(a, b, out=c)  # noqa: E731
                fn()
                return fn, nothing
            if name == "tf32":
                old = torch.backends.cuda.matmul.allow_tf32
                torch.backends.cuda.matmul.allow_tf32 = True
                a = torch.randn(n, n, device=dev)
                b = torch.randn(n, n, device=dev)
                c = torch.empty(n, n, device=dev)
                fn = lambda: torch.matmul(a, b, out=c)  # noqa: E731
                fn()

                def restore() -> None:
                    torch.backends.cuda.matmul.allow_tf32 = old

                return fn, restore
            if name == "fp8":
                if not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
                    return "this torch has no torch._scaled_mm / float8_e4m3fn", nothing
                a8 = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn)
                b8 = torch.randn(n, n, device=dev).to(torch.float8_e4m3fn).t()  # column-major, as cuBLASLt wants
                one = torch.ones((), device=dev, dtype=torch.float32)
                fn = lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)  # noqa: E731
                fn()
                return fn, nothing
            if name == "int8":
                if not hasattr(torch, "_int_mm"):
                    return "this torch has no torch._int_mm", nothing
                ai = torch.randint(-128, 128, (n, n), device=dev, dtype=torch.int8)
                bi = torch.randint(-128, 128, (n, n), device=dev, dtype=torch.int8).t()
                try:
                    torch._int_mm(ai, bi)
                except RuntimeError:  # a torch whose kernel wants the second operand row-major
                    bi = bi.contiguous()
                fn = lambda: torch._int_mm(ai, bi)  # noqa: E731
                fn()
                return fn, nothing
        except (RuntimeError, TypeError, NotImplementedError, AttributeError) as exc:
            torch.cuda.synchronize()
            return f"{name} matmul does not run here: {_first_line(exc)}", nothing
        raise ValueError(name)

    def fma(self) -> Measurement:
        from nsightwrap.device import kernels as K

        programs = FMA_PROGRAMS_PER_SM * int(self.env.props.multi_processor_count)
        out = self.torch.empty(programs * FMA_BLOCK, dtype=self.torch.float32, device=self.dev)
        flops = 2 * K.FMA_CHAINS * FMA_BLOCK * programs * FMA_ITERS

        def fn() -> None:
            K.fma_kernel[(programs,)](out, 1.0000001, 1e-7, FMA_ITERS, BLOCK=FMA_BLOCK, num_warps=4)

        r, power = self.bench(fn, "fp32_fma", kind="compute", flops=flops, flush_l2=False)
        return _measurement(self.env, "compute", "fp32", COMPUTE["fp32"], r, value=flops / (r.median_ns * 1e-9),
                            unit="FLOP/s", work=flops, power=power,
                            params={"programs": programs, "block": FMA_BLOCK, "iters": FMA_ITERS,
                                    "chains": K.FMA_CHAINS})  # fmt: skip


#: The start of the warning ``measure`` leaves when a failure took the CUDA context with it.
CONTEXT_LOST = "the CUDA context was lost"


def _failed_item(group: str, name: str, label: str, status: str, message: str) -> Item:
    """A step that did not measure: a point of its curve, or a measurement."""
    size = name.split("_", 1)[1] if "_" in name else ""
    if name.startswith("copy_") and size.isdigit():
        return BandwidthPoint(float(size), None, None, status, message)
    if name.startswith("chase_") and size.isdigit():
        return LatencyPoint(float(size), None, None, None, status, message)
    return _not_measured(group, name, label, "", status, message)


def _launch_chase(kernel: Any, buf: Any, state: Any, steps: int) -> None:
    kernel[(1,)](buf, state, steps, num_warps=1)


def _throttled(r: BenchResult) -> bool:
    # Samples left out as throttled, or NVML throttle reasons (power cap, heat) seen during them.
    return bool(r.throttled or r.throttle_reasons)


def _size(n: float) -> str:
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n:g} B"


def measure(settings: Settings, progress: Progress | None = None) -> DeviceFile:
    """Measure this GPU's ceilings; ``progress`` is called after every step."""
    t0 = time.monotonic()
    env = _open(settings)
    runner = _Runner(settings, env)
    steps = runner.steps()
    lost: str | None = None  # why the CUDA context is gone (every later step would fail)
    for i, (group, name, label, action) in enumerate(steps):
        if lost is not None:
            got: Sequence[Item] = [_failed_item(group, name, label, "skipped", lost)]
        else:
            try:
                got = action()
            except NsightwrapError:
                raise
            except Exception as exc:
                # One measurement failing (out of memory, a kernel that does not compile) is
                # marked, and the others still run -- unless the CUDA context is gone (an illegal
                # address is sticky): then the rest is marked not measured, and nothing more runs.
                got = [_failed_item(group, name, label, "failed", _first_line(exc))]
                try:
                    env.torch.cuda.synchronize()
                except Exception as sticky:
                    lost = f"not measured: the CUDA context was lost when {group}: {label} failed ({_first_line(sticky)})"
                    env.warnings.append(f"{CONTEXT_LOST}: {group}: {label} failed ({_first_line(exc)}); "
                                        "the figures after it are missing")  # fmt: skip
        for item in got:
            if isinstance(item, BandwidthPoint):
                runner.curve.append(item)
            elif isinstance(item, LatencyPoint):
                runner.latency.append(item)
            else:
                runner.measurements.append(item)
        if progress is not None:
            progress(i + 1, len(steps), f"{group}: {label}", got[0] if got else None)
        if lost is None and group == "bandwidth" and (i + 1 == len(steps) or steps[i + 1][0] != "bandwidth"):
            runner.free()  # the two 1 GiB buffers
    if lost is None:
        runner.free()
    torch = env.torch
    try:
        import triton

        triton_version: str | None = triton.__version__
    except Exception:
        triton_version = None
    return DeviceFile(
        gpu=_gpu_id(env),
        mode=settings.mode,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        wall_s=round(time.monotonic() - t0, 2),
        measurements=tuple(runner.measurements),
        bandwidth_curve=tuple(runner.curve),
        latency_curve=tuple(runner.latency),
        software={"torch": torch.__version__, "triton": triton_version, "cuda": torch.version.cuda},
        warnings=tuple(env.warnings),
        nsightwrap_version=__version__,
    )
