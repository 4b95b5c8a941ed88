#!/usr/bin/env bash
# GPU job: one product benchmark of benchmarks/ (JOB_PARAM names it:
# `bash scripts/gpu/run_jobs.sh bench/timer_accuracy:200`). ARGS replaces its default options
# ({out} in ARGS stands for this job's folder, e.g. ARGS='--mode sides --json {out}/sides.json');
# LIMIT its time limit (seconds). Writes NAME.txt and NAME.stderr under $JOB_OUT. Runs from the
# repository root after `. scripts/gpu/env.sh`. The commands behind each figure: docs/development.md.
set -x
name=${JOB_PARAM:?"bench/NAME: which benchmark (benchmarks/NAME.py)"}
OUT=${JOB_OUT:-/tmp/bench-$name-out}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
case $name in
  timer_accuracy) defaults="--rounds 3 --ncu-iters 30 --out {out}/timer-accuracy.md --json {out}/timer-accuracy.json" ;;
  capture_overhead) defaults="--mode both --rounds 10 --pairs 16 --processes 2 --json {out}/capture_overhead.json" ;;
  profile_overhead) defaults="--repeat 2 --zero-change examples/blog_do_bench.py --repeats 10 --rep 10" ;;
  power_trace) defaults="{out}/trace.json" ;;
  plain_clock_cost) defaults="--rounds 3 --json {out}/plain-clock-cost.json" ;;
  *) defaults="" ;;
esac
args=${ARGS:-$defaults}
args=${args//\{out\}/$OUT}
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
# shellcheck disable=SC2086  # ARGS is a list of options
timeout "${LIMIT:-400}" python3 -m "benchmarks.$name" $args > "$OUT/$name.txt" 2> "$OUT/$name.stderr"
echo "$name rc=$?"
tail -n 40 "$OUT/$name.txt"
tail -n 20 "$OUT/$name.stderr"
