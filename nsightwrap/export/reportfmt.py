"""Words and numbers of the run report shared by every format (text only: no computing): times,
clocks, ratios, the verdict vocabulary, the environment rows and a merged run's shard words."""

from __future__ import annotations

import math
from collections.abc import Sequence

from nsightwrap.analysis.model import (
    BenchmarkResult,
    GpuSpread,
    GpuVariance,
    RunResult,
    ShardSummary,
    Verdict,
)
from nsightwrap.export.escape import terminal_safe

#: Clock sources that read the SM clock on the GPU itself while the benchmark ran: nsys GPU
#: metrics, the timer's stamps (clock64 against globaltimer) or its clock probe. This is what
#: "measured on the GPU" means in every report; a clock given with --clock-ref is "given".
GPU_MEASURED = ("nsys GPU metrics", "probe", "stamps")
_GIVEN = ("given", "boost", "base")


def ratio_clock_kind(b: BenchmarkResult) -> str:
    """Where the clock of ``b``'s ratio comes from: ``gpu`` (measured on the GPU), ``given``,
    ``host`` (read from the host: NVML, nvidia-smi) or ``own`` (ncu's own clocks)."""
    if b.ratio_clock_hz is None:
        return "own"
    src = b.ref_clock_source or ""
    if any(s in src for s in GPU_MEASURED):
        return "gpu"
    if any(s in src for s in _GIVEN):
        return "given"
    return "host"


_KIND_WORDS = (
    ("gpu", "at a clock measured on the GPU"),
    ("host", "at a clock read from the host"),
    ("given", "at a given clock"),
    ("own", "at ncu's own clocks"),
)


def clock_text(result: RunResult) -> str:
    """What the ratios are taken at, in words: the clock each verdict used, and how many of those
    clocks were measured on the GPU, read from the host, given, or are ncu's own."""
    kinds = [ratio_clock_kind(b) for b in result.benchmarks if b.ratio is not None]
    parts = [f"{kinds.count(k)} {what}" for k, what in _KIND_WORDS if kinds.count(k)]
    counts = f" ({', '.join(parts)})" if parts else ""
    return (
        f"ratio @clock = timer / ncu at the clock each verdict used{counts}; ratio raw = timer / ncu at "
        f"ncu's own clocks; spread = the timer's interquartile range / median (n samples); clock policy "
        f"--clock-ref {result.settings.clock_ref}"
    )


def time_ns(ns: float | None) -> str:
    """``17.31 us``, ``0.508 ms``; ``-`` when unknown."""
    if ns is None or not math.isfinite(ns):
        return "-"
    if abs(ns) >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if abs(ns) >= 1e3:
        return f"{ns / 1e3:.2f} us"
    return f"{ns:.0f} ns"


def clock_hz(hz: float | None) -> str:
    """``1.980 GHz``; ``-`` when unknown."""
    if hz is None or not math.isfinite(hz):
        return "-"
    return f"{hz / 1e9:.3f} GHz"


def elasticity(e: float | None, source: str) -> str:
    """A kernel's clock elasticity: ``0.89`` when measured, ``1 (guess)`` from the heuristic."""
    if e is None or not math.isfinite(e):
        return "-"
    return f"{e:.2f}" if source == "measured" else f"{e:.0f} (guess)"


def base_run(duration_ns: float | None, clock: float | None) -> str:
    """The base-clock ncu measurement of a kernel: ``13.52 us @ 1.410 GHz``; ``-`` without one."""
    if duration_ns is None or not math.isfinite(duration_ns):
        return "-"
    return f"{time_ns(duration_ns)} @ {clock_hz(clock)}"


def counters_run(duration_ns: float | None) -> str:
    """The ncu pass's own duration of a kernel whose duration comes from the duration pass (its
    counters' replay passes can read it longer); ``-`` where there is none."""
    if duration_ns is None or not math.isfinite(duration_ns):
        return "-"
    return time_ns(duration_ns)


def ratio(r: float | None) -> str:
    """``1.30x``; ``-`` when there is nothing to compare."""
    return "-" if r is None or not math.isfinite(r) else f"{r:.2f}x"


def value(v: object) -> str:
    """An evidence value: times and clocks by their key's unit suffix are formatted by the caller."""
    if isinstance(v, float):
        return f"{v:.4g}"
    return "-" if v is None else str(v)


def evidence_item(key: str, v: object) -> str:
    """``key=value`` with ns and Hz shown in readable units."""
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if key.endswith("_ns"):
            return f"{key}={time_ns(float(v))}"
        if key.endswith("_hz"):
            return f"{key}={clock_hz(float(v))}"
    return f"{key}={value(v)}"


