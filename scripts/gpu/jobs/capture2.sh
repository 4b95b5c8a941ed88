#!/usr/bin/env bash
# GPU job (second): what the capture layer costs. The user's own do_bench medians with and
# without the layer (benchmarks/capture_overhead.py), `nsightwrap profile` of an unmodified script
# against the same tool runs by hand (benchmarks/profile_overhead.py --zero-change), and the rest
# of the ncu NVTX filter-syntax probe. Runs from the repository root after `. scripts/gpu/env.sh`;
# writes under $JOB_OUT; every step is logged and none stops the next.
set -u
set -x
: "${JOB_OUT:?JOB_OUT must be set}"
mkdir -p "$JOB_OUT"
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu --format=csv
t0=$(date +%s)
timeout -k 5 60 python3 -m benchmarks.capture_overhead --rounds 4 --rep 100 --json "$JOB_OUT/capture_overhead.json" \
  > "$JOB_OUT/capture_overhead.txt" 2>&1
echo "capture_overhead rc=$? wall=$(( $(date +%s) - t0 ))s"; cat "$JOB_OUT/capture_overhead.txt" | tail -n 12
t0=$(date +%s)
timeout -k 5 70 python3 -m benchmarks.profile_overhead --repeat 1 --zero-change examples/blog_do_bench.py --repeats 10 --rep 10 \
  > "$JOB_OUT/profile_overhead.txt" 2>&1
echo "profile_overhead rc=$? wall=$(( $(date +%s) - t0 ))s"; tail -n 6 "$JOB_OUT/profile_overhead.txt"
for f in 'nan@graph_replay/' 'outer/inner/' 'nsightwrap@probe.py:12 do_bench_cuda #1/iter0/'; do
  n=$(timeout 12 ncu --clock-control none --nvtx --nvtx-include "$f" --metrics gpu__time_duration.sum \
      python3 fixtures/captures/capture/filter_probe.py 2>&1 | tee -a "$JOB_OUT/ncu_filter_log.txt" | grep -c '==PROF== Profiling')
  printf '%s\t%s\n' "$n" "$f" | tee -a "$JOB_OUT/ncu_filters_user.tsv"
done
date -u
