#!/usr/bin/env bash
# GPU job: what ncu's replay does to a kernel that the timer's sample does not
# (studies/ncu_gap.py; docs/timer-accuracy.md). About 150 s. Runs from the repository root
# after `. scripts/gpu/env.sh`; keeps everything under $JOB_OUT. ONLY picks kernels.
set -x
OUT=${JOB_OUT:-/tmp/ncu-gap-out}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
ncu --version | tail -n 1
timeout "${LIMIT:-280}" python3 -m studies.ncu_gap --rounds "${ROUNDS:-3}" ${ONLY:+--only "$ONLY"} \
    --json "$OUT/ncu-gap.json" > "$OUT/ncu-gap.md" 2> "$OUT/ncu-gap.stderr"
echo "ncu gap rc=$?"
cat "$OUT/ncu-gap.md"
tail -n 30 "$OUT/ncu-gap.stderr"
