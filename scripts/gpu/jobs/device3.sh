#!/usr/bin/env bash
# nsightwrap device on the final code: the full run (the shipped device file) and the GPU tests (--quick).
set -x
OUT=${JOB_OUT:-/tmp/device3-out}
mkdir -p "$OUT"
export XDG_CACHE_HOME="$OUT/cache"
t0=$(date +%s)
timeout 70 python3 -m nsightwrap device -f json -o "$OUT/device-full.json" > "$OUT/full.stdout" 2> "$OUT/full.stderr"
echo "full rc=$? wall=$(( $(date +%s) - t0 ))s"
tail -n 6 "$OUT/full.stderr"
python3 -m nsightwrap device --input "$OUT/device-full.json" -f table 2>&1 | cut -c1-170
t1=$(date +%s)
timeout 50 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_device_gpu.py > "$OUT/pytest-gpu.log" 2>&1
echo "gpu tests rc=$? wall=$(( $(date +%s) - t1 ))s"
tail -n 15 "$OUT/pytest-gpu.log"
rm -rf "$OUT/cache/nsightwrap/unpacked"
