"""The notebook's view of a run: a small HTML fragment (counts, the worst few benchmarks, every
benchmark behind a click) whose CSS is scoped to its own root, so that it restyles nothing of the
page it is shown in. The full report (charts, causes, kernels) is ``html.render_html``; shown in
a notebook it goes into a sandboxed iframe (``iframe``), where its page-wide CSS stays inside."""

from __future__ import annotations

import html as _html
import shlex

from nsightwrap.analysis.model import BenchmarkResult, RunResult
from nsightwrap.export import reportfmt as f
from nsightwrap.export.escape import html as esc

#: Benchmarks in the open table (worst first) and at most in the one behind the click: a
#: 1,000-benchmark run stays a few tens of KB; the rest is in ``run.to_frame()``.
WORST = 5
MAX_ALL = 100

# (selector relative to the root, declarations); "" is the root itself. Every rule is written
# under the root's id by ``scoped_css``: a notebook page keeps its own look.
_RULES: tuple[tuple[str, str], ...] = (
    ("", "font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;font-size:13px;color:#222"),
    ("table", "border-collapse:collapse;margin:0.3em 0;font-variant-numeric:tabular-nums"),
    ("th, td", "border:1px solid #ccc;padding:2px 6px;text-align:right;white-space:nowrap"),
    ("thead th", "background:#f3f3f3"),
    ("td.name", "text-align:left;font-family:ui-monospace,Menlo,monospace"),
    ("td.cause", "text-align:left;white-space:normal;max-width:36em"),
    # The verdicts' colours, the same as every other format's (reportfmt.VERDICT_COLOR).
    *((f".{f.verdict_class(v)}", f"color:{c}" + (";font-weight:bold" if v in f.TO_LOOK_AT else "")) for v, c in f.VERDICT_COLOR.items()),
    (".other", f"color:{f.OTHER_COLOR}"),
    ("p", "margin:0.3em 0"),
    ("code", "background:#f6f6f6;padding:1px 3px"),
    ("summary", "cursor:pointer"),
)


def scoped_css(root_id: str) -> str:
    """The fragment's CSS, every selector prefixed with ``#root_id``."""
    out = []
    for sel, decl in _RULES:
        sels = [f"#{root_id}" + (f" {s.strip()}" if s.strip() else "") for s in sel.split(",")] if sel else [f"#{root_id}"]
        out.append(f"{', '.join(sels)}{{{decl}}}")
    return "".join(out)


def _row(b: BenchmarkResult) -> str:
    cls = f.verdict_class(b.verdict) if b.verdict in f.VERDICT_COLOR else "other"
    cause = b.causes[0].message if b.causes else ""
    cells = (
        f"<td class='name'>{esc(f.label(b))}</td>"
        f"<td>{esc(f.time_ns(b.timer.median_ns if b.timer else None))}</td>"
        f"<td>{esc(f.time_ns(b.ncu_at_ratio_ns))}</td>"
        f"<td>{esc(f.ratio(b.ratio))}</td>"
        f"<td class='{cls}'>{esc(f.verdict_text(b.verdict))}</td>"
        f"<td class='cause'>{esc(cause)}</td>"
    )
    return f"<tr>{cells}</tr>"


def _table(rows: list[BenchmarkResult]) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("benchmark", "timer", "ncu @clock", "ratio @clock", "verdict", "first cause"))
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(_row(b) for b in rows)}</tbody></table>"


def summary_html(result: RunResult, root_id: str, *, worst: int = WORST, max_all: int = MAX_ALL) -> str:
    """The compact view: one count line, the ``worst`` worst benchmarks, all (up to ``max_all``)
    behind a ``<details>`` click, and where the full report is. ``root_id`` must be unique on
    the page (the CSS is scoped to it)."""
    s = result.settings
    ordered = f.worst_first(result.benchmarks)
    parts = [
        f"<div class='nsightwrap-run' id='{esc(root_id)}'><style>{scoped_css(root_id)}</style>",
        f"<p><b>nsightwrap run</b> <code>{esc(result.run_dir)}</code>: {esc(f.count_text(result.benchmarks))}; "
        f"tolerance {s.tolerance:.0%}, reference clock <code>{esc(s.clock_ref)}</code>; "
        "ratio = timer / ncu at the reference clock</p>",
    ]
    if result.reader_crashes:
        parts.append(f"<p class='flagged'>{len(result.reader_crashes)} report reader crash(es): numbers are missing</p>")
    if ordered:
        shown = ordered[:worst]
        title = "worst first" if len(ordered) > len(shown) else "all"
        parts += [f"<p>{len(shown)} of {len(ordered)} benchmarks, {title}:</p>", _table(shown)]
    if len(ordered) > len(ordered[:worst]):
        listed = ordered[:max_all]
        more = len(ordered) - len(listed)
        tail = f"; {more} more in <code>run.to_frame()</code>" if more else ""
        parts += [
            f"<details><summary>All {len(ordered)} benchmarks (worst first{tail})</summary>",
            _table(listed),
            "</details>",
        ]
    notes = len(result.notes) + sum(len(b.notes) for b in result.benchmarks)
    flagged = sum(b.verdict in f.TO_LOOK_AT for b in result.benchmarks)
    parts.append(
        f"<p>{notes} note(s), {flagged} benchmark(s) to look at. Full report (charts, causes, kernels): "
        f"<code>run.full()</code>, or <code>nsightwrap report {esc(shlex.quote(result.run_dir))} --format html</code>; "
        "frames: <code>run.to_frame()</code>, <code>run.gaps()</code>, <code>run.kernels()</code>.</p></div>"
    )
    return "".join(parts)


def iframe(document: str, *, height_px: int = 700) -> str:
    """A whole HTML document inside a sandboxed iframe (``srcdoc``): its page-wide CSS and any
    script stay in the frame, away from the notebook page."""
    return (
        f"<iframe srcdoc=\"{_html.escape(document, quote=True)}\" sandbox='allow-scripts' "
        f"style='width:100%;height:{height_px}px;border:1px solid #ddd'></iframe>"
    )
