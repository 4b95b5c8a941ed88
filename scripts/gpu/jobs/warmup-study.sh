#!/usr/bin/env bash
# GPU job: what the timer's warm-up does to the clock of the samples after it
# (studies/warmup_study.py; docs/timer.md). About 60 s. Runs from the repository root after
# `. scripts/gpu/env.sh`; keeps everything under $JOB_OUT.
set -x
OUT=${JOB_OUT:-/tmp/warmup-study-out}
mkdir -p "$OUT"
timeout 150 python3 -m studies.warmup_study --rounds 4 --json "$OUT/warmup-study.json" \
    > "$OUT/warmup-study.md" 2> "$OUT/warmup-study.stderr"
echo "warmup study rc=$?"
cat "$OUT/warmup-study.md"
tail -n 3 "$OUT/warmup-study.stderr"
