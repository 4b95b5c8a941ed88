"""The clock sweep: the ncu pass twice more, with each kernel's duration and SM clock only, at
``--clock-control none`` (the duration pass) and at ``--clock-control base`` (the base pass).

ncu at ``--clock-control none`` measures each kernel at whatever clock the GPU chose; at
``--clock-control base`` ncu locks a lower clock (1.27-1.49 GHz, against 1.59-1.98 without,
where measured). The two (clock, duration) pairs of one kernel give its clock elasticity ``e``
(duration ~ f**-e; ``analysis.clocks.attach_base``), which carries its duration to any other
clock: measured, instead of guessed from throughput counters.

Both passes collect the same two metrics, so ``e`` compares like with like: ncu's reading of a
kernel moves with what else it collects. The ncu pass's counters take 17 replay passes per kernel
(12 with --no-roofline-counters; docs/profile.md), with gigabytes of device memory saved and
restored around them, and read a bf16 GEMV 5.6% longer than ncu's one-pass reading
(docs/timer-accuracy.md). So the duration pass's
durations are the ones the analysis uses (``analysis.clocks.attach_durations``); the ncu pass
keeps its counters.

Both profile the same NVTX iteration ranges with the same ncu arguments (one replay per kernel).
They run after the nsys pass, each only where the analysis of the run so far says it can move a
verdict or a cause (``analysis.basepass.check_run``; ``--duration-pass`` / ``--base-pass always``
run them in every run).
Whatever goes wrong in them, the run goes on: a failed or timed-out pass is recorded in the
manifest (status ``failed`` / ``timeout``, with a message), the user is warned, the exit code is
untouched, and the analysis falls back (the ncu pass's durations; the heuristic for ``e``) and
says so.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from nsightwrap.core.contract import ENV_NCU_ITERS, PASS_NCU, ncu_benchmarks_filter
from nsightwrap.run.launch import CommandResult, pass_env
from nsightwrap.run.rundir import CLOCK_SWEEP_PASS, COVER_PASS, PassRecord, RunLayout

#: What both sweep passes collect: each kernel's duration and its SM clock (one replay pass).
BASE_METRICS = ("gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second")
#: ncu messages that say the clock could not be controlled (matched case-insensitively).
_CLOCK_TROUBLE = ("clock control", "lock clock", "locking clock", "set clock", "clocks could not")


class _Runs(Protocol):
    """What the sweep needs from ``profiling.Profiler``."""

    layout: RunLayout
    interrupted: bool

    def _run(self, name: str, argv: list[str], env: dict[str, str], deadline: float | None, prefix: str = "") -> CommandResult: ...

    def _record(self, name: str, status: str, env: dict[str, str], cmds: list[CommandResult], **kw: Any) -> PassRecord: ...


def sweep_argv(
    ncu_pass_argv: Sequence[str], report_base: Path, clock: str, cap: int | None = None
) -> list[str] | None:
    """The ncu pass's argv at ``--clock-control <clock>``, with ``BASE_METRICS`` only, writing to
    ``report_base``, and ``cap`` (when given) as the ``--launch-count`` of the per-launch-config
    filter nsightwrap put there (the counters pass may run at a lower cap,
    ``Settings.counters_cap``); None when the user's own ncu arguments choose the clock control."""
    argv = list(ncu_pass_argv)
    if argv[1:3] != ["--clock-control", "none"] or any(
        a == "--clock-control" or a.startswith("--clock-control=") for a in argv[3:]
    ):
        return None
    argv[2] = clock
    out: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--launch-count" and cap is not None and cap > 0 and i + 1 < len(argv):
            out += [a, str(cap)]
            i += 2
            continue
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


def base_argv(ncu_pass_argv: Sequence[str], report_base: Path, cap: int | None = None) -> list[str] | None:
    """The base pass's argv (``sweep_argv`` at ``--clock-control base``)."""
    return sweep_argv(ncu_pass_argv, report_base, "base", cap)


def duration_argv(ncu_pass_argv: Sequence[str], report_base: Path, cap: int | None = None) -> list[str] | None:
    """The duration pass's argv (``sweep_argv`` at ``--clock-control none``)."""
    return sweep_argv(ncu_pass_argv, report_base, "none", cap)


def cover_argv(
    ncu_pass_argv: Sequence[str], report_base: Path, benchmarks: Sequence[tuple[str, str]]
) -> list[str] | None:
    """The coverage pass's argv: the ncu pass's at ``--clock-control none`` with ``BASE_METRICS``
    only, writing to ``report_base``, its NVTX filter replaced by the iteration ranges of
    ``benchmarks`` (``(range path, iteration prefix)``: ``contract.ncu_benchmarks_filter``, one
    filter per NVTX domain, names regex-escaped) and no per-launch-config cap, so that every
    launch in those ranges is profiled; None where the user's own ncu arguments choose the clock
    control."""
    argv = sweep_argv(ncu_pass_argv, report_base, "none")
    if argv is None or not benchmarks:
        return None
    end = argv.index("-f") if "-f" in argv else len(argv)
    head, rest = argv[3:end], argv[end:]
    kept: list[str] = []
    i = 0
    while i < len(head):
        a = head[i]
        if a == "--nvtx":
            i += 1
        elif a in ("--nvtx-include", "--nvtx-exclude", "--filter-mode", "--launch-count") and i + 1 < len(head):
            i += 2  # nsightwrap's own filter and cap (the user's --ncu-args come after "-f", kept)
        else:
            kept.append(a)
            i += 1
    filters = ["--nvtx", *ncu_benchmarks_filter(benchmarks)]
    return [*argv[:3], *filters, *kept, *rest]


