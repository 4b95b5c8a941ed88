#!/usr/bin/env bash
# GPU job: the capture layer's overhead both ways (fresh processes, and paired calls in one process
# with nsightwrap.uncaptured() as the side without the layer; docs/capture.md), then the capture
# layer's GPU tests. About 400 s. Runs from the repository root after `. scripts/gpu/env.sh`; keeps
# everything under $JOB_OUT.
set -x
OUT=${JOB_OUT:-/tmp/capture-overhead-out}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
t0=$(date +%s)
step() { echo "=== t=$(( $(date +%s) - t0 ))s $*"; }

step "environment"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"

step "capture overhead (process rounds and in-process pairs)"
timeout 260 python3 -m benchmarks.capture_overhead --mode both --rounds 10 --pairs 16 --processes 2 \
    --json "$OUT/capture_overhead.json" > "$OUT/capture_overhead.txt" 2>&1
echo "capture overhead rc=$?"
tail -n 16 "$OUT/capture_overhead.txt"

step "GPU tests (capture layer)"
left=$(( 410 - ($(date +%s) - t0) ))
[ "$left" -lt 30 ] && left=30
timeout "$left" python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_capture_gpu.py > "$OUT/gpu-tests.log" 2>&1
echo "tests rc=$?"
grep -E "passed|failed|error|FAIL" "$OUT/gpu-tests.log" | tail -n 30
step "done"
