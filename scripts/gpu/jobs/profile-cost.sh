#!/usr/bin/env bash
# GPU job: what a whole `nsightwrap profile` costs against the plain run and the tools by hand
# (benchmarks/profile_cost.py; issue 29), on the two unmodified examples at the defaults, and the
# GEMM sweep once without the cap and with the base pass always (the answers to compare); then the
# <= 3x GPU test. About 400-500 s. Runs from the repository root after `. scripts/gpu/env.sh`;
# writes under $JOB_OUT.
set -u
set -x
: "${JOB_OUT:?JOB_OUT must be set}"
mkdir -p "$JOB_OUT"
export PATH="/usr/local/cuda/bin:$PATH"
date -u
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
ncu --version | tail -n 1; nsys --version
cost() {  # name, seconds, extra profile args, script
  local name=$1 limit=$2 args=$3; shift 3
  local t0=$(date +%s)
  timeout -k 10 "$limit" python3 benchmarks/profile_cost.py --work "$JOB_OUT/work-$name" --timeout "$limit" \
      --profile-args="$args" --json "$JOB_OUT/$name.json" "$@" > "$JOB_OUT/$name.md" 2> "$JOB_OUT/$name.stderr"
  echo "profile-cost $name rc=$? wall=$(( $(date +%s) - t0 ))s"
  cat "$JOB_OUT/$name.md"; tail -n 15 "$JOB_OUT/$name.stderr"
  tail -n 20 "$JOB_OUT/work-$name/profile.log"
}
cost gemm 240 "" examples/gemm_sweep_plain.py
cost mixed 240 "" examples/mixed_graph_streams.py
# The GEMM sweep as before the cap and the conditional base pass: the answers to compare with.
cost gemm-full 300 "--ncu-kernel-cap 0 --base-pass always" examples/gemm_sweep_plain.py
t0=$(date +%s)
timeout -k 5 200 python3 -m pytest -q -m gpu tests/test_profile_cost_gpu.py -x -p no:cacheprovider > "$JOB_OUT/gpu_test.log" 2>&1
echo "gpu test rc=$? wall=$(( $(date +%s) - t0 ))s"; tail -n 25 "$JOB_OUT/gpu_test.log"
# Keep the manifests and the small logs; drop the big reports.
find "$JOB_OUT" -name '*.nsys-rep' -delete; find "$JOB_OUT" -name '*.sqlite' -size +20M -delete
find "$JOB_OUT" -name '*.ncu-rep' -size +20M -delete
du -sh "$JOB_OUT"/*
date -u
