"""The default report JSON (version 4) packs the timer's per-sample clocks as [clock, count]
runs: read back, and compared, it gives what the full (--detail) report gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nsightwrap.analysis.load import analyze
from nsightwrap.compare.sides import side_from_report
from nsightwrap.compare.verdicts import compare
from nsightwrap.core.contract import expand_runs, value_runs
from nsightwrap.core.errors import ReportParseError
from nsightwrap.export.jsonio import compare_json, report_from_dict, report_to_dict, write_report_json

RUN = Path(__file__).resolve().parent.parent / "fixtures" / "runs" / "h200-example"


def test_value_runs_round_trip() -> None:
    values = [1.98e9, 1.98e9, None, None, 1.5e9, 1.98e9]
    assert value_runs(values) == [[1.98e9, 2], [None, 2], [1.5e9, 1], [1.98e9, 1]]
    assert expand_runs(value_runs(values)) == values and value_runs([]) == []
    assert expand_runs([[1.0, 0]]) is None and expand_runs([[1.0, 2.0]]) is None and expand_runs("x") is None


def test_default_json_packs_clocks_and_reads_and_compares_as_the_full_one() -> None:
    result = analyze(RUN)
    short, full = json.loads(write_report_json(result)), json.loads(write_report_json(result, detail=True))
    assert short["version"] == full["version"] == 4
    timed = [(s["timer"], f["timer"]) for s, f in zip(short["benchmarks"], full["benchmarks"], strict=True) if f["timer"]]
    assert timed and any(f["sample_clock_hz"] for _, f in timed)
    for s, f in timed:
        assert s["samples_ns"] == f["samples_ns"]  # as measured, not rounded
        if f["sample_clock_hz"]:
            assert s["sample_clock_hz"] is None and expand_runs(s["sample_clock_runs"]) == f["sample_clock_hz"]
            assert len(s["sample_clock_runs"]) < len(f["sample_clock_hz"])
    back = report_from_dict(short)
    assert [b.timer.sample_clock_hz if b.timer else None for b in back.benchmarks] == [
        b.timer.sample_clock_hz if b.timer else None for b in result.benchmarks
    ]

    def verdicts(doc: dict) -> str:
        a = side_from_report(doc, label="a", metric="timer", where="a")
        return compare_json(compare(a, side_from_report(doc, label="b", metric="timer", where="b"), metric="timer"))

    assert verdicts(short) == verdicts(full) == verdicts(report_to_dict(result))


def test_broken_clock_runs_are_one_clear_error() -> None:
    doc = json.loads(write_report_json(analyze(RUN)))
    t = next(b["timer"] for b in doc["benchmarks"] if b["timer"] and b["timer"]["sample_clock_runs"])
    t["sample_clock_runs"] = [[1.9e9, -3]]
    with pytest.raises(ReportParseError, match="sample_clock_runs"):
        report_from_dict(doc)
    with pytest.raises(ReportParseError, match="sample_clock_runs"):
        side_from_report(doc, label="a", metric="timer", where="a")
