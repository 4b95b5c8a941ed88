#!/usr/bin/env bash
# nsightwrap device on the H200: full and quick runs (timed), the GPU tests, the roofline fixture
# (fixtures/device/roofline_bench.py under plain + ncu with the roofline counters), and what extra
# ncu metrics cost in replay passes (and what ncu does with a metric the chip lacks).
set -u
set -x
OUT=${JOB_OUT:-/tmp/device-job}
mkdir -p "$OUT"
export XDG_CACHE_HOME="$OUT/cache"
START=$SECONDS
left() { echo $(( ${BUDGET:-165} - (SECONDS - START) )); }
fits() { [ "$(left)" -ge "$1" ] || { echo "SKIP $2: $(left)s left, needs $1" | tee -a "$OUT/summary.txt"; return 1; }; }

nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu --format=csv > "$OUT/smi-before.csv" 2>&1
nvidia-smi --query-compute-apps=pid,used_memory --format=csv >> "$OUT/smi-before.csv" 2>&1
python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.version.cuda)" 2>&1 | tee "$OUT/versions.txt"
NCU=/usr/local/cuda/bin/ncu
$NCU --version >> "$OUT/versions.txt" 2>&1
date -u +%FT%TZ >> "$OUT/versions.txt"

# 1. full run (timed; cold Triton cache): the shipped device file
if fits 70 full; then
  t0=$SECONDS
  timeout 100 python3 -m nsightwrap device --format json -o "$OUT/device-full.json" > "$OUT/full.stdout" 2> "$OUT/full.stderr"
  echo "full rc=$? wall=$((SECONDS - t0))s" | tee -a "$OUT/summary.txt"
  tail -4 "$OUT/full.stderr"
  python3 -m nsightwrap device --input "$OUT/device-full.json" --format table > "$OUT/device-full.txt" 2>&1
  cut -c1-170 "$OUT/device-full.txt"
fi

# 2. quick run (timed)
if fits 25 quick; then
  t0=$SECONDS
  timeout 40 python3 -m nsightwrap device --quick --format json -o "$OUT/device-quick.json" --no-save > "$OUT/quick.stdout" 2> "$OUT/quick.stderr"
  echo "quick rc=$? wall=$((SECONDS - t0))s" | tee -a "$OUT/summary.txt"
  tail -3 "$OUT/quick.stderr"
fi

# 3. the roofline fixture: plain + ncu, one ncu iteration, the roofline counters by --metrics
ROOF=sm__sass_thread_inst_executed_op_fadd_pred_on.sum,sm__sass_thread_inst_executed_op_fmul_pred_on.sum,sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__ops_path_tensor_src_fp16.sum,sm__ops_path_tensor_src_tf32_dst_fp32.sum,sm__ops_path_tensor_src_fp8.sum,sm__ops_path_tensor_src_int8.sum
if fits 40 ncu-capture; then
  t0=$SECONDS
  timeout 70 python3 -m nsightwrap profile --passes plain,ncu --no-clock-sweep --ncu-iters 1 --metrics "$ROOF" --ncu "$NCU" \
    -o "$OUT/roofline-run" fixtures/device/roofline_bench.py > "$OUT/roofline-profile.log" 2>&1
  echo "ncu capture rc=$? wall=$((SECONDS - t0))s" | tee -a "$OUT/summary.txt"
  grep -h "passes" "$OUT/roofline-run/ncu/stdout.log" | head -3
  python3 -m nsightwrap report "$OUT/roofline-run" --format md -o "$OUT/roofline-report.md" 2>&1 | tail -2
  COLUMNS=160 python3 -m nsightwrap report "$OUT/roofline-run" 2>&1 | sed -n '/^roofline/,$p' | cut -c1-170
fi

# 4. GPU tests
if fits 40 gpu-tests; then
  timeout 75 python3 -m pytest -q tests/test_device_gpu.py -p no:cacheprovider > "$OUT/pytest-gpu.log" 2>&1
  echo "gpu tests rc=$?" | tee -a "$OUT/summary.txt"
  tail -6 "$OUT/pytest-gpu.log"
fi

# 5. replay passes of one kernel: default metrics, + fadd/fmul, + tensor ops; and a metric this chip lacks
DEFAULT=$(python3 -c "from nsightwrap.run.launch import DEFAULT_NCU_METRICS as M; print(','.join(M))")
SASS=sm__sass_thread_inst_executed_op_fadd_pred_on.sum,sm__sass_thread_inst_executed_op_fmul_pred_on.sum
TENSOR=sm__ops_path_tensor_src_bf16_dst_fp32.sum,sm__ops_path_tensor_src_fp16.sum,sm__ops_path_tensor_src_tf32_dst_fp32.sum,sm__ops_path_tensor_src_fp8.sum,sm__ops_path_tensor_src_int8.sum
for set in default sass tensor bogus; do
  case $set in default) M=$DEFAULT;; sass) M=$DEFAULT,$SASS;; tensor) M=$DEFAULT,$TENSOR;; bogus) M=$DEFAULT,sm__ops_path_tensor_src_fp4_nosuch.sum;; esac
  if fits 9 "ncu-passes-$set"; then
    timeout 20 $NCU --clock-control none --metrics "$M" -c 1 \
      python3 -c "import torch; x=torch.ones(1<<20,device='cuda'); torch.cuda.synchronize(); (x+x).sum().item()" > "$OUT/ncu-passes-$set.log" 2>&1
    echo "passes $set: rc=$? $(grep -o '[0-9]* passes' "$OUT/ncu-passes-$set.log" | head -1) $(grep -m1 -i 'error' "$OUT/ncu-passes-$set.log" | cut -c1-160)" | tee -a "$OUT/summary.txt"
  fi
done
rm -rf "$OUT/cache/nsightwrap/unpacked"
echo "total wall $((SECONDS - START))s" | tee -a "$OUT/summary.txt"
cat "$OUT/summary.txt"
