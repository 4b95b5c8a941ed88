"""One verdict vocabulary in every format: the words, their order (worst first), their colours and
the count line, on the shipped run fixtures/runs/h200-example analysed for real, each benchmark
given one verdict with ``dataclasses.replace``; and each side's reconcile verdict in ``compare``."""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from lxml import etree
from rich.console import Console

from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import RunResult, Verdict
from nsightwrap.compare.sides import load_side
from nsightwrap.compare.verdicts import compare
from nsightwrap.export import reportfmt as f
from nsightwrap.export.html import render_html
from nsightwrap.export.jsonio import compare_dict, load_report_json, report_to_dict, write_report_json
from nsightwrap.export.junit import compare_junit
from nsightwrap.export.markdown import compare_markdown, render_full_markdown, render_markdown
from nsightwrap.export.terminal import compare_table, print_report
from nsightwrap.notebook import Run

RUN = Path(__file__).resolve().parent.parent / "fixtures" / "runs" / "h200-example"

#: One verdict per benchmark of the run (every reconcile verdict, and one that could not be checked).
VERDICTS = {
    "mm_large": Verdict.OK,
    "mm_skinny": Verdict.EXPLAINED,
    "mm_small": Verdict.FLAGGED,
    "add_small": Verdict.UNEXPLAINED,
    "copy_1g": Verdict.NO_TIMER,
    "softmax_mlp": Verdict.EXPLAINED,
    "two_streams": Verdict.OK,
}
COUNT = "7 benchmarks: 2 ok, 2 explained, 1 flagged, 1 unexplained, 1 no timer"


@pytest.fixture(scope="module")
def analysed() -> RunResult:
    return analyze(RUN)


@pytest.fixture(scope="module")
def result(analysed: RunResult) -> RunResult:
    assert {b.name for b in analysed.benchmarks} == set(VERDICTS)
    return replace(analysed, benchmarks=tuple(replace(b, verdict=VERDICTS[b.name]) for b in analysed.benchmarks))


def _rank(text: str, names: list[str]) -> list[int]:
    return [text.index(n) for n in names]


def test_one_mapping_and_the_count_line(result: RunResult) -> None:
    assert [f.verdict_text(v) for v in Verdict] == [
        "ok", "explained", "flagged", "unexplained", "partly explained", "no timer", "no ncu", "no data",
    ]  # fmt: skip
    assert f.count_text(result.benchmarks) == COUNT
    assert f.count_text(result.benchmarks[:1]) == "1 benchmark: 1 ok"
    assert [b.name for b in f.by_verdict(result.benchmarks)] == [
        "mm_small", "add_small", "mm_skinny", "softmax_mlp", "mm_large", "two_streams", "copy_1g",
    ]  # fmt: skip
    assert [b.name for b in f.to_look_at(result)] == ["mm_small", "add_small"]
    assert f.look_title(f.to_look_at(result)) == "Flagged and unexplained benchmarks"


def _ansi(result: RunResult) -> str:
    buf = io.StringIO()
    print_report(result, Console(file=buf, width=200, force_terminal=True, color_system="standard", highlight=False))
    return buf.getvalue()


def test_terminal_words_styles_order_and_count(result: RunResult) -> None:
    out = _ansi(result)
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert plain.splitlines()[0] == COUNT
    rows = [line for line in plain.splitlines() if line.startswith("│")]
    names = [r.split("│")[1].strip() for r in rows]
    assert names[:7] == ["mm_small", "add_small", "mm_skinny", "softmax_mlp", "mm_large", "two_streams", "copy_1g"]
    verdicts = [r.rstrip().rstrip("│").split("│")[-1].strip() for r in rows[:7]]
    assert [v.split(" (noisy")[0] for v in verdicts] == ["flagged", "unexplained", "explained", "explained", "ok", "ok", "no timer"]
    assert verdicts[1] == "unexplained (noisy: IQR 18.4%)"  # its samples spread wider than the tolerance
    assert "FLAGGED" not in plain
    # ok green (32), explained cyan (36), flagged red (31), unexplained magenta (35), others yellow (33).
    for word, colour in (("ok", "32"), ("explained", "36"), ("flagged", "31"), ("unexplained", "35"), ("no timer", "33")):
        assert re.search(rf"\x1b\[[0-9;]*{colour}m{word} *\x1b\[0m", out), word
    # The causes of both the flagged and the unexplained benchmark are listed, worst first.
    assert plain.index("mm_small (flagged): ratio") < plain.index("add_small (unexplained): ratio")


