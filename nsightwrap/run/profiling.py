"""One ``nsightwrap profile`` run: the target plain, under ncu and under nsys, into one run directory.

Each pass is a separate run of the target; the environment variables of nsightwrap/core/contract.py
tell the in-process timer the run directory and the pass. Every process is started by
nsightwrap.run.launch; this module decides what to run, in which order, and what each outcome means,
and writes the manifest. The command line and the terminal live in nsightwrap/cli/profile_cmd.py.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from nsightwrap import __version__
from nsightwrap.core.contract import (
    ENV_GO_FILE,
    ENV_GO_OWNER,
    ENV_NCU_ITERS,
    ENV_NSYS_LOOP_MS,
    ENV_PREIMPORT,
    ENV_STARTUP_FILE,
    NSYS_LOOP_MS,
    PASS_NCU,
    PASS_NSYS,
    PASS_PLAIN,
    PASS_PLAIN_CLOCK,
    PREIMPORTABLE,
)
from nsightwrap.core.errors import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TIMEOUT,
    EXIT_TOOL_FAILED,
    DiskFull,
    NsightwrapError,
    ToolNotFound,
    is_no_space,
)
from nsightwrap.core.jsonfile import write_text_atomic
from nsightwrap.run.clocksweep import run_clock_sweep, run_cover_pass, sweep_command
from nsightwrap.run.launch import (
    Command,
    CommandResult,
    Running,
    capture_layer_env,
    ncu_argv,
    nsys_argv,
    nsys_export_argv,
    pass_env,
    plain_clock_argv,
    probe,
    run_command,
)
from nsightwrap.run.nsys_export import keep_clock_only
from nsightwrap.run.rundir import (
    CLOCK_SWEEP_PASS,
    COVER_PASS,
    DURATION_PASS,
    SWEEP_PASSES,
    Manifest,
    PassRecord,
    RunLayout,
    write_manifest,
)
from nsightwrap.run.shards import ShardSpec, owns_nothing, shard_record
from nsightwrap.run.smisampler import SamplerRecord, SmiSampler
from nsightwrap.run.tools import (
    TOOL_ENV,
    Tool,
    describe,
    find_optional,
    find_qdstrm_importer,
    find_tool,
    git_state,
    nsys_profile_options,
    qdstrm_importer_candidates,
    supports_flag,
    with_version,
)

#: A line ncu prints as it starts profiling a kernel: its (shortened) name and running index.
PROF_KERNEL = re.compile(r'^==PROF== Profiling "(.*)" - (\d+):')
_NO_KERNELS = "No kernels were profiled"
_PERM = "ERR_NVGPUCTRPERM"
_IMPORTER_ERROR = "Importer error status"
_MISSING_LIB = re.compile(r"(\S+\.so[\w.]*): cannot open shared object file")
#: ``--ncu-kernel-cap``'s default: each distinct kernel launch configuration profiled at most this
#: often in each ncu pass, the ``--ncu-iters`` default, so a benchmark that launches a kernel once
#: per iteration keeps all its iterations; enough for a median.
DEFAULT_NCU_KERNEL_CAP = 3
#: The counters pass's cap (``--ncu-counters-cap``) where the duration pass gives every instance's
#: duration: a kernel's counters (throughputs, bytes, instruction counts) do not change from one
#: launch of the same configuration doing the same work to the next, and each profile with them
#: costs 17 replay passes (0.4 s on the GEMM sweep, H200) against one for the duration pass.
DEFAULT_NCU_COUNTERS_CAP = 1
#: The clock sweep's passes (one replay per kernel) profile this many times ``--ncu-kernel-cap``
#: instances of each launch configuration: ncu counts a configuration across the whole run, and a
#: sweep whose benchmarks share one (another K of a GEMM at the same grid) would otherwise leave
#: all but the first benchmark with durations carried from another's work. 8: eight benchmarks of
#: ``--ncu-iters`` 3 per configuration, at ~50 ms of ncu time per extra instance (H200).
SWEEP_CAP_X = 8


@dataclass(frozen=True)
class Problem:
    """Why a pass did not end well: one line, what to do, and whose log to show the tail of."""

    pass_name: str
    message: str
    hint: str | None
    exit_code: int
    log: Path | None = None
    #: The disk (or quota, or file size limit) was full: the run's files are incomplete, and the
    #: analysis at the end is not run (its findings would be about the missing files).
    disk_full: bool = False


@dataclass(frozen=True)
class Settings:
    """The command line, resolved."""

    target: tuple[str, ...]
    argv: tuple[str, ...]
    passes: tuple[str, ...]
    explicit_passes: bool
    timeout_s: float | None
    fail_fast: bool
    ncu_iters: int
    nvtx_filter: tuple[str, ...]
    metrics: tuple[str, ...]
    section_set: str | None
    ncu_extra: tuple[str, ...]
    nsys_extra: tuple[str, ...]
    quiet: bool
    verbose: bool
    #: ``--shard`` / ``--replicate`` (nsightwrap.run.shards.ShardSpec), or None for a whole run.
    shard: ShardSpec | None = None
    #: Load the zero-change capture layer into the target's Python processes (``--no-capture``).
    capture: bool = True
    #: ``--label FILE:LINE=NAME``: names for captured timings, by site.
    labels: tuple[tuple[str, str], ...] = ()
    #: Run the clock-sweep pass (ncu again at --clock-control base) after the ncu pass.
    clock_sweep: bool = True
    #: Sample the GPU's counters in the nsys pass (the GPC clock: each benchmark's measured clock).
    gpu_metrics: bool = True
    #: ``--plain-clock`` (default): run the plain pass under nsys sampling the GPU's clock, with no
    #: CUDA trace, so that every timing's own clock is measured in the plain pass itself.
    plain_clock: bool = True
    #: ``--ncu-kernel-cap N``: profile at most N instances of each distinct kernel launch
    #: configuration in the ncu passes (ncu's ``--filter-mode per-launch-config --launch-count N``);
    #: 0: no cap. The analysis carries the launches left out (analysis/ncusample.py).
    ncu_kernel_cap: int = DEFAULT_NCU_KERNEL_CAP
    #: ``--base-pass auto|always``: auto runs the base pass only where a benchmark's measured SM
    #: clock is more than ``BASE_CLOCK_GAP`` from ncu's and the guessed elasticities move an answer
    #: (the run's ``sweep_check`` decides).
    base_pass: str = "auto"
    #: ``--duration-pass auto|always``: auto runs the duration pass only where moving ncu's
    #: durations by what it can move them changes a verdict or a cause (analysis/basepass.py).
    duration_pass: str = "always"
    #: ``--ncu-counters-cap N``: the counters pass's cap per launch configuration where the
    #: duration pass runs in every run (``duration_pass == "always"``) and takes each instance's
    #: duration (``counters_cap``); the sweep's passes keep ``ncu_kernel_cap``.
    ncu_counters_cap: int = DEFAULT_NCU_COUNTERS_CAP
    #: ``--nsys-loop-ms``: under nsys the capture layer caps do_bench's and Timer's loops at this
    #: many ms (``ENV_NSYS_LOOP_MS``); 0: the script's own lengths.
    nsys_loop_ms: float = NSYS_LOOP_MS
    #: ``--budget SECONDS``: the whole profile's time; the clock sweep's passes are cut when the
    #: estimate says they do not fit (``Plan``).
    budget_s: float | None = None
    #: ``--early-start`` (default): start the base pass as the duration pass goes, held before the
    #: script's first line (``Profiler.stage``), and let it go while its need is decided.
    early_start: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "passes": list(self.passes), "timeout_s": self.timeout_s, "fail_fast": self.fail_fast,
            "ncu_iters": self.ncu_iters, "nvtx_filter": list(self.nvtx_filter), "metrics": list(self.metrics),
            "set": self.section_set, "ncu_args": list(self.ncu_extra), "nsys_args": list(self.nsys_extra),
            "clock_sweep": self.clock_sweep, "gpu_metrics": self.gpu_metrics, "capture": self.capture,
            "labels": dict(self.labels), "ncu_kernel_cap": self.ncu_kernel_cap, "budget_s": self.budget_s,
            "base_pass": self.base_pass, "duration_pass": self.duration_pass, "nsys_loop_ms": self.nsys_loop_ms,
            "ncu_counters_cap": self.counters_cap, "ncu_sweep_cap": self.sweep_cap, "early_start": self.early_start,
            "plain_clock": self.plain_clock,
        }  # fmt: skip

    @property
    def counters_cap(self) -> int:
        """The cap of the ncu (counters) pass: ``ncu_counters_cap`` where the duration pass runs
        in every run and gives each instance its duration (a lower cap, never a higher one, and
        never lifting ``--ncu-kernel-cap 0``), else ``ncu_kernel_cap``."""
        k = self.ncu_kernel_cap
        if not (self.clock_sweep and self.duration_pass == "always") or self.ncu_counters_cap <= 0 or k <= 0:
            return k
        return min(k, self.ncu_counters_cap)

    @property
    def sweep_cap(self) -> int:
        """The cap of the clock sweep's passes: ``SWEEP_CAP_X`` times ``ncu_kernel_cap`` (0: none)."""
        return self.ncu_kernel_cap * SWEEP_CAP_X

    @property
    def nsys_loops_capped(self) -> bool:
        """Whether the capture layer caps the timing loops in the nsys pass."""
        return self.capture and self.nsys_loop_ms > 0


