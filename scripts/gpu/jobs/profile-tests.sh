#!/usr/bin/env bash
# GPU job: the end-to-end profile GPU tests alone (tests/test_profile_gpu.py). About 120 s. Runs
# from the repository root after `. scripts/gpu/env.sh`; keeps everything under $JOB_OUT.
set -x
OUT=${JOB_OUT:-/tmp/profile-tests-out}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
timeout 280 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_profile_gpu.py > "$OUT/gpu-tests.log" 2>&1
echo "tests rc=$?"
grep -E "passed|failed|error|FAIL" "$OUT/gpu-tests.log" | tail -n 30