def test_markdown_words_order_and_count(result: RunResult) -> None:
    for md in (render_full_markdown(result), render_markdown(result, limit=3_000)):
        assert COUNT in md
        summary = md[md.index("| benchmark |") :]
        assert _rank(summary, ["| mm\\_small |", "| add\\_small |", "| mm\\_skinny |", "| mm\\_large |", "| copy\\_1g |"]) == sorted(
            _rank(summary, ["| mm\\_small |", "| add\\_small |", "| mm\\_skinny |", "| mm\\_large |", "| copy\\_1g |"])
        )
        assert "FLAGGED" not in md
    full = render_full_markdown(result)
    assert "## Flagged and unexplained benchmarks" in full
    assert "**flagged**: ratio" in full and "**unexplained**: ratio" in full
    row = next(line for line in full.splitlines() if line.startswith("| copy\\_1g |"))
    assert row.endswith("| no timer |") or row.endswith("| **no timer** |")
    assert "(unexplained): gap" in full  # the gap section's fold names the verdict


def test_html_and_notebook_words_classes_and_count(result: RunResult) -> None:
    page = render_html(result, max_charts=2, max_waterfalls=1)
    assert f"<b>{COUNT}</b>" in page
    for word in ("ok", "explained", "flagged", "unexplained"):
        assert f'<span class="{word}">{word}</span>' in page
    assert '<span class="other">no timer</span>' in page
    assert ".unexplained{color:#a0a" in page and ".explained{color:#077}" in page
    assert "<h2>Flagged and unexplained benchmarks</h2>" in page
    body = page[page.index("<h2>Summary</h2>") :]
    assert body.index(">mm_small<") < body.index(">add_small<") < body.index(">mm_skinny<") < body.index(">copy_1g<")
    # The notebook's compact view: the same words, classes, colours and count line.
    shown = Run(result)._repr_html_()
    rid = shown.split("id='")[1].split("'")[0]
    assert COUNT in shown
    for word in ("ok", "explained", "flagged", "unexplained"):
        assert f"<td class='{word}'>{word}</td>" in shown
    assert "<td class='other'>no timer</td>" in shown
    assert f"#{rid} .unexplained{{color:#a0a;font-weight:bold}}" in shown and f"#{rid} .explained{{color:#077}}" in shown
    names = re.findall(r"<td class='name'>([^<]+)</td>", shown)
    assert names[:2] == ["mm_small", "add_small"]


def test_html_charts_for_the_worst_only_and_says_so(result: RunResult) -> None:
    page = render_html(result, max_charts=2, max_waterfalls=1)
    assert "Charts of the worst 2 of 7 benchmarks" in page and "the other 5 are in the summary table" in page
    charts = page[page.index("<h2>Timings side by side</h2>") :]
    charts = charts[: charts.index("<h2>", 5)]
    assert charts.count("<svg") == 2
    assert "mm_small: flagged" in charts and "add_small: unexplained" in charts and "mm_large: ok" not in charts
    gap = page[page.index("<h2>Where the gap comes from</h2>") :]
    assert "Waterfalls of the worst 1 of 2 flagged or unexplained benchmarks" in gap
    assert gap.count("class='chart waterfall'") == 1
    # Every benchmark is still in the summary table.
    summary = page[page.index("<h2>Summary</h2>") : page.index("<h2>Flagged")]
    assert all(f">{name}<" in summary for name in VERDICTS)


def test_json_summary_counts(result: RunResult, tmp_path: Path) -> None:
    doc = report_to_dict(result)
    assert doc["summary"] == {
        "benchmarks": 7,
        "counts": {"flagged": 1, "unexplained": 1, "explained": 2, "ok": 2, Verdict.NO_TIMER.value: 1},
        "text": COUNT,
    }
    assert list(doc["summary"]["counts"]) == ["flagged", "unexplained", "explained", "ok", Verdict.NO_TIMER.value]
    assert {b["name"]: b["verdict"] for b in doc["benchmarks"]} == {k: v.value for k, v in VERDICTS.items()}
    path = tmp_path / "r.json"
    write_report_json(result, path, detail=True)
    assert load_report_json(path) == result  # the summary is derived: reading ignores it


