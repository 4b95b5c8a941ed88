"""The gap decomposition in the HTML report: a waterfall per flagged benchmark (inline SVG drawn
by matplotlib, nothing fetched) and a table of every part with its evidence and fix."""

from __future__ import annotations

import io
from typing import Any

from nsightwrap.analysis.model import BenchmarkResult, RunResult
from nsightwrap.export import gap_text as g
from nsightwrap.export import reportfmt as f
from nsightwrap.export.escape import html as esc

#: Bar colours: the timing longer than ncu, shorter, the residual, the whole gap.
#: Waterfalls drawn at most (the worst flagged and unexplained benchmarks).
MAX_WATERFALLS = 12

COLORS = {"up": "#c44e52", "down": "#55a868", "residual": "#9a9a9a", "total": "#4c72b0"}


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Names are data, not TeX; SVG text stays text (small, searchable).
    plt.rcParams.update({"text.parse_math": False, "svg.fonttype": "none", "font.size": 9})
    return plt


def waterfall_svg(b: BenchmarkResult) -> str | None:
    """The waterfall of ``b``'s gap: each part from where the previous one ended, the residual,
    then the whole gap from zero; None without a decomposition."""
    gap = b.gap
    if gap is None:
        return None
    rows: list[tuple[str, float, float, str]] = []  # label, start (us), length (us), colour key
    at = 0.0
    for p in gap.parts:
        if abs(p.ns) < 5:
            continue  # a measured zero: listed in the table, no bar
        rows.append((g.label(p), at, p.ns / 1e3, "up" if p.ns > 0 else "down"))
        at += p.ns / 1e3
    rows.append(("residual", at, gap.residual_ns / 1e3, "residual"))
    rows.append(("timer - ncu", 0.0, gap.total_ns / 1e3, "total"))
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6.4, 0.42 * len(rows) + 0.9))
    ys = list(range(len(rows)))
    ax.barh(
        ys, [r[2] for r in rows], left=[r[1] for r in rows], color=[COLORS[r[3]] for r in rows], height=0.6
    )
    lo = min(0.0, *(min(r[1], r[1] + r[2]) for r in rows))
    hi = max(0.0, *(max(r[1], r[1] + r[2]) for r in rows))
    pad = (hi - lo) * 0.02 or 0.01
    for y, (_, start, length, _) in zip(ys, rows, strict=True):
        end = start + length
        ax.text(
            (max(start, end) + pad) if length >= 0 else (min(start, end) - pad),
            y,
            g.signed_us(length * 1e3),
            va="center",
            ha="left" if length >= 0 else "right",
            fontsize=8,
        )
    ax.axvline(0, color="#444", lw=0.8)
    ax.set_yticks(ys, [r[0] for r in rows])
    ax.invert_yaxis()
    span = hi - lo or 1.0
    ax.set_xlim(lo - 0.3 * span, hi + 0.3 * span)
    ax.set_xlabel("us per call (positive: the timing is longer than ncu)")
    ax.spines[["top", "right"]].set_visible(False)
    ax.set_title(f"{f.label(b)}: {g.headline(gap)}", fontsize=9, loc="left")
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def _table(b: BenchmarkResult) -> str:
    gap = b.gap
    assert gap is not None
    body = []
    for p in gap.parts:
        ev = "".join(f"<span>{esc(e)}</span>" for e in g.evidence_items(p.evidence))
        kern = g.kernel_rows(p)
        if kern:
            ev += (
                "<span>"
                + esc(
                    "; ".join(
                        f"{r.get('kernel')}: e={r.get('elasticity')} ({r.get('elasticity_source')})"
                        for r in kern
                    )
                )
                + "</span>"
            )
        name = f"<b>{esc(g.label(p))}</b>" if p.actionable else esc(g.label(p))
        body.append(
            f"<tr><td class='l'>{name}</td><td>{esc(g.signed_us(p.ns))}</td><td>{esc(g.share(p.ns, gap))}</td>"
            f"<td class='kernel'>{esc(p.message)}<div class='ev'>{ev}</div></td><td class='kernel'>{esc(p.fix)}</td></tr>"
        )
    body.append(
        f"<tr><td class='l'>residual</td><td>{esc(g.signed_us(gap.residual_ns))}</td>"
        f"<td>{esc(g.share(gap.residual_ns, gap))}</td><td class='kernel'>what no measurement explains</td><td></td></tr>"
    )
    body.append(
        f"<tr><td class='l'><b>total</b></td><td><b>{esc(g.signed_us(gap.total_ns))}</b></td>"
        f"<td>{esc(g.share(gap.total_ns, gap))}</td><td class='kernel'>{esc(g.headline(gap))}</td><td></td></tr>"
    )
    head = "<tr><th class='l'>part</th><th>time</th><th>of the timing</th><th class='l'>measured from</th><th class='l'>fix</th></tr>"
    return f"<div class='scroll'><table><thead>{head}</thead><tbody>{''.join(body)}</tbody></table></div>"


def gap_html(result: RunResult) -> list[str]:
    """``Where the gap comes from``: per flagged or unexplained benchmark (the worst
    ``MAX_WATERFALLS``) a waterfall and its table; the other benchmarks' tables folded."""
    with_gap = [b for b in result.benchmarks if b.gap is not None]
    if not with_gap:
        return []
    out = [
        "<h2>Where the gap comes from</h2>",
        "<p>timer - ncu (ncu at its own clocks), split into parts measured in this run; they add up, "
        "residual included. Parts in bold are ones the timing method can change.</p>",
    ]
    # A waterfall for the worst flagged and unexplained benchmarks (at most MAX_WATERFALLS: a
    # chart costs ~60 ms), their tables open; every other benchmark's table folded.
    look = [b for b in f.worst_first(with_gap) if b.verdict in f.TO_LOOK_AT]
    drawn = look[:MAX_WATERFALLS]
    if len(look) > len(drawn):
        out.append(
            f"<p>Waterfalls of the worst {len(drawn)} of {len(look):,} flagged or unexplained benchmarks; "
            "the others' tables are folded below.</p>"
        )
    for b in drawn:
        svg = waterfall_svg(b)
        out.append(f"<h3>{esc(f.label(b))} ({esc(f.verdict_text(b.verdict))})</h3>")
        if svg:
            out.append(f"<div class='chart waterfall'>{svg}</div>")
        out.append(_table(b))
    shown = {id(b) for b in drawn}
    rest = [b for b in f.by_verdict(with_gap) if id(b) not in shown]
    for b in rest:
        assert b.gap is not None
        out += [
            f"<details><summary>{esc(f.label(b))} ({esc(f.verdict_text(b.verdict))}): {esc(g.compact(b.gap))}</summary>",
            _table(b),
            "</details>",
        ]
    return out
