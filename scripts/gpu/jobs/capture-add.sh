#!/usr/bin/env bash
# GPU job: the capture layer's effect on the 2 us add alone, with enough in-process pairs to
# resolve +-1% (benchmarks/capture_overhead.py --only add_4k; docs/capture.md). About 150 s with
# the default 120 pairs in 3 processes (PAIRS, PROCESSES and LIMIT change them; REWRITES=exit holds
# the layer's sidecar rewrites until exit).
# Runs from the repository root after `. scripts/gpu/env.sh`; keeps everything under $JOB_OUT.
set -x
OUT=${JOB_OUT:-/tmp/capture-add-out}
mkdir -p "$OUT"
timeout "${LIMIT:-170}" python3 -m benchmarks.capture_overhead --mode inprocess --only add_4k \
    --pairs "${PAIRS:-120}" --processes "${PROCESSES:-3}" --rewrites "${REWRITES:-spaced}" \
    --json "$OUT/capture_overhead_add.json" > "$OUT/capture_overhead_add.txt" 2>&1
echo "capture overhead rc=$?"
tail -n 8 "$OUT/capture_overhead_add.txt"
