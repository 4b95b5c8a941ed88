"""Words and numbers shared by the compare exporters (terminal, Markdown, JSON, JUnit): time and
energy changes, spreads, the summary line, and each side's reconcile verdict in the report's words."""

from __future__ import annotations

from nsightwrap.analysis.model import Verdict as Reconcile
from nsightwrap.compare.energy import Energy
from nsightwrap.compare.verdicts import BenchVerdict, Comparison, Interval, Spread, Verdict
from nsightwrap.export import reportfmt as rf


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


def _j(v: float) -> str:
    for unit, scale in (("J", 1.0), ("mJ", 1e-3), ("uJ", 1e-6)):
        if abs(v) >= scale:
            return f"{v / scale:.4g} {unit}"
    return f"{v * 1e9:.4g} nJ"


def fmt_energy(s: Spread) -> str:
    """``1.23 mJ [1.21 mJ, 1.25 mJ] (n=8)``: median [min, Q3] per call."""
    return f"{_j(s.median)} [{_j(s.minimum)}, {_j(s.q3)}] (n={s.n})"


def energy_summary(c: Comparison) -> str:
    """``energy/call, 3 compared: 2 SAME, 1 MORE``."""
    counts = {w: sum(1 for v in c.energy if v.verdict is w) for w in Energy}
    return f"energy/call, {len(c.energy)} compared: " + ", ".join(f"{n} {w.value}" for w, n in counts.items() if n)


def reconcile_text(value: str | None) -> str:
    """A side's reconcile verdict (a report's ``verdict`` value) in the report's words; ``-``
    where that side carries none."""
    if value is None:
        return "-"
    try:
        return rf.verdict_text(Reconcile(value))
    except ValueError:
        return value


def reconcile_pair(c: Comparison, key: str) -> tuple[str, str]:
    """The baseline's and the current side's reconcile verdict of ``key``, in the report's words."""
    base, cur = c.reconcile.get(key, (None, None))
    return reconcile_text(base), reconcile_text(cur)
