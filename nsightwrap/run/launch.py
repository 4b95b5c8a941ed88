"""The only module that starts processes: the target, the profilers, their probes and the sampler.

Every child starts in its own session (``start_new_session=True``) so that it and everything it
starts (ncu's and nsys's own copies of the target) form one process group that can be stopped as
a whole: SIGINT first (ncu and nsys then close their reports), SIGTERM, SIGKILL, each after a
short wait. A process that left the group (``setsid``, ``start_new_session``, a daemon's double
fork) is still found once the command ends, by a tag in its environment that every process the
command starts inherits (``ENV_PROC_TAG``), and ended too: nothing a pass started shares the GPU
with the next pass. A child's output goes line by line to its log files as it arrives, so
nothing is lost when it hangs or is killed; a log that cannot be written (a full disk) is told,
never raised from the thread that drains the pipe. Arguments are always lists: nothing runs
through a shell.
"""

from __future__ import annotations

import itertools
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from nsightwrap.core.contract import ROOFLINE_NCU_METRICS
from nsightwrap.core.errors import DiskFull, InputNotFound, UsageError, is_no_space

#: Seconds to wait after SIGINT and after SIGTERM before the next, harder signal.
KILL_GRACE_S = (3.0, 2.0)
#: Seconds a process left running by an ended command gets after SIGTERM before SIGKILL.
STRAY_GRACE_S = 1.0
#: Environment variable every process of a command inherits: ``PID.N`` of nsightwrap's process
#: and the command's number (``:``-joined after an outer nsightwrap's own tag), read back from
#: ``/proc/PID/environ`` to find what the command left running in any session.
ENV_PROC_TAG = "NSIGHTWRAP_PROC_TAG"
_TAGS = itertools.count(1)

#: Metrics every ncu pass collects: durations and clocks for the SM-clock model, DRAM traffic
#: and throughputs to decide which kernels follow the SM clock, instruction counts and launch
#: shape for the report, the tensor-op counts for the roofline.
DEFAULT_NCU_METRICS = (
    "gpu__time_duration.sum",
    "sm__cycles_elapsed.avg.per_second",
    "sm__cycles_elapsed.max",
    "dram__cycles_elapsed.avg.per_second",
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "sm__sass_thread_inst_executed_op_hfma_pred_on.sum",
    # FP32 adds and multiplies, for the roofline's FLOP count: they cost no extra replay pass
    # (12 passes with or without them where measured, docs/device.md).
    "sm__sass_thread_inst_executed_op_fadd_pred_on.sum",
    "sm__sass_thread_inst_executed_op_fmul_pred_on.sum",
    "sm__inst_executed_pipe_tensor.sum",
    "launch__grid_size",
    "launch__block_size",
    "launch__registers_per_thread",
    *ROOFLINE_NCU_METRICS,
)

LineCallback = Callable[[str, str], None]
"""Called with (stream name ``stdout``/``stderr``, decoded line without newline)."""


@dataclass(frozen=True)
class Command:
    """One process to run: exact argv, the environment variables it adds, where its output goes."""

    argv: tuple[str, ...]
    cwd: str
    stdout: str
    stderr: str
    env: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float | None = None
    grace_s: tuple[float, float] = KILL_GRACE_S  # waits after SIGINT and after SIGTERM


@dataclass(frozen=True)
class CommandResult:
    """What happened to one Command. Times are seconds (epoch for start/end)."""

    argv: tuple[str, ...]
    cwd: str
    env: dict[str, str]
    status: str  # ok, failed, timeout, interrupted, not-started
    returncode: int | None
    signal: str | None
    start: float
    end: float
    wall_s: float
    stdout: str
    stderr: str
    error: str | None = None  # why it could not start (OSError), if it did not
    #: Seconds the process was started before its turn (an ncu pass started early and held at
    #: its go file, ``Running(held=...)``); its start, end and wall time count from its turn.
    early_s: float | None = None
    #: Processes the command left running after it ended or was stopped (in another session:
    #: ``setsid``, a daemon), ended by nsightwrap before anything else ran.
    strays_ended: int = 0
    #: Why a log of the command could not be written in full (a full disk), or None.
    log_error: str | None = None