def label(b: BenchmarkResult) -> str:
    """Benchmark name with its parameters: ``mm[M=64,N=4096]``; control and bidi characters
    shown escaped, since names are the user's data and must never drive a terminal."""
    if not b.params or "[" in b.name:
        return terminal_safe(b.name)
    return terminal_safe(f"{b.name}[{','.join(f'{k}={v}' for k, v in b.params.items())}]")


# ------------------------------------------------------------------ the verdict vocabulary
# One place for the words, the order and the colours of a reconcile verdict: every format
# (terminal, Markdown, HTML, JSON summary, compare) reads them from here.

#: The word every format shows for a verdict.
VERDICT_TEXT = {
    Verdict.OK: "ok",
    Verdict.EXPLAINED: "explained",
    Verdict.FLAGGED: "flagged",
    Verdict.UNEXPLAINED: "unexplained",
    Verdict.PARTLY_EXPLAINED: "partly explained",
    Verdict.NO_TIMER: "no timer",
    Verdict.NO_NCU: "no ncu",
    Verdict.NO_DATA: "no data",
}

#: Worst first: what a reader must act on (a wrong timing, a gap nothing explains) before what
#: agrees, then the benchmarks that could not be checked.
VERDICT_ORDER = (
    Verdict.FLAGGED,
    Verdict.UNEXPLAINED,
    Verdict.PARTLY_EXPLAINED,
    Verdict.EXPLAINED,
    Verdict.OK,
    Verdict.NO_DATA,
    Verdict.NO_TIMER,
    Verdict.NO_NCU,
)
_RANK = {v: i for i, v in enumerate(VERDICT_ORDER)}

#: rich styles of the terminal formats.
VERDICT_STYLE = {
    Verdict.OK: "green",
    Verdict.EXPLAINED: "cyan",
    Verdict.FLAGGED: "bold red",
    Verdict.UNEXPLAINED: "bold magenta",
    Verdict.PARTLY_EXPLAINED: "blue",
}
OTHER_STYLE = "yellow"

#: Colours of the HTML report and its charts (CSS class = the verdict's word, spaces as "-").
VERDICT_COLOR = {
    Verdict.OK: "#080",
    Verdict.EXPLAINED: "#077",
    Verdict.FLAGGED: "#b00",
    Verdict.UNEXPLAINED: "#a0a",
    Verdict.PARTLY_EXPLAINED: "#36a",
}
OTHER_COLOR = "#a60"

#: Verdicts a reader must look at: their causes are listed in every format.
TO_LOOK_AT = (Verdict.FLAGGED, Verdict.UNEXPLAINED, Verdict.PARTLY_EXPLAINED)


def verdict_text(v: Verdict) -> str:
    """The word of a verdict (``ok``, ``explained``, ``flagged``, ``unexplained``, ``no timer``, ...)."""
    return VERDICT_TEXT.get(v, str(getattr(v, "value", v)).replace("_", " "))


def verdict_style(v: Verdict) -> str:
    """The rich style of a verdict's word."""
    return VERDICT_STYLE.get(v, OTHER_STYLE)


def verdict_color(v: Verdict) -> str:
    """The HTML colour of a verdict."""
    return VERDICT_COLOR.get(v, OTHER_COLOR)


def verdict_class(v: Verdict) -> str:
    """The HTML class of a verdict: its word, ``-`` for spaces (``no-timer``)."""
    return verdict_text(v).replace(" ", "-")


def verdict_rank(v: Verdict) -> int:
    """0 for the worst verdict (flagged); larger is better, unchecked ones last."""
    return _RANK.get(v, len(VERDICT_ORDER))


def verdict_counts(benchmarks: Sequence[BenchmarkResult]) -> dict[Verdict, int]:
    """Benchmarks per verdict, in ``Verdict``'s order, verdicts no benchmark has left out."""
    counts = dict.fromkeys(Verdict, 0)
    for b in benchmarks:
        counts[b.verdict] = counts.get(b.verdict, 0) + 1
    return {v: n for v, n in counts.items() if n}


def count_text(benchmarks: Sequence[BenchmarkResult]) -> str:
    """``12 benchmarks: 7 ok, 3 explained, 1 flagged, 1 unexplained``."""
    n = len(benchmarks)
    parts = ", ".join(f"{k} {verdict_text(v)}" for v, k in verdict_counts(benchmarks).items())
    return f"{n} benchmark{'' if n == 1 else 's'}" + (f": {parts}" if parts else "")


