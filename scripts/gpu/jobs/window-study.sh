#!/usr/bin/env bash
# GPU job: what the commands around a timed window add to it (studies/window_study.py;
# docs/timer.md). About 120 s. Runs from the repository root after `. scripts/gpu/env.sh`; keeps
# everything under $JOB_OUT.
set -x
OUT=${JOB_OUT:-/tmp/window-study-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
timeout "${LIMIT:-240}" python3 -m studies.window_study --rounds "${ROUNDS:-8}" ${ONLY:+--only "$ONLY"} \
    --json "$OUT/window-study.json" > "$OUT/window-study.md" 2> "$OUT/window-study.stderr"
echo "window study rc=$?"
cat "$OUT/window-study.md"
tail -n 5 "$OUT/window-study.stderr"
