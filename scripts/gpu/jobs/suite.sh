#!/usr/bin/env bash
# The GPU tests that no feature job runs (profile end to end, ncu parsing, inspect), on this tree.
set -x
OUT=${JOB_OUT:-/tmp/suite-out}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
timeout 85 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_profile_gpu.py tests/test_parsers_ncu.py \
  tests/test_inspect_cli.py > "$OUT/pytest.log" 2>&1
echo "suite rc=$?"
tail -n 40 "$OUT/pytest.log"