class Display(Protocol):
    """Where a run reports progress (the CLI's terminal display)."""

    quiet: bool
    verbose: bool

    def pass_running(self, name: str, what: str) -> AbstractContextManager[None]: ...

    def on_line(self, stream: str, line: str) -> None: ...

    def done(self, rec: PassRecord) -> None: ...

    def warn(self, text: str) -> None: ...


def _log_text(*paths: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in paths if p.is_file())


def log_tail(paths: tuple[Path, ...], n: int = 4) -> list[str]:
    """The last ``n`` non-empty lines of the first log with any content."""
    for p in paths:
        if p.is_file():
            lines = [ln for ln in p.read_text(errors="replace").splitlines() if ln.strip()]
            if lines:
                return lines[-n:]
    return []


def _count_kernels(text: str) -> int:
    return sum(1 for ln in text.splitlines() if PROF_KERNEL.match(ln))


def _gpu_info(xml_path: Path) -> dict[str, Any] | None:
    """GPU names, UUIDs, driver and CUDA version from ``nvidia-smi -q -x`` (None if unreadable)."""
    from nsightwrap.parsers.smi import read_smi_xml_all

    try:
        infos = read_smi_xml_all(xml_path)
    except NsightwrapError:
        return None
    gpus = [{"name": g.name, "uuid": g.uuid, "pci_bus_id": g.pci_bus_id} for g in infos]
    return {
        "name": gpus[0]["name"] if gpus else None,
        "driver": infos[0].driver_version if infos else None,
        "cuda": infos[0].cuda_version if infos else None,
        "gpus": gpus,
    }


def _target_dir(target: tuple[str, ...]) -> Path:
    if target and target[0].endswith(".py"):
        return Path(target[0]).resolve().parent
    return Path.cwd()


def target_label(target: tuple[str, ...]) -> str:
    if target[0] == "-m" and len(target) > 1:
        return target[1].rsplit(".", 1)[-1]
    return Path(target[0]).name


