"""What one rewrite of the capture layer's sidecar costs, as the captures pile up (docs/capture.md,
"What is written"). No GPU needed.

    python3 -m benchmarks.sidecar_write_speed [--samples 1400] [--counts 10,100,360,1000]

For each count: a plain-pass layer holding that many captured ``do_bench`` calls of ``--samples``
raw samples each (about what a 2 us kernel's ``do_bench`` keeps with its default ``rep``), one
forced rewrite timed (median of 3), and the file's size; then how many rewrites the layer makes
when those captures finish back to back.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from nsightwrap.capture.state import Capture, Layer, Site
from nsightwrap.core import contract

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--samples", type=int, default=1400)
    ap.add_argument("--counts", default="10,100,360,1000")
    a = ap.parse_args()
    print("| captures | sidecar MB | one rewrite ms | rewrites while they finish back to back |")
    print("| --- | --- | --- | --- |")
    for n in (int(c) for c in a.counts.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            L = Layer({contract.ENV_PASS: contract.PASS_PLAIN, contract.ENV_RUN_DIR: tmp})
            writes, last = 0, None
            for i in range(n):
                L.finish(Capture(name=f"bench.py:7 do_bench #{i + 1}", kind="do_bench",
                                 site=Site("/work/bench.py", 7, "main"), call=i + 1, label=None,
                                 api="triton.testing.do_bench", samples_ns=[4288.0 + i % 7] * a.samples,
                                 user_value_ns=4288.0))  # fmt: skip
                writes += L.spacing.last_end != last
                last = L.spacing.last_end
            times = []
            for _ in range(3):
                L._dirty = True
                t0 = time.perf_counter()
                L.flush(force=True)
                times.append(time.perf_counter() - t0)
            size = Path(L.sidecar_path() or "").stat().st_size
        print(f"| {n} | {size / 1e6:.1f} | {statistics.median(times) * 1e3:.0f} | {writes} |")


if __name__ == "__main__":
    main()
