#!/usr/bin/env bash
# GPU job: what a whole `nsightwrap profile` costs against the plain run and the tools by hand
# (benchmarks/profile_cost.py; the target: <= 3x the plain run), on the two unmodified examples, each once at the
# defaults (the sweep also against every kernel instance profiled); then the <= 3x GPU test.
# About 500 s. Runs from the
# repository root after `. scripts/gpu/env.sh`; writes under $JOB_OUT.
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
  tail -n 20 "$JOB_OUT/work-$name/profile-run.log"
}
# The sweep: at the defaults, against every kernel instance profiled and the base pass always (the
# baseline: the answers before the cap and the conditional pass) and the tools by
# hand; the graph/streams script at the defaults only (its uncapped ncu pass alone takes minutes).
# The baseline: every pass in full (no cap, both sweep passes, the nsys loops as the script asks,
# each pass started after the one before).
FULL="--ncu-kernel-cap 0 --base-pass always --duration-pass always --nsys-loop-ms 0 --no-early-start"
hand=--no-by-hand  # BY_HAND=1: the tools by hand too
[ -n "${BY_HAND:-}" ] && hand=""
# NO_GEMM=1 / NO_MIXED=1: one script only (each fits one device call of 600 s).
# PROFILE_ARGS: options of the measured run (default none: the defaults); GEMM_BASELINE /
# MIXED_BASELINE: the baseline's, e.g. PROFILE_ARGS=--early-start GEMM_BASELINE=--no-early-start
# sets an option against the defaults in one run.
[ -z "${NO_GEMM:-}" ] && cost gemm "${GEMM_LIMIT:-330}" "${PROFILE_ARGS:-}" $hand --baseline-args="${GEMM_BASELINE:-$FULL}" examples/gemm_sweep_plain.py
# The mixed script's baseline keeps the cap: uncapped, its ncu pass alone took 251 s (docs/profile.md, "Bounded ncu work").
[ -z "${NO_MIXED:-}" ] && cost mixed "${MIXED_LIMIT:-200}" "${PROFILE_ARGS:-}" --baseline-args="${MIXED_BASELINE:---base-pass always --duration-pass always --nsys-loop-ms 0 --no-early-start}" examples/mixed_graph_streams.py
if [ -z "${NO_GPU_TEST:-}" ]; then
  t0=$(date +%s)
  timeout -k 5 ${TEST_LIMIT:-200} python3 -m pytest -q -m gpu tests/test_profile_cost_gpu.py -x -p no:cacheprovider > "$JOB_OUT/gpu_test.log" 2>&1
  echo "gpu test rc=$? wall=$(( $(date +%s) - t0 ))s"; tail -n 25 "$JOB_OUT/gpu_test.log"
fi
# The sweep's run at the defaults comes back as a fixture: GPU_METRICS cut to the clocks, reports packed.
# NO_RUN=1: the figures only (the sweep's run directory packed is ~43 MB, over what comes back).
run="$JOB_OUT/work-gemm/profile-run"
if [ -z "${NO_RUN:-}" ] && [ -f "$run/nsys/report.sqlite" ]; then
  python3 - "$run/nsys/report.sqlite" <<'PY'
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
try:
    ids = [r[0] for r in con.execute("SELECT DISTINCT metricId FROM TARGET_INFO_GPU_METRICS WHERE metricName LIKE 'GPC Clock%' OR metricName LIKE 'SYS Clock%'")]
    con.execute(f"DELETE FROM GPU_METRICS WHERE metricId NOT IN ({','.join(map(str, ids)) or -1})")
    con.commit(); con.execute("VACUUM")
except sqlite3.Error as exc:
    print("no GPU metrics:", exc)
PY
  gzip -9 "$run/nsys/report.sqlite"; rm -f "$run/nsys/report.nsys-rep" "$run/nsys/report.qdstrm"
  for r in "$run"/ncu*/report.ncu-rep; do [ -f "$r" ] && gzip -9 "$r"; done
  tar -C "$JOB_OUT/work-gemm" -czf "$JOB_OUT/gemm-run.tgz" profile-run
fi
rm -rf "$JOB_OUT/work-gemm/profile-baseline/nsys" "$JOB_OUT/work-gemm/byhand"
# Only manifests and logs of the other run directories come back (the machine returns 8 files).
for d in "$JOB_OUT"/work-*/profile-*; do
  [ "$d" = "$run" ] && continue
  find "$d" -type f ! -name manifest.json ! -name '*.log' -delete
done
[ -f "$JOB_OUT/gemm-run.tgz" ] && rm -rf "$run"
# Keep the manifests and the small logs; drop the big reports.
find "$JOB_OUT" -name '*.nsys-rep' -delete; find "$JOB_OUT" -name '*.sqlite' -size +20M -delete
find "$JOB_OUT" -name '*.ncu-rep' -size +20M -delete
if [ -n "${NO_RUN:-}" ]; then
  # The manifests say each pass's time and what it profiled; the reports stay behind.
  for w in "$JOB_OUT"/work-*; do
    find "$w" -type f ! -name manifest.json ! -name '*.log' ! -name '*.txt' ! -name '*.json' -delete
  done
  find "$JOB_OUT" -type f -size +4M -delete
fi
du -sh "$JOB_OUT"/*
date -u
