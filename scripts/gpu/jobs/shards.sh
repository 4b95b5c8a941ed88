#!/usr/bin/env bash
# GPU job for `nsightwrap profile --shard` / `nsightwrap merge` on the single H200:
#   1. the GPU test: shard 0/2 of examples/sweep_shapes.py with every pass, shard 1/2 plain,
#      merged and reported; its run directories are kept under $JOB_OUT/pt (pytest --basetemp);
#   2. the manifests and reports of those runs, copied to the top of $JOB_OUT;
#   3. where ncu keeps its host-wide profiling lock (--gpus gives each shard its own TMPDIR).
# Runs from the repository root after `. scripts/gpu/env.sh`. No step stops the next.
set -x
: "${JOB_OUT:?}"
date -u +%FT%TZ
nvidia-smi -L
nvidia-smi --query-gpu=name,uuid,clocks.sm,temperature.gpu,power.limit --format=csv,noheader
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
"$NCU" --version | tail -1

# 1. the GPU test (one shard of a real sweep, every pass; the other shard plain; merge; report)
t0=$(date +%s)
python3 -m pytest -q -m gpu tests/test_shard_gpu.py -p no:cacheprovider --basetemp="$JOB_OUT/pt" -x 2>&1 | tail -40
echo "pytest wall=$(( $(date +%s) - t0 )) s"

# 2. bring the manifests and reports up front
d=$(ls -d "$JOB_OUT"/pt/*/ 2>/dev/null | head -1)
if [ -n "$d" ]; then
  cp "$d/s0/manifest.json" "$JOB_OUT/shard0-manifest.json"
  cp "$d/s1/manifest.json" "$JOB_OUT/shard1-manifest.json"
  cp "$d/merged/manifest.json" "$JOB_OUT/merged-manifest.json"
  cp "$d/merged.json" "$JOB_OUT/merged-report.json"
  python3 -m nsightwrap report "$d/s0" --format md -o "$JOB_OUT/shard0-report.md"
  python3 -m nsightwrap report "$d/merged" --format md -o "$JOB_OUT/merged-report.md"
  COLUMNS=160 python3 -m nsightwrap report "$d/merged" --format table 2>&1 | head -60
  python3 - "$d" <<'PY'
import json, sys, pathlib
d = pathlib.Path(sys.argv[1])
m = json.loads((d / "s0" / "manifest.json").read_text())
print("shard0 status", m["status"], "wall_s", round(m["wall_s"], 1), "passes",
      {p["name"]: (p["status"], round(sum(c["wall_s"] for c in p["commands"]), 1)) for p in m["passes"]})
print("shard0 shard block", json.dumps(m["shard"]))
r = json.loads((d / "merged.json").read_text())
for b in r["benchmarks"]:
    t = (b.get("timer") or {}).get("median_ns"); n = (b.get("ncu") or {}).get("median_ns")
    print(b["name"], "shard", b["shard"], b["gpu_uuid"], "timer_ns", t and round(t), "ncu_ns", n and round(n), b["verdict"])
PY
  # keep what comes back small: the ncu/nsys reports stay only for shard 0
  rm -f "$d"/merged/shards/*/nsys/report.nsys-rep
fi
# 3. ncu's lock: which file, under which TMPDIR
"$NCU" --help > "$JOB_OUT/ncu-help.txt" 2>&1
grep -n -i -B1 -A2 "lock" "$JOB_OUT/ncu-help.txt" | head -40
mkdir -p /tmp/nw-lock-probe
SECONDS=0
TMPDIR=/tmp/nw-lock-probe timeout 90 "$NCU" --metrics gpu__time_duration.sum \
  python3 -c "import torch; (torch.ones(8, device='cuda') + 1).sum().item()" > "$JOB_OUT/ncu-lock-probe.log" 2>&1
echo "ncu probe rc=$? wall=${SECONDS} s"
ls -la /tmp/nw-lock-probe /tmp/nsight-compute-lock 2>&1 | tee -a "$JOB_OUT/ncu-lock-probe.log"

du -sh "$JOB_OUT"
date -u +%FT%TZ