@dataclass(frozen=True)
class Probe:
    """Output of a short helper command (a version query, a help text, nvidia-smi -q -x)."""

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.returncode == 0


# --- target and profiler argv ---------------------------------------------------------------


def target_argv(target: Sequence[str], *, python: str = sys.executable) -> list[str]:
    """The argv that runs TARGET: a ``.py`` script or ``-m module`` with this interpreter, or an
    executable (a path, or a name on PATH). Raises InputNotFound / UsageError for a bad target."""
    if not target:
        raise UsageError(
            "no target given", hint="nsightwrap profile SCRIPT.py [ARGS...], -m MODULE or -- EXE"
        )
    first, rest = target[0], list(target[1:])
    if first == "-m":
        if not rest or rest[0].startswith("-"):
            raise UsageError("-m needs a module name", hint="nsightwrap profile -m package.module [ARGS...]")
        return [python, "-m", *rest]
    path = Path(first)
    if first.endswith(".py"):
        if not path.is_file():
            raise InputNotFound(
                f"target script {first} not found", hint="check the path (relative to the current directory)"
            )
        return [python, str(path.resolve()), *rest]
    if "/" in first:
        if not path.exists():
            raise InputNotFound(
                f"target {first} not found", hint="check the path (relative to the current directory)"
            )
        if path.is_dir() or not os.access(path, os.X_OK):
            raise UsageError(
                f"target {first} is not an executable file",
                hint=f"chmod +x {shlex.quote(first)}, or give a .py script to run it with {python}",
            )
        return [str(path.resolve()), *rest]
    found = shutil.which(first)
    if found is None:
        if path.is_file():
            raise UsageError(
                f"target {first} is a file but not a command",
                hint=f"write ./{first} to run it from this directory (it must be executable)",
            )
        raise InputNotFound(f"target {first} not found on PATH", hint="give a path (./prog) or a .py script")
    return [found, *rest]


