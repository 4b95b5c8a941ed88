"""The default report JSON (version 4) packs the timer's samples (rounded to 0.1 ns) and its
per-sample clocks ([clock, count] runs): read back and compared, it gives the verdicts the full
(--detail) report gives, its ratio estimates within a relative 1e-6."""

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
        assert s["samples_ns"] == [round(v, 1) for v in f["samples_ns"]]
        assert s["samples_ns"] != f["samples_ns"]  # the full file keeps them as measured
        if f["sample_clock_hz"]:
            assert s["sample_clock_hz"] is None and expand_runs(s["sample_clock_runs"]) == f["sample_clock_hz"]
            assert len(s["sample_clock_runs"]) < len(f["sample_clock_hz"])
    back = report_from_dict(json.loads(write_report_json(result, detail=True)))
    assert [b.timer.sample_clock_hz if b.timer else None for b in back.benchmarks] == [
        b.timer.sample_clock_hz if b.timer else None for b in result.benchmarks
    ]

    assert [b.timer.sample_clock_hz if b.timer else None for b in report_from_dict(short).benchmarks] == [
        b.timer.sample_clock_hz if b.timer else None for b in result.benchmarks
    ]

    def compared(doc: dict, scale: float = 1.0) -> dict:
        slower = json.loads(json.dumps(doc))
        for b in slower["benchmarks"]:
            if b["timer"] and b["name"] in ("mm_large", "add_small"):
                b["timer"]["samples_ns"] = [v * scale for v in b["timer"]["samples_ns"]]
        a = side_from_report(doc, label="a", metric="timer", where="a")
        return json.loads(compare_json(compare(a, side_from_report(slower, label="b", metric="timer", where="b"),
                                               metric="timer")))  # fmt: skip

    for scale in (1.0, 1.1):
        got, want = compared(short, scale), compared(full, scale)
        assert got == compared(report_to_dict(result, detail=False), scale)
        verdicts = {b["benchmark"]: b["verdict"] for b in got["benchmarks"]}
        assert verdicts["mm_large"] == ("SAME" if scale == 1.0 else "SLOWER"), verdicts
        assert [(b["benchmark"], b["verdict"], b.get("reason")) for b in got["benchmarks"]] == [
            (b["benchmark"], b["verdict"], b.get("reason")) for b in want["benchmarks"]
        ]
        for g, w in zip(got["benchmarks"], want["benchmarks"], strict=True):
            if w["ratio"] is not None:
                assert g["ratio"]["estimate"] == pytest.approx(w["ratio"]["estimate"], rel=1e-6)


def test_broken_clock_runs_are_one_clear_error() -> None:
    doc = json.loads(write_report_json(analyze(RUN)))
    t = next(b["timer"] for b in doc["benchmarks"] if b["timer"] and b["timer"]["sample_clock_runs"])
    t["sample_clock_runs"] = [[1.9e9, -3]]
    with pytest.raises(ReportParseError, match="sample_clock_runs"):
        report_from_dict(doc)
    with pytest.raises(ReportParseError, match="sample_clock_runs"):
        side_from_report(doc, label="a", metric="timer", where="a")