def by_verdict(benchmarks: Sequence[BenchmarkResult]) -> list[BenchmarkResult]:
    """Benchmarks worst verdict first (``VERDICT_ORDER``), the run's order kept within a verdict."""
    return sorted(benchmarks, key=lambda b: verdict_rank(b.verdict))


def worst_first(benchmarks: Sequence[BenchmarkResult]) -> list[BenchmarkResult]:
    """Benchmarks worst verdict first, then by how far the ratio is from 1: the ones to show
    when not all of them fit."""

    def key(b: BenchmarkResult) -> tuple[int, float]:
        off = abs(math.log(b.ratio)) if b.ratio and b.ratio > 0 and math.isfinite(b.ratio) else 0.0
        return verdict_rank(b.verdict), -off

    return sorted(benchmarks, key=key)


def to_look_at(result: RunResult) -> list[BenchmarkResult]:
    """The flagged and unexplained benchmarks, worst first: the ones whose causes are listed."""
    return by_verdict([b for b in result.benchmarks if b.verdict in TO_LOOK_AT])


def look_title(look: Sequence[BenchmarkResult]) -> str:
    """``Flagged benchmarks``, ``Unexplained benchmarks`` or ``Flagged and unexplained benchmarks``."""
    words = [verdict_text(v) for v in TO_LOOK_AT if any(b.verdict is v for b in look)]
    text = ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else "".join(words)
    return text.capitalize() + " benchmarks"


def environment_items(result: RunResult) -> list[tuple[str, str]]:
    """(label, text) rows of the environment fingerprint."""
    e = result.environment
    items = [
        ("GPU", e.gpu_name),
        ("driver", e.driver),
        ("CUDA", e.cuda),
        ("torch", e.torch),
        ("ncu", e.ncu_version),
        ("nsys", e.nsys_version),
        ("max SM clock", clock_hz(e.sm_clock_max_hz)),
        ("base (default applications) clock", clock_hz(e.sm_clock_base_hz)),
        ("persistence mode", e.persistence_mode),
        ("clock event reasons", ", ".join(e.throttle_reasons) or "none active"),
        ("ncu cache control", e.ncu_cache_control),
    ]
    return [(k, "-" if v is None else str(v)) for k, v in items]


#: Headers of the summary's number columns, in the order of ``summary_numbers``: "@clock" is the
#: clock in the ``clock`` column, the one the verdict used; "raw" is at ncu's own clocks.
SUMMARY_NUMBER_HEADERS = (
    "timer", "spread (n)", "ncu raw", "ncu @clock", "nsys kernels", "nsys busy", "clock", "ncu clock",
    "ratio @clock", "ratio raw",
)  # fmt: skip


def ratio_clock(b: BenchmarkResult) -> str:
    """The clock ``b``'s ratio is at: ``1.980 GHz``; ``ncu's`` at ncu's own clocks; ``-`` without a ratio."""
    if b.ratio is None:
        return "-"
    return clock_hz(b.ratio_clock_hz) if b.ratio_clock_hz is not None else "ncu's"


def spread(b: BenchmarkResult) -> str:
    """The timer's spread and sample count: ``6.1% (439)``; ``- (1)`` with one sample; ``-`` without a timer."""
    if b.timer is None:
        return "-"
    sp = b.timer.spread
    return f"{'-' if sp is None else f'{sp:.1%}'} ({b.timer.n})"


def noisy_text(b: BenchmarkResult) -> str:
    """Why the verdict cannot be trusted to the tolerance, else ``""``: ``noisy: IQR 18.4%`` for
    samples that spread wider than it, ``clock unresolved: 1.15x at another measured clock`` where
    a clock measured for the loop that the verdict did not use puts the ratio across (the
    kernels' own durations in the loop, where its measured clock was contradicted; the clock run's
    or the nsys pass's clock, where neither is known to be the plain pass's)."""
    sp = b.timer.spread if b.timer is not None else None
    marks = [f"noisy: IQR {sp:.1%}"] if b.noisy and sp is not None else []
    if b.clock_unresolved_ratio is not None:
        marks.append(f"clock unresolved: {b.clock_unresolved_ratio:.2f}x at another measured clock")
    return "; ".join(marks)


def verdict_cell(b: BenchmarkResult) -> str:
    """The verdict's word, with the noise mark beside it: ``ok (noisy: IQR 18.4%)``."""
    mark = noisy_text(b)
    return verdict_text(b.verdict) + (f" ({mark})" if mark else "")


