#!/usr/bin/env bash
# GPU job: unmodified user scripts (fixtures/captures/verdicts/) profiled with every pass, the nsys
# pass sampling the GPU's counters; the run directories come back as fixtures for the verdict tests
# (the GPU_METRICS table cut down to the GPC clock). SCRIPTS picks scripts (sweep worker mixed);
# PROFILE_ARGS adds nsightwrap profile options, MIXED_LIMIT the mixed script's seconds.
set -u
: "${JOB_OUT:?JOB_OUT must be set}"
mkdir -p "$JOB_OUT/runs"
export PATH="/usr/local/cuda/bin:$PATH"
nvidia-smi --query-gpu=name,uuid,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
nsys --version
V=fixtures/captures/verdicts
profile() {  # name, seconds, target...
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  timeout -k 5 "$limit" python3 -m nsightwrap profile -q --ncu-iters "${NCU_ITERS:-3}" -o "$JOB_OUT/runs/$name" ${PROFILE_ARGS:-} "$@" \
    > "$JOB_OUT/$name.profile.log" 2>&1
  echo "profile $name rc=$? wall=$(( $(date +%s) - t0 ))s"
  tail -n 5 "$JOB_OUT/$name.profile.log" | cut -c1-300
  tail -n 4 "$JOB_OUT/runs/$name/plain/stdout.log" 2>/dev/null
}
for s in ${SCRIPTS:-sweep worker mixed}; do
  case $s in
    sweep) profile sweep 200 $V/sweep.py ;;
    worker) profile worker 150 "$(command -v torchrun)" --standalone --nproc_per_node=1 $V/worker.py ;;
    mixed) profile mixed ${MIXED_LIMIT:-150} $V/mixed.py ;;
  esac
done
for d in "$JOB_OUT"/runs/*; do
  bash scripts/gpu/compact_run.sh "$d"
  python3 -m nsightwrap report "$d" --format table > "$d.report.txt" 2>&1; echo "report $(basename "$d") rc=$?"
done
du -sh "$JOB_OUT"/runs/* 2>/dev/null
