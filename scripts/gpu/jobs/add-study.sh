#!/usr/bin/env bash
# GPU job: what an event window holds that ncu's duration does not, on adds of 2 us
# (studies/add_study.py; docs/timer-accuracy.md, "The 2 us add"). About 60 s. Runs from the repository root after
# `. scripts/gpu/env.sh`; keeps everything under $JOB_OUT. ONLY picks kernels.
set -x
OUT=${JOB_OUT:-/tmp/add-study-out}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
ncu --version | tail -n 1
timeout "${LIMIT:-280}" python3 -m studies.add_study --rounds "${ROUNDS:-3}" ${ONLY:+--only "$ONLY"} \
    --ncu-iters "${NCU_ITERS:-30}" --json "$OUT/add-study.json" > "$OUT/add-study.md" 2> "$OUT/add-study.stderr"
echo "add study rc=$?"
cat "$OUT/add-study.md"
tail -n 30 "$OUT/add-study.stderr"
