"""The fast paths of reading JSON (core/jsonfile.py, schemas): the nesting depth measured on
text whose strings hold brackets, quotes and backslashes; numbers past float's range read as
null; a long list of samples checked in one pass, its first wrong item still named."""

from __future__ import annotations

import json
import re
from itertools import accumulate

import pytest

from nsightwrap.core.errors import ReportParseError
from nsightwrap.core.jsonfile import MAX_JSON_DEPTH, _depth, parse_json
from nsightwrap.schemas import problem


def _depth_by_regex(text: str) -> int:
    """The depth as a string-aware regex tokenizer counts it (the reference)."""
    strings = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
    brackets = re.sub(r"[^\[\]{}]", "", strings.sub("", text))
    return max(accumulate({"[": 1, "{": 1, "]": -1, "}": -1}[c] for c in brackets), default=0)


@pytest.mark.parametrize("value", [
    [1, [2, [3]]], {"a": "[[[[", "b": ["]]]"]}, {"k\\\"[": [{"x": "\\\\"}, "\\\\\"{{"]}, ["\\", "\\\\", "\"", "\\\""],
    {"q": "a\\u005b[", "n": [[[[[[]]]]]]},
])  # fmt: skip
def test_depth_leaves_strings_out(value: object) -> None:
    text = json.dumps(value)
    assert _depth(text) == _depth_by_regex(text) == _depth_by_regex(json.dumps(value, indent=1))


def test_too_deep_is_refused_and_huge_numbers_are_null() -> None:
    with pytest.raises(ReportParseError, match="deep"):
        parse_json("[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1), "x.json")
    assert parse_json('{"a": 1e999, "b": -1E+400, "c": 1e-400, "d": 1.5, "e": NaN}', "x") == {
        "a": None, "b": None, "c": 0.0, "d": 1.5, "e": None}  # fmt: skip
    assert parse_json('[' + "9" * 400 + ', 12]', "x") == [None, 12]
    assert parse_json('[1.0, 2, "3"]', "x") == [1.0, 2, "3"]


def test_a_long_sample_list_names_its_first_wrong_item() -> None:
    doc = {"format": "nsightwrap-timer", "version": 2,
           "benchmarks": [{"name": "a", "samples_ns": [1.5] * 10_000 + [2]}]}  # fmt: skip
    assert problem(doc, "sidecar") is None
    doc["benchmarks"][0]["samples_ns"][5_000] = "7"  # type: ignore[index]
    assert problem(doc, "sidecar") == "field 'benchmarks/0/samples_ns/5000' must be a number, not a string"
    doc["benchmarks"][0]["samples_ns"][5_000] = True  # type: ignore[index]
    assert problem(doc, "sidecar") == "field 'benchmarks/0/samples_ns/5000' must be a number, not a boolean"