def ratio_line(b: BenchmarkResult) -> str:
    """``ratio 1.49x at 1.980 GHz (raw 1.46x at ncu's own clocks)``: the verdict's ratio, its clock,
    and the raw one beside it."""
    at = f"at {clock_hz(b.ratio_clock_hz)}" if b.ratio_clock_hz is not None else "at ncu's own clocks"
    line = f"ratio {ratio(b.ratio)} {at}" if b.ratio is not None else "ratio -"
    if b.ratio_raw is not None and b.ratio_clock_hz is not None:
        line += f" (raw {ratio(b.ratio_raw)} at ncu's own clocks)"
    mark = noisy_text(b)
    return line + (f"; {mark}" if mark else "")


def summary_numbers(b: BenchmarkResult) -> list[str]:
    """The summary row's number cells of one benchmark, shared by the Markdown and HTML reports."""
    return [
        time_ns(b.timer.median_ns if b.timer else None),
        spread(b),
        time_ns(b.ncu.median_ns if b.ncu else None),
        time_ns(b.ncu_at_ratio_ns),
        time_ns(b.nsys.median_ns if b.nsys else None),
        time_ns(b.nsys.busy_median_ns if b.nsys else None),
        ratio_clock(b),
        clock_hz(b.ncu.sm_clock_hz if b.ncu else None),
        ratio(b.ratio),
        ratio(b.ratio_raw),
    ]


# ------------------------------------------------------------------ a merged run's shards

#: Rows of the spread table shown in the terminal and in Markdown (the widest spreads first);
#: the report JSON has every benchmark.
TOP_SPREADS = 15


def has_gpu_column(result: RunResult) -> bool:
    """Whether the summary names the GPU of each benchmark (a merged run)."""
    return any(b.gpu_uuid or b.shard is not None for b in result.benchmarks)


def gpu_tag(b: BenchmarkResult, *, full: bool = False) -> str:
    """The GPU a benchmark ran on: its UUID (short: ``GPU-…8e23aaed``, its last 8 digits, which
    tell the GPUs of one box apart), else its shard."""
    if b.gpu_uuid:
        return b.gpu_uuid if full else short_uuid(b.gpu_uuid)
    return f"shard {b.shard}" if b.shard is not None else "-"


def short_uuid(uuid: str) -> str:
    """``GPU-5c1c2662-50ec-2ab1-aa09-64c88e23aaed`` -> ``GPU-…8e23aaed``."""
    return f"{uuid[:4]}…{uuid[-8:]}" if len(uuid) > 16 else uuid


def percent(v: float | None) -> str:
    """``12.3%``; ``-`` when unknown."""
    return "-" if v is None or not math.isfinite(v) else f"{v:.1%}"


def _unit_num(v: float | None, fmt: str, unit: str) -> str:
    return "-" if v is None or not math.isfinite(v) else f"{v:{fmt}} {unit}"


def shard_cells(s: ShardSummary) -> list[str]:
    """The cells of one shard's row, in ``SHARD_HEADERS`` order."""
    return [
        str(s.index), s.status, s.gpu_uuid or "-", s.host or "-", str(s.benchmarks), clock_hz(s.sm_clock_hz),
        _unit_num(s.temperature_c, ".0f", "C"), _unit_num(s.power_limit_w, ".0f", "W"), _unit_num(s.wall_s, ".1f", "s"),
    ]  # fmt: skip


SHARD_HEADERS = ["shard", "status", "GPU", "host", "benchmarks", "SM clock", "max temp", "power limit", "wall"]


def spread_rows(v: GpuVariance, limit: int | None) -> list[GpuSpread]:
    """The variance rows, widest spread first (the first ``limit``; all when None)."""
    rows = sorted(v.spreads, key=lambda s: -(s.spread or 0.0))
    return rows if limit is None else rows[:limit]


def variance_line(v: GpuVariance) -> str:
    """One line on the GPU-to-GPU spread of a replicated run."""
    return (
        f"{len(v.spreads)} benchmark(s) on {len(v.gpus)} GPUs ({v.metric} medians): spread median "
        f"{percent(v.median_spread)}, largest {percent(v.max_spread)}; spread = (slowest - fastest) / median"
    )


def slow_lines(v: GpuVariance) -> list[str]:
    """The GPUs found slower, or one line saying none is."""
    if v.slow:
        return [s.message for s in v.slow]
    tail = f" ({v.note})" if v.note else ""
    return [f"no GPU is consistently slower (sign test at alpha {v.alpha:g}, at least {v.threshold:.0%} slower){tail}"]

