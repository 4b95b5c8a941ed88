"""A small target for the profile tests: no torch, prints, honours nsightwrap's environment and
writes a timer-sidecar-like file in the plain pass.

Misbehaviour per pass, each a comma-separated list of pass names (or ``all``):
``TARGET_FAIL`` (exit 7 with a message on stderr), ``TARGET_SIGNAL`` (killed by SIGKILL),
``TARGET_SLEEP`` (sleeps 60 s; with ``TARGET_IGNORE_SIGINT=1`` it ignores Ctrl-C).
``TARGET_PID_FILE``: append "<pass> <pid> <epoch s>" to this file once started; ``TARGET_DELAY``: seconds
to run at least (so that a sampler beside it has time to start).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

run_dir = os.environ.get("NSIGHTWRAP_RUN_DIR")
pass_name = os.environ.get("NSIGHTWRAP_PASS", "none")


def when(var: str) -> bool:
    names = {p.strip() for p in os.environ.get(var, "").split(",")}
    return pass_name in names or "all" in names


print(f"target: pass={pass_name} argv={json.dumps(sys.argv[1:])}", flush=True)
if os.environ.get("TARGET_PID_FILE"):
    with open(os.environ["TARGET_PID_FILE"], "a") as f:
        f.write(f"{pass_name} {os.getpid()} {time.time()}\n")
if pass_name == "plain" and run_dir:
    sidecar = {
        "format": "nsightwrap-timer",
        "version": 1,
        "pid": os.getpid(),
        "argv": sys.argv[1:],
        "benchmarks": [],
    }
    with open(os.path.join(run_dir, "plain", f"timer-{os.getpid()}.json"), "w") as f:
        json.dump(sidecar, f)
if pass_name == "ncu":
    print(f"target: ncu iters={os.environ.get('NSIGHTWRAP_NCU_ITERS')}", flush=True)
time.sleep(float(os.environ.get("TARGET_DELAY", "0")))
if when("TARGET_SLEEP"):
    if os.environ.get("TARGET_IGNORE_SIGINT") == "1":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    time.sleep(60)
if when("TARGET_SIGNAL"):
    os.kill(os.getpid(), signal.SIGKILL)
if when("TARGET_FAIL"):
    print("Traceback (most recent call last):", file=sys.stderr)
    print("RuntimeError: CUDA error: out of memory (simulated)", file=sys.stderr)
    sys.exit(7)
