"""``nsightwrap profile`` with the real ncu, nsys and nvidia-smi on a GPU machine.

Needs ncu and nsys on PATH (or NSIGHTWRAP_NCU / NSIGHTWRAP_NSYS), torch with CUDA, and
examples/bench_example.py."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "bench_example.py"


def _profile(run: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nsightwrap", "profile", "-o", str(run), *args],
        capture_output=True, text=True, timeout=900, cwd=cwd,
    )  # fmt: skip


@pytest.mark.gpu
def test_profile_bench_example_end_to_end(tmp_path: Path) -> None:
    run = tmp_path / "run"
    cp = _profile(run, str(EXAMPLE), "--quick", "--only", "mm_small", cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr[-3000:]
    m = json.loads((run / "manifest.json").read_text())
    p = {x["name"]: x for x in m["passes"]}
    assert m["status"] == "complete" and [p[n]["status"] for n in ("plain", "ncu", "nsys")] == ["ok"] * 3
    assert "NVIDIA" in m["gpu"]["name"] and m["tools"]["ncu"]["version"] and m["tools"]["nsys"]["version"]
    assert list((run / "plain").glob("timer-*.json")), "the timer wrote no sidecar in the plain pass"
    assert m["sampler"]["status"] == "ok" and m["sampler"]["samples"] >= 1
    # The default NVTX filter profiles the measured iterations only (flush kernels stay out): the
    # counters pass one instance per launch configuration, the duration pass every iteration.
    assert p["ncu"]["kernels_profiled"] == 1 and p["ncu-duration"]["kernels_profiled"] >= 3, p
    from nsightwrap.parsers.ncu import read_ncu_rep

    for name in ("ncu", "ncu-duration"):
        kernels = read_ncu_rep(run / name / "report.ncu-rep")
        assert len(kernels) == p[name]["kernels_profiled"]
        assert kernels["nvtx_path"].str.match(r"nsightwrap:mm_small(\[.*\])?/iter\d+$").all(), kernels[
            "nvtx_path"
        ].tolist()
    with sqlite3.connect(run / "nsys" / "report.sqlite") as con:
        assert con.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0] > 0
    assert "mm_small" in cp.stdout and f"run directory: {run} (complete)" in cp.stdout


@pytest.mark.gpu
def test_profile_target_with_its_own_range_profiles_inside_it(tmp_path: Path) -> None:
    # No nsightwrap, no timing the capture layer knows: the user's own push/pop range is what
    # the ncu pass profiles (through the layer's mirror of it in the nsightwrap domain).
    script = tmp_path / "plain_torch.py"
    script.write_text(
        "import torch\n"
        "x = torch.randn(1024, 1024, device='cuda')\n"
        "y = x @ x\n"  # outside the range: not profiled
        "torch.cuda.nvtx.range_push('outer_range')\n"
        "for _ in range(3):\n    y = x @ x\n"
        "torch.cuda.nvtx.range_pop()\n"
        "torch.cuda.synchronize()\n"
    )
    run = tmp_path / "run"
    cp = _profile(run, "--no-analyze", str(script), cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr[-3000:]
    m = json.loads((run / "manifest.json").read_text())
    p = {x["name"]: x for x in m["passes"]}
    # The counters pass profiles one instance of the launch configuration, the duration pass all three.
    assert p["ncu"]["status"] == "ok" and p["ncu"]["kernels_profiled"] == 1, p["ncu"]
    assert p["ncu-duration"]["status"] == "ok" and p["ncu-duration"]["kernels_profiled"] == 3, p["ncu-duration"]
    from nsightwrap.parsers.ncu import read_ncu_rep

    for name, n in (("ncu", 1), ("ncu-duration", 3)):
        kernels = read_ncu_rep(run / name / "report.ncu-rep")
        assert len(kernels) == n
        assert all(any("outer_range" in r for r in rs) for rs in kernels["nvtx_ranges"]), kernels[
            "nvtx_ranges"
        ].tolist()


@pytest.mark.gpu
def test_profile_target_without_any_range_says_what_ranges_exist(tmp_path: Path) -> None:
    script = tmp_path / "no_ranges.py"
    script.write_text(
        "import torch\n"
        "x = torch.randn(1024, 1024, device='cuda')\n"
        "for _ in range(3):\n    y = x @ x\n"
        "torch.cuda.synchronize()\n"
    )
    run = tmp_path / "run"
    cp = _profile(run, "--no-analyze", str(script), cwd=tmp_path)
    err = " ".join(cp.stderr.split())
    assert cp.returncode == 3, cp.stderr[-3000:]
    assert "ncu pass: no kernel was profiled with the NVTX filter" in err
    assert "the nsys pass recorded no NVTX range at all" in err
    m = json.loads((run / "manifest.json").read_text())
    assert {x["name"]: x["status"] for x in m["passes"]}["ncu"] == "failed"
