"""studies/startup_study.py: the tables of the recorded H200 runs, made again without a GPU,
and the facts docs/profile.md ("Early start") and the results' README take from them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "studies" / "results" / "early-start-2026-12-04"


def _load(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def test_start_up_is_mostly_import_torch() -> None:
    rows = _load("startup-study-2104.json")["configs"]["plain"]
    torch_s = sorted(r["torch"] - r["start"] for r in rows)
    assert len(rows) == 2 and all(3.5 < t < 4.5 for t in torch_s)
    assert all(r["wall_s"] < 5.5 for r in rows)


def test_a_second_ncu_waits_for_the_first_at_its_first_cuda_call() -> None:
    o = _load("startup-study-2104.json")["overlap"]
    same = o["ncu-same-tmp"]
    assert same["b_torch"] < same["a_end"] < same["b_cuda"] and same["a_profiled"] == 201 and same["b_rc"] == 0
    assert o["ncu-other-tmp"]["b_rc"] != 0 and o["nsys-gpu-metrics"]["a_rc"] != 0


def test_a_held_ncu_target_goes_more_than_10_s_after_the_nsys_target_ended() -> None:
    held = _load("startup-study-held-2128.json")
    assert all(h["seen_after_go_s"] < 0.05 for h in held["held"].values())
    for name in ("startup-study-held-2128.json", "startup-study-held-nsys-2118.json"):
        o = _load(name)["overlap"]["ncu-held-during-nsys"]
        # a_end is the nsys target's own end stamp (these records lost nsys's exit, made the go
        # file): the 11 s hold the held ncu saw includes nsys's end of 300001 kernels and
        # millions of GPU-metrics rows, not only a stall of ncu. Its torch import ran meanwhile.
        assert "a_exit" not in o and o["b_torch"] < o["a_end"]
        assert o["b_go"] - o["a_end"] > 10 and o["a_rc"] == 0 and o["b_profiled"] > 0
        assert o["a_kernels_traced"] == 300001 and o["a_gpu_metrics_rows"] > 0


def test_the_tables_come_back_from_the_recorded_results() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "studies.startup_study", "--tables-from", str(RESULTS / "startup-study-held-2128.json")],
        capture_output=True, text=True, cwd=ROOT, check=True,
    ).stdout  # fmt: skip
    assert "B saw its go file 11.73 s after A's target ended (the go file was made as nsys exited; this record kept no exit time)" in out
    assert out.startswith("start-up study: NVIDIA H200, 2026-12-04T21:28:07Z")


def test_the_first_design_cost_more_than_the_run_in_series() -> None:
    res = _load("gemm-dur-during-nsys.json")["rows"]
    early = res["nsightwrap profile"]
    assert round(early["wall_s"] / res["plain"]["wall_s"], 2) == 5.49
    dur = {p["name"]: p for p in early["passes"]}["ncu-duration"]
    assert dur["early_s"] > 20 and dur["wall_s"] > 13