def pass_env(run_dir: Path, pass_name: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment variables a pass adds for the in-process timer (nsightwrap/core/contract.py)."""
    from nsightwrap.core.contract import ENV_PASS, ENV_RUN_DIR

    env = {ENV_RUN_DIR: str(run_dir.resolve()), ENV_PASS: pass_name}
    env.update(extra or {})
    return env


def capture_layer_env(labels: Mapping[str, str] | None = None, *, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """What a pass adds to load the zero-change capture layer into every Python process of the
    target: ``NSIGHTWRAP_CAPTURE=1`` and ``PYTHONPATH`` starting with its boot folder (kept
    before the user's own ``PYTHONPATH``, which the layer's sitecustomize chains to), and the
    ``--label`` names (docs/capture.md)."""
    import json

    from nsightwrap.core.contract import ENV_CAPTURE, ENV_LABELS, capture_boot_dir

    env = os.environ if base is None else base
    boot = capture_boot_dir()
    rest = [p for p in (env.get("PYTHONPATH") or "").split(os.pathsep) if p and p != boot]
    out = {ENV_CAPTURE: "1", "PYTHONPATH": os.pathsep.join([boot, *rest])}
    if labels:
        out[ENV_LABELS] = json.dumps(dict(labels), sort_keys=True)
    return out


def parse_labels(items: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``--label FILE:LINE=NAME`` values as (``FILE:LINE``, ``NAME``) pairs; UsageError otherwise."""
    import re

    out: list[tuple[str, str]] = []
    for item in items:
        m = re.fullmatch(r"\s*(.+?):(\d+)\s*=\s*(.*\S)\s*", item)
        if m is None:
            raise UsageError(
                f"--label {item!r} is not FILE:LINE=NAME",
                hint="e.g. --label bench_mm.py:41=mm_small (the line of the do_bench call or of start.record())",
            )
        out.append((f"{m.group(1)}:{m.group(2)}", m.group(3)))
    return tuple(out)


def ncu_argv(
    ncu: str,
    target: Sequence[str],
    report_base: Path,
    *,
    nvtx_filter: Sequence[str],
    metrics: Sequence[str] = DEFAULT_NCU_METRICS,
    section_set: str | None = None,
    extra: Sequence[str] = (),
) -> list[str]:
    """``ncu --clock-control none <nvtx filter> --metrics ... -o BASE -f [extra] TARGET``.

    The GPU clock is left alone (``--clock-control none``): locking it to base would make ncu's
    durations disagree with every plain run, which is the comparison this tool exists for."""
    argv = [ncu, "--clock-control", "none", *nvtx_filter]
    if section_set:
        argv += ["--set", section_set]
    argv += ["--metrics", ",".join(metrics), "-o", str(report_base), "-f", *extra, *target]
    return argv


def nvtx_include_filter(filters: Sequence[str]) -> list[str]:
    """ncu arguments for user NVTX include filters (they replace the default iteration filter)."""
    argv = ["--nvtx"]
    for f in filters:
        argv += ["--nvtx-include", f]
    return argv


#: GPU-metrics sampling of the nsys pass: every device (the target picks its own), at 20 kHz
#: (a sample every 50 us: a 1 ms kernel holds 20, a 12 us one is caught by every fourth call).
GPU_METRICS_DEVICES = "all"
GPU_METRICS_HZ = 20_000


def nsys_argv(
    nsys: str,
    target: Sequence[str],
    report_base: Path,
    *,
    cuda_event_trace_flag: bool,
    gpu_metrics_flag: bool = False,
    extra: Sequence[str] = (),
) -> list[str]:
    """``nsys profile`` tracing CUDA and NVTX only: no CPU sampling or context switches (they
    add overhead and nothing the reconciliation uses); CUDA graphs traced per node so graph
    kernels appear one by one; CUDA event tracing off where nsys can (it adds work to every
    event record, and the timer records many). With ``gpu_metrics_flag`` the GPU's own counters
    are sampled at 20 kHz (``GPU_METRICS``): the GPC clock there is the SM clock the benchmarks'
    kernels ran at, measured on the GPU, which the analysis uses as each benchmark's clock
    (NVML and nvidia-smi, read from the host, miss the drop under sustained load)."""
    argv = [nsys, "profile", "-t", "cuda,nvtx", "-s", "none", "--cpuctxsw=none", "--cuda-graph-trace=node"]
    if cuda_event_trace_flag:
        argv.append("--cuda-event-trace=false")
    if gpu_metrics_flag:
        argv += [f"--gpu-metrics-devices={GPU_METRICS_DEVICES}", f"--gpu-metrics-frequency={GPU_METRICS_HZ}"]
    argv += ["-o", str(report_base), "-f", "true", *extra, *target]
    return argv


def plain_clock_argv(nsys: str, report_base: Path) -> list[str]:
    """The ``nsys profile`` the plain pass runs under to measure its own SM clock: GPU-metrics
    sampling and NVTX only, no CUDA trace (which slows launch-bound loops 1.07-5.6x and so moves
    their clock), no CPU sampling. The capture layer places each timing's windows on the GPU's
    timeline against anchors it records in NVTX (capture/gpuwindows.py)."""
    return [
        nsys, "profile", "-t", "nvtx", "-s", "none", "--cpuctxsw=none",
        f"--gpu-metrics-devices={GPU_METRICS_DEVICES}", f"--gpu-metrics-frequency={GPU_METRICS_HZ}",
        "-o", str(report_base), "-f", "true",
    ]  # fmt: skip


def nsys_export_argv(nsys: str, rep: Path, sqlite: Path) -> list[str]:
    """``nsys export --type sqlite`` of a .nsys-rep (the parsers read the SQLite file)."""
    return [nsys, "export", "--type", "sqlite", "-o", str(sqlite), "-f", "true", str(rep)]


def split_args(text: str | None, option: str) -> list[str]:
    """Split a user's ``--ncu-args "..."`` string like a POSIX shell would, without running one."""
    if not text:
        return []
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"{option}: cannot split {text!r}: {exc}", hint="check the quotes") from None


