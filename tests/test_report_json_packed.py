"""The default report JSON (version 5) packs the timer's samples as a histogram (rounded to 0.1 ns,
[value, count] pairs in ascending order) with their per-sample clocks in that order ([clock,
count] runs): read back and compared, it gives the verdicts the full (--detail) report gives, its
ratio estimates within a relative 1e-6."""

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

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
RUN = FIXTURES / "runs" / "h200-example"


def samples_of(t: dict) -> list:
    """A timer block's samples, from either form (``samples_ns`` or ``sample_runs``)."""
    return t["samples_ns"] if t.get("samples_ns") is not None else expand_runs(t["sample_runs"])


def slowed(doc: dict, names: tuple[str, ...] | None, scale: float) -> dict:
    """A copy of a report document with the timer samples of ``names`` (None: every one) scaled."""
    out = json.loads(json.dumps(doc))
    for b in out["benchmarks"]:
        t = b["timer"]
        if t and (names is None or b["name"] in names):
            if t.get("samples_ns") is not None:
                t["samples_ns"] = [v * scale for v in t["samples_ns"]]
            else:
                t["sample_runs"] = [[v * scale, n] for v, n in t["sample_runs"]]
    return out


def test_value_runs_round_trip() -> None:
    values = [1.98e9, 1.98e9, None, None, 1.5e9, 1.98e9]
    assert value_runs(values) == [[1.98e9, 2], [None, 2], [1.5e9, 1], [1.98e9, 1]]
    assert expand_runs(value_runs(values)) == values and value_runs([]) == []
    assert expand_runs([[1.0, 0]]) is None and expand_runs([[1.0, 2.0]]) is None and expand_runs("x") is None


def test_default_json_packs_clocks_and_reads_and_compares_as_the_full_one() -> None:
    result = analyze(RUN)
    short, full = json.loads(write_report_json(result)), json.loads(write_report_json(result, detail=True))
    assert short["version"] == full["version"] == 5
    timed = [(s["timer"], f["timer"]) for s, f in zip(short["benchmarks"], full["benchmarks"], strict=True) if f["timer"]]
    assert timed and any(f["sample_clock_hz"] for _, f in timed)
    for s, f in timed:
        assert s["samples_ns"] is None and s["sample_clock_hz"] is None
        assert [v for v, _ in s["sample_runs"]] == sorted({round(v, 1) for v in f["samples_ns"]})
        pairs = sorted(zip((round(v, 1) for v in f["samples_ns"]), f["sample_clock_hz"] or [None] * len(f["samples_ns"]), strict=True),
                       key=lambda p: (p[0], p[1] is None, p[1] or 0.0))  # fmt: skip
        assert samples_of(s) == [v for v, _ in pairs]  # every sample, rounded, in ascending order
        if f["sample_clock_hz"]:
            assert expand_runs(s["sample_clock_runs"]) == [c for _, c in pairs]  # each keeps its own clock
            assert len(s["sample_clock_runs"]) < len(f["sample_clock_hz"])
        assert len(s["sample_runs"]) < len(f["samples_ns"])
    back = report_from_dict(json.loads(write_report_json(result, detail=True)))
    assert [b.timer.sample_clock_hz if b.timer else None for b in back.benchmarks] == [
        b.timer.sample_clock_hz if b.timer else None for b in result.benchmarks
    ]

    def pairs_of(r: object) -> list:
        return [sorted(zip(b.timer.samples_ns, b.timer.sample_clock_hz or (None,) * len(b.timer.samples_ns), strict=True),
                       key=lambda p: (p[0], p[1] is None, p[1] or 0.0)) if b.timer else None
                for b in r.benchmarks]  # type: ignore[attr-defined]  # fmt: skip

    assert [[(round(v, 1), c) for v, c in p] if p else p for p in pairs_of(result)] == pairs_of(report_from_dict(short))

    def compared(doc: dict, scale: float = 1.0) -> dict:
        a = side_from_report(doc, label="a", metric="timer", where="a")
        b = side_from_report(slowed(doc, ("mm_large", "add_small"), scale), label="b", metric="timer", where="b")
        return json.loads(compare_json(compare(a, b, metric="timer")))

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
    t["sample_runs"] = [[250000.0, 2.5]]
    with pytest.raises(ReportParseError, match="sample_runs"):
        report_from_dict(doc)
    with pytest.raises(ReportParseError, match="sample_runs"):
        side_from_report(doc, label="a", metric="timer", where="a")


@pytest.mark.parametrize("run", ["runs/h200-clock-sweep", "runs/h200-timer", "captures/causes/run"])
def test_compare_of_default_files_gives_the_detail_files_verdicts(run: str) -> None:
    """Every benchmark of a shipped run against itself, unchanged, 3% and 10% slower: the default
    files (histograms) and the --detail files (every sample in order) get the same verdicts."""
    same_verdicts(run)


def test_compare_of_default_files_of_do_bench_calls_gives_the_detail_files_verdicts() -> None:
    """As above, on the do_bench calls of 87 to 3,411 samples each (92 to 118 distinct values)."""
    same_verdicts("runs/h200-sweep")


def same_verdicts(run: str) -> None:
    result = analyze(FIXTURES / run)
    short, full = report_to_dict(result, detail=False), report_to_dict(result, detail=True)
    short = json.loads(json.dumps(short))
    for s, f in zip(short["benchmarks"], full["benchmarks"], strict=True):
        if f["timer"] and f["timer"]["samples_ns"]:
            assert s["timer"]["sample_runs"] and len(samples_of(s["timer"])) == len(f["timer"]["samples_ns"])
    for scale in (1.0, 1.03, 1.1):
        got = compare(side_from_report(short, label="a", metric="timer", where="a"),
                      side_from_report(slowed(short, None, scale), label="b", metric="timer", where="b"), metric="timer")
        want = compare(side_from_report(full, label="a", metric="timer", where="a"),
                       side_from_report(slowed(full, None, scale), label="b", metric="timer", where="b"), metric="timer")  # fmt: skip
        assert got.verdicts and [(v.key, v.verdict, v.reason) for v in got.verdicts] == [
            (v.key, v.verdict, v.reason) for v in want.verdicts
        ]
