"""The Slurm recipe of docs/cluster.md (examples/slurm/): each array task's script run as Slurm
would run it (its SLURM_ARRAY_* variables set, task ids starting at 1), fake profilers on PATH,
then the merge job; and the doc shows exactly these files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fake_tools._common import fake_gpu_uuid
from fake_tools.harness import FAKE_PATH, ROOT, TESTS

from nsightwrap.core.shard import Shard, deal

SLURM = ROOT / "examples" / "slurm"
KEYS = [f"mm[M={16 * (i + 1)}]" for i in range(12)]


def test_the_doc_shows_the_shipped_scripts() -> None:
    doc = (ROOT / "docs" / "cluster.md").read_text()
    for name in ("profile_array.sbatch", "merge.sbatch", "submit.sh"):
        assert (SLURM / name).read_text() in doc, name


def test_array_tasks_from_1_then_the_merge_job_make_one_run(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NSIGHTWRAP_", "SLURM_", "FAKE_", "SHARD_TARGET"))}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    runs = tmp_path / "tool_runs.jsonl"
    env.update(PATH=os.pathsep.join([*FAKE_PATH, str(Path(sys.executable).parent), env["PATH"]]),
               FAKE_GPUS="3", FAKE_TOOLS_RUNS=str(runs), TMPDIR=str(tmp_path))  # fmt: skip
    tasks = []
    for task in (1, 2, 3):  # --array=1-3: ids start at 1, the count is 3; all at once, as Slurm runs them
        slurm = {"SLURM_ARRAY_JOB_ID": "77", "SLURM_ARRAY_TASK_ID": str(task), "SLURM_ARRAY_TASK_MIN": "1",
                 "SLURM_ARRAY_TASK_MAX": "3", "SLURM_ARRAY_TASK_COUNT": "3", "CUDA_VISIBLE_DEVICES": str(task - 1)}  # fmt: skip
        argv = ["bash", str(SLURM / "profile_array.sbatch"), "--passes", "plain,ncu", str(TESTS / "shard_target.py")]
        tasks.append(subprocess.Popen(argv, cwd=tmp_path, env={**env, **slurm}, stderr=subprocess.PIPE, text=True))
    for t in tasks:
        _, err = t.communicate(timeout=300)
        assert t.returncode == 0, err
    cp = subprocess.run(["bash", str(SLURM / "merge.sbatch"), "77"], cwd=tmp_path, env=env,
                        capture_output=True, text=True, timeout=300)  # fmt: skip
    assert cp.returncode == 0, cp.stderr
    merged = tmp_path / "runs" / "77" / "merged"
    m = json.loads((merged / "manifest.json").read_text())
    assert m["count"] == 3 and m["status"] == "complete" and m["order"] == KEYS
    assert [s["gpu"]["uuid"] for s in m["shards"]] == [fake_gpu_uuid(i) for i in range(3)]
    assert [s["benchmarks"] for s in m["shards"]] == [deal(KEYS, Shard(i, 3)) for i in range(3)]
    report = json.loads((tmp_path / "runs" / "77" / "report.json").read_text())
    assert sorted(b["name"] for b in report["benchmarks"]) == sorted(KEYS)
    assert "## Shards" in (tmp_path / "runs" / "77" / "report.md").read_text()
    # Each task profiled under its own TMPDIR (ncu's lock), removed when the task ended.
    tmpdirs = {json.loads(x)["tmpdir"] for x in runs.read_text().splitlines() if json.loads(x)["tool"] == "ncu"}
    assert len(tmpdirs) == 3 and all(t.startswith(str(tmp_path / "nw-77-")) for t in tmpdirs)
    assert not any(Path(t).exists() for t in tmpdirs)
