"""The timer's result type: ``BenchResult``, one benchmark's samples, statistics and method.

Plain data with a JSON round trip (the sidecar); no torch, no NVML. Times in ns, clocks in Hz.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nsightwrap.core import contract
from nsightwrap.core.errors import ReportParseError
from nsightwrap.core.units import format_ns
from nsightwrap.timer.stats import summarize


def _opt_float(v: Any) -> float | None:
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else float(v)


def _json_safe(v: Any) -> Any:
    # Sidecars are strict JSON: NaN and inf (e.g. rel_ci of one sample) become null.
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_safe(x) for x in v]
    return v


def _fmt_time(ns: float) -> str:
    return format_ns(ns, 4, missing="n/a")


class Reason(str, enum.Enum):
    """Reason codes a result carries in ``reasons``: what to know before trusting it."""

    #: The budget or the sample cap ended the loop before the median reached ``rel_precision``.
    PRECISION_NOT_REACHED = "precision_not_reached"
    #: Some samples ran with the SM clock under the throttle threshold and were left out.
    THROTTLED_SAMPLES_LEFT_OUT = "throttled_samples_left_out"
    #: Every sample ran under the threshold: the statistics use them all, read them as throttled.
    EVERY_SAMPLE_THROTTLED = "every_sample_throttled"
    #: The first samples ran while the SM clock was still coming back from earlier work (more
    #: than ``settle_tolerance`` under the clock the benchmark settled at) and were left out.
    SETTLING_SAMPLES_LEFT_OUT = "settling_samples_left_out"
    #: ``fn`` blocks the host (a synchronize, ``.item()``): the queue could not be held, and the
    #: windows hold host time and launch latency.
    FN_BLOCKS_HOST = "fn_blocks_host"
    #: No SM clock was measured on the GPU (no Triton stamp kernel): per-sample clocks are NVML's.
    NO_GPU_CLOCK = "no_gpu_clock"


@dataclass(frozen=True)
class BenchResult:
    """One benchmark's timing. ``samples_ns`` holds every sample the statistics use, per call,
    after the subtraction named in ``method['overhead_ns']`` (raw event window =
    ``sample * method['calls_per_sample'] + method['overhead_ns']``); ``sample_clock_hz`` is
    each one's SM clock. Samples left out because the SM clock was under the throttle threshold
    are kept apart in ``rejected_ns`` / ``rejected_clock_hz``; ``throttled`` counts them.
    ``kernel_ns`` is the CUPTI kernel time of one call (median of a few extra calls), ``reasons``
    the reason codes of anything the result should be read with (docs/timer.md)."""

    name: str
    params: Mapping[str, Any]
    samples_ns: tuple[float, ...]
    median_ns: float
    min_ns: float
    mean_ns: float
    stdev_ns: float
    iqr_ns: float
    n: int
    sm_clock_hz: float | None = None
    clock_source: str = "none"
    sample_clock_hz: tuple[float | None, ...] | None = None
    throttled: int = 0
    throttle_reasons: tuple[str, ...] = ()
    method: Mapping[str, Any] = field(default_factory=dict)
    flops: float | None = None
    bytes: float | None = None
    timed: bool = True
    #: NVML energy, power and temperature (``timer.energy.power_record``; docs/power.md), or None.
    power: Mapping[str, Any] | None = None
    rejected_ns: tuple[float, ...] = ()
    rejected_clock_hz: tuple[float | None, ...] = ()
    kernel_ns: float | None = None
    kernel_samples_ns: tuple[float, ...] = ()
    reasons: tuple[str, ...] = ()

    @classmethod
    def from_samples(cls, name: str, samples_ns: Sequence[float], **kw: Any) -> BenchResult:
        """Build a result from raw per-call samples (ns), computing the summary fields."""
        s = summarize(samples_ns)
        return cls(
            name=name,
            params=dict(kw.pop("params", None) or {}),
            samples_ns=tuple(float(x) for x in samples_ns),
            median_ns=s.median,
            min_ns=s.min,
            mean_ns=s.mean,
            stdev_ns=s.stdev,
            iqr_ns=s.iqr,
            n=s.n,
            **kw,
        )

    # convenience views -----------------------------------------------------------------------
    @property
    def nvtx_path(self) -> str:
        """Path of the benchmark's range as the parsers write it (``nsightwrap:<name>``)."""
        return f"{contract.NVTX_DOMAIN}:{self.name}"

    @property
    def median_ms(self) -> float:
        return self.median_ns / 1e6

    @property
    def min_ms(self) -> float:
        return self.min_ns / 1e6

    @property
    def mean_ms(self) -> float:
        return self.mean_ns / 1e6

    @property
    def samples_ms(self) -> tuple[float, ...]:
        return tuple(x / 1e6 for x in self.samples_ns)

    @property
    def tflops(self) -> float | None:
        """Achieved TFLOP/s at the median, when ``flops`` was given."""
        if not self.flops or not self.median_ns > 0:
            return None
        return self.flops / self.median_ns / 1e3

    @property
    def gbps(self) -> float | None:
        """Achieved GB/s (1e9 bytes/s) at the median, when ``bytes`` was given."""
        if not self.bytes or not self.median_ns > 0:
            return None
        return self.bytes / self.median_ns

    # (de)serialization -----------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The sidecar entry of this benchmark (docs/contracts.md); NaN becomes null."""
        return {
            "name": self.name,
            "params": dict(self.params),
            "nvtx_path": self.nvtx_path,
            "timed": self.timed,
            "samples_ns": list(self.samples_ns),
            "median_ns": _opt_float(self.median_ns),
            "min_ns": _opt_float(self.min_ns),
            "mean_ns": _opt_float(self.mean_ns),
            "stdev_ns": _opt_float(self.stdev_ns),
            "iqr_ns": _opt_float(self.iqr_ns),
            "n": self.n,
            "sm_clock_hz": _opt_float(self.sm_clock_hz),
            "clock_source": self.clock_source,
            "sample_clock_hz": None
            if self.sample_clock_hz is None
            else [_opt_float(v) for v in self.sample_clock_hz],
            "throttled": self.throttled,
            "throttle_reasons": list(self.throttle_reasons),
            "method": _json_safe(dict(self.method)),
            "flops": self.flops,
            "bytes": self.bytes,
            "tflops": self.tflops,
            "gbps": self.gbps,
            "power": None if self.power is None else _json_safe(dict(self.power)),
            "rejected_ns": list(self.rejected_ns),
            "rejected_clock_hz": [_opt_float(v) for v in self.rejected_clock_hz],
            "kernel_ns": _opt_float(self.kernel_ns),
            "kernel_samples_ns": list(self.kernel_samples_ns),
            "reasons": list(self.reasons),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> BenchResult:
        """Inverse of ``to_dict``; ReportParseError names a missing field."""
        name = d.get("name", "?")

        def need(key: str) -> Any:
            if key not in d:
                raise ReportParseError(f"timer sidecar: benchmark {name!r} is missing field {key!r}")
            return d[key]

        def num(key: str) -> float:
            v = need(key)
            return math.nan if v is None else float(v)

        scs = d.get("sample_clock_hz")
        return cls(
            name=str(need("name")),
            params=dict(need("params")),
            samples_ns=tuple(float(x) for x in need("samples_ns")),
            median_ns=num("median_ns"),
            min_ns=num("min_ns"),
            mean_ns=num("mean_ns"),
            stdev_ns=num("stdev_ns"),
            iqr_ns=num("iqr_ns"),
            n=int(need("n")),
            sm_clock_hz=_opt_float(d.get("sm_clock_hz")),
            clock_source=str(d.get("clock_source", "none")),
            sample_clock_hz=None if scs is None else tuple(_opt_float(v) for v in scs),
            throttled=int(d.get("throttled", 0)),
            throttle_reasons=tuple(d.get("throttle_reasons", ())),
            method=dict(need("method")),
            flops=d.get("flops"),
            bytes=d.get("bytes"),
            timed=bool(d.get("timed", True)),
            power=dict(d["power"]) if isinstance(d.get("power"), Mapping) else None,
            rejected_ns=tuple(float(x) for x in d.get("rejected_ns") or ()),
            rejected_clock_hz=tuple(_opt_float(v) for v in d.get("rejected_clock_hz") or ()),
            kernel_ns=_opt_float(d.get("kernel_ns")),
            kernel_samples_ns=tuple(float(x) for x in d.get("kernel_samples_ns") or ()),
            reasons=tuple(str(x) for x in d.get("reasons") or ()),
        )

    def __str__(self) -> str:
        if self.method.get("shard_skipped"):
            return f"{self.name}: {self.method['shard_skipped']}"
        if not self.timed:
            return (
                f"{self.name}: not timed under the {self.method.get('pass')} pass "
                f"({self.method.get('ncu_iterations')} iterations for the profiler)"
            )
        head = (
            f"{self.name}: median {_fmt_time(self.median_ns)}  (min {_fmt_time(self.min_ns)}, "
            f"mean {_fmt_time(self.mean_ns)} ± {_fmt_time(self.stdev_ns)}, "
            f"IQR {_fmt_time(self.iqr_ns)}, n={self.n})"
        )
        extra = []
        if self.tflops is not None:
            extra.append(f"{self.tflops:.1f} TFLOP/s")
        if self.gbps is not None:
            extra.append(f"{self.gbps:.0f} GB/s")
        if self.kernel_ns is not None:
            copies = contract.kernel_time_copies(self.method)
            more = ""
            if copies is not None:  # memcpy/memset: inside the window, invisible to ncu
                count, ns = copies
                more = f" + {count:g} memcpy/memset" + (f" {_fmt_time(ns)}" if ns is not None else "")
            extra.append(f"kernel {_fmt_time(self.kernel_ns)}{more} (CUPTI)")
        if self.sm_clock_hz:
            clk = f"SM {self.sm_clock_hz / 1e9:.2f} GHz"
            if self.throttled:
                thr = self.method.get("throttle_threshold_hz")
                under = f" under {thr / 1e9:.2f} GHz" if isinstance(thr, (int, float)) and thr else ""
                clk += f", {self.throttled} samples left out (SM clock{under})"
            settling = self.method.get("settling_samples")
            if isinstance(settling, int) and settling:
                clk += f", first {settling} left out (clock settling)"
            if self.throttle_reasons:
                clk += f", NVML: {', '.join(self.throttle_reasons)}"
            extra.append(clk)
        m = self.method
        how = ["L2 flushed" if m.get("flush_l2") else "warm L2"]
        if m.get("hold_queue"):
            how.append("queue held")
        if m.get("cuda_graph"):
            how.append(f"CUDA graph x{m.get('calls_per_sample')}")
        if m.get("overhead_ns"):
            how.append(f"-{_fmt_time(m['overhead_ns'])} empty window")
        extra.append("; ".join(how))
        extra += _power_text(self.power, m.get("thermal_guard"))
        if self.reasons:
            extra.append(f"[{', '.join(self.reasons)}]")
        return head + "  " + "  ".join(extra)


def _power_text(power: Mapping[str, Any] | None, guard: Mapping[str, Any] | None) -> list[str]:
    """``1.23 mJ/call at 512 W, peak 61 C``, and the thermal guard's wait, for ``__str__``."""
    out = []
    steady = (power or {}).get("steady") or {}
    e, w = steady.get("energy_per_call_j"), steady.get("mean_w")
    if isinstance(e, (int, float)):
        text = f"{e * 1e3:.4g} mJ/call" if e >= 1e-3 else f"{e * 1e6:.4g} uJ/call"
        if isinstance(w, (int, float)):
            text += f" at {w:.0f} W"
        peak = max((v for v in ((power or {}).get("timed", {}).get("peak_temp_c"), steady.get("peak_temp_c"))
                    if isinstance(v, (int, float))), default=None)  # fmt: skip
        if peak is not None:
            text += f", peak {peak:.0f} C"
        out.append(text)
    if guard and not guard.get("skipped"):
        out.append(f"cooled {guard.get('waited_s', 0):.1f} s" + (" (timed out)" if guard.get("timed_out") else ""))
    return out


def bench_name(name: str, params: Mapping[str, Any] | None = None) -> str:
    """``name[k=v,k2=v2]`` for a parametrized benchmark, ``name`` otherwise."""
    if not params:
        return name
    return f"{name}[{','.join(f'{k}={v}' for k, v in params.items())}]"