def run_cover_pass(
    prof: _Runs, ncu_pass_argv: Sequence[str], ncu_iters: int, extra_env: dict[str, str], deadline: float | None,
    benchmarks: Sequence[tuple[str, str]],
) -> tuple[PassRecord, str | None]:  # fmt: skip
    """Run the coverage pass (``cover_argv``) over ``benchmarks``: its manifest record and a warning
    for the user (None if it went well). Like the clock sweep's passes it never fails the run."""
    L = prof.layout
    L.pass_dir(COVER_PASS).mkdir(exist_ok=True)
    env = pass_env(L.root, PASS_NCU, {**extra_env, ENV_NCU_ITERS: str(ncu_iters)})
    argv = cover_argv(ncu_pass_argv, L.ncu_cover_report_base, benchmarks)
    fallback = "those benchmarks keep what the capped passes gave them (or no ncu figure, with the reason)"
    if argv is None:
        msg = "skipped: --ncu-args sets --clock-control"
        return prof._record(COVER_PASS, "skipped", env, [], message=msg), f"coverage pass {msg}; {fallback}"
    res = prof._run(COVER_PASS, argv, env, deadline)
    out, err = L.logs(COVER_PASS)
    text = "\n".join(p.read_text(errors="replace") for p in (out, err) if p.is_file())
    kernels = sum(1 for ln in text.splitlines() if ln.startswith('==PROF== Profiling "'))
    if res.status == "ok" and L.ncu_cover_report.is_file():
        return prof._record(COVER_PASS, "ok", env, [res], kernels_profiled=kernels), None
    if res.status in ("timeout", "interrupted"):
        status, why = res.status, "ran past --timeout and was stopped" if res.status == "timeout" else "interrupted"
    elif res.status != "ok":
        status, why = "failed", f"ncu {f'was killed by signal {res.signal}' if res.signal else f'exited with code {res.returncode}'}"
    else:
        status, why = "failed", f"ncu exited 0 but wrote no report ({kernels} kernels profiled)"
    log = err if err.is_file() and err.stat().st_size else out
    rec = prof._record(COVER_PASS, status, env, [res], message=f"{why}; see {log} (to reproduce: {shlex.join(argv)})",
                       kernels_profiled=kernels)  # fmt: skip
    return rec, f"coverage pass (ncu over the benchmarks the capped passes missed): {why}; {fallback}"


def clock_trouble(text: str) -> str | None:
    """The first ncu line that says the clock could not be controlled, or None."""
    for line in text.splitlines():
        low = line.lower()
        if ("==error==" in low or "==warning==" in low) and any(k in low for k in _CLOCK_TROUBLE):
            return line.strip()
    return None


def sweep_command(
    layout: RunLayout, ncu_pass_argv: Sequence[str], ncu_iters: int, extra_env: dict[str, str], name: str,
    cap: int | None = None,
) -> tuple[list[str] | None, dict[str, str]]:  # fmt: skip
    """The argv (None: the user's ncu arguments choose the clock) and environment of sweep pass
    ``name``: what ``run_clock_sweep`` runs, and what ``nsightwrap profile`` starts early."""
    base = name == CLOCK_SWEEP_PASS
    argv = (base_argv if base else duration_argv)(ncu_pass_argv, layout.sweep_report_base(name), cap)
    return argv, pass_env(layout.root, PASS_NCU, {**extra_env, ENV_NCU_ITERS: str(ncu_iters)})


def run_clock_sweep(
    prof: _Runs,
    ncu_pass_argv: Sequence[str],
    ncu_iters: int,
    extra_env: dict[str, str],
    deadline: float | None,
    name: str = CLOCK_SWEEP_PASS,
    cap: int | None = None,
) -> tuple[PassRecord, str | None]:
    """Run one pass of the sweep (``name``: ``DURATION_PASS`` or ``CLOCK_SWEEP_PASS``) at ``cap``
    per launch configuration (``sweep_argv``; None: the ncu pass's); its manifest record and a
    warning for the user (None if it went well)."""
    L = prof.layout
    L.pass_dir(name).mkdir(exist_ok=True)
    base = name == CLOCK_SWEEP_PASS
    report = L.sweep_report(name)
    argv, env = sweep_command(L, ncu_pass_argv, ncu_iters, extra_env, name, cap)
    title = "clock-sweep pass (ncu --clock-control base)" if base else "duration pass (ncu, duration and SM clock only)"
    if base:
        fallback = "clock elasticities fall back to the heuristic (a guess from ncu's throughput counters)"
    else:
        fallback = "ncu durations come from the ncu pass, whose 12 replay passes can read kernels a few % long"
    if argv is None:
        msg = "skipped: --ncu-args sets --clock-control"
        return prof._record(name, "skipped", env, [], message=msg), f"{title} {msg}; {fallback}"
    res = prof._run(name, argv, env, deadline)
    out, err = L.logs(name)
    text = "\n".join(p.read_text(errors="replace") for p in (out, err) if p.is_file())
    trouble = clock_trouble(text) if base else None
    kernels = sum(1 for ln in text.splitlines() if ln.startswith('==PROF== Profiling "'))
    if res.status == "ok" and report.is_file():
        # A clock warning with a report: the analysis checks whether the clocks did move.
        return prof._record(name, "ok", env, [res], kernels_profiled=kernels, message=trouble), None
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
        status, why = "failed", f"ncu exited 0 but wrote no {report.name}"
    log = err if err.is_file() and err.stat().st_size else out
    msg = f"{why}; see {log} (to reproduce: {shlex.join(argv)})"
    rec = prof._record(name, status, env, [res], message=msg, kernels_profiled=kernels)
    return rec, f"{title}: {why}; {fallback}"
