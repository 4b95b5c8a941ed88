#!/usr/bin/env bash
# GPU job (2nd): the final power/energy code on the H200. A full profile of the power example (the
# fixture run), two more plain runs for compare (same, and mm_large's M x1.25), the raw NVML trace
# with the clock-thread rates, doctor (table), where the extras/python ncu_report crash comes
# from (bare, after pandas/lxml/matplotlib, in-process report, child report), the GPU tests.
set -x
cd "$(dirname "$0")/../../.."
out=${JOB_OUT:?}
export PATH="/usr/local/cuda/bin:$PATH"
step() { echo; echo "===== $* ($(date -u +%T))"; }
extras=$(ls -d /opt/nvidia/nsight-compute/*/extras/python | tail -1)

step power trace
timeout 30 python3 -m benchmarks.power_trace "$out/h200-trace.json" > "$out/power_trace.txt" 2>&1; echo "trace rc=$?"
grep -A3 -E '"load"|clock_readings_per_s|counter_update_s|nvml_call_us' "$out/power_trace.txt" | head -40

step profile
timeout 60 python3 -m nsightwrap profile -o "$out/run" --passes plain,ncu --ncu-iters 2 --no-clock-sweep examples/power_example.py -- --budget 0.3 --margin 20 \
  > "$out/profile.txt" 2> "$out/profile.stderr"; echo "profile rc=$?"
grep -B2 -A12 "energy and power" "$out/profile.txt"; tail -5 "$out/profile.stderr"

step plain runs for compare
timeout 25 python3 -m nsightwrap profile -q -o "$out/same" --passes plain --no-analyze examples/power_example.py -- --budget 0.3 --margin 20 > /dev/null 2>&1; echo "same rc=$?"
timeout 25 python3 -m nsightwrap profile -q -o "$out/scaled" --passes plain --no-analyze examples/power_example.py -- --budget 0.3 --margin 20 --scale 1.25 > /dev/null 2>&1; echo "scaled rc=$?"
python3 -m nsightwrap compare "$out/run" "$out/same" > "$out/compare_same.txt" 2>&1; echo "compare same rc=$?"
python3 -m nsightwrap compare "$out/run" "$out/scaled" > "$out/compare_scaled.txt" 2>&1; echo "compare scaled rc=$?"
tail -n 25 "$out/compare_scaled.txt"

step doctor
timeout 40 python3 -m nsightwrap doctor > "$out/doctor.txt" 2>&1; echo "doctor rc=$?" | tee -a "$out/doctor.txt"; cat "$out/doctor.txt"

step where the extras/python crash comes from
rep="$out/run/ncu/report.ncu-rep"
cat > /tmp/walk.py <<'PY'
import sys
pre = sys.argv[2:]
for m in pre:
    __import__(m)
import ncu_report
ctx = ncu_report.load_report(sys.argv[1])
n = 0
for r in range(ctx.num_ranges()):
    rng = ctx.range_by_idx(r)
    for a in range(rng.num_actions()):
        act = rng.action_by_idx(a)
        for name in act.metric_names():
            m = act.metric_by_name(name)
            m.unit(); n += 1
print("walked", n, "metrics with", ncu_report.__file__, "after", pre)
PY
for pre in "" "pandas" "pandas lxml.etree matplotlib.pyplot" "nsightwrap.analysis.load nsightwrap.export.html"; do
  PYTHONPATH="$extras:$PYTHONPATH" timeout 30 python3 /tmp/walk.py "$rep" $pre > /tmp/w.txt 2>&1; echo "walk [$pre] rc=$? $(tail -1 /tmp/w.txt)"
done
for r in fixtures/reference/h200-workload/workload.ncu-rep fixtures/captures/scenarios/scenarios.ncu-rep.gz fixtures/runs/h200-example/ncu/report.ncu-rep.gz; do
  f=$r; case $r in *.gz) f=/tmp/$(basename "$r" .gz); gunzip -c "$r" > "$f";; esac
  PYTHONPATH="$extras:$PYTHONPATH" timeout 30 python3 /tmp/walk.py "$f" pandas lxml.etree matplotlib.pyplot > /tmp/w.txt 2>&1; echo "walk $r rc=$? $(tail -1 /tmp/w.txt)"
done
PYTHONPATH="$extras:$PYTHONPATH" NSIGHTWRAP_NCU_IN_PROCESS=1 timeout 60 python3 -m nsightwrap report "$out/run" --format md > /dev/null 2> "$out/inproc.stderr"; echo "in-process report rc=$?"; tail -3 "$out/inproc.stderr"
PYTHONPATH="$extras:$PYTHONPATH" timeout 60 python3 -m nsightwrap report "$out/run" --format md > /dev/null 2> "$out/child.stderr"; echo "child report rc=$?"; tail -3 "$out/child.stderr"
PYTHONPATH="$extras:$PYTHONPATH" timeout 60 python3 -m nsightwrap report fixtures/runs/h200-example --format md > /dev/null 2> "$out/child_example.stderr"; echo "child report (h200-example) rc=$?"; tail -3 "$out/child_example.stderr"

step gpu tests
timeout 100 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_power_gpu.py tests/test_doctor_gpu.py -k "not test_doctor_on_the_gpu" > "$out/gpu_tests.txt" 2>&1
echo "gpu tests rc=$?"; tail -n 25 "$out/gpu_tests.txt"

step pack
gzip -f "$out/run/ncu/report.ncu-rep"; du -sh "$out"/* | sort -h | tail
