#!/usr/bin/env bash
# GPU job: nsightwrap profile's wall time against the same tool runs by hand
# (benchmarks/profile_overhead.py; docs/profile.md, target <= 1.25x): a script that uses
# nsightwrap.bench, then an unmodified one (--zero-change). About 330 s. Runs from the repository
# root after `. scripts/gpu/env.sh`; keeps everything under $JOB_OUT.
set -x
OUT=${JOB_OUT:-/tmp/overhead-out}
mkdir -p "$OUT"
export PATH="/usr/local/cuda/bin:$PATH"
timeout "${LIMIT_BENCH:-200}" python3 -m benchmarks.profile_overhead --repeat "${REPEAT:-3}" examples/bench_example.py \
    --quick --only mm_small,mm_large > "$OUT/profile_overhead.txt" 2>&1
echo "profile overhead rc=$?"
tail -n 6 "$OUT/profile_overhead.txt"
timeout "${LIMIT_ZERO:-170}" python3 -m benchmarks.profile_overhead --repeat 2 --zero-change examples/blog_do_bench.py \
    --repeats 10 --rep 10 > "$OUT/profile_overhead_zero_change.txt" 2>&1
echo "zero-change profile overhead rc=$?"
tail -n 6 "$OUT/profile_overhead_zero_change.txt"
