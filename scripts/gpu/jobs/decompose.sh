#!/usr/bin/env bash
# GPU job: capture the run directory of fixtures/captures/causes/capture.py (the gap's causes),
# then print the report. Runs from the repository root after `. scripts/gpu/env.sh`; writes
# under $JOB_OUT. Every step is logged and none stops the next.
set -u
set -x
: "${JOB_OUT:?JOB_OUT must be set}"
mkdir -p "$JOB_OUT"
date -u
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
python3 -c "import torch, nsightwrap; print(torch.__version__, nsightwrap.__file__)"
ls nsightwrap/capture/
run="$JOB_OUT/causes-run"
t0=$(date +%s)
timeout -k 5 130 python3 -m nsightwrap profile --ncu-iters 2 --timeout 110 -o "$run" \
  fixtures/captures/causes/capture.py > "$JOB_OUT/profile.log" 2>&1
echo "profile rc=$? wall=$(( $(date +%s) - t0 ))s"
tail -n 60 "$JOB_OUT/profile.log"
ls -laR "$run" | head -80
cat "$run"/plain/stdout.log "$run"/plain/stderr.log 2>/dev/null | tail -n 30
cat "$run"/nsys/stdout.log 2>/dev/null | tail -n 15
tail -n 15 "$run"/ncu*/stdout.log 2>/dev/null
timeout 60 python3 -m nsightwrap report "$run" > "$JOB_OUT/report.txt" 2>&1
echo "report rc=$?"
cat "$JOB_OUT/report.txt" | head -80
# Make the fixture small: the parsers read gzipped reports.
for f in "$run"/ncu*/report*.ncu-rep "$run"/nsys/report.sqlite; do
  [ -f "$f" ] && gzip -9 "$f"
done
du -ah "$run" | sort -h | tail -n 25
date -u
