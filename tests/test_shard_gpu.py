"""``nsightwrap profile --shard`` on a GPU machine, with the real torch, ncu, nsys and nvidia-smi:
shard 0 of 2 of a real sweep times, profiles and traces only its share; shard 1 (plain pass
only, to keep the test short) times the rest; ``nsightwrap merge`` joins them into the whole."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nsightwrap.core.shard import Shard, deal

ROOT = Path(__file__).resolve().parent.parent
SWEEP = ROOT / "examples" / "sweep_shapes.py"
MS = (16, 64, 256, 1024, 2048, 4096)
KEYS = [f"mm[M={m},N=4096]" for m in MS]


def _nw(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nsightwrap", *args], capture_output=True, text=True, timeout=900, cwd=cwd)


def _timed(run: Path) -> list[dict]:
    return [b for p in sorted((run / "plain").glob("timer-*.json")) for b in json.loads(p.read_text())["benchmarks"]]


@pytest.mark.gpu
def test_one_shard_times_profiles_and_traces_its_share_and_merges_into_the_whole(tmp_path: Path) -> None:
    cp = _nw("profile", "-o", "s0", "--shard", "0/2", "--ncu-iters", "1", str(SWEEP), "--quick", cwd=tmp_path)
    assert cp.returncode in (0, 1), cp.stderr[-3000:]  # 1: the analysis flagged a benchmark
    run = tmp_path / "s0"
    m = json.loads((run / "manifest.json").read_text())
    mine = deal(KEYS, Shard(0, 2))
    assert mine == KEYS[0::2]
    status = {p["name"]: p["status"] for p in m["passes"]}
    assert all(status[p] == "ok" for p in ("plain", "ncu", "nsys")), status
    assert m["shard"]["benchmarks"] == mine and m["shard"]["consistent"] and m["shard"]["dealt"] == len(KEYS)
    assert m["shard"]["gpu"]["uuid"] and "NVIDIA" in m["shard"]["gpu"]["name"]
    # plain: the sidecar holds this shard's points, timed.
    timed = _timed(run)
    assert [b["name"] for b in timed] == mine and all(b["median_ns"] > 0 for b in timed)
    # ncu: kernels profiled only in this shard's iteration ranges.
    from nsightwrap.parsers.ncu import read_ncu_rep

    kernels = read_ncu_rep(run / "ncu" / "report.ncu-rep")
    profiled = {p.split(":", 1)[1].rsplit("/", 1)[0] for p in kernels["nvtx_path"] if "mm[" in str(p)}
    assert profiled == set(mine), profiled
    # nsys: the trace holds this shard's benchmark ranges only.
    from nsightwrap.parsers.nsys import read_nsys

    ranges = read_nsys(run / "nsys" / "report.sqlite").ranges
    top = ranges[(ranges["domain"] == "nsightwrap") & (ranges["depth"] == 0)]
    traced = {n for n in top["name"] if str(n).startswith("mm[")}
    assert traced == set(mine), traced

    cp = _nw("profile", "-o", "s1", "--shard", "1/2", "--passes", "plain", "--no-analyze", str(SWEEP), "--quick", cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr[-3000:]
    assert [b["name"] for b in _timed(tmp_path / "s1")] == KEYS[1::2]
    cp = _nw("merge", "s0", "s1", "-o", "merged", cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr[-3000:]
    cp = _nw("report", "merged", "--format", "json", "-o", "merged.json", cwd=tmp_path)
    assert cp.returncode in (0, 1), cp.stderr[-3000:]
    doc = json.loads((tmp_path / "merged.json").read_text())
    assert [(b["name"], b["shard"]) for b in doc["benchmarks"]] == [(k, i % 2) for i, k in enumerate(KEYS)]
    uuids = {b["gpu_uuid"] for b in doc["benchmarks"]}
    assert len(uuids) == 1 and next(iter(uuids)).startswith("GPU-")  # both shards ran on this one GPU
    assert all(b["timer"] for b in doc["benchmarks"])
    assert all(b["ncu"] for b in doc["benchmarks"] if b["shard"] == 0)
