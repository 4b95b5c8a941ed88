"""Words and numbers shared by the compare exporters (table and Markdown)."""

from __future__ import annotations

from nsightwrap.compare.verdicts import BenchVerdict, Comparison, Interval, Verdict


def _unit(ns: float) -> tuple[float, str]:
    if ns >= 1e6:
        return 1e6, "ms"
    if ns >= 1e3:
        return 1e3, "us"
    return 1.0, "ns"


def fmt_change(iv: Interval | None) -> str:
    """A ratio as a signed percentage with its interval: '+10.1% [+9.5%, +10.8%]'."""
    if iv is None:
        return "-"

    def p(r: float) -> str:
        return f"{(r - 1.0) * 100.0:+.1f}%"

    return f"{p(iv.estimate)} [{p(iv.low)}, {p(iv.high)}]"


def fmt_spread(v: BenchVerdict, side: str) -> str:
    """'median [min, Q3] unit (n)' of one side, in one unit."""
    s = v.baseline if side == "baseline" else v.current
    scale, unit = _unit(s.median)
    d = 0 if scale == 1.0 else 2
    return f"{s.median / scale:.{d}f} [{s.minimum / scale:.{d}f}, {s.q3 / scale:.{d}f}] {unit} (n={s.n})"


def fmt_geomean(r: float | None) -> str:
    return "-" if r is None else f"x{r:.3f} ({(r - 1.0) * 100.0:+.1f}%)"


def summary(c: Comparison) -> str:
    """One line: counts per verdict, geometric means, added and removed."""
    counts = c.counts()
    parts = [f"{counts[v]} {v.value}" for v in Verdict]
    line = f"{len(c.verdicts)} compared: " + ", ".join(parts)
    line += f"; geomean time {fmt_geomean(c.geomean_ratio)}"
    if c.geomean_cycles_ratio is not None:
        line += f", cycles {fmt_geomean(c.geomean_cycles_ratio)}"
    if c.added or c.removed:
        line += f"; {len(c.added)} added, {len(c.removed)} removed"
    return line


def settings_line(c: Comparison) -> str:
    s = c.settings
    return (
        f"metric {c.metric}, threshold {s.threshold * 100:g}%, {s.confidence:.0%} bootstrap interval of the "
        f"median ratio ({s.resamples} resamples, seed {s.seed}), Mann-Whitney alpha {s.alpha:g}, "
        f"at least {s.min_samples} samples"
    )
