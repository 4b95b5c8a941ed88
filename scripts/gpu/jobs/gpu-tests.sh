#!/usr/bin/env bash
# GPU job: the repository's GPU tests (pytest -m gpu; GPU_TESTS picks files, every test file by
# default), with the timer's energy window shortened to 0.2 s (NSIGHTWRAP_ENERGY_S) so that they fit
# one call; skips are listed (-rs). About 400 s for all of them. Runs from the repository root after
# `. scripts/gpu/env.sh`; keeps everything under $JOB_OUT (run directories the tests keep: $JOB_OUT/runs,
# or GPU_TEST_KEEP where they would make the archive too large to come back).
set -x
OUT=${JOB_OUT:-/tmp/gpu-tests-out}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
read -r -a files <<< "${GPU_TESTS:-tests/}"
NSIGHTWRAP_ENERGY_S=0.2 NSIGHTWRAP_GPU_TEST_KEEP="${GPU_TEST_KEEP:-$OUT/runs}" timeout "${GPU_TESTS_LIMIT:-500}" python3 -m pytest -q -rs -m gpu -p no:cacheprovider \
    --durations=20 "${files[@]}" > "$OUT/gpu-tests.log" 2>&1
echo "tests rc=$?"
grep -E "passed|failed|error|FAIL|SKIP|s call" "$OUT/gpu-tests.log" | tail -n 45
