#!/usr/bin/env bash
# The capture layer on the final code: do_bench medians with and without the layer, and the GPU tests.
set -x
OUT=${JOB_OUT:-/tmp/capture3-out}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
t0=$(date +%s)
timeout 60 python3 -m benchmarks.capture_overhead --rounds 4 --json "$OUT/capture_overhead.json" > "$OUT/capture_overhead.txt" 2>&1
echo "overhead rc=$? wall=$(( $(date +%s) - t0 ))s"
cat "$OUT/capture_overhead.txt"
t1=$(date +%s)
timeout 45 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_capture_gpu.py > "$OUT/gpu_tests.log" 2>&1
echo "tests rc=$? wall=$(( $(date +%s) - t1 ))s"
tail -n 15 "$OUT/gpu_tests.log"
