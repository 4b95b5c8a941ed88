"""The clock-sweep pass: the ncu pass once more at ``--clock-control base``.

ncu at ``--clock-control none`` measures each kernel at whatever clock the GPU chose; at
``--clock-control base`` ncu locks a lower clock (1.27-1.49 GHz on an H200, against 1.59-1.98
without). The two (clock, duration) pairs of one kernel give its clock elasticity ``e``
(duration ~ f**-e; ``analysis.clocks.attach_base``), which carries its duration to any other
clock: measured, instead of guessed from throughput counters.

The pass profiles the same NVTX iteration ranges with the same ncu arguments, but collects only
the two metrics it needs (one replay per kernel). Whatever goes wrong here, the run goes on: a
failed or timed-out sweep is recorded in the manifest (status ``failed`` / ``timeout``, with a
message), the user is warned, the exit code is untouched, and the analysis falls back to the
heuristic and says so.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from nsightwrap.core.contract import ENV_NCU_ITERS, PASS_NCU
from nsightwrap.run.launch import CommandResult, pass_env
from nsightwrap.run.rundir import CLOCK_SWEEP_PASS, PassRecord, RunLayout

#: What the base-clock pass collects: each kernel's duration and its SM clock.
BASE_METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second")
#: ncu messages that say the clock could not be controlled (matched case-insensitively).
_CLOCK_TROUBLE = ("clock control", "lock clock", "locking clock", "set clock", "clocks could not")


class _Runs(Protocol):
    """What the sweep needs from ``profiling.Profiler``."""

    layout: RunLayout
    interrupted: bool

    def _run(self, name: str, argv: list[str], env: dict[str, str], deadline: float | None, prefix: str = "") -> CommandResult: ...

    def _record(self, name: str, status: str, env: dict[str, str], cmds: list[CommandResult], **kw: Any) -> PassRecord: ...


def base_argv(ncu_pass_argv: Sequence[str], report_base: Path) -> list[str] | None:
    """The ncu pass's argv at ``--clock-control base``, with ``BASE_METRICS`` only, writing to
    ``report_base``; None when the user's own ncu arguments choose the clock control."""
    argv = list(ncu_pass_argv)
    if argv[1:3] != ["--clock-control", "none"] or any(
        a == "--clock-control" or a.startswith("--clock-control=") for a in argv[3:]
    ):
        return None
    argv[2] = "base"
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--metrics", "-o", "--set") and i + 1 < len(argv):
            value = {"--metrics": ",".join(BASE_METRICS), "-o": str(report_base)}.get(a)
            if value is not None:
                out += [a, value]
            i += 2  # --set (a section set) is dropped: the sweep needs two metrics, not sections
            continue
        out.append(a)
        i += 1
        if a == "-f":  # after "-f" come the user's ncu arguments and the target: copied as they are
            out += argv[i:]
            break
    return out


def clock_trouble(text: str) -> str | None:
    """The first ncu line that says the clock could not be controlled, or None."""
    for line in text.splitlines():
        low = line.lower()
        if ("==error==" in low or "==warning==" in low) and any(k in low for k in _CLOCK_TROUBLE):
            return line.strip()
    return None


def run_clock_sweep(
    prof: _Runs, ncu_pass_argv: Sequence[str], ncu_iters: int, extra_env: dict[str, str], deadline: float | None
) -> tuple[PassRecord, str | None]:
    """Run the clock-sweep pass; its manifest record and a warning for the user (None if it went well)."""
    L = prof.layout
    L.pass_dir(CLOCK_SWEEP_PASS).mkdir(exist_ok=True)
    argv = base_argv(ncu_pass_argv, L.ncu_base_report_base)
    env = pass_env(L.root, PASS_NCU, {**extra_env, ENV_NCU_ITERS: str(ncu_iters)})
    guess = "clock elasticities fall back to the heuristic (a guess from ncu's throughput counters)"
    if argv is None:
        msg = "skipped: --ncu-args sets --clock-control"
        return prof._record(CLOCK_SWEEP_PASS, "skipped", env, [], message=msg), f"clock-sweep pass {msg}; {guess}"
    res = prof._run(CLOCK_SWEEP_PASS, argv, env, deadline)
    out, err = L.logs(CLOCK_SWEEP_PASS)
    text = "\n".join(p.read_text(errors="replace") for p in (out, err) if p.is_file())
    trouble = clock_trouble(text)
    kernels = sum(1 for ln in text.splitlines() if ln.startswith('==PROF== Profiling "'))
    if res.status == "ok" and L.ncu_base_report.is_file():
        # A clock warning with a report: the analysis checks whether the clocks did move.
        return prof._record(CLOCK_SWEEP_PASS, "ok", env, [res], kernels_profiled=kernels, message=trouble), None
    if res.status == "timeout":
        status, why = "timeout", "ran past --timeout and was stopped"
    elif res.status == "interrupted":
        status, why = "interrupted", "interrupted"
    elif trouble is not None:
        status, why = "failed", f"ncu could not lock the clock ({trouble})"
    elif res.status != "ok":
        what = f"was killed by signal {res.signal}" if res.signal else f"exited with code {res.returncode}"
        status, why = "failed", f"ncu {what}"
    else:
        status, why = "failed", f"ncu exited 0 but wrote no {L.ncu_base_report.name}"
    log = err if err.is_file() and err.stat().st_size else out
    msg = f"{why}; see {log} (to reproduce: {shlex.join(argv)})"
    rec = prof._record(CLOCK_SWEEP_PASS, status, env, [res], message=msg, kernels_profiled=kernels)
    return rec, f"clock-sweep pass (ncu --clock-control base): {why}; {guess}"
