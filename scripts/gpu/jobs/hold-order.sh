#!/usr/bin/env bash
# GPU job: where the queue-holding sleep sits relative to the L2 flush (studies/hold_order.py;
# docs/timer.md). About 100 s. Runs from the repository root after `. scripts/gpu/env.sh`; keeps
# everything under $JOB_OUT.
set -x
OUT=${JOB_OUT:-/tmp/hold-order-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
timeout 140 python3 -m studies.hold_order --rounds 6 --json "$OUT/hold-order.json" \
    > "$OUT/hold-order.md" 2> "$OUT/hold-order.stderr"
echo "hold order rc=$?"
cat "$OUT/hold-order.md"
tail -n 5 "$OUT/hold-order.stderr"
