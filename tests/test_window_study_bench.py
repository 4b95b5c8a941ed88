"""studies/window_study.py: the table of the recorded H200 study, made again without a GPU,
and the claims docs/timer.md makes from it."""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from bench_modules import load_benchmark

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "studies" / "results" / "window-study.json.gz"


@pytest.fixture(scope="module")
def study():
    return load_benchmark("window_study")


def _median_us(doc, kernel: str, variant: str) -> float:
    return statistics.median(r[variant]["median_ns"] for r in doc["kernels"][kernel]["rounds"]) / 1e3


def test_recorded_study_backs_what_the_docs_say(study) -> None:
    """studies/results/window-study.json.gz (an H200, 2026-12-02): the stamps and the flush's kind move no
    kernel from 29 us up by more than 0.1 us; the stamps add 0.06 us to the 2 us add; the twin
    right before the flush changes nothing, right before the window it changes the cache state."""
    doc = study.load(STUDY)
    assert doc["gpu"] == "NVIDIA H200"
    assert set(doc["kernels"]) == {"mm_square", "attention", "softmax_4k", "layernorm_4k", "mm_skinny", "add_4k"}
    for k in doc["kernels"]:
        timer = _median_us(doc, k, "timer")
        assert len(doc["kernels"][k]["rounds"]) == 8
        if k != "add_4k":
            assert abs(timer - _median_us(doc, k, "no stamps")) < 0.1, k
            assert abs(timer - _median_us(doc, k, "reference flush")) < 0.1, k
        assert abs(timer - _median_us(doc, k, "twin before flush")) < 0.25, k
        # the timer's own sample function reads as the study's copy of it
        assert abs(timer - _median_us(doc, k, "window_ns")) < 0.15, k
    assert _median_us(doc, "add_4k", "timer") - _median_us(doc, "add_4k", "no stamps") == pytest.approx(0.064, abs=0.01)
    variants = ("timer", "no stamps", "twin before flush", "reference flush", "nsightwrap.bench")
    for k in ("mm_square", "attention"):
        vals = [_median_us(doc, k, v) for v in variants]
        assert max(vals) - min(vals) < 0.3, (k, vals)
    for k in ("mm_square", "attention"):  # warm output lines: faster
        assert _median_us(doc, k, "twin before window") < _median_us(doc, k, "timer") - 2.5
    for k in ("softmax_4k", "layernorm_4k"):  # the twin's dirty lines: slower
        assert _median_us(doc, k, "twin before window") > _median_us(doc, k, "timer") + 2.0


def test_tables_from_prints_the_documented_table() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "studies.window_study", "--tables-from", str(STUDY)],
        capture_output=True, text=True, check=True, cwd=ROOT)  # fmt: skip
    lines = out.stdout.splitlines()
    assert lines[0].startswith("| kernel | timer us | no stamps us |")
    (mm,) = [ln for ln in lines if ln.startswith("| mm_square |")]
    assert mm.startswith("| mm_square | 175.760 (0.320) | 175.848 (0.416) | 168.464 (0.816) |")
    doc = (ROOT / "docs" / "timer.md").read_text()
    assert "| bf16 matmul 4096^3 | 175.76 (0.32) | 175.85 (0.42) | 168.46 (0.82) |" in doc
