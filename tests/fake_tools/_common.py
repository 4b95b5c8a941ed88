"""Shared by the fake ncu, nsys, nvidia-smi and QdstrmImporter: fixture paths and the
misbehaviour switch.

``FAKE_TOOLS_MODE`` holds comma-separated words that select a misbehaviour, e.g.
``ncu-perm`` (ERR_NVGPUCTRPERM), ``ncu-zero`` (no kernel matches), ``nsys-qdstrm`` (importer
failure, only a .qdstrm left), ``importer-libdw`` (QdstrmImporter lacks libdw.so.1),
``nsys-no-event-flag`` (an nsys without --cuda-event-trace), ``smi-fail``.
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


def run_target(target: list[str]) -> int:
    """Run the target as a child (the real tools do the same), passing its output through."""
    sys.stdout.flush()
    return subprocess.run(target).returncode
