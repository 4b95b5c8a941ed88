#!/usr/bin/env bash
# GPU job: the capture layer's effect on the script's own do_bench for every kernel but the 2 us
# add (capture-add.sh has it), with enough in-process pairs to resolve +-1% on the bimodal ones
# (benchmarks/capture_overhead.py; docs/capture.md). About 330 s. Runs from the repository root
# after `. scripts/gpu/env.sh`; keeps everything under $JOB_OUT.
set -x
OUT=${JOB_OUT:-/tmp/capture-rest-out}
mkdir -p "$OUT"
timeout 400 python3 -m benchmarks.capture_overhead --mode inprocess \
    --only sleep_10us,sleep_100us,sleep_1ms,gemm_64x4096x4096,copy_1g --pairs 100 --processes 3 \
    --json "$OUT/capture_overhead_rest.json" > "$OUT/capture_overhead_rest.txt" 2>&1
echo "capture overhead rc=$?"
tail -n 12 "$OUT/capture_overhead_rest.txt"