class Profiler:
    """One ``nsightwrap profile`` run: passes in order, each recorded, problems collected."""

    def __init__(self, s: Settings, layout: RunLayout, tools: dict[str, Tool], display: Display) -> None:
        self.s = s
        self.layout = layout
        self.tools = tools
        self.display = display
        self.cwd = os.getcwd()
        self.records: dict[str, PassRecord] = {}
        self.problems: list[Problem] = []
        self.sampler: SamplerRecord | None = None
        self.interrupted = False
        self.nsys_event_flag = False
        #: nsys can sample the GPU's counters (``--gpu-metrics-devices``) and the user did not turn it off.
        self.nsys_gpu_metrics = False
        self.zero_kernels = False
        #: The plain pass samples the GPU's clock under nsys (``Settings.plain_clock`` and an nsys
        #: that can sample GPU metrics), and the export of that capture while it runs.
        self.plain_clock = False
        self.plain_export: Running | None = None
        #: The nsys export while it runs beside the next pass (``nsys(export_beside=True)``), with
        #: the nsys pass's environment and profile commands, until ``finish_nsys``.
        self.export: tuple[Running, dict[str, str], list[CommandResult]] | None = None
        #: Passes started early (``stage``): name -> (the held command, its argv, its go file).
        self.staged: dict[str, tuple[Running, tuple[str, ...], Path]] = {}
        #: What a pass started early imports before it waits (``read_preimports``), once the plain pass has run.
        self.preimports: tuple[str, ...] = ()
        #: Starts reading a finished report in the background for the analysis to come (the
        #: run's ``prefetch``; None: nothing is read ahead).
        self.prefetch: Callable[[Path], None] | None = None

    def read_ahead(self, path: Path) -> None:
        """Hand a report that is final to ``prefetch``: the checks and the analysis find it read."""
        if self.prefetch is not None and not self.interrupted and path.is_file():
            self.prefetch(path)

    def _read_export_ahead(self, running: Running) -> None:
        """Once the nsys export beside the next pass ends well, read its SQLite ahead (a thread:
        the export ends while that pass runs)."""
        if self.prefetch is None:
            return

        def watch() -> None:
            while not running.done():
                time.sleep(0.05)
            if running.proc is not None and running.proc.returncode == 0:
                self.read_ahead(self.layout.nsys_sqlite)

        threading.Thread(target=watch, name="nsightwrap-export-watch", daemon=True).start()

    # -- one command ------------------------------------------------------------------------

    def _target_env(self) -> dict[str, str]:
        # The shard every pass of a --shard run gives the target (nothing for a whole run), and
        # the capture layer (nsightwrap/capture) loaded into every Python process of it.
        env = self.s.shard.target_env() if self.s.shard else {}
        if self.s.capture:
            env.update(capture_layer_env(dict(self.s.labels)))
        return env

    def _on_line(self) -> Callable[[str, str], None] | None:
        return None if self.display.quiet and not self.display.verbose else self.display.on_line

    def _run(
        self, name: str, argv: list[str], env: dict[str, str], deadline: float | None, prefix: str = ""
    ) -> CommandResult:
        """Run pass ``name``'s command (the one started early for it, if any) to its end."""
        timeout = None if deadline is None else max(0.1, deadline - time.monotonic())
        staged = None if prefix else self.staged.pop(name, None)
        if staged is not None and staged[1] != tuple(argv):
            self._drop(name, staged)
            staged = None
        if staged is not None:
            running, _, go = staged
            running.release(self._on_line())
            res = running.wait(timeout)
            go.unlink(missing_ok=True)
            # The pass's own environment: the go file's variables were for the start only.
            res = replace(res, env=dict(env))
        else:
            out, err = self.layout.logs(name, prefix)
            cmd = Command(tuple(argv), self.cwd, str(out), str(err), env, timeout)
            res = run_command(cmd, on_line=self._on_line())
        if res.status == "interrupted":
            self.interrupted = True
        self._told(name, res)
        return res

    def _told(self, name: str, res: CommandResult) -> None:
        """What every command of a pass may leave to tell: processes it left running (ended before
        the next pass; the count is in its manifest record) and a log it could not write."""
        if res.strays_ended:
            self.display.warn(
                f"{name} pass: ended {res.strays_ended} process(es) the target left running in another "
                "session (they would have shared the GPU with the next pass)"
            )
        if res.log_error:
            self.problems.append(Problem(
                name, f"{name} pass: {res.log_error}",
                f"free space there and profile again; what was written is kept in {self.layout.root}",
                EXIT_TOOL_FAILED, disk_full="no space left on device" in res.log_error,
            ))  # fmt: skip

    # -- passes started early ------------------------------------------------------------------

    def stage(self, name: str, argv: list[str] | None, env: dict[str, str]) -> bool:
        """Start pass ``name`` now, held before the script's first line until its turn (``_run``
        releases it): its interpreter's start, ncu's and the ``import torch`` of the plain pass's
        script (3-5 s on the H200) then overlap the pass that runs now. The target process makes
        no CUDA call while held, so the pass now running has the GPU to itself. Only for a Python
        target with the capture layer (which does the holding); False where nothing was started."""
        s = self.s
        if (
            argv is None or name in self.staged or self.interrupted or not (s.early_start and s.capture)
            or not (s.target[0] == "-m" or s.target[0].endswith(".py"))
        ):  # fmt: skip
            return False
        L = self.layout
        L.pass_dir(name).mkdir(exist_ok=True)
        go = L.root / f".{name}.go"
        go.unlink(missing_ok=True)
        out, err = L.logs(name)
        held = {**env, ENV_GO_FILE: str(go), ENV_PREIMPORT: ",".join(self.preimports), ENV_GO_OWNER: str(os.getpid())}
        self.staged[name] = (Running(Command(tuple(argv), self.cwd, str(out), str(err), held), held=go), tuple(argv), go)
        return True

    def release(self, name: str) -> None:
        """Let a pass started early go now (before its result is waited for: ``_run``)."""
        staged = self.staged.get(name)
        if staged is not None:
            staged[0].release(self._on_line())

    def drop(self, name: str) -> None:
        """Stop a pass started early that will not run after all, and remove what it left."""
        staged = self.staged.pop(name, None)
        if staged is not None:
            self._drop(name, staged)

    def drop_all(self) -> None:
        for name in list(self.staged):
            self.drop(name)

    def _drop(self, name: str, staged: tuple[Running, tuple[str, ...], Path]) -> None:
        running, _, go = staged
        running.stop()
        go.unlink(missing_ok=True)
        # A pass stopped before or soon after its turn (not needed, cut, interrupted): what it left
        # (ncu's start-up lines, a report it may have begun) is nothing of a pass that ran, and
        # its folder is its own.
        shutil.rmtree(self.layout.pass_dir(name), ignore_errors=True)

    def read_preimports(self) -> tuple[str, ...]:
        """What the plain pass's script imported of ``PREIMPORTABLE``, or nothing where it set
        environment variables before its ``import torch`` (torch reads some at import) or the
        plain pass left no word (``ENV_STARTUP_FILE``)."""
        import json

        try:
            doc = json.loads(self.layout.startup_file.read_text())
            imports, env = list(doc["imports"]), list(doc["env_before_torch"])
        except (OSError, ValueError, KeyError, TypeError):
            return ()
        if env:
            return ()
        return tuple(m for m in PREIMPORTABLE if m in imports)

    def _command_problem(self, name: str, who: str, res: CommandResult) -> Problem | None:
        logs = (Path(res.stderr), Path(res.stdout))
        if res.status == "timeout":
            return Problem(
                name, f"{name} pass: {who} ran past --timeout {self.s.timeout_s:g} s and was stopped",
                "raise --timeout, or shorten the run" + (" (fewer --ncu-iters)" if name == PASS_NCU else ""),
                EXIT_TIMEOUT, logs[0],
            )  # fmt: skip
        if res.status == "not-started":
            return Problem(
                name,
                f"{name} pass: cannot start {res.argv[0]}: {res.error}",
                "check the path and permissions",
                EXIT_TOOL_FAILED,
            )
        if res.status != "failed":
            return None
        what = f"was killed by signal {res.signal}" if res.signal else f"exited with code {res.returncode}"
        log = logs[0] if logs[0].is_file() and logs[0].stat().st_size else logs[1]
        return Problem(
            name, f"{name} pass: {who} {what}",
            f"see {log}; to reproduce: {shlex.join(res.argv)}", EXIT_TOOL_FAILED, log,
        )  # fmt: skip

    def _record(
        self, name: str, status: str, env: dict[str, str], cmds: list[CommandResult], **kw: Any
    ) -> PassRecord:
        if self.interrupted:
            status = "interrupted"
        # Log paths relative to the run directory, so a moved run directory still reads right.
        cmds = [replace(c, stdout=self._rel(c.stdout), stderr=self._rel(c.stderr)) for c in cmds]
        rec = PassRecord(name, status, env, tuple(cmds), tuple(self.layout.files(name)), **kw)
        self.records[name] = rec
        return rec

    def _rel(self, path: str) -> str:
        p = Path(path)
        return str(p.relative_to(self.layout.root)) if p.is_relative_to(self.layout.root) else path

    def _status_of(self, res: CommandResult, problems: list[Problem]) -> str:
        if res.status == "timeout":
            return "timeout"
        return "failed" if problems or res.log_error else "ok"

    # -- passes ------------------------------------------------------------------------------

    def plain(self, deadline: float | None) -> PassRecord:
        env = pass_env(self.layout.root, PASS_PLAIN, self._target_env())
        smi = self.tools.get("nvidia-smi")
        startup = {ENV_STARTUP_FILE: str(self.layout.startup_file)} if self.s.capture and self.s.early_start else {}
        L = self.layout
        with SmiSampler(smi.path if smi else None, L.smi_samples) as sampler:
            cmds = [self._run(PASS_PLAIN, list(self.s.argv), {**env, **startup}, deadline)]
            res = cmds[0]
        self.sampler = sampler.record
        clock = self.plain_clock and PASS_NSYS in self.tools and res.status == "ok" and not self.interrupted
        if clock:
            # The clock run: the script once more under nsys sampling the GPU's clock, no CUDA
            # trace. Its own timings are not the run's: sampling moved host-bound loops (a
            # Timer.timeit of small GEMMs 2.7-3.9x on an H100, docs/profile.md), so the plain
            # pass above runs bare and a loop takes this run's clock only where its timing here
            # agrees with the plain pass's (analysis/plainclock.py).
            L.pass_dir(PASS_PLAIN_CLOCK).mkdir(parents=True, exist_ok=True)
            cenv = pass_env(L.root, PASS_PLAIN_CLOCK, self._target_env())
            argv = [*plain_clock_argv(self.tools[PASS_NSYS].path, L.plain_clock_base), *self.s.argv]
            cres = self._run(PASS_PLAIN_CLOCK, argv, cenv, deadline)
            cmds.append(cres)
            if cres.status != "ok" and not self.interrupted:
                # nsys could not sample (no access to the GPU's counters, another profiler holds
                # them) or the script failed under it: the plain pass stands, without its clocks.
                self.display.warn(
                    f"plain pass: the clock run under nsys failed (see {PASS_PLAIN_CLOCK}/stderr.log): "
                    "the loops' clocks are not measured in the plain pass"
                )
        if clock and L.plain_clock_rep.is_file() and not self.interrupted:
            # CPU work on the capture alone: it runs beside the next pass, and finish_plain_clock
            # waits for it before the analysis.
            out, err = L.logs(PASS_PLAIN_CLOCK, "export.")
            export = nsys_export_argv(self.tools[PASS_NSYS].path, L.plain_clock_rep, self._plain_clock_full())
            self.plain_export = Running(Command(tuple(export), self.cwd, str(out), str(err), {}, None))
        self.preimports = self.read_preimports()
        if sampler.record.status in ("failed", "skipped") and sampler.record.message:
            self.display.warn(f"clock sampler: {sampler.record.message}")
        p = self._command_problem(PASS_PLAIN, "the target", res)
        problems = [p] if p else []
        self.problems += problems
        rec = self._record(PASS_PLAIN, self._status_of(res, problems), env, cmds)
        if len(cmds) > 1:  # the clock run's files belong to the plain pass's record
            rec = replace(rec, files=(*rec.files, *L.files(PASS_PLAIN_CLOCK)))
            self.records[PASS_PLAIN] = rec
        return rec

    def _plain_clock_full(self) -> Path:
        """Where the plain pass's clock capture is exported whole, before ``keep_clock_only``."""
        return self.layout.pass_dir(PASS_PLAIN_CLOCK) / "clock.full.sqlite"

    def finish_plain_clock(self, stop: bool = False) -> None:
        """Wait for the export of the plain pass's clock capture (``stop``: stop it) and add it
        to the plain pass's record. A failed export costs the plain pass's clock, never the
        pass: the analysis then says the clock was not measured."""
        if self.plain_export is None:
            return
        running, self.plain_export = self.plain_export, None
        res = running.stop() if stop else running.wait()
        rec = self.records.get(PASS_PLAIN)
        full = self._plain_clock_full()
        if res.status != "ok" and not stop:
            self.display.warn(
                f"plain pass: nsys export of the clock capture failed (see {res.stderr}): "
                "the loops' clocks are not measured in the plain pass"
            )
        elif res.status == "ok" and full.is_file():
            try:
                keep_clock_only(full, self.layout.pass_dir(PASS_PLAIN_CLOCK) / "clock.sqlite")
                full.unlink()
            except (OSError, sqlite3.Error) as exc:
                self.display.warn(f"plain pass: could not cut the clock capture's export down ({exc}); kept whole")
                os.replace(full, self.layout.pass_dir(PASS_PLAIN_CLOCK) / "clock.sqlite")
        if rec is not None:
            res = replace(res, stdout=self._rel(res.stdout), stderr=self._rel(res.stderr))
            files = (*self.layout.files(PASS_PLAIN), *self.layout.files(PASS_PLAIN_CLOCK))
            self.records[PASS_PLAIN] = replace(rec, commands=(*rec.commands, res), files=files)

    def ncu(self, deadline: float | None) -> PassRecord:
        ncu = self.tools[PASS_NCU]
        argv = ncu_argv(
            ncu.path, self.s.argv, self.layout.ncu_report_base,
            nvtx_filter=[*self.s.nvtx_filter, *kernel_cap_args(self.s.counters_cap, self.s.ncu_extra)],
            metrics=self.s.metrics, section_set=self.s.section_set, extra=self.s.ncu_extra,
        )  # fmt: skip
        env = pass_env(self.layout.root, PASS_NCU, {**self._target_env(), ENV_NCU_ITERS: str(self.s.ncu_iters)})
        res = self._run(PASS_NCU, argv, env, deadline)
        out, err = self.layout.logs(PASS_NCU)
        text = _log_text(out, err)
        kernels = _count_kernels(text)
        if kernels == 0 and _NO_KERNELS not in text and self.layout.ncu_report.is_file():
            # ncu printed no progress lines (--quiet, --log-file): count the report's kernels.
            from nsightwrap.parsers.ncu import check_ncu_rep

            try:
                kernels = check_ncu_rep(self.layout.ncu_report)
            except NsightwrapError:
                pass  # a damaged report: the zero-kernel problem below says what to do
        problem: Problem | None = None
        if _PERM in text:
            problem = Problem(
                PASS_NCU, "ncu pass: no permission to read the GPU performance counters (ERR_NVGPUCTRPERM)",
                "run nsightwrap with admin rights, or have an admin set the nvidia driver option "
                "NVreg_RestrictProfilingToAdminUsers=0; see https://developer.nvidia.com/ERR_NVGPUCTRPERM",
                EXIT_TOOL_FAILED, None,
            )  # fmt: skip
        elif res.status != "ok":
            problem = self._command_problem(PASS_NCU, "ncu (running the target)", res)
        elif (kernels == 0 or _NO_KERNELS in text) and self.s.shard and owns_nothing(self.layout.pass_dir(PASS_NCU)):
            # A shard dealt none of the benchmarks has nothing to profile: not a failure.
            self.display.warn(f"shard {self.s.shard.label}: no benchmark was dealt to this shard")
        elif kernels == 0 or _NO_KERNELS in text:
            # Told at the end, when the nsys pass can show which NVTX ranges did exist.
            self.zero_kernels = True
            problem = Problem(PASS_NCU, "", None, EXIT_TOOL_FAILED, None)
        elif not self.layout.ncu_report.is_file():
            problem = Problem(
                PASS_NCU, f"ncu pass: ncu exited 0 but wrote no report {self.layout.ncu_report}",
                f"see {out}", EXIT_TOOL_FAILED, out,
            )  # fmt: skip
        problems = [problem] if problem else []
        self.problems += problems
        return self._record(PASS_NCU, self._status_of(res, problems), env, [res], kernels_profiled=kernels)

    def nsys(self, deadline: float | None, export_beside: bool = False) -> PassRecord:
        """The nsys pass: the profile, then its SQLite export (``export_beside``: started in the
        background, for ``finish_nsys`` to wait for)."""
        nsys = self.tools[PASS_NSYS]
        L = self.layout
        argv = nsys_argv(
            nsys.path,
            self.s.argv,
            L.nsys_report_base,
            cuda_event_trace_flag=self.nsys_event_flag,
            gpu_metrics_flag=self.nsys_gpu_metrics,
            extra=self.s.nsys_extra,
        )
        env = pass_env(L.root, PASS_NSYS, {**self._target_env(), ENV_NSYS_LOOP_MS: f"{self.s.nsys_loop_ms:g}"})
        cmds = [self._run(PASS_NSYS, argv, env, deadline)]
        problem = self._command_problem(PASS_NSYS, "nsys profile", cmds[0])
        if problem is not None and self.nsys_gpu_metrics and not self.interrupted and cmds[0].status != "timeout":
            # GPU metrics need the GPU's performance counters (admin rights on many machines): one
            # more try without them keeps the timeline; the clock then comes from elsewhere.
            self.display.warn(
                "nsys pass: nsys failed with --gpu-metrics-devices (no access to the GPU's counters?); "
                "trying again without GPU metrics: benchmarks get no GPU-measured clock from nsys"
            )
            self.nsys_gpu_metrics = False
            argv = nsys_argv(
                nsys.path, self.s.argv, L.nsys_report_base, cuda_event_trace_flag=self.nsys_event_flag,
                gpu_metrics_flag=False, extra=self.s.nsys_extra,
            )  # fmt: skip
            cmds.append(self._run(PASS_NSYS, argv, env, deadline, "retry."))
            problem = self._command_problem(PASS_NSYS, "nsys profile", cmds[-1])
        if problem is None and not self.interrupted and not L.nsys_rep.is_file():
            problem = self._import_qdstrm(nsys, cmds, deadline)
        if problem is None and not self.interrupted and L.nsys_rep.is_file():
            export = nsys_export_argv(nsys.path, L.nsys_rep, L.nsys_sqlite)
            if export_beside:
                # The export is CPU work on the report alone: it runs while the next pass profiles,
                # and finish_nsys records it (the pass's record says "running" until then).
                out, err = L.logs(PASS_NSYS, "export.")
                timeout = None if deadline is None else max(0.1, deadline - time.monotonic())
                self.export = (Running(Command(tuple(export), self.cwd, str(out), str(err), {}, timeout)), env, cmds)
                self._read_export_ahead(self.export[0])
                return self._record(PASS_NSYS, "running", env, cmds)
            cmds.append(self._run(PASS_NSYS, export, {}, deadline, "export."))
            problem = self._export_problem(cmds[-1])
        return self._nsys_record(env, cmds, problem)

    def _export_problem(self, res: CommandResult) -> Problem | None:
        L = self.layout
        problem = self._command_problem(PASS_NSYS, "nsys export", res)
        if problem is None and not self.interrupted and not L.nsys_sqlite.is_file():
            log = L.logs(PASS_NSYS, "export.")[0]
            problem = Problem(PASS_NSYS, f"nsys pass: nsys export wrote no {L.nsys_sqlite}", f"see {log}",
                              EXIT_TOOL_FAILED, log)  # fmt: skip
        return problem

    def _nsys_record(self, env: dict[str, str], cmds: list[CommandResult], problem: Problem | None) -> PassRecord:
        problems = [problem] if problem else []
        self.problems += problems
        failed = problems or any(c.log_error for c in cmds)
        status = "timeout" if any(c.status == "timeout" for c in cmds) else ("failed" if failed else "ok")
        return self._record(PASS_NSYS, status, env, cmds)

    def finish_nsys(self, stop: bool = False) -> PassRecord | None:
        """Wait for the nsys export started beside the next pass (``stop``: stop it, the run was
        interrupted) and record the nsys pass; None when no export is pending."""
        if self.export is None:
            return None
        running, env, cmds = self.export
        self.export = None
        res = running.stop() if stop else running.wait()
        if res.status == "interrupted":
            self.interrupted = True
        self._told(PASS_NSYS, res)
        cmds = [*cmds, res]
        return self._nsys_record(env, cmds, None if stop else self._export_problem(res))

    def _import_qdstrm(self, nsys: Tool, cmds: list[CommandResult], deadline: float | None) -> Problem | None:
        """nsys exited 0 without a report: its importer failed and left only the raw .qdstrm
        capture. Try the QdstrmImporter that ships beside nsys, and say why it fails."""
        L = self.layout
        out, err = L.logs(PASS_NSYS)
        text = _log_text(out, err)
        if not L.nsys_qdstrm.is_file():
            return Problem(
                PASS_NSYS, f"nsys pass: nsys profile exited 0 but wrote neither {L.nsys_rep.name} nor {L.nsys_qdstrm.name}",
                f"see {out}", EXIT_TOOL_FAILED, out,
            )  # fmt: skip
        why = "nsys could not import its capture" + (
            " (Importer error status)" if _IMPORTER_ERROR in text else ""
        )
        importer = find_qdstrm_importer(nsys.path)
        if importer is None:
            looked = ", ".join(str(c) for c in qdstrm_importer_candidates(nsys.path)[:3])
            return Problem(
                PASS_NSYS, f"nsys pass: {why} and left only {L.nsys_qdstrm}; no QdstrmImporter found (looked at {looked})",
                "this is usually a missing libdw.so.1: install your distribution's libdw package "
                "(Debian/Ubuntu libdw1, Fedora/RHEL elfutils-libs) or put it on LD_LIBRARY_PATH, and profile again",
                EXIT_TOOL_FAILED, None,
            )  # fmt: skip
        cmds.append(
            self._run(PASS_NSYS, [str(importer), "-i", str(L.nsys_qdstrm)], {}, deadline, "importer.")
        )
        if self.interrupted:
            return None
        if cmds[-1].status == "ok" and L.nsys_rep.is_file():
            self.display.warn(f"nsys pass: {why}; converted {L.nsys_qdstrm.name} with {importer}")
            return None
        ilogs = L.logs(PASS_NSYS, "importer.")
        itext = _log_text(*ilogs)
        missing = _MISSING_LIB.search(itext)
        if missing:
            lib = missing.group(1)
            package = (
                "your distribution's libdw (Debian/Ubuntu: libdw1, Fedora/RHEL: elfutils-libs)"
                if lib.startswith("libdw.")
                else f"the package that provides {lib}"
            )
            return Problem(
                PASS_NSYS,
                f"nsys pass: {why}; QdstrmImporter cannot start: {lib}: cannot open shared object file "
                f"(the capture is kept in {L.nsys_qdstrm})",
                f"install {package} or put {lib} on LD_LIBRARY_PATH, then profile again "
                f"or run {importer} -i {L.nsys_qdstrm}",
                EXIT_TOOL_FAILED,
                None,
            )
        p = self._command_problem(PASS_NSYS, "QdstrmImporter", cmds[-1])
        return p or Problem(
            PASS_NSYS, f"nsys pass: {why}; QdstrmImporter wrote no {L.nsys_rep.name} (the capture is kept in {L.nsys_qdstrm})",
            f"see {ilogs[1]}", EXIT_TOOL_FAILED, ilogs[1],
        )  # fmt: skip

    # -- the end -----------------------------------------------------------------------------

    def zero_kernel_problem(self) -> Problem:
        """No kernel matched the NVTX filter: say so, with filters that would match the ranges
        the nsys pass saw, in ncu's own syntax."""
        filt = " ".join(shlex.quote(a) for a in self.s.nvtx_filter if a != "--nvtx" and a != "--nvtx-include")
        msg = (
            f"ncu pass: no kernel was profiled with the NVTX filter {filt}: the target opened no matching "
            "range (no nsightwrap.bench, no timing the capture layer knows, no NVTX range opened from Python)"
        )
        ranges = self._nvtx_ranges()
        if ranges is None:
            seen = "run the nsys pass too to list the NVTX ranges the target opens"
        elif not ranges:
            seen = "the nsys pass recorded no NVTX range at all"
        else:
            seen = "filters for the NVTX ranges of the nsys pass: " + ", ".join(ranges)
        hint = (
            f"{seen}; profile inside ranges with --nvtx-include FILTER (repeatable; push/pop ranges "
            "end in '/', start/end ranges do not, the default domain has no 'DOMAIN@')"
        )
        return Problem(PASS_NCU, msg, hint, EXIT_TOOL_FAILED, None)

    def _nvtx_ranges(self, limit: int = 12) -> list[str] | None:
        sqlite = self.layout.nsys_sqlite
        if not sqlite.is_file():
            return None
        try:
            from nsightwrap.parsers.nsys import read_nsys

            ranges = read_nsys(sqlite).ranges
        except NsightwrapError:
            return None
        return nvtx_filters_seen(ranges, limit)


