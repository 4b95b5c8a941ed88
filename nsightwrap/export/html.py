"""Self-contained HTML report: tables, a bar chart per benchmark, the plain pass's clock trace and
per-kernel tables. Charts are inline SVG drawn by matplotlib; no script, font or style is
fetched from the network. Every name goes through ``escape.html``."""

from __future__ import annotations

import io
import shlex

from nsightwrap.export import reportfmt as f
from nsightwrap.export.escape import html as esc
from nsightwrap.model import BenchmarkResult, RunResult, Verdict

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em;color:#222;max-width:1300px}
table{border-collapse:collapse;margin:0.5em 0 1.5em 0;font-size:14px}
th,td{border:1px solid #ccc;padding:4px 8px;text-align:right;vertical-align:top}
th{background:#f3f3f3} td.l,th.l{text-align:left}
td.name{text-align:left;font-family:ui-monospace,Menlo,monospace;word-break:break-all;max-width:520px}
.flagged{color:#b00;font-weight:bold} .ok{color:#080} .other{color:#a60}
.cause{margin:0.3em 0 0.8em 1em} .ev{color:#555;font-size:13px;font-family:ui-monospace,monospace}
.charts{display:flex;flex-wrap:wrap;gap:12px} .chart{border:1px solid #ddd;padding:4px}
code,pre{background:#f6f6f6;padding:2px 4px}
"""


# One colour per source, the same in every chart even when a source is missing.
_COLORS = {"timer": "#4c72b0", "ncu raw": "#dd8452", "ncu @ref": "#c44e52", "nsys kernels": "#55a868", "nsys busy": "#8172b3"}


def _svg(fig: object) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")  # type: ignore[attr-defined]
    text = buf.getvalue()
    return text[text.index("<svg") :]


def _plt() -> object:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Names are data, not TeX: never parse "$...$"; keep SVG text as text (small, searchable).
    plt.rcParams.update({"text.parse_math": False, "svg.fonttype": "none", "font.size": 9})
    return plt


def _bar_chart(b: BenchmarkResult) -> str | None:
    pairs = [
        ("timer", b.timer.median_ns if b.timer else None),
        ("ncu raw", b.ncu.median_ns if b.ncu else None),
        ("ncu @ref", b.ncu.normalized_ns if b.ncu else None),
        ("nsys kernels", b.nsys.median_ns if b.nsys else None),
        ("nsys busy", b.nsys.busy_median_ns if b.nsys else None),
    ]
    shown = [(k, v) for k, v in pairs if v is not None]
    if not shown:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(3.6, 2.4))  # type: ignore[attr-defined]
    ax.bar([k for k, _ in shown], [v / 1e3 for _, v in shown], color=[_COLORS[k] for k, _ in shown])
    ax.set_ylabel("us (median per iteration)")
    ax.set_title(f.label(b), fontsize=9)
    ax.tick_params(axis="x", labelrotation=30)
    svg = _svg(fig)
    plt.close(fig)  # type: ignore[attr-defined]
    return svg


def _clock_chart(result: RunResult) -> str | None:
    if not result.clock_trace:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 2.4))  # type: ignore[attr-defined]
    ax.plot([c.t_s for c in result.clock_trace], [c.sm_clock_hz / 1e9 for c in result.clock_trace], lw=1)
    ax.set_xlabel("seconds into the plain pass")
    ax.set_ylabel("SM clock (GHz)")
    ax.set_title("SM clock during the plain pass (nvidia-smi samples)", fontsize=9)
    ax.grid(alpha=0.3)
    svg = _svg(fig)
    plt.close(fig)  # type: ignore[attr-defined]
    return svg


def _table(head: list[str], rows: list[list[str]], left: int = 1) -> str:
    th = "".join(f'<th class="l">{h}</th>' if i < left else f"<th>{h}</th>" for i, h in enumerate(head))
    body = "".join(
        "<tr>" + "".join(f'<td class="name">{c}</td>' if i < left else f"<td>{c}</td>" for i, c in enumerate(r)) + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _verdict(b: BenchmarkResult) -> str:
    cls = {Verdict.OK: "ok", Verdict.FLAGGED: "flagged"}.get(b.verdict, "other")
    return f'<span class="{cls}">{esc(f.VERDICT_TEXT[b.verdict])}</span>'


def render_html(result: RunResult) -> str:
    """The whole report as one HTML document (inline CSS and SVG)."""
    s = result.settings
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>nsightwrap report: {esc(result.run_dir)}</title><style>{_CSS}</style></head><body>",
        "<h1>nsightwrap report</h1>",
        f"<p>{esc(result.run_dir)}: {len(result.benchmarks)} benchmark(s), "
        f"<b>{len(result.flagged)} flagged</b>; tolerance {s.tolerance:.0%}, reference clock "
        f"<code>{esc(s.clock_ref)}</code>; ratio = timer / ncu at the reference clock.</p>",
    ]
    if not result.timer_found:
        parts.append("<p>No in-process timings were found: benchmarks come from the target's own NVTX ranges.</p>")
    rows = [
        [
            esc(f.label(b)),
            f.time_ns(b.timer.median_ns if b.timer else None),
            f.time_ns(b.ncu.median_ns if b.ncu else None),
            f.time_ns(b.ncu.normalized_ns if b.ncu else None),
            f.time_ns(b.nsys.median_ns if b.nsys else None),
            f.time_ns(b.nsys.busy_median_ns if b.nsys else None),
            f.clock_hz(b.ref_clock_hz),
            f.clock_hz(b.ncu.sm_clock_hz if b.ncu else None),
            f.ratio(b.ratio),
            _verdict(b),
        ]
        for b in result.benchmarks
    ]
    head = ["benchmark", "timer", "ncu raw", "ncu @ref", "nsys kernels", "nsys busy", "ref clock", "ncu clock", "ratio", "verdict"]
    parts += ["<h2>Summary</h2>", _table(head, rows)]
    charts = [c for b in result.benchmarks if (c := _bar_chart(b))]
    if charts:
        parts += ["<h2>Timings side by side</h2><div class='charts'>", *(f"<div class='chart'>{c}</div>" for c in charts), "</div>"]
    if result.flagged:
        parts.append("<h2>Flagged benchmarks</h2>")
        for b in result.flagged:
            parts.append(f"<h3>{esc(f.label(b))}</h3><p>ratio {f.ratio(b.ratio)} (at ncu's own clock {f.ratio(b.ratio_raw)})</p>")
            for cause in b.causes:
                ev = ", ".join(esc(f.evidence_item(k, v)) for k, v in cause.evidence.items() if v is not None)
                parts.append(
                    f"<div class='cause'><b>{esc(cause.code.value)}</b>: {esc(cause.message)}"
                    f"<div class='ev'>evidence: {ev}</div><div>fix: {esc(cause.fix)}</div></div>"
                )
    clock = _clock_chart(result)
    if clock:
        parts += ["<h2>SM clock, plain pass</h2>", f"<div class='chart'>{clock}</div>"]
    env_rows = [[esc(k), esc(v)] for k, v in f.environment_items(result)]
    parts += ["<h2>Environment</h2>", _table(["", ""], env_rows)]
    if result.environment.command:
        parts += ["<h2>Reproduce</h2>", f"<pre>{esc(shlex.join(result.environment.command))}</pre>"]
    if any(b.ncu and b.ncu.kernels for b in result.benchmarks):
        parts.append("<h2>Per-kernel details (ncu)</h2>")
    kernel_head = ["kernel", "iter", "duration", "SM clock", "cycles", "SM %", "memory %", "clock model", "at ref clock"]
    for b in result.benchmarks:
        if b.ncu and b.ncu.kernels:
            krows = [
                [esc(k.kernel), str(k.iteration), f.time_ns(k.duration_ns), f.clock_hz(k.sm_clock_hz), f.value(k.cycles),
                 f.value(k.sm_throughput_pct), f.value(k.memory_throughput_pct), esc(k.clock_model.value), f.time_ns(k.normalized_ns)]
                for k in b.ncu.kernels
            ]  # fmt: skip
            parts += [f"<details><summary>{esc(f.label(b))}: {len(krows)} kernels profiled by ncu</summary>", _table(kernel_head, krows), "</details>"]
    notes = [*result.notes, *(f"{f.label(b)}: {n}" for b in result.benchmarks for n in b.notes)]
    if notes:
        parts += ["<h2>Notes</h2><ul>", *(f"<li>{esc(n)}</li>" for n in notes), "</ul>"]
    parts.append("</body></html>")
    return "\n".join(parts)
