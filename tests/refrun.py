"""A run directory built from the H200 reference captures (fixtures/reference/h200-workload).

The reference workload times itself with CUDA events (events.json) and names its ranges in the
default NVTX domain: ``<bench>`` with ``<bench>/iter<i>`` nested inside (full path
``mm_small/mm_small/iter0``). This adapter turns events.json into a timer sidecar whose
``nvtx_path`` is ``<bench>`` and whose ``iter_prefix`` is ``<bench>/iter``, and lays out the
captures as ``nsightwrap profile`` would.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from nsightwrap import __version__
from nsightwrap.run.launch import CommandResult
from nsightwrap.run.rundir import Manifest, PassRecord, RunLayout, write_manifest

REF = Path(__file__).resolve().parent.parent / "fixtures" / "reference" / "h200-workload"
NCU_ARGV = ("ncu", "--clock-control", "none", "--nvtx", "--nvtx-include", "regex:mm_.*/", "-o", "ncu/report")


def sidecar_from_events(events: dict) -> dict:
    """events.json -> timer sidecar (format nsightwrap-timer, version 1)."""
    benches = []
    for name, b in events["benchmarks"].items():
        benches.append(
            {
                "name": name,
                "params": {},
                "nvtx_path": name,
                "iter_prefix": f"{name}/iter",
                "samples_ns": [t * 1e6 for t in b["times_ms"]],
                "sm_clock_hz": None,
                "clock_source": "none",
                "sample_clock_hz": None,
                "method": {
                    "timing": "cuda_events",
                    "flush_l2": True,
                    "flush": "zero",  # workload.py flushes with flush.zero_()
                    "calls_per_sample": 1,
                    "hold_queue": False,
                    "cuda_graph": False,
                },
                # The workload's own event loop (no nsightwrap timer), as the capture layer records it.
                "source": {"kind": "cuda_events", "site": "workload.py", "label": name},
                "flops": b["flops"],
                "bytes": b["bytes"],
            }
        )
    return {
        "format": "nsightwrap-timer",
        "version": 1,
        "pid": 480,
        "device": {"name": events["device"], "index": 0},
        "torch_version": "2.11.0+cu130",
        "benchmarks": benches,
    }


def _cmd(argv: tuple[str, ...]) -> CommandResult:
    return CommandResult(argv, "/work", {}, "ok", 0, None, 0.0, 1.0, 1.0, "", "")


def build_run_dir(root: Path, *, sidecar: bool = True, ncu: bool = True, nsys: bool = True) -> Path:
    """Lay out the reference captures as a run directory under ``root``; returns its path."""
    run = root / "ref-run"
    layout = RunLayout(run)
    for d in ("env", "plain", "ncu", "nsys"):
        (run / d).mkdir(parents=True, exist_ok=True)
    shutil.copy(REF / "nvidia-smi-q-x.xml", layout.smi_xml)
    shutil.copy(REF / "smi_samples.csv", layout.smi_samples)
    if sidecar:
        events = json.loads((REF / "events.json").read_text())
        (run / "plain" / "timer-480.json").write_text(json.dumps(sidecar_from_events(events)))
    if ncu:
        with gzip.open(REF / "workload.ncu-rep.gz", "rb") as src, open(layout.ncu_report, "wb") as dst:
            shutil.copyfileobj(src, dst)
    if nsys:
        shutil.copy(REF / "workload.sqlite", layout.nsys_sqlite)
    target = ("python3", "workload.py")
    manifest = Manifest(
        status="complete",
        target={"argv": list(target)},
        passes=(
            PassRecord("plain", "ok", commands=(_cmd(target),)),
            PassRecord("ncu", "ok" if ncu else "skipped", commands=(_cmd(NCU_ARGV + target),)),
            PassRecord("nsys", "ok" if nsys else "skipped"),
        ),
        tools={"ncu": {"version": "2025.3.1"}, "nsys": {"version": "2025.3.1"}},
        gpu=None,
        git=None,
        settings={"argv": ["nsightwrap", "profile", "--passes", "plain,ncu,nsys", "workload.py"]},
        sampler=None,
        start=0.0,
        end=1.0,
        nsightwrap_version=__version__,
        exit_code=0,
    )
    write_manifest(layout, manifest)
    return run