def nvtx_filters_seen(ranges: Any, limit: int = 12) -> list[str]:
    """``--nvtx-include`` values, quoted for a shell, that select the NVTX ranges of an nsys
    ``ranges`` frame (kind, domain, name, path), with how many instances each had: push/pop
    ``domain@outer/inner/`` (default domain: ``outer/inner/``), start/end ``domain@name``;
    numbered iterations (``iter0``, ``iter1``) collapse into one ``regex:`` filter."""
    from nsightwrap.core.contract import ncu_nvtx_filter

    counts: dict[str, int] = {}
    for kind, domain, name, path in zip(ranges["kind"], ranges["domain"], ranges["name"], ranges["path"], strict=False):
        dom = domain if isinstance(domain, str) and domain else None
        text = str(path)
        if dom and text.startswith(f"{dom}:"):
            text = text[len(dom) + 1 :]
        if str(kind) == "startend":
            f = ncu_nvtx_filter(dom, [str(name)], "startend")
        else:
            parts = text.split("/")
            m = re.fullmatch(r"(.*?)(\d+)", parts[-1]) if len(parts) > 1 else None
            if m and m.group(1):
                head = ncu_nvtx_filter(dom, [*parts[:-1], m.group(1)])[:-1]
                f = "regex:" + re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\1", head) + "[0-9]+/"
            else:
                f = ncu_nvtx_filter(dom, parts)
        counts[f] = counts.get(f, 0) + 1
    shown = [f"{shlex.quote(k)} (x{v})" if v > 1 else shlex.quote(k) for k, v in list(counts.items())[:limit]]
    if len(counts) > limit:
        shown.append(f"... {len(counts) - limit} more")
    return shown


