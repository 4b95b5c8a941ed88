#!/usr/bin/env bash
# GPU job: which part of the capture layer moves the 2 us add (docs/capture.md)? The add's
# do_bench called four ways in one process, in a Williams order: the layer's, triton's own
# (uncaptured), the layer's with torch's own Event inside it, and triton's own with the layer's
# Event hooks inside it (benchmarks/capture_overhead.py --mode sides). CALLS per side and
# PROCESSES fresh processes; about 60 s per process at the defaults.
# Runs from the repository root after `. scripts/gpu/env.sh`; keeps everything under $JOB_OUT.
set -x
OUT=${JOB_OUT:-/tmp/capture-sides-out}
mkdir -p "$OUT"
timeout "${LIMIT:-400}" python3 -m benchmarks.capture_overhead --mode sides --only "${ONLY:-add_4k}" \
    --calls "${CALLS:-90}" --processes "${PROCESSES:-5}" ${SIDES:+--sides "$SIDES"} \
    --json "$OUT/capture_sides.json" > "$OUT/capture_sides.txt" 2>&1
echo "capture sides rc=$?"
tail -n 40 "$OUT/capture_sides.txt"
