"""Shared by the fake ncu, nsys, nvidia-smi and QdstrmImporter: fixture paths and the
misbehaviour switch.

``FAKE_TOOLS_MODE`` holds comma-separated words that select a misbehaviour, e.g.
``ncu-perm`` (ERR_NVGPUCTRPERM), ``ncu-zero`` (no kernel matches), ``nsys-qdstrm`` (importer
failure, only a .qdstrm left), ``importer-libdw`` (QdstrmImporter lacks libdw.so.1),
``nsys-no-event-flag`` (an nsys without --cuda-event-trace), ``nsys-gpu-metrics`` (an nsys that
lists --gpu-metrics-devices: the plain pass then runs under it), ``nsys-metrics-fail`` (with GPU
metrics asked, nsys stops before the target: no access to the counters), ``nsys-export-fail`` (the export
fails, half written), ``smi-fail``.
Each fake appends its argv to ``$FAKE_TOOLS_LOG`` (one JSON list per line) when that is set.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REF = Path(__file__).resolve().parents[2] / "fixtures" / "reference" / "h200-workload"


def modes() -> set[str]:
    return {m.strip() for m in os.environ.get("FAKE_TOOLS_MODE", "").split(",") if m.strip()}


def log_argv(tool: str) -> None:
    path = os.environ.get("FAKE_TOOLS_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps([tool, *sys.argv[1:]]) + "\n")


def split_target(args: list[str], with_value: set[str], flags: set[str]) -> tuple[dict[str, str], list[str]]:
    """Options (name -> value, "" for flags) and the target argv after them, as the real tools do."""
    opts: dict[str, str] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if "=" in a and a.startswith("--") and a.split("=", 1)[0] in with_value | flags:
            k, v = a.split("=", 1)
            opts[k] = v
        elif a in with_value:
            opts[a] = args[i + 1]
            i += 1
        elif a in flags:
            opts[a] = ""
        else:
            return opts, args[i:]
        i += 1
    return opts, []


#: Several fake GPUs: ``FAKE_GPUS=N`` makes the fake nvidia-smi list N H200s (GPU 0 is the
#: reference capture's); ``FAKE_SLOW_GPU=i`` makes GPU i the one that runs hot, at a lower SM
#: clock and a lower power limit. The fakes and the shard target see ``CUDA_VISIBLE_DEVICES``
#: (an index or one of these UUIDs). ``FAKE_TOOLS_RUNS``: a file where every fake ncu/nsys
#: appends one JSON line per run: tool, CUDA_VISIBLE_DEVICES, TMPDIR, start and end time.
REF_UUID = "GPU-5c1c2662-50ec-2ab1-aa09-64c88e23aaed"


def fake_gpu_count() -> int:
    return max(1, int(os.environ.get("FAKE_GPUS", "1") or 1))


def fake_gpu_uuid(i: int) -> str:
    return REF_UUID if i == 0 else f"GPU-5c1c2662-50ec-2ab1-aa09-{i:012d}"


def slow_gpu() -> int | None:
    raw = os.environ.get("FAKE_SLOW_GPU", "")
    return int(raw) if raw.isdigit() else None


def visible_gpu() -> int:
    """The fake GPU this process sees first (CUDA_VISIBLE_DEVICES: an index or a fake UUID)."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0].strip()
    if first.isdigit():
        return int(first)
    for i in range(64):
        if fake_gpu_uuid(i).lower() == first.lower():
            return i
    return 0


def record_run(tool: str, t0: float, t1: float) -> None:
    path = os.environ.get("FAKE_TOOLS_RUNS")
    if path:
        entry = {"tool": tool, "gpu": os.environ.get("CUDA_VISIBLE_DEVICES"), "tmpdir": os.environ.get("TMPDIR"),
                 "shard": os.environ.get("NSIGHTWRAP_SHARD"), "t0": t0, "t1": t1}  # fmt: skip
        with open(path, "a") as f:
            f.write(json.dumps(entry) + "\n")


def run_target(target: list[str]) -> int:
    """Run the target as a child (the real tools do the same), passing its output through."""
    sys.stdout.flush()
    return subprocess.run(target).returncode