# --- running ------------------------------------------------------------------------------------


def _pump(
    src: IO[bytes], dst: IO[bytes], name: str, on_line: LineCallback | None, errors: list[tuple[str, OSError]]
) -> None:
    """Copy a child's pipe to its log line by line until the pipe ends. It never raises: a write
    that fails (a full disk: the error goes to ``errors``; a log already closed) stops the
    writing, not the draining, so the child never blocks on a full pipe."""
    # Binary in, binary out: a log keeps the child's bytes even when they are not UTF-8.
    writing = True
    try:
        for raw in iter(src.readline, b""):
            if writing:
                try:
                    dst.write(raw)
                    dst.flush()
                except ValueError:  # closed: the command was given up on (a pipe held past its end)
                    writing = False
                except OSError as exc:
                    errors.append((getattr(dst, "name", name), exc))
                    writing = False
            if on_line is not None:
                try:
                    on_line(name, raw.decode("utf-8", "replace").rstrip("\r\n"))
                except Exception:  # noqa: BLE001 - a display problem must never lose output
                    pass
    except (OSError, ValueError):  # the pipe itself was closed under the thread
        pass
    finally:
        try:
            src.close()
        except OSError:
            pass


def _log_error(path: str, exc: OSError) -> str:
    """One line for a log that could not be written (``no space left on device`` where the disk,
    the quota or the file size limit was full)."""
    if is_no_space(exc):
        return DiskFull.writing(path, exc).message
    return f"cannot write {path}: {exc.strerror or exc}"