def find_tools(
    s: Settings, ncu: str | None, nsys: str | None, display: Display
) -> tuple[dict[str, Tool], tuple[str, ...]]:
    """Tools for the requested passes; a missing one skips its pass with a warning, unless the
    user named that pass in --passes (then ToolNotFound, exit 3)."""
    tools: dict[str, Tool] = {}
    skipped: list[str] = []
    for name, explicit in ((PASS_NCU, ncu), (PASS_NSYS, nsys)):
        if name not in s.passes:
            continue
        try:
            tools[name] = find_tool(name, explicit)
        except ToolNotFound as exc:
            # A pass the user asked for, or a path the user gave, must not be skipped silently.
            if s.explicit_passes or explicit or os.environ.get(TOOL_ENV[name]):
                raise
            display.warn(f"{exc}; skipping the {name} pass")
            skipped.append(name)
    if PASS_NSYS not in s.passes and PASS_PLAIN in s.passes and s.plain_clock and s.gpu_metrics:
        # No nsys pass, but the plain pass samples its clock under nsys where one is there.
        try:
            tools[PASS_NSYS] = find_tool(PASS_NSYS, nsys)
        except ToolNotFound:
            pass
    smi = find_optional("nvidia-smi")
    if smi:
        tools["nvidia-smi"] = smi
    return tools, tuple(skipped)


