#!/usr/bin/env bash
# GPU job: the zero-change profile overhead against the three tools by hand
# (examples/blog_do_bench.py; docs/profile.md, target <= 1.25x), then the GPU tests no feature job
# runs (profile end to end, ncu parsing, inspect). About 560 s. Runs from the repository root after
# `. scripts/gpu/env.sh`; keeps everything under $JOB_OUT.
set -x
OUT=${JOB_OUT:-/tmp/open-profile-out}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
t0=$(date +%s)
step() { echo "=== t=$(( $(date +%s) - t0 ))s $*"; }

step "zero-change profile overhead"
timeout 330 python3 -m benchmarks.profile_overhead --repeat 2 --zero-change examples/blog_do_bench.py \
    --repeats 10 --rep 10 > "$OUT/profile_overhead.txt" 2>&1
echo "profile overhead rc=$?"
tail -n 12 "$OUT/profile_overhead.txt"

step "GPU tests (profile, ncu parsing, inspect)"
left=$(( 570 - ($(date +%s) - t0) ))
[ "$left" -lt 30 ] && left=30
timeout "$left" python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_profile_gpu.py \
    tests/test_parsers_ncu.py tests/test_inspect_cli.py > "$OUT/gpu-tests.log" 2>&1
echo "tests rc=$?"
grep -E "passed|failed|error|FAIL" "$OUT/gpu-tests.log" | tail -n 30
step "done"
