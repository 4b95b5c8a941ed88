"""studies/ncu_gap.py: the tables of the recorded H200 study, made again without a GPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from bench_modules import load_benchmark

ROOT = Path(__file__).resolve().parent.parent
STUDY = ROOT / "studies" / "results" / "ncu-gap.json.gz"


@pytest.fixture(scope="module")
def gap():
    return load_benchmark("ncu_gap")


def _row(rows, kernel, cond):
    (got,) = [r for r in rows if r["kernel"] == kernel and r["condition"] == cond]
    return got


def test_recorded_study_shows_what_lengthens_the_gemv(gap) -> None:
    """studies/results/ncu-gap.json.gz (an H200, 2026-12-02): of the set-ups, only a large copy right before
    the GEMV lengthens its own CUPTI time (by more than 4 us); idling the GPU, a larger flush or a
    longer hold do not move it by more than 1 us. ncu's run with the profile's metrics replays
    every kernel in 12 passes and backs up GBs of device memory; its other runs take one pass."""
    rows = gap.gap_rows(gap.load(STUDY))
    base = _row(rows, "mm_skinny", "timer")["kernel_ns"]
    assert _row(rows, "mm_skinny", "copy2g")["kernel_ns"] - base > 4000
    for cond in ("flush8x", "hold1ms", "idle1ms", "idle20ms", "nohold"):
        assert abs(_row(rows, "mm_skinny", cond)["kernel_ns"] - base) < 1000, cond
    for r in rows:
        assert r["ncu_multi_passes"] == 12 and r["ncu_multi_backed_up_gb"] > 1
        assert r["ncu_all_passes"] == 1 and r["ncu_dur_passes"] == 1
        assert r["ncu_dur_ns"] is not None
    # without a flush the add reads its inputs from L2: shorter in-process and under cache control none
    warm = _row(rows, "add_4k", "noflush")
    assert warm["kernel_ns"] < _row(rows, "add_4k", "timer")["kernel_ns"] - 150
    assert warm["ncu_none_ns"] < warm["ncu_all_ns"]


def test_tables_from_a_saved_study_match_the_render(gap) -> None:
    doc = gap.load(STUDY)
    text = gap.render(doc)
    assert "| mm_skinny | copy2g | 35.87 | 34.74 |" in text
    assert text.count("\n| add_4k | ") == len(gap.CONDITIONS)
    out = subprocess.run([sys.executable, "-m", "studies.ncu_gap", "--tables-from", str(STUDY)],
                         capture_output=True, text=True, timeout=60, cwd=ROOT)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout == text


def test_an_older_study_without_every_run_or_set_up_still_renders(gap) -> None:
    """studies/results/ncu-gap-run1.json.gz had no duration-alone run: its column stays empty."""
    rows = gap.gap_rows(gap.load(ROOT / "studies" / "results" / "ncu-gap-run1.json.gz"))
    assert {r["kernel"] for r in rows} == {"add_4k", "relu_1m", "mm_skinny", "add_16m"}
    assert all("ncu_dur_ns" not in r for r in rows)
    assert "| relu_1m | timer |" in gap.gap_table(rows)


def test_unknown_kernel_is_one_clear_line() -> None:
    out = subprocess.run([sys.executable, "-m", "studies.ncu_gap", "--only", "nope"],
                         capture_output=True, text=True, timeout=60, cwd=ROOT)  # fmt: skip
    assert out.returncode != 0
    assert out.stderr.strip().splitlines()[-1].startswith("unknown kernel(s) nope; choose from add_4k")


def test_recorded_gemm_study_backs_what_the_docs_say(gap) -> None:
    """studies/results/ncu-gap-gemm.json.gz (an H200, 2026-12-02): on the square GEMM the events less the
    empty window read about 1.1 us over ncu's duration alone and CUPTI about 0.9 us under it;
    holds, idling and a larger flush move the in-process readings by at most 0.2 us; no hold at
    all makes the kernel itself faster in-process (CUPTI), not under ncu."""
    rows = gap.gap_rows(gap.load(ROOT / "studies" / "results" / "ncu-gap-gemm.json.gz"))
    t = _row(rows, "mm_square", "timer")
    assert 900 < t["events_ns"] - t["ncu_dur_ns"] < 1300
    assert 700 < t["ncu_dur_ns"] - t["kernel_ns"] < 1100
    for cond in ("flush8x", "hold1ms", "idle1ms", "idle20ms"):
        r = _row(rows, "mm_square", cond)
        assert abs(r["events_ns"] - t["events_ns"]) < 200 and abs(r["kernel_ns"] - t["kernel_ns"]) < 200, cond
        assert abs(r["ncu_dur_ns"] - t["ncu_dur_ns"]) < 1100, cond
    for kernel, faster in (("mm_square", 3000), ("attention", 2000)):
        no, held = _row(rows, kernel, "nohold"), _row(rows, kernel, "timer")
        assert held["kernel_ns"] - no["kernel_ns"] > faster, kernel
    ncu = [_row(rows, "mm_square", c)["ncu_dur_ns"] for c in ("timer", "flush8x", "hold1ms", "idle1ms", "idle20ms")]
    assert min(ncu) <= _row(rows, "mm_square", "nohold")["ncu_dur_ns"] <= max(ncu)
