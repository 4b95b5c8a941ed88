"""The energy part of every compare format: a verdict on energy per call beside each time verdict
(``compare.energy``). Text, Markdown, JSON and JUnit properties; nothing when neither side has
energy samples."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text

from nsightwrap.compare.energy import EnergyVerdict
from nsightwrap.compare.verdicts import Comparison, Interval, Spread, Verdict
from nsightwrap.export.compare_text import fmt_change
from nsightwrap.export.escape import md_cell

_STYLE = {Verdict.SAME: "green", Verdict.FASTER: "bold cyan", Verdict.SLOWER: "bold red", Verdict.AMBIGUOUS: "yellow"}
#: Words for an energy verdict: more energy per call is the regression.
WORD = {Verdict.SAME: "SAME", Verdict.FASTER: "LESS", Verdict.SLOWER: "MORE", Verdict.AMBIGUOUS: "AMBIGUOUS"}


def _j(v: float) -> str:
    for unit, scale in (("J", 1.0), ("mJ", 1e-3), ("uJ", 1e-6)):
        if abs(v) >= scale:
            return f"{v / scale:.4g} {unit}"
    return f"{v * 1e9:.4g} nJ"


def fmt_energy(s: Spread) -> str:
    """``1.23 mJ [1.21 mJ, 1.25 mJ] (n=8)``: median [min, Q3] per call."""
    return f"{_j(s.median)} [{_j(s.minimum)}, {_j(s.q3)}] (n={s.n})"


def summary(c: Comparison) -> str:
    """``energy/call, 3 compared: 2 SAME, 1 MORE``."""
    counts = {w: sum(1 for v in c.energy if WORD[v.verdict] == w) for w in WORD.values()}
    return f"energy/call, {len(c.energy)} compared: " + ", ".join(f"{n} {w}" for w, n in counts.items() if n)


def energy_table(c: Comparison) -> list[Any]:
    """Renderables for the terminal table (a title-led table and its summary), or []."""
    if not c.energy:
        return []
    t = Table(title=Text("energy per call (NVML energy counter, one sample per block of the energy window)"),
              title_justify="left")  # fmt: skip
    for col in ("benchmark", "energy", "baseline median [min, Q3]", "current median [min, Q3]", "change [CI]", "reason"):
        t.add_column(col, overflow="fold")
    for v in c.energy:
        t.add_row(Text(v.key), Text(WORD[v.verdict], style=_STYLE[v.verdict]), Text(fmt_energy(v.baseline)),
                  Text(fmt_energy(v.current)), Text(fmt_change(v.ratio)), Text(v.reason.value))  # fmt: skip
    notes = [Text.assemble((f"{WORD[v.verdict]} ", _STYLE[v.verdict]), f"{v.key}: {v.message}")
             for v in c.energy if v.verdict is not Verdict.SAME]  # fmt: skip
    return [t, *notes, Text(summary(c))]


def energy_markdown(c: Comparison) -> list[str]:
    """A Markdown section with the energy verdicts, or []."""
    if not c.energy:
        return []
    out = [
        "#### Energy per call",
        "",
        "| benchmark | energy | baseline median [min, Q3] | current median [min, Q3] | change [CI] | reason |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for v in c.energy:
        word = f"**{WORD[v.verdict]}**" if v.verdict is Verdict.SLOWER else WORD[v.verdict]
        out.append("| " + " | ".join([md_cell(v.key), word, md_cell(fmt_energy(v.baseline)), md_cell(fmt_energy(v.current)),
                                      md_cell(fmt_change(v.ratio)), f"`{v.reason.value}` {md_cell(v.message)}"]) + " |")  # fmt: skip
    return [*out, "", md_cell(summary(c)), ""]


def _interval(iv: Interval | None) -> dict[str, float] | None:
    return None if iv is None else {"estimate": iv.estimate, "low": iv.low, "high": iv.high}


def _spread(s: Spread) -> dict[str, Any]:
    return {"median_j": s.median, "min_j": s.minimum, "q3_j": s.q3, "n": s.n}


def energy_json(c: Comparison) -> list[dict[str, Any]]:
    """The compare JSON's ``energy`` list (docs/compare.md)."""
    out = []
    for v in c.energy:
        assert isinstance(v, EnergyVerdict)
        out.append({"benchmark": v.key, "verdict": v.verdict.value, "reason": v.reason.value, "message": v.message,
                    "baseline": _spread(v.baseline), "current": _spread(v.current), "ratio": _interval(v.ratio),
                    "p_value": v.p_value})  # fmt: skip
    return out


def energy_properties(c: Comparison) -> dict[str, list[tuple[str, str]]]:
    """Per benchmark key, the JUnit properties of its energy verdict."""
    return {v.key: [("energy_verdict", v.verdict.value), ("energy_reason", v.reason.value),
                    ("energy_change", fmt_change(v.ratio))] for v in c.energy}  # fmt: skip
