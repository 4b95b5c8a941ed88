# GPU job: the timer's accuracy against ncu (with nvbench cold and the reference loop as peers)
# and the timer's GPU tests (their clock-sweep run directory is kept as a fixture).
# Runs from the repository root after `. scripts/gpu/env.sh` (NSIGHTWRAP_EXTRA_WHEELS=.whl-nvbench);
# everything it keeps goes to $JOB_OUT. About 230 s; the energy window of nsightwrap.bench is
# shortened to 0.2 s for the tests (NSIGHTWRAP_ENERGY_S) so that they fit. SKIP_TESTS=1: the
# benchmark alone (about 120 s); NCU_ITERS (30), REF_ITERS (NCU_ITERS), ROUNDS (3), ORDER (rotate) and BENCH_LIMIT
# (185 s) set its ncu iterations, rounds, method order and time limit, TESTS_LIMIT the tests' (by default what is left of 310 s).
set -x
OUT=${JOB_OUT:-/tmp/timer-accuracy-out}
mkdir -p "$OUT/runs"
export PATH="/usr/local/cuda/bin:$PATH"
t0=$(date +%s)
step() { echo "=== t=$(( $(date +%s) - t0 ))s $*"; }

step "environment"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.applications.graphics,temperature.gpu,power.draw --format=csv
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
python3 -c "import cuda.bench as b; print('cuda.bench', b.__version__)" || echo "cuda.bench missing"
ncu --version | tail -n 1
ls -la .ref/ || echo "no .ref"

step "timer accuracy benchmark"
timeout "${BENCH_LIMIT:-185}" python3 -m benchmarks.timer_accuracy --rounds "${ROUNDS:-3}" --ncu-iters "${NCU_ITERS:-30}" ${REF_ITERS:+--ref-iters "$REF_ITERS"} ${ORDER:+--order "$ORDER"} \
    --out "$OUT/timer-accuracy.md" --json "$OUT/timer-accuracy.json" > "$OUT/timer-accuracy.stdout" 2> "$OUT/timer-accuracy.stderr"
echo "benchmark rc=$?"
cat "$OUT/timer-accuracy.stdout"
tail -n 30 "$OUT/timer-accuracy.stderr"

if [ -n "${SKIP_TESTS:-}" ]; then step "done (SKIP_TESTS: no GPU tests)"; exit 0; fi
step "GPU tests (tests/test_timer_gpu.py)"
left=${TESTS_LIMIT:-$(( 310 - ($(date +%s) - t0) ))}
[ "$left" -lt 20 ] && left=20
NSIGHTWRAP_ENERGY_S=0.2 NSIGHTWRAP_GPU_TEST_KEEP="$OUT/runs" timeout "$left" python3 -m pytest -q -s -m gpu -p no:cacheprovider \
    tests/test_timer_gpu.py > "$OUT/gpu-tests.log" 2>&1
echo "tests rc=$?"
grep -E "passed|failed|error|PASS|FAIL|elasticities|stamps|events|timer / ncu" "$OUT/gpu-tests.log" | tail -n 40
for f in "$OUT"/runs/*/ncu*/report.ncu-rep; do [ -f "$f" ] && gzip -9 -f "$f"; done
du -sh "$OUT"/* 2>/dev/null
step "done"