def capture_env(
    layout: RunLayout, tools: dict[str, Tool]
) -> tuple[dict[str, Tool], dict[str, Any] | None, tuple[bool, bool], str]:
    """Versions, ``nvidia-smi -q -x``, nsys capabilities (``--cuda-event-trace``,
    ``--gpu-metrics-devices``): probed side by side (each may take a second) and saved to env/
    before any pass runs."""
    import json

    smi = tools.get("nvidia-smi")
    jobs: dict[str, Callable[[], Any]] = {
        n: partial(with_version, t) for n, t in tools.items() if n != "nvidia-smi"
    }
    if smi:
        jobs["smi_xml"] = partial(probe, [smi.path, "-q", "-x"], timeout_s=60)
    if PASS_NSYS in tools:
        jobs["nsys_help"] = partial(nsys_profile_options, tools[PASS_NSYS].path)
    with ThreadPoolExecutor(max_workers=max(1, len(jobs))) as pool:
        futures = {k: pool.submit(f) for k, f in jobs.items()}
        got = {k: f.result() for k, f in futures.items()}
    versioned = {n: got.get(n, t) for n, t in tools.items()}
    gpu = None
    if smi:
        xml = got["smi_xml"]
        if xml.ok:
            write_text_atomic(layout.smi_xml, xml.stdout)  # a full disk: DiskFull naming the file
            gpu = _gpu_info(layout.smi_xml)
            if gpu:
                versioned["nvidia-smi"] = Tool("nvidia-smi", smi.path, smi.found_by, gpu.get("driver"))
    event_flag = supports_flag(got.get("nsys_help", ""), "--cuda-event-trace")
    metrics_flag = supports_flag(got.get("nsys_help", ""), "--gpu-metrics-devices")
    importer = find_qdstrm_importer(tools[PASS_NSYS].path) if PASS_NSYS in tools else None
    info: dict[str, Any] = describe(list(versioned.values()))
    if PASS_NSYS in info:
        info[PASS_NSYS]["cuda_event_trace_flag"] = event_flag
        info[PASS_NSYS]["gpu_metrics_flag"] = metrics_flag
        info[PASS_NSYS]["qdstrm_importer"] = str(importer) if importer else None
    info["python"] = {"path": sys.executable, "version": sys.version.split()[0]}
    write_text_atomic(layout.tools_json, json.dumps(info, indent=2) + "\n")
    return (
        versioned,
        gpu,
        (event_flag, metrics_flag),
        "" if smi and gpu else "no nvidia-smi -q -x (nvidia-smi missing or failing)",
    )


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM (a CI job cancelled) stops the passes like Ctrl-C does, so no child is orphaned."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = (
        signal.signal(signal.SIGTERM, handler)
        if threading.current_thread() is threading.main_thread()
        else None
    )
    try:
        yield
    finally:
        if old is not None:
            signal.signal(signal.SIGTERM, old)


#: Asked before each pass of the clock sweep, with its name, the run directory and the manifest
#: so far: whether the pass can change an answer, and why (the CLI answers from the analysis:
#: analysis/basepass.py).
SweepCheck = Callable[[str, Path, dict[str, Any]], "tuple[bool, str]"]


def _clock_sweep(
    prof: Profiler, s: Settings, display: Display, plan: Plan | None = None,
    names: tuple[str, ...] = SWEEP_PASSES, needed: Callable[[str], tuple[bool, str] | None] | None = None,
) -> None:  # fmt: skip
    """Passes of the clock sweep after the ncu and nsys passes (nsightwrap.run.clocksweep), each
    only where ``needed`` says it can change an answer (None: it runs). They never fail the run: a
    failure is a warning, recorded in the manifest, and the analysis falls back."""
    ncu = prof.records.get(PASS_NCU)
    for name in names:
        if name != DURATION_PASS or s.duration_pass != "always":
            # The checks and the base pass's estimate read the nsys export: it must have ended.
            finish_nsys(prof, display, plan)
        if not s.clock_sweep:
            prof.records[name] = PassRecord(name, "skipped", message="--no-clock-sweep")
            continue
        if ncu is None or ncu.status != "ok" or prof.interrupted:
            why = "interrupted" if prof.interrupted else "the ncu pass did not succeed"
            prof.drop(name)
            prof.records[name] = PassRecord(name, "skipped", message=why)
            continue
        # A pass started early whose need is still to be decided goes now, while the decision is
        # made (seconds of analysis): stopped if it is not needed, else it has run that long.
        ahead = name in prof.staged and needed is not None
        cut = plan.fits(name) if plan is not None and ahead else None
        if ahead and cut is None:
            prof.release(name)
        t_check = time.monotonic()
        decision = needed(name) if needed is not None and cut is None else None
        if decision is not None:
            runs, why = decision
            if plan is not None:
                # check_s: the check's own time, on the profile's critical path (docs/profile.md).
                plan.decided.append({"pass": name, "runs": runs, "why": why,
                                     "check_s": round(time.monotonic() - t_check, 3)})  # fmt: skip
            if not runs:
                prof.drop(name)
                prof.records[name] = PassRecord(name, "skipped", message=f"not needed: {why}")
                display.warn(f"{name} pass skipped, not needed: {why}")
                if plan is not None:
                    plan.cut.append({"pass": name, "why": f"not needed: {why}"})
                continue
            display.warn(f"{name} pass needed: {why}")
        if not ahead:
            cut = plan.fits(name) if plan is not None else None
        if cut is not None:
            prof.drop(name)
            prof.records[name] = PassRecord(name, "skipped", message=cut)
            display.warn(f"{name} pass cut: {cut}")
            continue
        if name == DURATION_PASS and CLOCK_SWEEP_PASS in names:
            # The base pass starts as this one goes (beside the nsys export, CPU work alone): held,
            # it imports while this pass profiles, and waits at its first CUDA call for ncu's
            # lock in any case (studies/startup_study.py).
            stage_sweep(prof, s, CLOCK_SWEEP_PASS)
        deadline = None if s.timeout_s is None else time.monotonic() + s.timeout_s
        clock = "base" if name == CLOCK_SWEEP_PASS else "none"
        with display.pass_running(name, f"ncu --clock-control {clock} (duration, SM clock) " + shlex.join(s.argv)):
            rec, warning = run_clock_sweep(
                prof, list(ncu.commands[0].argv), s.ncu_iters, prof._target_env(), deadline, name,
                cap=s.sweep_cap,
            )
        prof.records[name] = rec
        if rec.status == "ok":
            prof.read_ahead(prof.layout.sweep_report(name))
        display.done(rec)
        if plan is not None:
            plan.after(name, rec)
        if warning:
            display.warn(warning)
    finish_nsys(prof, display, plan)


#: Asked once the ncu passes have run, with the run directory and the manifest so far: the
#: benchmarks (range path, iteration prefix) whose ncu figure the capped passes left missing or
#: borrowed from other launches, and why, in one line (the CLI answers from the analysis:
#: ``analysis.load.coverage_gaps``).
CoverageCheck = Callable[[Path, dict[str, Any]], "tuple[list[tuple[str, str]], str]"]


def _coverage(
    prof: Profiler, s: Settings, display: Display, plan: Plan | None, check: CoverageCheck | None,
    manifest: Callable[[], dict[str, Any]],
) -> None:  # fmt: skip
    """The coverage pass (``run.clocksweep.run_cover_pass``): ncu again, with no cap and the
    duration and SM clock only, over the iteration ranges of the benchmarks ``check`` finds without
    ncu figures of their own; only where there are any. The plan records the check's answer."""
    ncu = prof.records.get(PASS_NCU)
    if check is None or ncu is None or ncu.status != "ok" or not ncu.commands or prof.interrupted:
        return
    finish_nsys(prof, display, plan)  # the check reads the nsys export
    t_check = time.monotonic()
    benchmarks, why = check(prof.layout.root, manifest())
    record = {"runs": bool(benchmarks), "why": why, "benchmarks": [p for p, _ in benchmarks],
              "ranges": [f"{p}/{prefix}" for p, prefix in benchmarks],
              "check_s": round(time.monotonic() - t_check, 3)}  # fmt: skip
    if plan is not None:
        plan.coverage = record
    if not benchmarks or prof.interrupted:
        return
    display.warn(f"{COVER_PASS} pass needed: {why}")
    deadline = None if s.timeout_s is None else time.monotonic() + s.timeout_s
    with display.pass_running(COVER_PASS, f"ncu (duration, SM clock; {len(benchmarks)} benchmark(s)) " + shlex.join(s.argv)):
        rec, warning = run_cover_pass(prof, list(ncu.commands[0].argv), s.ncu_iters, prof._target_env(), deadline,
                                      benchmarks)  # fmt: skip
    prof.records[COVER_PASS] = rec
    if rec.status == "ok":
        prof.read_ahead(prof.layout.ncu_cover_report)
    display.done(rec)
    if plan is not None:
        plan.after(COVER_PASS, rec)
    if warning:
        display.warn(warning)


def stage_sweep(prof: Profiler, s: Settings, name: str) -> bool:
    """Start sweep pass ``name`` early (``Profiler.stage``), with the command ``run_clock_sweep``
    will run; False where it is not started (the ncu pass failed, no Python target, ...)."""
    ncu = prof.records.get(PASS_NCU)
    if not s.clock_sweep or ncu is None or ncu.status != "ok" or not ncu.commands:
        return False
    argv, env = sweep_command(
        prof.layout, list(ncu.commands[0].argv), s.ncu_iters, prof._target_env(), name, cap=s.sweep_cap
    )
    return prof.stage(name, argv, env)