def test_compare_shows_each_sides_reconcile_verdict(analysed: RunResult, result: RunResult, tmp_path: Path) -> None:
    base, cur = tmp_path / "base.json", tmp_path / "cur.json"
    write_report_json(analysed, base)
    write_report_json(result, cur)
    c = compare(load_side(base), load_side(cur))
    before = {b.name: b.verdict.value for b in analysed.benchmarks}
    assert c.reconcile["add_small"] == (before["add_small"], "unexplained")
    assert c.reconcile["copy_1g"][1] == Verdict.NO_TIMER.value
    key = next(v.key for v in c.verdicts if v.key == "add_small")
    word = f.verdict_text(Verdict(before["add_small"]))

    buf = io.StringIO()
    Console(file=buf, width=300, no_color=True, highlight=False).print(compare_table(c))
    table = buf.getvalue()
    assert "reconcile (baseline -> current)" in table
    assert re.search(rf"│ add_small .*│ {word} -> unexplained +│", table)
    md = compare_markdown(c)
    assert "reconcile (baseline -> current) |" in md
    assert re.search(rf"^\| add\\_small \|.*\| {word} -> unexplained \|$", md, re.M)
    js = compare_dict(c)
    row = next(b for b in js["benchmarks"] if b["benchmark"] == key)
    assert (row["baseline_reconcile"], row["current_reconcile"]) == (before["add_small"], "unexplained")
    json.dumps(js)
    xml = etree.fromstring(compare_junit(c))
    props = {p.get("name"): p.get("value") for p in xml.find(".//testcase[@name='copy_1g']").iter("property")}  # type: ignore[union-attr]
    assert props["current_reconcile"] == "no timer"


def test_compare_without_reconcile_verdicts_keeps_its_columns(result: RunResult, tmp_path: Path) -> None:
    sidecar = next((RUN / "plain").glob("timer-*.json"))
    c = compare(load_side(sidecar), load_side(sidecar))
    assert not c.reconcile
    assert "reconcile" not in compare_markdown(c)
    assert all("baseline_reconcile" not in b for b in compare_dict(c)["benchmarks"])


def test_terminal_cut_to_the_worst_says_what_it_left_out(result: RunResult) -> None:
    buf = io.StringIO()
    print_report(result, Console(file=buf, width=200, highlight=False), max_rows=3, max_details=1)
    out = buf.getvalue()
    assert out.splitlines()[0] == COUNT  # the count line covers every benchmark
    rows = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    worst = [b.name for b in f.worst_first(result.benchmarks)[:3]]
    assert worst[:2] == ["mm_small", "add_small"] and worst[2] in ("mm_skinny", "softmax_mlp")  # explained
    assert rows[:3] == worst and "mm_large" not in rows
    assert "the worst 3 of 7 benchmarks shown; 4 left out" in out
    assert "mm_small (flagged): ratio" in out and "add_small (unexplained): ratio" not in out
    assert "the causes of the worst 1 of 2 flagged or unexplained benchmarks shown" in out
    kept = {b.name: len(b.notes) for b in result.benchmarks}
    left = sum(n for name, n in kept.items() if name not in rows[:3])
    assert left > 0 and f"{left} notes of the benchmarks not in the table left out" in out
    assert "note: two_streams:" not in out


def test_every_format_says_which_clock_the_ratios_are_at() -> None:
    """The footer counts the benchmarks whose verdict's ratio is at a clock measured on the GPU and
    those at ncu's own clocks (the sweep: nsys slowed one loop too much for its clock to be the plain
    pass's), from the benchmarks' own sources, and says it in every format."""
    sweep = analyze(RUN.parent / "h200-sweep")
    rated = [b for b in sweep.benchmarks if b.ratio is not None]
    gpu = sum(1 for b in rated if b.ratio_clock_hz is not None and "nsys GPU metrics" in b.ref_clock_source)
    own = sum(1 for b in rated if b.ratio_clock_hz is None)
    assert gpu >= 1 and own >= 1 and gpu + own == len(rated)
    want = f"the clock each verdict used ({gpu} at a clock measured on the GPU, {own} at ncu's own clocks)"
    assert want in f.clock_text(sweep)
    console = Console(file=io.StringIO(), width=400, color_system=None)
    print_report(sweep, console)
    assert want in console.file.getvalue()  # type: ignore[attr-defined]
    assert want.replace("'", "&#x27;") in render_html(sweep) or want in render_html(sweep)
    assert want in render_markdown(sweep)
    assert "reference clock: plain" not in console.file.getvalue()  # type: ignore[attr-defined]
