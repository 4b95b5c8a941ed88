"""Does the capture layer change the numbers a script computes? The user's own
``triton.testing.do_bench`` medians with and without the layer, on kernels from ~2 us to ~1 ms.

    python benchmarks/capture_overhead.py [--rounds N] [--rep MS] [--json FILE]

Each round runs the same worker script twice, in a fresh process each time: as it is, and with
the layer loaded as ``nsightwrap profile`` loads it in the plain pass (``PYTHONPATH`` boot folder,
``NSIGHTWRAP_CAPTURE=1``, ``NSIGHTWRAP_PASS=plain``), alternating which goes first. The worker
times each kernel with ``do_bench(return_mode="median")`` and prints the medians; the layer's run
also writes its sidecar, which is checked to hold the same numbers. Printed per kernel: the
median over rounds of each side and their relative difference (target: under 1% at the median).
Kernels: an elementwise add of 4 Ki floats (~2 us, launch-bound), GPU sleeps of ~10 us, ~100 us
and ~1 ms (``torch.cuda._sleep``), a 64x4096x4096 bf16 GEMM and a 1 GiB copy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from nsightwrap.core.contract import capture_boot_dir

WORKER = r'''
import json, sys, torch, triton.testing
rep = float(sys.argv[1])
a = torch.randn(4096, device="cuda"); b = torch.randn(4096, device="cuda")
x = torch.randn(64, 4096, device="cuda", dtype=torch.bfloat16); w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
src = torch.randn(256 * 1024 * 1024, device="cuda"); dst = torch.empty_like(src)
cycles_per_us = 1980  # torch.cuda._sleep spins SM cycles; at ~1.98 GHz
cases = {
    "add_4k": lambda: a + b,
    "sleep_10us": lambda: torch.cuda._sleep(10 * cycles_per_us),
    "sleep_100us": lambda: torch.cuda._sleep(100 * cycles_per_us),
    "sleep_1ms": lambda: torch.cuda._sleep(1000 * cycles_per_us),
    "gemm_64x4096x4096": lambda: torch.nn.functional.linear(x, w),
    "copy_1g": lambda: dst.copy_(src),
}
out = {}
for name, f in cases.items():
    out[name] = triton.testing.do_bench(f, rep=rep, return_mode="median") * 1e6  # ns
print("RESULT " + json.dumps(out))
'''


def _run(worker: Path, rep: float, layer: bool, run_dir: Path) -> dict[str, float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NSIGHTWRAP_")}
    if layer:
        (run_dir / "plain").mkdir(parents=True, exist_ok=True)
        env.update({
            "NSIGHTWRAP_CAPTURE": "1", "NSIGHTWRAP_PASS": "plain", "NSIGHTWRAP_RUN_DIR": str(run_dir),
            "PYTHONPATH": os.pathsep.join(p for p in (capture_boot_dir(), env.get("PYTHONPATH")) if p),
        })  # fmt: skip
    p = subprocess.run([sys.executable, str(worker), str(rep)], env=env, capture_output=True, text=True, check=True)
    got: dict[str, float] = json.loads(p.stdout.split("RESULT ", 1)[1])
    if layer:  # the layer kept what the script got
        (doc,) = [json.loads(f.read_text()) for f in (run_dir / "plain").glob("timer-*-capture.json")]
        kept = [b["user_value_ns"] for b in doc["benchmarks"]]
        assert kept == list(got.values()), (kept, got)
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--rep", type=float, default=100.0, help="do_bench's rep in ms (its default: 100)")
    ap.add_argument("--json", type=Path, help="write every round's numbers here")
    a = ap.parse_args()
    bare: list[dict[str, float]] = []
    layer: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="nsightwrap-capture-overhead-") as tmp:
        worker = Path(tmp) / "worker.py"
        worker.write_text(WORKER)
        for i in range(a.rounds):
            order = (False, True) if i % 2 == 0 else (True, False)
            for with_layer in order:
                got = _run(worker, a.rep, with_layer, Path(tmp) / f"run{i}")
                (layer if with_layer else bare).append(got)
            print(f"round {i + 1} done", flush=True)
    rows = []
    print(f"{'kernel':<20} {'without layer':>14} {'with layer':>14} {'difference':>11}")
    for name in bare[0]:
        b = statistics.median(r[name] for r in bare)
        w = statistics.median(r[name] for r in layer)
        rows.append({"kernel": name, "without_ns": b, "with_ns": w, "rel_diff": w / b - 1})
        print(f"{name:<20} {b / 1e3:>11.3f} us {w / 1e3:>11.3f} us {w / b - 1:>+10.2%}")
    worst = max(abs(r["rel_diff"]) for r in rows)
    print(f"largest difference of medians: {worst:.2%} (target < 1%)")
    if a.json:
        a.json.write_text(json.dumps({"rounds": a.rounds, "rep_ms": a.rep, "without": bare, "with": layer,
                                      "summary": rows}, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