def _proc_ids() -> list[int]:
    try:
        return [int(e.name) for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:  # no /proc (not Linux): nothing to find
        return []


def _tags_of(pid: int) -> list[str]:
    """The ``ENV_PROC_TAG`` values a process started with (nothing for another user's process,
    a zombie or one gone)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return []
    key = ENV_PROC_TAG.encode() + b"="
    for item in environ.split(b"\0"):
        if item.startswith(key):
            return item[len(key) :].decode("ascii", "replace").split(":")
    return []


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process."""
    out: dict[int, int] = {}
    for pid in _proc_ids():
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            out[pid] = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    return out


def descendants(pid: int) -> set[int]:
    """Every living descendant of ``pid`` (from /proc; empty where there is none)."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found: set[int] = set()
    todo = [pid]
    while todo:
        for c in children.get(todo.pop(), ()):
            if c not in found:
                found.add(c)
                todo.append(c)
    return found


def tagged(tag: str) -> set[int]:
    """Living processes started, directly or not, by the command tagged ``tag`` (``ENV_PROC_TAG``)."""
    me = os.getpid()
    return {pid for pid in _proc_ids() if pid != me and tag in _tags_of(pid)}


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def end_strays(tag: str, also: Collection[int] = (), grace_s: float = STRAY_GRACE_S) -> list[int]:
    """End every process of command ``tag`` still running (and those of ``also``, descendants of
    its main process seen while it lived): SIGTERM, then SIGKILL after ``grace_s``. Looks again
    until none is left (one may start another as it goes). The pids ended."""
    ended: list[int] = []
    me = os.getpid()
    for _ in range(5):
        pids = sorted((tagged(tag) | {p for p in also if _alive(p)}) - {me} - set(ended))
        if not pids:
            break
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in pids:
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            t_end = time.monotonic() + (grace_s if sig == signal.SIGTERM else 1.0)
            while time.monotonic() < t_end and any(_alive(p) for p in pids):
                time.sleep(0.02)
            if not any(_alive(p) for p in pids):
                break
        ended += pids
    return ended


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_group(proc: subprocess.Popen[bytes], grace: tuple[float, float] = KILL_GRACE_S) -> None:
    """Stop a child started with ``start_new_session=True`` and everything in its process group:
    SIGINT, then SIGTERM, then SIGKILL, with short waits; reap the child."""
    pgid = proc.pid  # a session leader's process group id is its pid
    for sig, wait_s in ((signal.SIGINT, grace[0]), (signal.SIGTERM, grace[1])):
        if proc.poll() is not None:
            break
        _signal_group(pgid, sig)
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue
    if proc.poll() is None:
        _signal_group(pgid, signal.SIGKILL)
        proc.wait()
    # The leader is gone; grandchildren (the target under ncu/nsys) may linger in its group.
    _signal_group(pgid, signal.SIGKILL)


class _NoSigint:
    """Ignore Ctrl-C while a child is being stopped, so a second press cannot leave it running."""

    def __enter__(self) -> None:
        self._old = None
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, signal.SIG_IGN)

    def __exit__(self, *exc: object) -> None:
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)


def run_command(cmd: Command, *, on_line: LineCallback | None = None) -> CommandResult:
    """Run one command to its end, its timeout or Ctrl-C, streaming its output to the logs.

    Ctrl-C does not propagate: the child's group is stopped and the result says
    ``interrupted``; the caller decides what to do next."""
    return Running(cmd, on_line).wait()


class Running:
    """A command started now and waited for later (``wait``), or stopped unwaited (``stop``):
    ``nsightwrap profile`` runs the nsys export beside the next pass this way. Its times are
    its own, from start to exit, whenever ``wait`` is called."""

    def __init__(self, cmd: Command, on_line: LineCallback | None = None, *, held: Path | None = None) -> None:
        self.cmd = cmd
        self.started = time.time()
        self._t0 = time.monotonic()
        self._end: float | None = None
        #: ``held``: the go file the target's capture layer waits for (``contract.ENV_GO_FILE``,
        #: in ``cmd.env``): until ``release``, its output goes to the logs only and its time
        #: (and timeout) has not started.
        self.held = held
        self.early_s: float | None = None
        self._on_line = None if held is not None else on_line
        self._out = open(cmd.stdout, "ab")  # noqa: SIM115 - closed by wait/stop
        self._err = open(cmd.stderr, "ab")  # noqa: SIM115
        self.proc: subprocess.Popen[bytes] | None = None
        self.error: str | None = None
        self._threads: list[threading.Thread] = []
        #: Log writes that failed (path, error), from the pump threads.
        self._log_errors: list[tuple[str, OSError]] = []
        #: This command's ``ENV_PROC_TAG``: everything it starts carries it (``end_strays``).
        self.tag = f"{os.getpid()}.{next(_TAGS)}"
        self._strays: list[int] = []
        outer = os.environ.get(ENV_PROC_TAG)
        try:
            self.proc = subprocess.Popen(
                list(cmd.argv),
                cwd=cmd.cwd,
                env={**os.environ, **cmd.env, ENV_PROC_TAG: f"{outer}:{self.tag}" if outer else self.tag},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            self._note(f"nsightwrap: cannot start {cmd.argv[0]}: {exc}\n")
            self.error = f"{type(exc).__name__}: {exc.strerror or exc}"
            return
        assert self.proc.stdout is not None and self.proc.stderr is not None
        errs = self._log_errors
        self._threads = [
            threading.Thread(target=_pump, args=(self.proc.stdout, self._out, "stdout", self._line, errs), daemon=True),
            threading.Thread(target=_pump, args=(self.proc.stderr, self._err, "stderr", self._line, errs), daemon=True),
        ]
        # When the process ends, not when someone asks: a command waited for late keeps its own time.
        self._reaper = threading.Thread(target=self._reap, daemon=True)
        for t in (*self._threads, self._reaper):
            t.start()

    def _line(self, stream: str, line: str) -> None:
        cb = self._on_line
        if cb is not None:
            cb(stream, line)

    def release(self, on_line: LineCallback | None = None) -> None:
        """Its turn: create the go file it waits for; from now on its lines go to ``on_line`` and
        its time and timeout count (again: only ``on_line`` changes; nothing for a command not held)."""
        if self.held is None:
            return
        self._on_line = on_line
        if self.early_s is not None:
            return
        now = time.monotonic()
        self.early_s = now - self._t0
        self._t0, self.started = now, time.time()
        self.held.touch()

    def _reap(self) -> None:
        assert self.proc is not None
        self.proc.wait()
        self._end = time.monotonic()

    def done(self) -> bool:
        """Whether the command has ended (or never started)."""
        return self.proc is None or self.proc.poll() is not None

    def _note(self, text: str) -> None:
        """A line of nsightwrap's own in the command's stderr log (a failed write is remembered)."""
        try:
            self._err.write(text.encode())
            self._err.flush()
        except (OSError, ValueError) as exc:
            if isinstance(exc, OSError):
                self._log_errors.append((self.cmd.stderr, exc))

    def _end_strays(self, seen: Collection[int] = ()) -> None:
        """End what the command left running (``end_strays``), once its main process is gone;
        ``seen``: its descendants found while it still ran."""
        if self.proc is None:
            return
        ended = end_strays(self.tag, {p for p in seen if p != self.proc.pid})
        if ended:
            self._strays += ended
            self._note(
                f"nsightwrap: ended {len(ended)} process(es) the command left running "
                f"(pid {', '.join(map(str, ended))})\n"
            )

    def _result(self, status: str, rc: int | None) -> CommandResult:
        if self.proc is not None:
            self._reaper.join(timeout=1)
        log_error = _log_error(*self._log_errors[0]) if self._log_errors else None
        # A held command that ended before its turn (it failed at start-up) took no time of it.
        wall = max(0.0, (self._end or time.monotonic()) - self._t0)
        sig = (
            signal.Signals(-rc).name
            if rc is not None and rc < 0 and -rc in signal.Signals._value2member_map_
            else None
        )
        return CommandResult(
            argv=self.cmd.argv, cwd=self.cmd.cwd, env=dict(self.cmd.env), status=status, returncode=rc,
            signal=sig, start=self.started, end=self.started + wall, wall_s=round(wall, 6),
            stdout=self.cmd.stdout, stderr=self.cmd.stderr, error=self.error,
            early_s=None if self.early_s is None else round(self.early_s, 6),
            strays_ended=len(self._strays), log_error=log_error,
        )  # fmt: skip

    def _close(self) -> None:
        for t in self._threads:
            # A process that cleared its environment and left the group may still hold the
            # pipe; do not hang on it (its pump then stops writing: the log is closed).
            t.join(timeout=5)
        for f, path in ((self._out, self.cmd.stdout), (self._err, self.cmd.stderr)):
            try:
                f.close()
            except OSError as exc:  # the last buffered bytes did not fit on the disk
                self._log_errors.append((path, exc))

    def wait(self, timeout_s: float | None = None) -> CommandResult:
        """Wait for the command (at most ``timeout_s`` from now, else the Command's own timeout
        from its start); Ctrl-C stops it (status ``interrupted``), as a timeout does (``timeout``)."""
        self.release(self._on_line)  # a held command waited for is its turn
        proc = self.proc
        if proc is None:
            self._close()
            return self._result("not-started", None)
        if timeout_s is None and self.cmd.timeout_s is not None:
            timeout_s = max(0.0, self.cmd.timeout_s - (time.monotonic() - self._t0))
        status = "ok"
        seen: set[int] = set()
        try:
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                status = "timeout"
                with _NoSigint():
                    seen = descendants(proc.pid)
                    stop_group(proc, self.cmd.grace_s)
        except KeyboardInterrupt:
            status = "interrupted"
            with _NoSigint():
                seen = descendants(proc.pid)
                stop_group(proc, self.cmd.grace_s)
        except BaseException:
            with _NoSigint():
                stop_group(proc, self.cmd.grace_s)
                self._end_strays()
            raise
        with _NoSigint():
            self._end_strays(seen)
        self._close()
        rc = proc.returncode
        if status == "ok" and rc != 0:
            status = "failed"
        return self._result(status, rc)

    def stop(self) -> CommandResult:
        """Stop the command and its process group (a run interrupted while it ran beside a pass):
        its result, ``interrupted`` unless it had ended."""
        status = "interrupted"
        if self.proc is not None:
            if self.proc.poll() is not None:
                status = "ok" if self.proc.returncode == 0 else "failed"
            with _NoSigint():
                seen = descendants(self.proc.pid) if self.proc.poll() is None else set()
                stop_group(self.proc, self.cmd.grace_s)
                self._end_strays(seen)
        self._close()
        return self._result(status if self.proc is not None else "not-started",
                            None if self.proc is None else self.proc.returncode)  # fmt: skip


def probe(
    argv: Sequence[str], *, timeout_s: float = 60, cwd: str | None = None, env: Mapping[str, str] | None = None
) -> Probe:
    """Run a short helper command and capture its output (never raises for a failing command).
    ``env`` is added to this process's environment."""
    try:
        cp = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env={**os.environ, **env} if env else None,
        )
    except subprocess.TimeoutExpired:
        return Probe(tuple(argv), None, "", "", error=f"no answer within {timeout_s:g} s")
    except OSError as exc:
        return Probe(tuple(argv), None, "", "", error=f"{type(exc).__name__}: {exc.strerror or exc}")
    return Probe(tuple(argv), cp.returncode, cp.stdout, cp.stderr)


