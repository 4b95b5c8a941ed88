"""Wall time of ``nsightwrap profile`` against the same tool runs made by hand.

    python -m benchmarks.profile_overhead [--repeat N] SCRIPT [ARGS...]

By hand means: the plain run, ``ncu``, ``ncu`` twice more with the duration and SM clock only
(the clock sweep: the duration pass at ``--clock-control none``, the base pass at
``--clock-control base``) and ``nsys profile`` + ``nsys export``, with exactly the argv
nsightwrap builds, one after the other, nothing else (no version probes, no nvidia-smi, no clock
sampler, no analysis). nsightwrap runs with ``--no-analyze --quiet``. The two are alternated;
the medians and their ratio are printed (target: ratio <= 1.25).

``--zero-change`` is for a script that does not use nsightwrap (its own do_bench / CUDA events /
torch.utils.benchmark): there, by hand, no range tells ncu which kernels to profile, so the
equivalent filter is ``--launch-count K`` with K the kernels nsightwrap's ncu pass profiled in the
same round (its manifest), and the by-hand runs see no capture layer.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from nsightwrap.core.contract import ENV_NCU_ITERS, ncu_iteration_filter
from nsightwrap.run.clocksweep import base_argv, duration_argv
from nsightwrap.run.launch import ncu_argv, nsys_argv, nsys_export_argv, pass_env, target_argv
from nsightwrap.run.tools import find_tool, nsys_profile_options, supports_flag


def by_hand(
    target: list[str], work: Path, ncu: str, nsys: str, event_flag: bool, launch_count: int | None = None
) -> float:
    """The passes with plain subprocess calls; seconds. ``launch_count``: profile the first K
    kernels instead of filtering on nsightwrap's iteration ranges (a zero-change script)."""
    for d in ("plain", "ncu", "ncu-duration", "ncu-base", "nsys"):
        (work / d).mkdir(parents=True)
    argv = target_argv(target)
    t0 = time.perf_counter()
    subprocess.run(argv, env={**os.environ, **pass_env(work, "plain")}, check=True, capture_output=True)
    nvtx = ncu_iteration_filter() if launch_count is None else ["--launch-count", str(max(1, launch_count))]
    ncu_pass = ncu_argv(ncu, argv, work / "ncu" / "report", nvtx_filter=nvtx)
    sweep = (duration_argv(ncu_pass, work / "ncu-duration" / "report"), base_argv(ncu_pass, work / "ncu-base" / "report"))
    for cmd in (ncu_pass, *sweep):
        assert cmd is not None
        subprocess.run(
            cmd, env={**os.environ, **pass_env(work, "ncu", {ENV_NCU_ITERS: "3"})}, check=True, capture_output=True
        )
    subprocess.run(
        nsys_argv(nsys, argv, work / "nsys" / "report", cuda_event_trace_flag=event_flag),
        env={**os.environ, **pass_env(work, "nsys")}, check=True, capture_output=True,
    )  # fmt: skip
    rep = work / "nsys" / "report.nsys-rep"
    subprocess.run(
        nsys_export_argv(nsys, rep, work / "nsys" / "report.sqlite"), check=True, capture_output=True
    )
    return time.perf_counter() - t0


def with_nsightwrap(target: list[str], run: Path) -> tuple[float, int]:
    """``nsightwrap profile`` on the same target; seconds, and the kernels its ncu pass profiled."""
    import json

    t0 = time.perf_counter()
    # The same five tool runs as by hand, the nsys loops as the script runs them: what is compared
    # is nsightwrap's own cost around the tools, not what its defaults leave out.
    full = ["--duration-pass", "always", "--base-pass", "always", "--nsys-loop-ms", "0"]
    cmd = [sys.executable, "-m", "nsightwrap", "profile", "-o", str(run), "--no-analyze", "--quiet", *full, *target]
    subprocess.run(cmd, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    manifest = json.loads((run / "manifest.json").read_text())
    kernels = next((int(p.get("kernels_profiled") or 0) for p in manifest["passes"] if p["name"] == "ncu"), 0)
    return wall, kernels


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--zero-change", action="store_true", help="the target does not use nsightwrap (see above)")
    ap.add_argument("target", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    if not a.target:
        ap.error("give a target script")
    ncu, nsys = find_tool("ncu").path, find_tool("nsys").path
    event_flag = supports_flag(nsys_profile_options(nsys), "--cuda-event-trace")
    hand: list[float] = []
    tool: list[float] = []
    with tempfile.TemporaryDirectory(prefix="nsightwrap-overhead-") as tmp:
        for i in range(a.repeat):
            wall, kernels = with_nsightwrap(a.target, Path(tmp) / f"run{i}")
            tool.append(wall)
            count = kernels if a.zero_change else None
            hand.append(by_hand(a.target, Path(tmp) / f"hand{i}", ncu, nsys, event_flag, count))
            extra = f" (by hand: ncu --launch-count {kernels})" if a.zero_change else ""
            print(f"round {i + 1}: by hand {hand[-1]:.2f} s, nsightwrap profile {tool[-1]:.2f} s{extra}", flush=True)
    h, t = statistics.median(hand), statistics.median(tool)
    print(f"median: by hand {h:.2f} s, nsightwrap profile {t:.2f} s, ratio {t / h:.3f} (target <= 1.25)")


if __name__ == "__main__":
    main()