def finish_nsys(prof: Profiler, display: Display, plan: Plan | None = None, stop: bool = False) -> None:
    """Wait for (``stop``: stop) the nsys export that ran beside the duration pass, record the
    nsys pass and say how it ended."""
    rec = prof.finish_nsys(stop)
    if rec is None:
        return
    display.done(rec)
    if plan is not None:
        plan.after(PASS_NSYS, rec)


#: ncu options of the user's (``--ncu-args``) that choose what is profiled themselves: no cap then.
_COUNT_OPTIONS = ("--launch-count", "-c", "--filter-mode", "--launch-skip", "-s")


def kernel_cap_args(cap: int, user: tuple[str, ...] | list[str] = ()) -> list[str]:
    """ncu arguments that profile at most ``cap`` instances of each distinct kernel launch
    configuration (kernel and grid/block shape): a benchmark whose kernels repeat, CUDA-graph
    replays above all, gets each kernel profiled ``cap`` times instead of every time; none for 0,
    or when the user's own ncu arguments ``user`` set a launch count or filter mode."""
    if cap <= 0 or any(a.split("=", 1)[0] in _COUNT_OPTIONS for a in user):
        return []
    return ["--filter-mode", "per-launch-config", "--launch-count", str(cap)]


#: Rough cost of each pass as a multiple of the plain pass's wall time, before the ncu pass has
#: run (H200, 2026-12-04, the counters pass at --ncu-counters-cap 1: ncu 0.95x on the GEMM sweep
#: and 1.10x on the graph/streams script, nsys 1.3-1.5x with the loops capped at 100 ms and
#: 2.4-2.9x without).
_ESTIMATE_X = {PASS_PLAIN: 1.0, PASS_NCU: 1.1, PASS_NSYS: 1.5}
#: The nsys pass without the loop cap (``--nsys-loop-ms 0``, or no capture layer).
_NSYS_FULL_X = 3.0
#: Each pass of the clock sweep against the ncu pass it repeats with two metrics (one replay per
#: kernel instead of 17, up to 8x the instances): 0.52-0.57x on the GEMM sweep, 1.0x on the
#: graph/streams script (2026-12-04), most of it the script's start-up under ncu.
_SWEEP_OF_NCU = 0.8


class Plan:
    """What the run will do, its estimates and ``--budget``, and what it did: printed before the
    passes (and again once the plain pass gives the estimates a scale), kept in the manifest."""

    def __init__(self, s: Settings, skipped: tuple[str, ...]) -> None:
        self.s = s
        self.start = time.monotonic()
        self.names: list[str] = []
        for p in s.passes:
            if p in skipped:
                continue
            self.names.append(p)
        if s.clock_sweep and PASS_NCU in self.names:
            # Last: each runs only where the analysis of the other passes says it can change an answer.
            self.names += [DURATION_PASS, CLOCK_SWEEP_PASS]
        self.estimate_s: dict[str, float] = {}
        self.actual_s: dict[str, float] = {}
        self.cut: list[dict[str, Any]] = []
        #: Each clock-sweep pass's decision: ``{"pass", "runs", "why"}``.
        self.decided: list[dict[str, Any]] = []
        #: The coverage check's answer: ``{"runs", "why", "benchmarks", "check_s"}`` (None: not asked).
        self.coverage: dict[str, Any] | None = None

    def what(self, name: str) -> str:
        s = self.s
        if name == PASS_PLAIN:
            return "the script as is, timings recorded"
        if name == COVER_PASS:
            return (
                "ncu duration and SM clock at --clock-control none, no cap, over the iteration ranges of the "
                "benchmarks the capped passes left without ncu figures of their own"
            )
        if name in (PASS_NCU, *SWEEP_PASSES):
            n = s.counters_cap if name == PASS_NCU else s.sweep_cap
            capped = bool(kernel_cap_args(n, s.ncu_extra))
            which = "--ncu-counters-cap" if name == PASS_NCU and n != s.ncu_kernel_cap else "--ncu-kernel-cap"
            times = "once" if n == 1 else f"at most {n} times"
            cap = (
                f"; each distinct kernel (name, grid, block) profiled {times} in the pass ({which})"
                + (", the duration pass times the other instances" if which == "--ncu-counters-cap"
                   else ", the other launches carried by its median")
                if capped else ""
            )  # fmt: skip
            head = {PASS_NCU: "counters", CLOCK_SWEEP_PASS: "duration and SM clock at --clock-control base"}.get(
                name, "duration and SM clock at --clock-control none"
            )
            auto = s.base_pass if name == CLOCK_SWEEP_PASS else s.duration_pass
            when = (
                " (only if it can move a verdict or a cause: decided after the other passes)"
                if name in SWEEP_PASSES and auto == "auto" else ""
            )
            if name != PASS_NCU:
                sweep = f"; each distinct kernel profiled at most {n} times ({SWEEP_CAP_X}x --ncu-kernel-cap)"
                return f"ncu {head}{when}: the ncu pass's iterations" + (sweep if capped else "")
            return f"ncu {head}{when}: {s.ncu_iters} iteration(s) per benchmark{cap}; the timing loops shortened"
        loops = (
            f"; do_bench and Timer loops capped at {s.nsys_loop_ms:g} ms (--nsys-loop-ms)" if s.nsys_loops_capped
            else "; the timing loops as the script runs them"
        )
        return "nsys trace of CUDA and NVTX, every iteration" + loops

    def lines(self) -> list[str]:
        out = []
        for i, n in enumerate(self.names, 1):
            est = self.estimate_s.get(n)
            out.append(f"plan {i}/{len(self.names)} {n}: {self.what(n)}" + (f" (~{est:.0f} s)" if est else ""))
        if self.s.budget_s is not None:
            out.append(f"plan: budget {self.s.budget_s:g} s for the whole profile")
        return out

    def after(self, name: str, rec: PassRecord) -> None:
        """Record a pass's wall time; after the plain and ncu passes, scale the estimates."""
        self.actual_s[name] = round(sum(c.wall_s for c in rec.commands), 3)
        if name == PASS_PLAIN and rec.status == "ok":
            plain = self.actual_s[name]
            for n in self.names:
                x = _ESTIMATE_X.get(n, _SWEEP_OF_NCU * _ESTIMATE_X[PASS_NCU])
                if n == PASS_NSYS and not self.s.nsys_loops_capped:
                    x = _NSYS_FULL_X
                self.estimate_s.setdefault(n, round(plain * x, 1))
        if name == PASS_NCU and rec.status == "ok":
            for n in SWEEP_PASSES:
                self.estimate_s[n] = round(self.actual_s[name] * _SWEEP_OF_NCU, 1)

    def fits(self, name: str) -> str | None:
        """None when pass ``name`` fits the budget with the passes after it that cannot be cut;
        else why it is cut."""
        b = self.s.budget_s
        if b is None or name not in SWEEP_PASSES:
            return None
        used = time.monotonic() - self.start
        at = self.names.index(name) if name in self.names else len(self.names)
        rest = [n for n in self.names[at + 1 :] if n not in SWEEP_PASSES]
        need = self.estimate_s.get(name, 0.0) + sum(self.estimate_s.get(n, 0.0) for n in rest)
        if used + need <= b:
            return None
        why = (
            f"--budget {b:g} s: {used:.0f} s used, {name} ~{self.estimate_s.get(name, 0):.0f} s and "
            f"{', '.join(rest) or 'nothing'} after it would not fit"
        )
        self.cut.append({"pass": name, "why": why})
        return why

    def to_json(self) -> dict[str, Any]:
        return {
            "passes": [{"name": n, "what": self.what(n), "estimate_s": self.estimate_s.get(n),
                        "actual_s": self.actual_s.get(n)} for n in self.names],
            "budget_s": self.s.budget_s, "cut": self.cut, "ncu_kernel_cap": self.s.ncu_kernel_cap,
            "ncu_counters_cap": self.s.counters_cap, "ncu_sweep_cap": self.s.sweep_cap,
            "base_pass": self.s.base_pass, "duration_pass": self.s.duration_pass, "decided": self.decided,
            "coverage": self.coverage,
        }  # fmt: skip