class Background:
    """A helper process that runs beside a pass (the clock sampler), output to a file."""

    def __init__(
        self, argv: Sequence[str], stdout: Path, stderr: Path,
        *, env: Mapping[str, str] | None = None, cwd: str | None = None,
    ) -> None:  # fmt: skip
        self.argv = tuple(argv)
        self.stdout = stdout
        self.stderr = stderr
        self.env = dict(env or {})  # added to this process's environment
        self.cwd = cwd
        self.proc: subprocess.Popen[bytes] | None = None
        self.error: str | None = None

    def start(self) -> bool:
        """Start it; False (and ``error`` set) when it cannot start."""
        try:
            with open(self.stdout, "wb") as out, open(self.stderr, "wb") as err:
                self.proc = subprocess.Popen(
                    list(self.argv), stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
                    env={**os.environ, **self.env} if self.env else None, cwd=self.cwd,
                )  # fmt: skip
        except OSError as exc:
            self.error = f"{type(exc).__name__}: {exc.strerror or exc}"
            return False
        return True

    def stop(self, grace: tuple[float, float] = (1.0, 2.0)) -> int | None:
        """Stop it (SIGINT, then SIGTERM, then SIGKILL) and reap it; its exit code, or None if it
        never started. One that had already died on its own keeps the tail of its stderr in
        ``error``."""
        if self.proc is None:
            return None
        died = self.proc.poll() is not None
        with _NoSigint():
            stop_group(self.proc, grace=grace)
        if died and self.proc.returncode != 0:
            text = self.stderr.read_text(errors="replace").strip() if self.stderr.exists() else ""
            self.error = (text.splitlines() or [f"exited with code {self.proc.returncode}"])[-1]
        return self.proc.returncode
