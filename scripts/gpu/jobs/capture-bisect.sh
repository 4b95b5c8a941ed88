#!/usr/bin/env bash
# GPU job: does the layer's GEMM lean (its do_bench medians land in the faster of two modes more
# often; docs/capture.md) come from its sidecar rewrites? The same GEMM pairs twice on one
# machine: rewrites as the layer spaces them, and none until exit (--rewrites exit). About 200 s.
# Runs from the repository root after `. scripts/gpu/env.sh`; keeps everything under $JOB_OUT.
set -x
OUT=${JOB_OUT:-/tmp/capture-bisect-out}
mkdir -p "$OUT"
for how in spaced exit; do
  timeout 200 python3 -m benchmarks.capture_overhead --mode inprocess --only gemm_64x4096x4096 \
      --pairs "${PAIRS:-100}" --processes "${PROCESSES:-3}" --rewrites "$how" \
      --json "$OUT/capture_overhead_gemm_$how.json" > "$OUT/capture_overhead_gemm_$how.txt" 2>&1
  echo "capture overhead ($how) rc=$?"
  tail -n 4 "$OUT/capture_overhead_gemm_$how.txt"
done
