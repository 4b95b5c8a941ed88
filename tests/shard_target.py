"""A sweep for the shard tests, without torch: it deals its points with nsightwrap's own rule
(``nsightwrap.core.shard.in_shard``, what ``nsightwrap.bench`` and sweeps ask) and, in the plain
pass, writes a real timer sidecar (``BenchResult``, ``write_sidecar``) for the points of its
shard, as run on the fake GPU that ``CUDA_VISIBLE_DEVICES`` names.

    SHARD_TARGET_N          points of the sweep (default 12): mm[M=16], mm[M=32], ...
    SHARD_TARGET_FAIL_GPU   fake GPU index on which the plain pass dies (exit 7, CUDA OOM)
    SHARD_TARGET_SLEEP      seconds each pass runs at least (to see shards overlap)
    SHARD_TARGET_SHUFFLE=1  reach the points in a different order in every process
    SHARD_TARGET_GPU_NAME   the GPU model the sidecar names (default NVIDIA H200)
    FAKE_SLOW_GPU           fake GPU index whose timings are 12% longer at a 12% lower SM clock
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fake_tools._common import fake_gpu_uuid, slow_gpu, visible_gpu  # noqa: E402

from nsightwrap.core.shard import in_shard  # noqa: E402
from nsightwrap.timer.result import BenchResult, bench_name  # noqa: E402
from nsightwrap.timer.sidecar import sidecar_path, write_sidecar  # noqa: E402

run_dir = os.environ.get("NSIGHTWRAP_RUN_DIR")
pass_name = os.environ.get("NSIGHTWRAP_PASS", "none")
gpu = visible_gpu()
slow = gpu == slow_gpu()
n = int(os.environ.get("SHARD_TARGET_N", "12"))
points = [{"M": 16 * (i + 1)} for i in range(n)]
if os.environ.get("SHARD_TARGET_SHUFFLE") == "1":
    random.Random(os.getpid()).shuffle(points)

print(f"shard target: pass={pass_name} gpu={gpu} shard={os.environ.get('NSIGHTWRAP_SHARD')}", flush=True)
if pass_name == "plain" and str(gpu) == os.environ.get("SHARD_TARGET_FAIL_GPU"):
    print("RuntimeError: CUDA error: out of memory (simulated on this GPU)", file=sys.stderr)
    sys.exit(7)
device = {"name": os.environ.get("SHARD_TARGET_GPU_NAME", "NVIDIA H200"), "index": 0, "sm_count": 132, "l2_bytes": 62914560,
          "uuid": fake_gpu_uuid(gpu).removeprefix("GPU-")}  # fmt: skip
results = []
for p in points:
    name = bench_name("mm", p)
    if not in_shard(name):
        continue
    base = 5_000.0 + 40.0 * p["M"]  # ns
    scale, clock = (1.12, 1.98e9 / 1.12) if slow else (1.0, 1.98e9)
    rng = random.Random(f"{name}/{gpu}")
    samples = [base * scale * (1 + 0.002 * rng.random()) for _ in range(20)]
    results.append(
        BenchResult.from_samples(
            name, samples if pass_name == "plain" else [], params=p, sm_clock_hz=clock, clock_source="nvml",
            sample_clock_hz=tuple([clock] * 20) if pass_name == "plain" else None,
            method={"flush_l2": True, "hold_queue": True, "overhead_ns": 0.0, "calls_per_sample": 1},
            timed=pass_name == "plain",
        )  # fmt: skip
    )
    if pass_name == "plain" and run_dir:
        write_sidecar(sidecar_path(run_dir), results, device, "2.11.0+fake")
time.sleep(float(os.environ.get("SHARD_TARGET_SLEEP", "0")))
print(json.dumps({"timed": [r.name for r in results]}), flush=True)
