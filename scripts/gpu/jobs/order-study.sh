#!/usr/bin/env bash
# GPU job: does what ran just before nsightwrap.bench or the reference loop move its reading
# (studies/order_study.py; docs/timer-accuracy.md, "What ran before")? About 110 s. Runs from
# the repository root after `. scripts/gpu/env.sh`; keeps everything under $JOB_OUT. ROUNDS sizes it.
set -x
OUT=${JOB_OUT:-/tmp/order-study-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv
timeout "${LIMIT:-200}" python3 -m studies.order_study --rounds "${ROUNDS:-6}" \
    --json "$OUT/order-study.json" > "$OUT/order-study.md" 2> "$OUT/order-study.stderr"
echo "order study rc=$?"
cat "$OUT/order-study.md"
tail -n 30 "$OUT/order-study.stderr"
