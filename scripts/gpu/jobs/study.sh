#!/usr/bin/env bash
# GPU job: one study of studies/ (JOB_PARAM names it: `bash scripts/gpu/run_jobs.sh study/window_study:240`).
# ARGS replaces its default options ({out} in ARGS stands for this job's folder); LIMIT its time
# limit (seconds). Writes NAME.md (the tables), NAME.json (every reading: what
# studies/results/ keeps) and NAME.stderr under $JOB_OUT. Runs from the repository root after
# `. scripts/gpu/env.sh`.
set -x
name=${JOB_PARAM:?"study/NAME: which study (studies/NAME.py)"}
OUT=${JOB_OUT:-/tmp/study-$name-out}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
# The options each study's recorded result was made with (studies/README.md).
case $name in
  add_study) defaults="--rounds 3 --ncu-iters 30" ;;
  hold_order) defaults="--rounds 6" ;;
  ncu_gap) defaults="--rounds 3" ;;
  order_study) defaults="--rounds 6" ;;
  placement_study) defaults="--placements 16 --plain-runs 2 --ncu-runs 2 --ncu-iters 30" ;;
  plain_clock_study) defaults="--rounds 3" ;;
  warmup_study) defaults="--rounds 4" ;;
  window_study) defaults="--rounds 8" ;;
  *) defaults="" ;;
esac
args=${ARGS:-$defaults}
args=${args//\{out\}/$OUT}
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
ncu --version 2>/dev/null | tail -n 1
# shellcheck disable=SC2086  # ARGS is a list of options
timeout "${LIMIT:-280}" python3 -m "studies.$name" $args --json "$OUT/$name.json" \
    > "$OUT/$name.md" 2> "$OUT/$name.stderr"
echo "$name rc=$?"
cat "$OUT/$name.md"
tail -n 30 "$OUT/$name.stderr"
