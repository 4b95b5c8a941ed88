#!/usr/bin/env bash
# Does nsightwrap's plain pass read a script's timings as the script's own plain run does? On the
# H100 (2026-12-07) host-bound loops read apart: a side-stream loop 54.69 us plain against 99.71 us
# in the plain pass, a Triton 512^3 matmul 18.8 us against 7.58 us (docs/validation.md). Each round
# runs the script four ways, interleaved, and keeps what the script printed:
#   plain    python3 SCRIPT
#   smi      the same, with nsightwrap's nvidia-smi sampler beside it (-lms 50)
#   layer    the same, with the capture layer loaded as the plain pass loads it (no sampler)
#   pass     nsightwrap profile --passes plain --no-plain-clock (the plain pass as it runs)
# Run on the GPU machine from the repository root after `. scripts/gpu/env.sh`:
#   SCRIPTS="small_things matmul_autotune" ROUNDS=3 bash studies/plain_control/run.sh
# then `python3 studies/plain_control/summarize.py OUT` tabulates each printed number per way.
set -u
OUT=${JOB_OUT:-/tmp/plain-control}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
boot=$(python3 -c "import nsightwrap, os; print(os.path.join(os.path.dirname(nsightwrap.__file__), 'capture', 'boot'))")
nvidia-smi --query-gpu=name,uuid,clocks.sm,temperature.gpu,power.draw --format=csv,noheader | tee "$OUT/gpu.txt"
for s in ${SCRIPTS:-small_things matmul_autotune}; do
  script=studies/userscripts/$s.py
  for r in $(seq 1 "${ROUNDS:-3}"); do
    timeout 120 python3 "$script" > "$OUT/$s.plain.$r.log" 2>&1
    nvidia-smi --query-gpu=timestamp,clocks.sm --format=csv -lms 50 > "$OUT/$s.smi.$r.csv" 2>/dev/null &
    smi=$!
    timeout 120 python3 "$script" > "$OUT/$s.smi.$r.log" 2>&1
    kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
    run=$OUT/runs/$s.layer.$r
    mkdir -p "$run/plain"
    NSIGHTWRAP_RUN_DIR=$run NSIGHTWRAP_PASS=plain NSIGHTWRAP_CAPTURE=1 PYTHONPATH="$boot:$PWD:${PYTHONPATH:-}" \
      timeout 120 python3 "$script" > "$OUT/$s.layer.$r.log" 2>&1
    timeout 200 python3 -m nsightwrap profile -q --passes plain --no-plain-clock -o "$OUT/runs/$s.pass.$r" "$script" \
      > "$OUT/$s.pass.$r.profile.log" 2>&1
    cp "$OUT/runs/$s.pass.$r/plain/stdout.log" "$OUT/$s.pass.$r.log" 2>/dev/null
    echo "$s round $r done"
  done
done
find "$OUT/runs" -type f ! -name '*.json' ! -name '*.log' -delete 2>/dev/null
python3 studies/plain_control/summarize.py "$OUT" | tee "$OUT/summary.md"
