#!/usr/bin/env bash
# GPU job: the reference workload under ncu at --clock-control none with the clock sweep's two
# metrics (the duration pass), what the fake ncu writes for that pass
# (fixtures/reference/h200-workload/workload_duration.ncu-rep.gz). About 40 s. Runs from the
# repository root after `. scripts/gpu/env.sh`; keeps everything under $JOB_OUT.
set -x
OUT=${JOB_OUT:-/tmp/duration-pass-out}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
cd fixtures/reference/h200-workload || exit 1
REF_ITERS=3 timeout 200 ncu --clock-control none --nvtx --nvtx-include "regex:mm_.*/" --nvtx-include "copy_1g/" \
    --nvtx-include "softmax_mlp/" --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second \
    -o "$OUT/workload_duration" -f python3 workload.py > "$OUT/ncu_duration_log.txt" 2>&1
echo "duration pass rc=$?"
tail -n 5 "$OUT/ncu_duration_log.txt"
gzip -9 "$OUT/workload_duration.ncu-rep"
ls -la "$OUT"
