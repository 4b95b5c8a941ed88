#!/usr/bin/env bash
# Run GPU jobs (scripts/gpu/jobs/<name>.sh) one after another on the GPU machine; each writes
# into $JOB_OUT=$OUT/<name>/, which is packed into $OUT/<name>.tgz (the machine returns at most 8
# files).   bash scripts/gpu/run_jobs.sh name1:SECONDS name2/PARAM:SECONDS ...
# A job that takes a parameter (study/NAME, bench/NAME) gets it as $JOB_PARAM; its folder and
# .tgz are named NAME-PARAM. ARGS and LIMIT pass through the environment to the job.
set -u
. scripts/gpu/env.sh
nvidia-smi --query-gpu=name,uuid,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
python3 -c "import sys, torch, triton, nvtx, ncu_report; print(sys.executable, torch.__version__, triton.__version__, nvtx.__file__)" 2>&1 | tail -1
for spec in "$@"; do
  job=${spec%%:*}; limit=${spec#*:}
  name=${job%%/*}; param=""
  [ "$job" != "$name" ] && param=${job#*/}
  script=$name
  [ -n "$param" ] && name="$name-$param"
  mkdir -p "$OUT/$name"
  echo "=== $name (limit ${limit}s) $(date -u +%T)"
  t0=$(date +%s)
  JOB_OUT="$OUT/$name" JOB_PARAM="$param" timeout -k 10 "$limit" bash "scripts/gpu/jobs/$script.sh" >"$OUT/$name/job.log" 2>&1
  rc=$?
  echo "=== $name rc=$rc wall=$(( $(date +%s) - t0 ))s"
  tail -n 12 "$OUT/$name/job.log" | cut -c1-300
  tar -C "$OUT" -czf "$OUT/$name.tgz" "$name" && rm -rf "${OUT:?}/$name"
done