def _export_beside(s: Settings, prof: Profiler, skipped: tuple[str, ...]) -> bool:
    """Whether the nsys export can run beside the duration pass: the pass runs next whatever
    the export holds (``--duration-pass always``, the ncu pass went well, nsys is the last of
    the main passes)."""
    ncu = prof.records.get(PASS_NCU)
    return (
        s.clock_sweep and s.duration_pass == "always" and s.passes[-1] == PASS_NSYS and PASS_NSYS not in skipped
        and ncu is not None and ncu.status == "ok" and not (s.fail_fast and prof.problems)
    )  # fmt: skip


def _read_ahead_after(prof: Profiler, s: Settings, skipped: tuple[str, ...], name: str, rec: PassRecord) -> None:
    """Hand the reports that are final after pass ``name`` to ``Profiler.read_ahead``. The ncu
    pass's report waits until no nsys trace is left to run: a reader beside the traced loops
    could slow them, and the GPU clock they run at is the one the analysis takes."""
    ncu = prof.records.get(PASS_NCU)
    later = s.passes[s.passes.index(name) + 1 :]
    trace_left = PASS_NSYS in later and PASS_NSYS not in skipped
    if name in (PASS_NCU, PASS_NSYS) and ncu is not None and ncu.status == "ok" and not trace_left:
        prof.read_ahead(prof.layout.ncu_report)
    if name == PASS_NSYS and rec.status == "ok":
        prof.read_ahead(prof.layout.nsys_sqlite)  # an export still running: once it ends (_read_export_ahead)


def _pass_order(passes: tuple[str, ...], records: dict[str, PassRecord]) -> list[str]:
    """The manifest's pass order: the requested passes, the clock sweep's right after ncu."""
    order = []
    for name in passes:
        order.append(name)
        if name == PASS_NCU:
            order += [p for p in (*SWEEP_PASSES, COVER_PASS) if p in records]
    return order


def run_passes(
    s: Settings, layout: RunLayout, tools: dict[str, Tool], skipped: tuple[str, ...], display: Display,
    sweep_check: SweepCheck | None = None, prefetch: Callable[[Path], None] | None = None,
    coverage_check: CoverageCheck | None = None,
) -> tuple[int, str, list[Problem], bool]:  # fmt: skip
    """Run the passes and write the manifest (last, whatever happens): the exit code, the run's
    status, the problems to report and whether the run was interrupted. ``sweep_check`` decides,
    after the other passes, whether each clock-sweep pass is needed (without it, both run);
    ``prefetch`` is handed each report once it is final (``Profiler.read_ahead``);
    ``coverage_check`` finds the benchmarks the coverage pass re-profiles (without it, none)."""
    start = time.time()
    prof = Profiler(s, layout, tools, display)
    prof.prefetch = prefetch
    plan: Plan | None = None
    gpu: dict[str, Any] | None = None
    git = None
    try:
        with sigterm_as_interrupt():
            tools, gpu, (prof.nsys_event_flag, metrics_flag), note = capture_env(layout, tools)
            prof.nsys_gpu_metrics = s.gpu_metrics and metrics_flag
            prof.plain_clock = s.plain_clock and s.gpu_metrics and metrics_flag
            prof.tools = tools
            if note:
                display.warn(note)
            g = git_state(_target_dir(s.target))
            git = {"root": g.root, "commit": g.commit, "dirty": g.dirty} if g else None
            runners = {PASS_PLAIN: prof.plain, PASS_NCU: prof.ncu, PASS_NSYS: prof.nsys}
            plan = Plan(s, skipped)
            set_plan = getattr(display, "set_plan", None)
            if callable(set_plan):
                set_plan(len(plan.names))
            show_plan = getattr(display, "plan", None)
            if callable(show_plan):
                show_plan(plan.lines())
            for name in s.passes:
                if name in skipped:
                    prof.records[name] = PassRecord(name, "skipped", message=f"{name} not found")
                    continue
                if prof.interrupted or (s.fail_fast and prof.problems):
                    why = "interrupted" if prof.interrupted else "--fail-fast after an earlier failure"
                    prof.records[name] = PassRecord(name, "skipped", message=why)
                    continue
                deadline = None if s.timeout_s is None else time.monotonic() + s.timeout_s
                with display.pass_running(name, shlex.join(s.argv)):
                    if name == PASS_NSYS:
                        rec = prof.nsys(deadline, export_beside=_export_beside(s, prof, skipped))
                    else:
                        rec = runners[name](deadline)
                _read_ahead_after(prof, s, skipped, name, rec)
                display.done(rec)
                plan.after(name, rec)
                if name == PASS_PLAIN and rec.status == "ok" and callable(show_plan):
                    show_plan([ln for ln in plan.lines() if "(~" in ln and not ln.startswith("plan 1/")])
            if PASS_NCU in s.passes and PASS_NCU not in skipped:

                def needed(name: str) -> tuple[bool, str] | None:
                    always = (s.base_pass if name == CLOCK_SWEEP_PASS else s.duration_pass) == "always"
                    if sweep_check is None or always:
                        return None
                    partial = _manifest(prof, s, "running", EXIT_OK, start, gpu, git, plan)
                    return sweep_check(name, layout.root, partial.to_json())

                _clock_sweep(prof, s, display, plan, SWEEP_PASSES, needed)

                def so_far() -> dict[str, Any]:
                    return _manifest(prof, s, "running", EXIT_OK, start, gpu, git, plan).to_json()

                _coverage(prof, s, display, plan, coverage_check, so_far)
    except KeyboardInterrupt:
        prof.interrupted = True
    except (OSError, DiskFull) as exc:
        # A full disk while writing the run's own files (env/, logs): told as a problem of the
        # run, the passes stop, and the manifest below still says so if it fits.
        if not (isinstance(exc, DiskFull) or is_no_space(exc)):
            raise
        msg = exc.message if isinstance(exc, DiskFull) else DiskFull.writing(exc.filename or layout.root, exc).message
        prof.problems.append(Problem(
            "run", msg, f"free space there and profile again; what was written is kept in {layout.root}",
            EXIT_TOOL_FAILED, disk_full=True,
        ))  # fmt: skip
    finally:
        prof.drop_all()
        finish_nsys(prof, display, plan, stop=True)
        prof.finish_plain_clock(stop=prof.interrupted)
        for name in s.passes:
            prof.records.setdefault(name, PassRecord(name, "skipped", message="interrupted"))
        problems = [
            prof.zero_kernel_problem() if p.pass_name == PASS_NCU and not p.message else p
            for p in prof.problems
        ]
        if prof.interrupted:
            status, code = "interrupted", EXIT_INTERRUPTED
        elif problems:
            status = "failed"
            code = EXIT_TIMEOUT if any(p.exit_code == EXIT_TIMEOUT for p in problems) else EXIT_TOOL_FAILED
        else:
            status, code = "complete", EXIT_OK
        write_manifest(layout, _manifest(prof, s, status, code, start, gpu, git, plan))
    return code, status, problems, prof.interrupted


def _manifest(
    prof: Profiler, s: Settings, status: str, code: int, start: float, gpu: dict[str, Any] | None,
    git: dict[str, Any] | None, plan: Plan | None,
) -> Manifest:  # fmt: skip
    """The manifest of the run as it stands (also what the base pass's check reads mid-run)."""
    layout = prof.layout
    sampler = prof.sampler
    return Manifest(
        status=status,
        target={"argv": list(s.target), "command": list(s.argv), "cwd": prof.cwd},
        passes=tuple(prof.records[n] for n in _pass_order(s.passes, prof.records) if n in prof.records),
        tools=describe(list(prof.tools.values())),
        gpu=gpu, git=git, settings=s.to_json(),
        sampler=None if sampler is None else {
            "status": sampler.status, "argv": list(sampler.argv),
            "file": prof._rel(sampler.file) if sampler.file else None,
            "samples": sampler.samples, "message": sampler.message,
        },
        start=start, end=time.time(), nsightwrap_version=__version__, exit_code=code,
        shard=shard_record(layout, s.shard.to_json()) if s.shard else None,
        plan=plan.to_json() if plan is not None else None,
    )  # fmt: skip
