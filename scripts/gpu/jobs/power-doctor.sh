#!/usr/bin/env bash
# GPU job: nsightwrap doctor on the H200 (both formats), a small profile with power/energy (the
# fixture run directory), the raw NVML power trace, the extras/python ncu_report crash turned
# into one line, and the power/doctor GPU tests. Everything lands in $JOB_OUT.
set -x
cd "$(dirname "$0")/../../.."
out=${JOB_OUT:?}
export PATH="/usr/local/cuda/bin:$PATH"
step() { echo; echo "===== $* ($(date -u +%T))"; }

step versions
python3 -c "import pynvml, torch; print('nvidia-ml-py', getattr(pynvml, '__version__', '?'), 'torch', torch.__version__)" 2>&1 | tee "$out/versions.txt"
python3 -m pip list 2>/dev/null | grep -iE "nvidia-ml-py|nvtx|ncu|torch|triton|pandas|numpy|typer|rich|lxml|matplotlib" >> "$out/versions.txt"
nvidia-smi --query-gpu=name,temperature.gpu,power.draw,clocks.sm --format=csv >> "$out/versions.txt" 2>&1

step doctor table
timeout 60 python3 -m nsightwrap doctor -v > "$out/doctor.txt" 2> "$out/doctor.stderr"; echo "doctor rc=$?" | tee -a "$out/doctor.txt"
cat "$out/doctor.txt"
step doctor json
timeout 60 python3 -m nsightwrap doctor --format json > "$out/doctor.json" 2> "$out/doctor-json.stderr"; echo "doctor json rc=$?" > "$out/doctor-json.rc"

step power trace
timeout 40 python3 -m benchmarks.power_trace "$out/h200-trace.json" > "$out/power_trace.txt" 2>&1; echo "trace rc=$?"
head -c 4000 "$out/power_trace.txt"

step profile
sweep=""; python3 -m nsightwrap profile --help 2>/dev/null | grep -q -- "--no-clock-sweep" && sweep="--no-clock-sweep"
timeout 100 python3 -m nsightwrap profile -o "$out/run" --passes plain,ncu --ncu-iters 2 $sweep examples/power_example.py -- --budget 0.3 --margin 20 \
  > "$out/profile.txt" 2> "$out/profile.stderr"; echo "profile rc=$?" | tee -a "$out/profile.txt"
tail -n 40 "$out/profile.txt"; tail -n 20 "$out/profile.stderr"
python3 -m nsightwrap report "$out/run" --format md > "$out/report.md" 2> "$out/report.stderr"; echo "report rc=$?"
grep -iE "energy|power|J/call" "$out/report.md" | head -20
cat "$out"/run/plain/timer-*.json | python3 -c "import json,sys; d=json.load(sys.stdin); [print(b['name'], json.dumps(b.get('power'))[:1500]) for b in d['benchmarks']]"

step crash check: extras/python first on PYTHONPATH
extras=$(ls -d /opt/nvidia/nsight-compute/*/extras/python | tail -1)
ls "$extras" > "$out/extras_ls.txt" 2>&1
PYTHONPATH="$extras:$PYTHONPATH" timeout 60 python3 -m nsightwrap report "$out/run" --format md > "$out/crash_report.md" 2> "$out/crash_report.stderr"
echo "crash report rc=$?" | tee "$out/crash.rc"
cat "$out/crash_report.stderr"; grep -n "ncu numbers missing" "$out/crash_report.md" | head -3
PYTHONPATH="$extras:$PYTHONPATH" timeout 60 python3 -m nsightwrap inspect "$out/run/ncu/report.ncu-rep" > /dev/null 2> "$out/crash_inspect.stderr"
echo "crash inspect rc=$?" | tee -a "$out/crash.rc"; cat "$out/crash_inspect.stderr"
PYTHONPATH="$extras:$PYTHONPATH" timeout 60 python3 -m nsightwrap doctor --quick > "$out/crash_doctor.txt" 2>&1
echo "crash doctor rc=$?" | tee -a "$out/crash.rc"; grep -E "ncu-report" "$out/crash_doctor.txt"

step gpu tests
timeout 120 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_power_gpu.py tests/test_doctor_gpu.py > "$out/gpu_tests.txt" 2>&1
echo "gpu tests rc=$?"; tail -n 30 "$out/gpu_tests.txt"

step size
gzip -k "$out/run/ncu/report.ncu-rep" 2>/dev/null; du -sh "$out"/* | sort -h | tail
