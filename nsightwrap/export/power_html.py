"""The HTML report's energy and power section: the per-benchmark table and a timeline of the plain
pass (SM clock, power, temperature from its nvidia-smi samples, each benchmark's span shaded).
Inline SVG drawn by matplotlib; every name goes through ``escape.html``."""

from __future__ import annotations

import io
from typing import Any

from nsightwrap.analysis.model import RunResult
from nsightwrap.export import power_fmt as pf
from nsightwrap.export.escape import html as esc

_SHADES = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3", "#8c8c8c")


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # Names are data, not TeX: never parse "$...$"; keep SVG text as text (small, searchable).
    plt.rcParams.update({"text.parse_math": False, "svg.fonttype": "none", "font.size": 9})
    return plt


def has_timeline(result: RunResult) -> bool:
    """Whether ``timeline_svg`` draws a chart (it needs power or temperature samples)."""
    trace = result.clock_trace
    return bool(trace) and any(c.power_w is not None or c.temperature_c is not None for c in trace)


def timeline_svg(result: RunResult) -> str | None:
    """SM clock, power and temperature against time in the plain pass, or None without samples."""
    trace = result.clock_trace
    if not has_timeline(result):
        return None
    plt = _plt()
    fig, axes = plt.subplots(3, 1, figsize=(9, 4.6), sharex=True)
    t = [c.t_s for c in trace]
    series = (
        ([c.sm_clock_hz / 1e9 for c in trace], "SM clock (GHz)", "#4c72b0"),
        ([c.power_w if c.power_w is not None else float("nan") for c in trace], "power (W)", "#c44e52"),
        ([c.temperature_c if c.temperature_c is not None else float("nan") for c in trace], "GPU temp (C)", "#dd8452"),
    )
    for ax, (ys, label, color) in zip(axes, series, strict=True):
        ax.plot(t, ys, lw=1, color=color)
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    spans = [(b, b.power) for b in result.benchmarks if b.power is not None and b.power.t_start_s is not None]
    for i, (b, p) in enumerate(spans):
        assert p is not None and p.t_start_s is not None and p.t_end_s is not None
        for ax in axes:
            ax.axvspan(p.t_start_s, p.t_end_s, color=_SHADES[i % len(_SHADES)], alpha=0.12, lw=0)
        axes[0].text(p.t_start_s, 1.02, pf.row(b)[0], transform=axes[0].get_xaxis_transform(), fontsize=7,
                     rotation=30, va="bottom", ha="left")  # fmt: skip
    # The caption promises shading only where some was drawn.
    shaded = "; shaded: each benchmark's timed samples and energy window" if spans else ""
    axes[-1].set_xlabel(f"seconds into the plain pass (nvidia-smi samples{shaded})")
    fig.tight_layout()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]


def power_html(result: RunResult) -> list[str]:
    """``<h2>Energy and power</h2>``: the table, the method note and the timeline (else nothing)."""
    benches = pf.with_power(result)
    chart = timeline_svg(result)
    if not benches and chart is None:
        return []
    parts = ["<h2>Energy and power</h2>"]
    if benches:
        th = "".join(f'<th class="l">{h}</th>' if h in ("benchmark", "throttled by") else f"<th>{h}</th>" for h in pf.HEADERS)
        body = "".join(
            "<tr>" + "".join(
                f'<td class="name">{esc(c)}</td>' if i == 0 else (f"<td class='l'>{esc(c)}</td>" if i == 8 else f"<td>{esc(c)}</td>")
                for i, c in enumerate(pf.row(b))
            ) + "</tr>"
            for b in benches
        )  # fmt: skip
        parts += [f"<div class='scroll'><table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>",
                  f"<p class='ev'>{esc(pf.METHOD_NOTE)}</p>"]  # fmt: skip
        notes = pf.notes(result)
        if notes:
            parts += ["<ul class='notes'>", *(f"<li><b>{esc(w)}</b>: {esc(n)}</li>" for w, n in notes), "</ul>"]
    if chart is not None:
        parts += ["<h3>Plain pass: SM clock, power and temperature</h3>", f"<div class='chart'>{chart}</div>"]
    return parts
