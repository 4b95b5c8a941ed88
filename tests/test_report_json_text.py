"""The report JSON's writer (export/jsonio.dumps_report) gives json.dumps's bytes: a benchmark's
float lists of few distinct values are written one text per value, every other list by json,
and the result is the same text, whatever the lists hold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nsightwrap.analysis.load import analyze
from nsightwrap.export.jsonio import _float_list_text, dumps_report, report_to_dict

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def plain(doc: object) -> str:
    return json.dumps(doc, separators=(",", ":"), allow_nan=False)


@pytest.mark.parametrize("values", [
    [250016.0, 250048.0] * 40,  # few distinct values: one text each
    [0.0] * 40 + [-0.0] * 40,  # both zeros: two texts, left to json
    [-0.0] * 70 + [1.5] * 10,
    [1e308, -1e-308, 5e-324] * 30,
    [0.1 * i for i in range(100)],  # every value distinct: left to json
    [1.0, 2] * 40,  # an int among floats stays an int
    [True, 1.0] * 40,
    [1, 2, 3] * 30,
    [1.0] * 10,  # short
])  # fmt: skip
def test_every_kind_of_list_is_written_as_json_writes_it(values: list) -> None:
    doc = {"format": "x", "benchmarks": [{"name": 'a"\x00b', "timer": {"samples_ns": values, "n": 3},
                                          "nsys": {"busy_ns": list(values)}, "ncu": None}],
           "notes": ["\x00"]}  # fmt: skip
    assert dumps_report(doc) == plain(doc)


def test_a_shipped_runs_detailed_report_is_json_byte_for_byte() -> None:
    doc = report_to_dict(analyze(FIXTURES / "runs" / "h200-example"), detail=True)
    # Its timers' samples repeat their values (CUDA events step by 32 ns): the lists written by value.
    assert any(_float_list_text(b["timer"]["samples_ns"]) for b in doc["benchmarks"] if b["timer"])
    text = dumps_report(doc)
    assert text == plain(doc)
    assert json.loads(text) == doc
