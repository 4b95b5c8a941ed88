#!/usr/bin/env bash
# GPU job: does a 2 us add's duration depend on where its buffers lie (studies/placement_study.py;
# docs/timer-accuracy.md, "Where the buffers lie")? About 90 s. Runs from the repository root after
# `. scripts/gpu/env.sh`; keeps everything under $JOB_OUT. PLACES, RUNS and NCU_ITERS size it.
set -x
OUT=${JOB_OUT:-/tmp/placement-study-out}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
ncu --version | tail -n 1
timeout "${LIMIT:-280}" python3 -m studies.placement_study --placements "${PLACES:-16}" \
    --plain-runs "${RUNS:-2}" --ncu-runs "${RUNS:-2}" --ncu-iters "${NCU_ITERS:-30}" \
    --json "$OUT/placement-study.json" > "$OUT/placement-study.md" 2> "$OUT/placement-study.stderr"
echo "placement study rc=$?"
cat "$OUT/placement-study.md"
tail -n 30 "$OUT/placement-study.stderr"
