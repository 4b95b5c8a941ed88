"""Report exporters on the reference run: JSON round trip and version check, Markdown, HTML, table."""

from __future__ import annotations

import io
import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from refrun import build_run_dir
from rich.console import Console

from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import FORMAT_VERSION, RunResult
from nsightwrap.core.errors import FormatVersionError, ReportParseError
from nsightwrap.export.html import render_html
from nsightwrap.export.jsonio import load_report_json, report_to_dict, write_report_json
from nsightwrap.export.markdown import render_markdown
from nsightwrap.export.terminal import print_report

NASTY = "void k<int, 4>(a|b, c*) `x` _y_"


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> RunResult:
    return analyze(build_run_dir(tmp_path_factory.mktemp("ref")))


def _with_nasty_name(result: RunResult) -> RunResult:
    b0 = result.benchmarks[0]
    k0 = replace(b0.ncu.kernels[0], kernel=NASTY, kernel_short=NASTY)  # type: ignore[union-attr]
    ncu = replace(b0.ncu, kernels=(k0, *b0.ncu.kernels[1:]))  # type: ignore[union-attr]
    return replace(result, benchmarks=(replace(b0, name="mm<a|b>", ncu=ncu), *result.benchmarks[1:]))


def test_json_round_trip_and_contract_fields(result: RunResult, tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    write_report_json(result, path, detail=True)
    doc = json.loads(path.read_text())
    assert doc["format"] == "nsightwrap-report" and doc["version"] == FORMAT_VERSION
    assert doc["environment"]["gpu_name"] == "NVIDIA H200"
    small = doc["benchmarks"][0]
    assert small["name"] == "mm_small" and small["params"] == {}
    assert len(small["timer"]["samples_ns"]) == 20  # raw samples kept
    assert small["timer"]["samples_ns"][0] == pytest.approx(260_384.0, abs=1)
    assert small["ncu"]["iterations_ns"] == [13_024.0, 13_920.0, 12_992.0]
    assert small["ncu"]["iterations_cycles"][0] == pytest.approx(13_024 * 1.782964e9 / 1e9, rel=1e-5)
    assert len(small["nsys"]["iterations_ns"]) == 20
    assert small["verdict"] == "flagged"
    assert {c["code"] for c in small["causes"]} == {"front_end", "cache_state"}
    gap = small["gap"]  # the decomposition: parts that add up, residual included
    assert gap["total_ns"] == sum(p["ns"] for p in gap["parts"]) + gap["residual_ns"]
    assert {p["cause"] for p in gap["parts"]} >= {"cache_state", "front_end"}
    assert load_report_json(path) == result


def test_json_unknown_version_is_refused(result: RunResult, tmp_path: Path) -> None:
    doc = report_to_dict(result)
    doc["version"] = 99
    path = tmp_path / "future.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(FormatVersionError, match="version 99"):
        load_report_json(path)
    path.write_text(json.dumps({"format": "something-else", "version": 1}))
    with pytest.raises(ReportParseError, match="not an nsightwrap report"):
        load_report_json(path)
    del doc["benchmarks"]
    doc["version"] = 1
    path.write_text(json.dumps(doc))
    with pytest.raises(ReportParseError, match="missing field 'benchmarks'"):
        load_report_json(path)


def test_markdown_sections_and_escaping(result: RunResult) -> None:
    md = render_markdown(_with_nasty_name(result))
    assert (
        "| mm&lt;a\\|b&gt; | 17.31 us | 14.7% (20) | 13.02 us | 13.02 us | 14.43 us | 14.43 us | 1.980 GHz | 1.791 GHz "
        "| 1.33x | 1.33x | **flagged** (noisy: IQR 14.7%) |"
    ) in md
    # copy_1g's copy is explained (nsys measures it); mm_small's event cost flags it.
    assert "## Flagged benchmarks" in md and "**front_end**" in md
    assert "| driver | 580.159.04 |" in md and "| persistence mode | enabled |" in md
    assert "nsightwrap profile --passes plain,ncu,nsys workload.py" in md
    # ncu kernels, the same kernels on the roofline, and each benchmark's gap decomposition
    assert md.count("<details>") == 3 + 3 + sum(b.gap is not None for b in result.benchmarks)
    # Every table row keeps its column count: no raw "|" from a name splits a cell.
    head = 0
    for line in md.splitlines():
        if line.startswith("| iter"):  # a per-kernel table's header: its rows have as many cells
            head = len(re.findall(r"(?<!\\)\|", line))
        elif line.startswith("| 0 | void"):
            assert len(re.findall(r"(?<!\\)\|", line)) == head
    assert "void k&lt;int, 4&gt;(a\\|b, c\\*) \\`x\\` \\_y\\_" in md


def test_html_is_self_contained_and_escaped(result: RunResult) -> None:
    page = render_html(_with_nasty_name(result))
    assert page.startswith("<!DOCTYPE html>")
    assert "mm&lt;a|b&gt;" in page and "mm<a|b>" not in page
    assert "void k&lt;int, 4&gt;(a|b, c*)" in page
    # five bar charts, the clock trace, the roofline and a waterfall per flagged benchmark
    assert page.count("<svg") >= 6 + sum(b.gap is not None for b in result.flagged)
    assert page.count("class='chart waterfall'") == sum(b.gap is not None for b in result.flagged)
    assert not re.search(r"(src|href)=[\"']?(https?:)?//", page)  # nothing fetched from the network
    # One SM-clock chart: the energy timeline's when it is drawn, else its own.
    assert ("SM clock during the plain pass" in page) != ("Plain pass: SM clock, power and temperature" in page)


def test_terminal_table(result: RunResult) -> None:
    buf = io.StringIO()
    print_report(result, Console(file=buf, width=200, color_system=None))
    out = buf.getvalue()
    row = next(line for line in out.splitlines() if "mm_large" in line and "us" in line)
    # Its reference clock is contradicted by the kernels' own durations, so the verdict kept ncu's
    # clocks: the row shows ncu at those (not 227.64 us at the reference clock) and 0.99x, not 1.20x.
    assert "273.87 us" in row and row.count("275.30 us") == 2 and "ncu's" in row and "0.99x" in row
    assert "227.64 us" not in row and "1.20x" not in row
    assert re.search(r"front_end: each window holds \d+\.\d\d us of event and dispatch time", out)
    assert "fix: subtract the cost of an empty window" in out  # the fix for a hand-written event loop
