#!/usr/bin/env bash
# GPU job: the zero-change capture layer on unmodified scripts. Profiles the three examples
# (fixtures for fixtures/runs/), runs the capture GPU tests, probes ncu's NVTX filter syntax on
# a script's own ranges, and records triton's and torch's benchmark sources the layer relies on.
# Runs from the repository root after `. scripts/gpu/env.sh`; writes under $JOB_OUT. Every step
# is logged and none stops the next; the most important steps run first.
set -u
set -x
: "${JOB_OUT:?JOB_OUT must be set}"
mkdir -p "$JOB_OUT/runs"
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
python3 - > "$JOB_OUT/sources.txt" 2>&1 <<'PY'
import inspect, sys, torch, triton, triton.testing
from triton.runtime import driver
from torch.utils.benchmark.utils import timer
print(sys.version, torch.__version__, triton.__version__)
print(inspect.getsource(triton.testing.do_bench))
print(inspect.getsource(triton.testing.do_bench_cudagraph))
print(inspect.getsource(type(driver.active).clear_cache))
print(inspect.getsource(type(driver.active).get_empty_cache_for_benchmark))
print(inspect.getsource(timer.Timer.timeit)); print(inspect.getsource(timer.Timer.blocked_autorange))
print(inspect.getsource(torch.cuda.Event))
PY
head -c 400 "$JOB_OUT/sources.txt"; echo
profile() {  # name, seconds, script and its arguments
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  timeout -k 5 "$limit" python3 -m nsightwrap profile -q --no-analyze --no-clock-sweep --ncu-iters 2 \
    -o "$JOB_OUT/runs/$name" "$@" > "$JOB_OUT/$name.profile.log" 2>&1
  echo "profile $name rc=$? wall=$(( $(date +%s) - t0 ))s"
  tail -n 8 "$JOB_OUT/$name.profile.log"
  tail -n 6 "$JOB_OUT/runs/$name/plain/stdout.log" "$JOB_OUT/runs/$name/plain/stderr.log" 2>/dev/null
  grep -c '==PROF== Profiling' "$JOB_OUT/runs/$name/ncu/stdout.log" 2>/dev/null
  ls "$JOB_OUT/runs/$name/plain" 2>/dev/null
}
profile h200-blog 50 examples/blog_do_bench.py --repeats 10 --rep 10
profile h200-nvtx 40 examples/own_nvtx.py --steps 3
profile h200-timer 45 examples/torch_timer.py --min-run-time 0.02
t0=$(date +%s)
timeout -k 5 40 python3 -m pytest -q -m gpu tests/test_capture_gpu.py -x -p no:cacheprovider > "$JOB_OUT/gpu_tests.log" 2>&1
echo "gpu tests rc=$? wall=$(( $(date +%s) - t0 ))s"; tail -n 25 "$JOB_OUT/gpu_tests.log"
# ncu's NVTX filter syntax on a script's own ranges: kernels profiled per filter.
for f in 'mydomain@myrange' 'mydomain@myrange/' 'graph_replay/' 'nan@graph_replay/' 'outer/inner/' \
         'nsightwrap@probe.py:12 do_bench_cuda #1/iter0/'; do
  n=$(timeout 15 ncu --clock-control none --nvtx --nvtx-include "$f" --metrics gpu__time_duration.sum \
      python3 fixtures/captures/capture/filter_probe.py 2>&1 | tee -a "$JOB_OUT/ncu_filter_log.txt" | grep -c '==PROF== Profiling')
  printf '%s\t%s\n' "$n" "$f" | tee -a "$JOB_OUT/ncu_filters_user.tsv"
done
# Make the fixtures small: the parsers read gzipped reports; the .nsys-rep is not needed.
for d in "$JOB_OUT"/runs/*; do
  [ -f "$d/ncu/report.ncu-rep" ] && gzip -9 "$d/ncu/report.ncu-rep"
  [ -f "$d/nsys/report.sqlite" ] && gzip -9 "$d/nsys/report.sqlite"
  rm -f "$d/nsys/report.nsys-rep"
done
du -ah "$JOB_OUT/runs" | sort -h | tail -n 12
date -u
