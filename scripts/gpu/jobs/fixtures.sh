#!/usr/bin/env bash
# GPU job: the shipped run directories of fixtures/runs/ captured again with today's nsightwrap
# (fixtures/README.md names each command): the blog recipe, the script with its own NVTX ranges,
# torch.utils.benchmark.Timer, and a perf_report sweep of 16 timings. Each run is packed by
# compact_run.sh (GPU metrics cut to the clocks, exports and reports gzipped, .nsys-rep dropped).
# NAMES picks runs (blog nvtx timer perf); PREFIX names them (default: the GPU, h200 or h100).
set -u
: "${JOB_OUT:?JOB_OUT must be set}"
mkdir -p "$JOB_OUT/runs"
export PATH="/usr/local/cuda/bin:$PATH"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
case $gpu in *H200*) prefix=h200 ;; *H100*) prefix=h100 ;; *) prefix=gpu ;; esac
prefix=${PREFIX:-$prefix}
profile() {  # name, seconds, script and its arguments
  local name=$prefix-$1 limit=$2; shift 2
  local t0=$(date +%s)
  timeout -k 5 "$limit" python3 -m nsightwrap profile -q --no-clock-sweep --ncu-iters 2 \
    -o "$JOB_OUT/runs/$name" "$@" > "$JOB_OUT/$name.profile.log" 2>&1
  echo "profile $name rc=$? wall=$(( $(date +%s) - t0 ))s"
  tail -n 4 "$JOB_OUT/$name.profile.log" | cut -c1-300
}
for n in ${NAMES:-blog nvtx timer perf}; do
  case $n in
    blog) profile blog 70 examples/blog_do_bench.py --repeats 10 --rep 10 ;;
    nvtx) profile nvtx 60 examples/own_nvtx.py --steps 3 ;;
    timer) profile timer 70 examples/torch_timer.py --min-run-time 0.02 ;;
    perf) profile perf-report 120 examples/perf_report_sweep.py ;;
  esac
done
for d in "$JOB_OUT"/runs/*; do
  rm -rf "$d/analysis"
  bash scripts/gpu/compact_run.sh "$d"
done
du -sh "$JOB_OUT"/runs/*
