"""How fast ``nsightwrap merge`` joins shards: 8 shards of 1,000 benchmarks each by default.

    python -m benchmarks.merge_speed [--shards 8] [--benchmarks 1000] [--samples 100]
                                     [--report-mb 40] [--copy-dir /dev/shm] [--keep DIR]

Writes ``--shards`` shard run directories the way ``nsightwrap profile --shard I/N`` leaves them,
with nsightwrap's own writers: a manifest (``rundir.Manifest`` with its ``shard`` block), the
dealing logs of the plain, ncu and nsys passes (``core.shard.Dealer``: every process of a shard
deals all ``shards x benchmarks`` keys), a timer sidecar of the shard's benchmarks with
``--samples`` samples each (``timer.sidecar.write_sidecar``), the nvidia-smi XML of the H200
fixture, and ncu / nsys report files of ``--report-mb`` MB (random bytes: merge never reads them).
Then runs ``python -m nsightwrap merge`` in a subprocess (Python start-up included) and prints
its wall time; once with the output on the same file system (hard links), and, with
``--copy-dir`` on another file system, once where every file is copied.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
XML = ROOT / "fixtures" / "reference" / "h200-workload" / "nvidia-smi-q-x.xml"


def make_shard(root: Path, i: int, n: int, keys: list[str], samples: int, report_bytes: int) -> Path:
    from nsightwrap import __version__
    from nsightwrap.core.shard import Dealer, Shard, log_path
    from nsightwrap.run.rundir import Manifest, PassRecord, create_run_dir, write_manifest
    from nsightwrap.timer.result import BenchResult
    from nsightwrap.timer.sidecar import sidecar_path, write_sidecar

    layout = create_run_dir(root / f"shard-{i}", ("plain", "ncu", "nsys"))
    shard = Shard(i, n)
    mine: list[str] = []
    for p, pid in (("plain", 1000 + i), ("ncu", 2000 + i), ("nsys", 3000 + i)):
        dealer = Dealer(shard, log_path(layout.root, p, pid))
        mine = [k for k in keys if dealer(k)]
    rng = random.Random(i)
    results = [
        BenchResult.from_samples(
            k, [10_000.0 + 100 * rng.random() for _ in range(samples)], params={"i": j}, sm_clock_hz=1.98e9,
            clock_source="nvml", sample_clock_hz=tuple([1.98e9] * samples),
            method={"flush_l2": True, "hold_queue": True, "overhead_ns": 1300.0, "calls_per_sample": 1},
        )  # fmt: skip
        for j, k in enumerate(mine)
    ]
    device = {"name": "NVIDIA H200", "index": 0, "sm_count": 132, "l2_bytes": 62914560,
              "uuid": f"5c1c2662-50ec-2ab1-aa09-{i:012d}"}  # fmt: skip
    write_sidecar(sidecar_path(layout.root, 1000 + i), results, device, "2.11.0")
    shutil.copyfile(XML, layout.smi_xml)
    for f in (layout.ncu_report_base.with_suffix(".ncu-rep"), layout.nsys_rep, layout.pass_dir("nsys") / "report.sqlite"):
        with f.open("wb") as out:
            out.write(os.urandom(min(report_bytes, 1 << 20)) * max(1, report_bytes >> 20))
    spec = {"mode": "shard", "index": i, "count": n, "by": "index", "spec": f"{i}/{n}"}
    rec = {**spec, "host": f"node{i}", "cuda_visible_devices": "0", "gpu": {"name": "NVIDIA H200",
           "uuid": device["uuid"], "index": 0}, "dealt": len(keys), "benchmarks": mine, "consistent": True}  # fmt: skip
    now = time.time()
    write_manifest(layout, Manifest(
        status="complete", target={"argv": ["sweep.py"], "command": [sys.executable, "sweep.py"], "cwd": "/"},
        passes=tuple(PassRecord(p, "ok") for p in ("plain", "ncu", "nsys")), tools={}, gpu={"name": "NVIDIA H200"},
        git=None, settings={}, sampler=None, start=now, end=now, nsightwrap_version=__version__, exit_code=0, shard=rec,
    ))  # fmt: skip
    return layout.root


def run_merge(shards: list[Path], out: Path) -> float:
    t0 = time.perf_counter()
    cp = subprocess.run([sys.executable, "-m", "nsightwrap", "merge", *map(str, shards), "-o", str(out), "-q"],
                        capture_output=True, text=True)  # fmt: skip
    wall = time.perf_counter() - t0
    if cp.returncode != 0:
        sys.exit(f"merge failed ({cp.returncode}): {cp.stderr.strip()}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shards", type=int, default=8)
    ap.add_argument("--benchmarks", type=int, default=1000, help="per shard")
    ap.add_argument("--samples", type=int, default=100, help="timer samples per benchmark")
    ap.add_argument("--report-mb", type=int, default=40, help="size of each ncu / nsys report file")
    ap.add_argument("--copy-dir", type=Path, default=None, help="a folder on another file system (copies)")
    ap.add_argument("--keep", type=Path, default=None, help="build the shards here and keep them")
    a = ap.parse_args()
    work = a.keep or Path(tempfile.mkdtemp(prefix="nsightwrap-merge-speed-"))
    work.mkdir(parents=True, exist_ok=True)
    keys = [f"mm[M={m}]" for m in range(a.shards * a.benchmarks)]
    t0 = time.perf_counter()
    shards = [make_shard(work, i, a.shards, keys, a.samples, a.report_mb << 20) for i in range(a.shards)]
    size = sum(p.stat().st_size for s in shards for p in s.rglob("*") if p.is_file())
    print(f"built {a.shards} shards x {a.benchmarks} benchmarks ({size / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
    wall = run_merge(shards, work / "merged")
    m = json.loads((work / "merged" / "manifest.json").read_text())
    assert m["benchmarks"] == len(keys) and m["status"] == "complete", m["status"]
    print(f"nsightwrap merge, same file system (hard links): {wall:.2f} s wall for {len(keys)} benchmarks")
    if a.copy_dir is not None:
        out = Path(tempfile.mkdtemp(prefix="merged-", dir=a.copy_dir)) / "merged"
        wall = run_merge(shards, out)
        print(f"nsightwrap merge, to {a.copy_dir} (every file copied): {wall:.2f} s wall")
        shutil.rmtree(out.parent, ignore_errors=True)
    if a.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
