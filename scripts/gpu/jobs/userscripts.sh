#!/usr/bin/env bash
# GPU job: the user-style scripts of studies/userscripts/ profiled unmodified (SCRIPTS picks them,
# PROFILE_ARGS adds options, LIMIT_EACH bounds each profile), each also run plain CONTROL times
# (default 1) as a noise control. Each run's reports (json, md, table) and its validation table
# (studies/verdict_table.py) come back; of the run directories only manifests, sidecars and logs,
# but those named in KEEP_RUNS whole, with GPU_METRICS cut to the GPC clock, reports gzipped and
# each ncu report also as ncu's raw-page CSV (report.raw.csv).
set -u
: "${JOB_OUT:?JOB_OUT must be set}"
export PATH="/usr/local/cuda/bin:$PATH"
mkdir -p "$JOB_OUT/runs"
nvidia-smi --query-gpu=name,uuid,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
# userscripts/NAME runs that script alone (its own .tgz: the machine returns files up to 16 MiB each).
for s in ${JOB_PARAM:-${SCRIPTS:-small_things matmul_autotune softmax_perf_report}}; do
  for c in $(seq 1 "${CONTROL:-1}"); do
    t0=$(date +%s)
    timeout -k 5 "${LIMIT_EACH:-240}" python3 "studies/userscripts/$s.py" > "$JOB_OUT/$s.plain$c.log" 2>&1
    echo "plain $s #$c rc=$? wall=$(( $(date +%s) - t0 ))s"
  done
  t0=$(date +%s)
  timeout -k 5 "${LIMIT_EACH:-240}" python3 -m nsightwrap profile -q ${PROFILE_ARGS:-} -o "$JOB_OUT/runs/$s" "studies/userscripts/$s.py" \
    > "$JOB_OUT/$s.profile.log" 2>&1
  echo "profile $s rc=$? wall=$(( $(date +%s) - t0 ))s"
  tail -n 3 "$JOB_OUT/$s.profile.log" | cut -c1-300
done
for d in "$JOB_OUT"/runs/*/; do
  d=${d%/}
  python3 -m nsightwrap report "$d" --format json -o "$d.report.json" > /dev/null 2>&1; echo "report json $(basename "$d") rc=$?"
  python3 -m nsightwrap report "$d" --format md -o "$d.report.md" > /dev/null 2>&1
  COLUMNS=220 python3 -m nsightwrap report "$d" --format table > "$d.report.txt" 2>&1
  python3 -m studies.verdict_table "$d" --json "$d.verdict.json" > "$d.verdict.md" 2>&1; echo "verdict table $(basename "$d") rc=$?"
  tail -n 2 "$d.verdict.md"
  case " ${KEEP_RUNS:-} " in
    *" $(basename "$d") "*)
      # ncu's own raw-page CSV of each ncu report, so that a kept run can ship without its reports
      for r in "$d"/ncu*/report.ncu-rep; do
        [ -f "$r" ] && ncu --import "$r" --csv --page raw --print-units base > "${r%.ncu-rep}.raw.csv" 2> "${r%.ncu-rep}.raw.err"
      done ;;
  esac
  bash scripts/gpu/compact_run.sh "$d"
  case " ${KEEP_RUNS:-} " in
    *" $(basename "$d") "*) ;;
    *) find "$d" -type f ! -name '*.json' ! -name '*.log' -delete ;;
  esac
done
du -sh "$JOB_OUT"/runs/* 2>/dev/null
