#!/usr/bin/env bash
# Which of nsightwrap's coverage-pass NVTX filters ncu honours on studies/userscripts/small_things.py:
# a plain pass gives the capture layer its sidecar, then ncu runs the script as the coverage pass
# does (same environment, duration and clock metrics only, no cap) once per filter set, and the
# kernels each profiled are counted per NVTX range. The question: are several --nvtx-include
# filters of one domain all honoured (the coverage pass of 2026-12-07 got only its first one's
# launches), and does one filter with an alternation do instead. Run on the GPU machine from the repository
# root after `. scripts/gpu/env.sh`; writes under $JOB_OUT (default /tmp/cover-probe).
set -u
OUT=${JOB_OUT:-/tmp/cover-probe}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
run=$OUT/run
python3 -m nsightwrap profile -q --passes plain -o "$run" studies/userscripts/small_things.py > "$OUT/plain.log" 2>&1
echo "plain rc=$?"
boot=$(python3 -c "import nsightwrap, os; print(os.path.join(os.path.dirname(nsightwrap.__file__), 'capture', 'boot'))")
probe() {  # name, then ncu filter options
  local name=$1; shift
  NSIGHTWRAP_RUN_DIR=$run NSIGHTWRAP_PASS=ncu NSIGHTWRAP_CAPTURE=1 NSIGHTWRAP_NCU_ITERS=3 \
    PYTHONPATH="$boot:$PWD:${PYTHONPATH:-}" \
    timeout 120 ncu --clock-control none --nvtx "$@" --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second \
    -o "$OUT/$name" -f python3 studies/userscripts/small_things.py > "$OUT/$name.log" 2>&1
  echo "probe $name rc=$? profiled=$(grep -c '==PROF== Profiling' "$OUT/$name.log")"
  ncu --import "$OUT/$name.ncu-rep" --csv --page raw --print-nvtx-rename kernel 2>/dev/null \
    | python3 -c "import csv,sys,collections; r=list(csv.reader(sys.stdin)); h=r[0] if r else []; i=h.index('NVTX') if 'NVTX' in h else None; print(collections.Counter(x[i][:90] for x in r[2:]) if i is not None else h[:12])"
}
probe graph --nvtx-include 'regex:nsightwrap@small_things\.py:41 cuda_events #1/iter[0-9]+/'
probe relu --nvtx-include 'regex:nsightwrap@relu 4M fp32/iter[0-9]+/'
probe three --nvtx-include 'regex:nsightwrap@small_things\.py:25 do_bench #3/iter[0-9]+/' \
  --nvtx-include 'regex:nsightwrap@small_things\.py:41 cuda_events #1/iter[0-9]+/' --nvtx-include 'regex:nsightwrap@relu 4M fp32/iter[0-9]+/'
probe three_reversed --nvtx-include 'regex:nsightwrap@relu 4M fp32/iter[0-9]+/' \
  --nvtx-include 'regex:nsightwrap@small_things\.py:41 cuda_events #1/iter[0-9]+/' --nvtx-include 'regex:nsightwrap@small_things\.py:25 do_bench #3/iter[0-9]+/'
probe alternation --nvtx-include 'regex:nsightwrap@(small_things\.py:25 do_bench #3|small_things\.py:41 cuda_events #1|relu 4M fp32)/iter[0-9]+/'
probe any --nvtx-include 'regex:nsightwrap@.*/iter[0-9]+/'
probe graph_plain --nvtx-include 'nsightwrap@small_things.py:41 cuda_events #1/'
rm -f "$OUT"/*.ncu-rep
