"""``nsightwrap profile TARGET [ARGS...]``: the command line and the terminal display of a run;
the run itself is nsightwrap/run/profiling.py.
"""

from __future__ import annotations

import os
import shlex
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from nsightwrap.cli import app, invoked
from nsightwrap.cli.device_cmd import place_device_file
from nsightwrap.cli.doctor_cmd import preflight
from nsightwrap.cli.gpus import GpuRun, run_on_gpus
from nsightwrap.core.contract import (
    NSYS_LOOP_MS,
    PASSES,
    ROOFLINE_NCU_METRICS,
    ncu_default_filter,
    ncu_iteration_filter,
)
from nsightwrap.core.errors import (
    EXIT_INTERRUPTED,
    EXIT_NATIVE_CRASH,
    EXIT_NOTHING_MEASURED,
    EXIT_OK,
    NothingMeasured,
    NsightwrapError,
    UsageError,
)
from nsightwrap.core.shard import parse_shard
from nsightwrap.device.store import read_device_file
from nsightwrap.run.launch import (
    DEFAULT_NCU_METRICS,
    nvtx_include_filter,
    parse_labels,
    split_args,
    target_argv,
)
from nsightwrap.run.profiling import (
    DEFAULT_NCU_COUNTERS_CAP,
    DEFAULT_NCU_KERNEL_CAP,
    PROF_KERNEL,
    Problem,
    Settings,
    find_tools,
    log_tail,
    run_passes,
    target_label,
)
from nsightwrap.run.rundir import PassRecord, create_run_dir, default_run_dir, record_exit
from nsightwrap.run.shards import ShardSpec, shard_spec

_DEFAULT_NCU_ITERS = 3


def _sweep_choice(option: str, value: str) -> str:
    if value not in ("auto", "always"):
        raise UsageError(f"{option} {value!r} is not auto or always", hint=f"{option} always runs it in every run")
    return value


def _readers() -> tuple[Any, Any]:
    """The ncu report reader (in a child process: a crash of the native reader costs the ncu
    numbers, not the run) and the nsys one, each reading a file once for every analysis of the
    run (the checks before the clock sweep's passes, then the report)."""
    from nsightwrap.analysis.basepass import read_once
    from nsightwrap.parsers.nsys import read_nsys
    from nsightwrap.run.ncu_isolated import read_ncu_rep_isolated

    return read_once(read_ncu_rep_isolated), read_once(read_nsys)


def _prefetch(readers: tuple[Any, Any]) -> Callable[[Path], None]:
    """Read a finished report ahead, while the next pass runs: the ncu passes' ``.ncu-rep`` with
    the ncu reader, the nsys export with the nsys one (``ReadOnce.prefetch``)."""
    read_ncu, read_nsys = readers

    def prefetch(path: Path) -> None:
        (read_nsys if ".sqlite" in path.suffixes else read_ncu).prefetch(path)

    return prefetch


def _sweep_check(readers: tuple[Any, Any]) -> Any:
    """Before each clock-sweep pass: whether it can change an answer (analysis/basepass.py)."""
    from nsightwrap.analysis.basepass import check_run

    read_ncu, read_sqlite = readers

    def check(name: str, root: Path, manifest: dict[str, Any]) -> tuple[bool, str]:
        return check_run(root, manifest, read_ncu, name, read_sqlite)

    return check


def _coverage_check(readers: tuple[Any, Any]) -> Any:
    """Once the ncu passes have run: the benchmarks the coverage pass re-profiles (analysis/load.py)."""
    from nsightwrap.analysis.load import coverage_gaps

    read_ncu, read_sqlite = readers

    def check(root: Path, manifest: dict[str, Any]) -> tuple[list[tuple[str, str]], str]:
        try:
            return coverage_gaps(root, manifest, read_ncu, read_sqlite)
        except Exception as exc:  # noqa: BLE001 - a run the analysis cannot read yet gets no extra pass
            return [], f"the run so far could not be analysed ({type(exc).__name__}: {exc})"

    return check


#: Seconds between two heartbeat lines of a pass without a terminal (``NSIGHTWRAP_HEARTBEAT_S``).
HEARTBEAT_S = 30.0


def _heartbeat_s() -> float:
    try:
        return max(0.05, float(os.environ.get("NSIGHTWRAP_HEARTBEAT_S", HEARTBEAT_S)))
    except ValueError:
        return HEARTBEAT_S


class _Display:
    """Progress on stderr: the pass, its elapsed time and, under ncu, the kernels profiled so far.

    In a terminal, a live line (rich). Without one (CI logs, ``nohup``, notebooks), plain lines: one
    when a pass starts (``pass 2/5 ncu: started``), a heartbeat at least every ``HEARTBEAT_S``
    seconds while it runs (``pass 2/5 ncu: 41 kernels, 12 s``), and one when it ends, so a long
    pass is never silent."""

    def __init__(self, console: Console, *, quiet: bool, verbose: bool) -> None:
        self.console = console
        self.quiet = quiet
        self.verbose = verbose
        self._progress: Progress | None = None
        self._task: Any = None
        self._kernels = 0
        self._lock = threading.Lock()
        #: How many passes the run will start (``set_plan``), for the ``pass i/N`` lines.
        self.total_passes: int | None = None
        self._index = 0
        self._label = ""
        self._labels: dict[str, str] = {}

    def set_plan(self, total_passes: int) -> None:
        self.total_passes = total_passes

    def plan(self, lines: list[str]) -> None:
        """The run's plan (nsightwrap.run.profiling.Plan): each pass, what it does, its estimate."""
        if not self.quiet:
            for line in lines:
                self.console.print(line, highlight=False, markup=False)

    def _head(self, name: str) -> str:
        total = f"/{self.total_passes}" if self.total_passes else ""
        return f"pass {self._index}{total} {name}"

    @contextmanager
    def pass_running(self, name: str, what: str) -> Iterator[None]:
        self._kernels = 0
        self._index += 1
        self._label = self._labels[name] = self._head(name)
        if self.quiet:
            yield
            return
        if not self.console.is_terminal:
            yield from self._plain_lines(name, what)
            return
        self._progress = Progress(
            SpinnerColumn(), TextColumn("[bold]{task.description}"), TimeElapsedColumn(),
            TextColumn("{task.fields[detail]}"), console=self.console, transient=True,
        )  # fmt: skip
        self._task = self._progress.add_task(f"{name} pass", detail=escape(what))
        with self._progress:
            yield
        self._progress = None

    def _plain_lines(self, name: str, what: str) -> Iterator[None]:
        head = self._label
        self.console.print(f"{head}: started ({escape(what)})", highlight=False, markup=False)
        stop = threading.Event()
        t0 = time.monotonic()
        every = _heartbeat_s()

        def beat() -> None:
            while not stop.wait(every):
                k = self._kernels
                kernels = f"{k} kernels, " if k or name.startswith("ncu") else ""
                self.console.print(f"{head}: {kernels}{time.monotonic() - t0:.0f} s", highlight=False, markup=False)

        thread = threading.Thread(target=beat, name="nsightwrap-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=2)

    def on_line(self, stream: str, line: str) -> None:
        m = PROF_KERNEL.match(line)
        if m:
            with self._lock:
                self._kernels += 1
                n = self._kernels
            if self._progress is not None:
                self._progress.update(self._task, detail=f"{n} kernels profiled, last: {escape(m.group(1))}")
        if self.verbose:
            self.console.print(f"[dim]{escape(line)}[/]", highlight=False)

    def done(self, rec: PassRecord) -> None:
        if self.quiet:
            return
        wall = sum(c.wall_s for c in rec.commands)
        mark = {"ok": "[green]ok[/]", "skipped": "[yellow]skipped[/]",
                "running": "[cyan]exporting[/] its trace beside the next pass"}.get(
            rec.status, f"[red]{rec.status}[/]"
        )  # fmt: skip
        extra = f", {rec.kernels_profiled} kernels profiled" if rec.kernels_profiled is not None else ""
        # A pass may end after the next one started (the nsys export): its own label, not the last.
        label = self._labels.get(rec.name, self._label)
        ended = "traced" if rec.status == "running" else "ended"
        head = f"{label}: {ended}; " if not self.console.is_terminal and rec.status != "skipped" else ""
        self.console.print(f"{head}{rec.name} pass: {mark} ({wall:.1f} s{extra})", highlight=False)

    def warn(self, text: str) -> None:
        if not self.quiet:
            self.console.print(f"[yellow]warning:[/] {escape(text)}", highlight=False)


def _parse_passes(text: str | None) -> tuple[tuple[str, ...], bool]:
    if text is None:
        return PASSES, False
    names = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in names if p not in PASSES]
    if bad or not names:
        raise UsageError(
            f"--passes: unknown pass {', '.join(bad) or '(none)'}", hint=f"choose from {','.join(PASSES)}"
        )
    return tuple(p for p in PASSES if p in names), True


def _own_options_note(ctx: typer.Context, target: list[str], head: int) -> str | None:
    """A note when arguments after TARGET are spelled like profile's own options (they still go
    to the target: ``bench.py -o run`` passes ``-o run`` to bench.py); None when none are."""
    params = [p for p in ctx.command.params if p.param_type_name == "option"]
    by_name = {o: p for p in params for o in (*p.opts, *p.secondary_opts)}
    found: list[str] = []
    moved: list[str] = []  # the options with their values, as they would go before TARGET
    rest = target[head:]
    i = 0
    while i < len(rest) and rest[i] != "--":  # after a second "--" the user has said what is meant
        opt = by_name.get(rest[i].split("=", 1)[0])
        if opt is None:
            i += 1
            continue
        takes_value = not getattr(opt, "is_flag", False) and "=" not in rest[i] and i + 1 < len(rest)
        found.append(rest[i].split("=", 1)[0])
        moved += rest[i : i + 1 + takes_value]
        del rest[i : i + 1 + takes_value]
    if not found:
        return None
    label = shlex.join(target[:head])
    return (
        f"{', '.join(dict.fromkeys(found))} after {label} went to {label}, not to nsightwrap: "
        f"everything after TARGET belongs to it. For nsightwrap, put them before TARGET, as in "
        f"nsightwrap profile {shlex.join([*moved, *target[:head], *rest])} "
        f"(or write -- after {label} to pass them on without this note)"
    )


def _shard_spec(shard: str | None, by: str, replicate: bool, gpus: str | None) -> ShardSpec | None:
    if gpus is not None and shard is not None:
        raise UsageError("--gpus deals the shards itself", hint="give --shard I/N only without --gpus")
    if replicate and gpus is None and shard is None:
        raise UsageError("--replicate needs --gpus (or --shard I/N)", hint="e.g. nsightwrap profile --gpus all --replicate bench.py")
    if gpus is not None:
        parse_shard("0/1", by, what="--shard-by")  # a bad --shard-by is told before anything starts
    return shard_spec(shard, by, replicate)


def _print_problem(console: Console, p: Problem) -> None:
    line = f"{p.message} ({p.hint})" if p.hint else p.message
    console.print(f"[bold red]error:[/] {escape(line)}", highlight=False)
    for ln in log_tail((p.log,)) if p.log else []:
        console.print(f"    [dim]{escape(ln)}[/]", highlight=False)


def _analyze(root: Path, out: Console, err: Console, *, show: bool, readers: tuple[Any, Any] | None = None) -> int:
    """Run the analysis and print its summary (``show``); its exit code (0, or the error's).
    ``readers``: the ncu and nsys readers of the run's checks (``_readers``), which hold what
    they read already."""
    try:
        from nsightwrap.analysis.load import analyze
        from nsightwrap.analysis.store import StoreKey, run_inputs, store_result
        from nsightwrap.export.jsonio import report_to_dict
        from nsightwrap.export.terminal import print_report
    except ImportError as exc:
        if exc.name not in ("nsightwrap.analysis.load", "nsightwrap.analysis.store", "nsightwrap.export.terminal",
                            "nsightwrap.export", "nsightwrap.export.jsonio"):  # fmt: skip
            raise
        return EXIT_OK
    try:
        from nsightwrap.run.ncu_isolated import read_ncu_rep_isolated

        # The native ncu reader in a child process: its crash costs the ncu numbers, not the run.
        read_ncu, read_nsys = readers or (read_ncu_rep_isolated, None)
        inputs = run_inputs(root)  # the run's files as the analysis reads them
        result = analyze(root, read_ncu=read_ncu, read_nsys=read_nsys)
        # Kept for report, compare and load_run (analysis/store.py): the run is analysed once.
        store_result(root, result, key=StoreKey.of(0.1, "plain", None), to_doc=report_to_dict, inputs=inputs)
        if show:
            print_report(result, out)
    except NsightwrapError as exc:
        err.print(f"[bold red]error:[/] analysis: {escape(str(exc))}", highlight=False)
        return exc.exit_code
    for line in result.reader_crashes:  # the report above was made without those numbers
        err.print(f"[bold red]error:[/] {escape(line)}", highlight=False)
    if result.reader_crashes:
        return EXIT_NATIVE_CRASH
    if not any(b.timer or b.ncu or b.nsys for b in result.benchmarks):  # a green job that measured nothing
        err.print(f"[bold red]error:[/] {escape(nothing_measured_line(root))}", highlight=False)
        return EXIT_NOTHING_MEASURED
    return EXIT_OK


#: The manifest's ``status`` where the analysis at the end of ``profile`` sets the exit code
#: (its passes all went well): ``nothing-measured`` (6), ``reader-crashed`` (5), else
#: ``analysis-failed`` (the analysis error's own code).
ANALYSIS_STATUS = {EXIT_NOTHING_MEASURED: "nothing-measured", EXIT_NATIVE_CRASH: "reader-crashed"}


def no_gpu_here() -> bool:
    """Whether this machine shows no NVIDIA GPU: no nvidia-smi (on PATH or where drivers put it)
    and no ``/dev/nvidia<N>`` device node."""
    import glob

    from nsightwrap.run.tools import find_optional

    return find_optional("nvidia-smi") is None and not glob.glob("/dev/nvidia[0-9]*")


def refuse_where_nothing_can_run(s: Settings, ncu: str | None, nsys: str | None) -> None:
    """Before anything is printed or made: where there is no GPU and no ncu or nsys for the
    passes asked for, nothing can be measured; NothingMeasured (exit 6), one line with the fix,
    and no run directory left behind. A profiler given by path or variable is left to
    ``find_tools`` (a missing one is its own error)."""
    from nsightwrap.run.tools import TOOL_ENV, find_optional

    if not no_gpu_here():
        return
    wanted = [n for n in ("ncu", "nsys") if n in s.passes]
    if any(n == "ncu" and ncu or n == "nsys" and nsys or os.environ.get(TOOL_ENV[n]) for n in wanted):
        return
    if any(find_optional(n) is not None for n in wanted):
        return
    missing = f"; {' and '.join(wanted)} not found" if wanted else ""
    fix = "run on a machine with an NVIDIA GPU and its driver (nsightwrap doctor)" + (
        ", with the CUDA toolkit's Nsight tools installed or given by --ncu/--nsys PATH" if wanted else ""
    )
    raise NothingMeasured(
        f"nothing can be measured on this machine: no NVIDIA GPU (nvidia-smi not found){missing}",
        hint=f"{fix}; nothing was run and no run directory was made",
    )


def nothing_measured_line(root: Path) -> str:
    """Why no benchmark got a figure, and the fix for each cause: no GPU, no ncu/nsys, no timings
    captured. The causes come from the run's manifest (what ran, what was skipped); the raw files
    stay in ``root`` for a look."""
    import json
    import shutil

    try:
        m = json.loads((root / "manifest.json").read_bytes())
        skipped = [p["name"] for p in m.get("passes", ()) if p.get("status") == "skipped"]
        no_gpu = not m.get("gpu") and shutil.which("nvidia-smi") is None
    except (OSError, ValueError, TypeError, KeyError, AttributeError):  # a merged or odd run: ask PATH
        skipped = [t for t in ("ncu", "nsys") if shutil.which(t) is None]
        no_gpu = shutil.which("nvidia-smi") is None
    why: list[str] = []
    fix: list[str] = []
    if no_gpu:
        why.append("no NVIDIA GPU (nvidia-smi not found)")
        fix.append("run on a machine with an NVIDIA GPU and its driver (nsightwrap doctor)")
    tools = [t for t in ("ncu", "nsys") if t in skipped]
    if tools:
        why.append(f"{' and '.join(tools)} not found")
        fix.append("install the CUDA toolkit's Nsight tools or give --ncu/--nsys PATH")
    why.append("no timings were captured")
    logs = [root / p / "stdout.log" for p in PASSES if (root / p / "stdout.log").is_file()]
    fix.append(
        "time the code with nsightwrap.bench or do_bench, or give --nvtx-include for the target's own ranges"
        + (f" (the target's output: {logs[0]})" if logs else "")
    )
    return f"nothing was measured in {root}: {', '.join(why)} (fix: {'; '.join(fix)}); raw files kept in {root}"


@app.command(
    "profile",
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
    help=(
        "Run TARGET plain, under ncu and under nsys into one run directory, then analyse it.\n\n"
        "TARGET is a Python script (run with this Python), -m MODULE, or an executable; "
        "everything after it goes to the target (nsightwrap options come first; use -- before an "
        "executable whose arguments look like nsightwrap options).\n\n"
        "Examples:\n\n"
        "  nsightwrap profile bench.py --size 4096   # all three passes\n\n"
        "  nsightwrap profile --passes plain bench.py   # timings only, quick\n\n"
        "  nsightwrap profile --nvtx-include 'mybench/' -- ./bench --n 10   # a binary, its own NVTX ranges\n\n"
        "  nsightwrap profile -q -o run --timeout 600 bench.py && "
        "nsightwrap report run --format json -o run.json   # in CI\n\n"
        "  nsightwrap profile --gpus all -o run sweep.py   # every GPU of this machine, one shard each, merged\n\n"
        "  nsightwrap profile --shard $SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_COUNT -o run-$SLURM_ARRAY_TASK_ID "
        "sweep.py   # one task of a Slurm array, then nsightwrap merge (docs/cluster.md)\n\n"
        "  nsightwrap profile --gpus all --replicate sweep.py   # GPU-to-GPU variance\n\n"
        "Exit codes: 0 ok, 2 bad usage or input, 3 a tool or the target failed, or the disk was full, 4 timeout, 5 a report reader crashed, "
        "6 nothing was measured (no GPU, no ncu/nsys, no timings captured), 130 interrupted."
    ),
)
def profile_command(
    ctx: typer.Context,
    target: Annotated[list[str], typer.Argument(metavar="TARGET [ARGS]", show_default=False, help="The script, -m MODULE or executable, then its own arguments.")],
    output: Annotated[
        Path | None, typer.Option("-o", "--output", metavar="DIR", help="Run directory (must not exist).")
    ] = None,
    passes: Annotated[
        str | None, typer.Option("--passes", metavar="PASSES", help="Passes to run, of plain,ncu,nsys (default: all).")
    ] = None,
    ncu: Annotated[str | None, typer.Option("--ncu", metavar="PATH", help="ncu executable (or env NSIGHTWRAP_NCU).")] = None,
    nsys: Annotated[
        str | None, typer.Option("--nsys", metavar="PATH", help="nsys executable (or env NSIGHTWRAP_NSYS).")
    ] = None,
    metrics: Annotated[
        str | None,
        typer.Option("--metrics", metavar="METRICS", help="More ncu metrics (counters) for the ncu pass to collect, comma separated, added to "
                     "the default set. Not compare --metric, which picks the timing compare judges."),
    ] = None,
    section_set: Annotated[
        str | None, typer.Option("--set", metavar="SET", help="ncu section set to collect as well (e.g. full).")
    ] = None,
    ncu_args: Annotated[
        str | None, typer.Option("--ncu-args", metavar="ARGS", help='More ncu arguments, e.g. "--cache-control none".')
    ] = None,
    nsys_args: Annotated[str | None, typer.Option("--nsys-args", metavar="ARGS", help="More nsys profile arguments.")] = None,
    ncu_iters: Annotated[
        int, typer.Option("--ncu-iters", min=1, metavar="N", help="Measured iterations per benchmark under ncu.")
    ] = _DEFAULT_NCU_ITERS,
    nvtx_include: Annotated[
        list[str] | None,
        typer.Option("--nvtx-include", metavar="FILTER", help="ncu NVTX include filter (repeatable; replaces the default)."),
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", min=0.1, metavar="SECONDS", help="Seconds allowed per pass.")
    ] = None,
    fail_fast: Annotated[bool, typer.Option("--fail-fast", help="Stop at the first failing pass.")] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print only errors and the final line.")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="More output: the target's own, as it runs.")
    ] = False,
    no_analyze: Annotated[
        bool, typer.Option("--no-analyze", help="Do not analyse the run at the end.")
    ] = False,
    no_checks: Annotated[
        bool, typer.Option("--no-checks", help="Skip the quick checks of nsightwrap doctor before the passes.")
    ] = False,
    label: Annotated[
        list[str] | None,
        typer.Option(
            "--label", metavar="FILE:LINE=NAME",
            help="Name the timing the script makes at FILE:LINE (a do_bench call, a Timer measurement, "
            "a start.record()) in the report, without changing the script (repeatable).",
        ),
    ] = None,
    no_capture: Annotated[
        bool,
        typer.Option(
            "--no-capture",
            help="Do not load the capture layer: only nsightwrap.bench timings and the profilers' view "
            "(docs/capture.md).",
        ),
    ] = False,
    ncu_kernel_cap: Annotated[
        int,
        typer.Option(
            "--ncu-kernel-cap", min=0, metavar="N",
            help="Profile at most N instances of each distinct kernel launch (kernel and grid/block shape) in "
            "the ncu pass (--ncu-counters-cap lowers it there) and 8N in the duration and base-clock passes, "
            "one replay each: graph replays and repeated kernels cost a few profiles, not one per launch; the "
            "launches left out carry the median of the same kernel in the report (docs/profile.md); 0: no cap.",
        ),
    ] = DEFAULT_NCU_KERNEL_CAP,
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget", min=0, metavar="SECONDS",
            help="Time for the whole profile: the clock sweep's passes are cut (and the cut said) when the "
            "plan's estimate says they do not fit.",
        ),
    ] = None,
    no_clock_sweep: Annotated[
        bool,
        typer.Option(
            "--no-clock-sweep",
            help="Skip the clock sweep (ncu twice more with each kernel's duration and SM clock only, at "
            "--clock-control none and base: the durations the analysis uses, and how each kernel's time follows "
            "the SM clock); durations are then the ncu pass's and clock elasticities a guess from its counters.",
        ),
    ] = False,
    base_pass: Annotated[
        str,
        typer.Option(
            "--base-pass", metavar="auto|always",
            help="When to run the clock sweep's base pass (ncu at --clock-control base, for each kernel's clock "
            "elasticity): auto, last and only if some benchmark's measured SM clock is more than 5% from the clock "
            "ncu ran its kernels at (below that no elasticity can move a ratio by more); always.",
        ),
    ] = "auto",
    duration_pass: Annotated[
        str,
        typer.Option(
            "--duration-pass", metavar="auto|always",
            help="When to run the clock sweep's duration pass (ncu with each kernel's duration and SM clock only, "
            "the durations the analysis uses): always (the default: the ncu pass then profiles each launch shape "
            "only --ncu-counters-cap times, which costs less than the duration pass saves); auto, after the nsys "
            "pass and only if moving every ncu duration 10% either way moves a verdict or a cause (the ncu pass "
            "then keeps --ncu-kernel-cap).",
        ),
    ] = "always",
    ncu_counters_cap: Annotated[
        int,
        typer.Option(
            "--ncu-counters-cap", min=0, metavar="N",
            help="With --duration-pass always, profile each distinct kernel launch at most N times in the ncu pass "
            "(its counters take 17 replay passes per kernel on an H200 and repeat between launches of one shape "
            "doing the same work); the duration pass times up to 8x --ncu-kernel-cap instances, each with its "
            "own duration. 0: use --ncu-kernel-cap's value.",
        ),
    ] = DEFAULT_NCU_COUNTERS_CAP,
    nsys_loop_ms: Annotated[
        float,
        typer.Option(
            "--nsys-loop-ms", min=0, metavar="MS",
            help="Under nsys, cap each do_bench and Timer autorange loop at MS ms (default 100, do_bench's own "
            "default): the trace needs each iteration, not the loop's length; 0: the loops as the script asks.",
        ),
    ] = float(NSYS_LOOP_MS),
    early_start: Annotated[
        bool,
        typer.Option(
            "--early-start/--no-early-start",
            help="Start the clock sweep's base pass as the duration pass goes, held before the script's first line "
            "and its first CUDA call, so that Python's start, ncu's and the script's imports overlap the duration "
            "pass; it goes while the analysis decides whether it is needed, and is stopped if not. Only for a Python "
            "target with the capture layer (docs/profile.md, \"Early start\"). On by default; --no-early-start "
            "starts it after the decision.",
        ),
    ] = True,
    no_gpu_metrics: Annotated[
        bool,
        typer.Option(
            "--no-gpu-metrics",
            help="Do not sample the GPU's counters in the nsys pass (--gpu-metrics-devices). Without them no "
            "benchmark of an unmodified script gets a GPU-measured SM clock, and its ratio is taken at ncu's own "
            "clock (docs/reconciliation.md).",
        ),
    ] = False,
    plain_clock: Annotated[
        bool,
        typer.Option(
            "--plain-clock/--no-plain-clock",
            help="Run the plain pass under nsys sampling the GPU's clock (GPU metrics and NVTX only, no CUDA "
            "trace), so that every loop's SM clock is measured in the plain pass itself, where its timing was "
            "made. On by default where nsys can sample GPU metrics (and not with --no-gpu-metrics); "
            "--no-plain-clock runs the plain pass bare, and a loop's clock then comes from the nsys pass where "
            "that ran it at the plain pass's pace (docs/profile.md, \"The plain pass's own clock\").",
        ),
    ] = True,
    shard: Annotated[
        str | None,
        typer.Option("--shard", metavar="I/N", help="Time only shard I (0 to N-1) of the benchmarks (docs/cluster.md)."),
    ] = None,
    shard_by: Annotated[
        str, typer.Option("--shard-by", metavar="index|hash", help="Deal benchmarks to shards by index (round robin) or hash (sha1).")
    ] = "index",
    gpus: Annotated[
        str | None,
        typer.Option("--gpus", metavar="all|I,J,..", help="One shard per GPU, in parallel, merged into one run."),
    ] = None,
    replicate: Annotated[
        bool, typer.Option("--replicate", help="With --gpus: every GPU runs every benchmark (GPU-to-GPU variance).")
    ] = False,
    allow_failed_shards: Annotated[
        bool, typer.Option("--allow-failed-shards", help="With --gpus: exit 0 when some shards complete.")
    ] = False,
    device_file: Annotated[
        Path | None,
        typer.Option("--device-file", metavar="FILE", help="Roofs to hold the run against, copied to RUN_DIR/env/device.json "
                     "(default: the GPU's cached one from nsightwrap device, if any)."),
    ] = None,
    roofline_counters: Annotated[
        bool,
        typer.Option("--roofline-counters/--no-roofline-counters",
                     help="Count tensor-core FLOPs per kernel with ncu's tensor-op counters, for the roofline of "
                     "kernels without bench(flops=). On by default: they cost about 40% more ncu replay passes per "
                     "kernel (17 instead of 12 on an H200). --no-roofline-counters drops them; tensor kernels then "
                     "get no FLOP count and are left off the roofline."),
    ] = True,
) -> None:
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    out = Console(highlight=False, soft_wrap=True)
    display = _Display(err, quiet=quiet, verbose=verbose)
    target_tokens = len(target)
    head = 2 if target and target[0] == "-m" else 1
    if len(target) > head and target[head] == "--":
        # `nsightwrap profile bench.py -- --quick`: the "--" separates nsightwrap's arguments
        # from the target's, it is not one of them.
        target = [*target[:head], *target[head + 1 :]]
    elif (note := _own_options_note(ctx, target, head)) and not quiet:
        err.print(f"[bold]note:[/] {escape(note)}", highlight=False)
    names, explicit = _parse_passes(passes)
    extra_metrics = tuple(m.strip() for m in (metrics or "").split(",") if m.strip())
    # The tensor-op counters are in the default set; --no-roofline-counters takes them out (unless
    # --metrics names one).
    base_metrics = DEFAULT_NCU_METRICS if roofline_counters else tuple(
        m for m in DEFAULT_NCU_METRICS if m not in ROOFLINE_NCU_METRICS or m in extra_metrics
    )
    s = Settings(
        target=tuple(target), argv=tuple(target_argv(target)), passes=names, explicit_passes=explicit,
        timeout_s=timeout, fail_fast=fail_fast, ncu_iters=ncu_iters,
        nvtx_filter=tuple(
            nvtx_include_filter(nvtx_include) if nvtx_include
            else (ncu_iteration_filter() if no_capture else ncu_default_filter())
        ),
        capture=not no_capture, labels=parse_labels(label or []),
        metrics=base_metrics + tuple(m for m in extra_metrics if m not in base_metrics),
        section_set=section_set, ncu_extra=tuple(split_args(ncu_args, "--ncu-args")),
        nsys_extra=tuple(split_args(nsys_args, "--nsys-args")), quiet=quiet, verbose=verbose,
        shard=_shard_spec(shard, shard_by, replicate, gpus), clock_sweep=not no_clock_sweep,
        gpu_metrics=not no_gpu_metrics, ncu_kernel_cap=ncu_kernel_cap, budget_s=budget,
        base_pass=_sweep_choice("--base-pass", base_pass),
        duration_pass=_sweep_choice("--duration-pass", duration_pass), nsys_loop_ms=nsys_loop_ms,
        ncu_counters_cap=ncu_counters_cap, early_start=early_start, plain_clock=plain_clock,
    )  # fmt: skip
    if gpus is not None:
        g = GpuRun(gpus, s.target, target_tokens, output, replicate, shard_by, allow_failed_shards, quiet,
                   no_analyze, target_label(s.target))  # fmt: skip
        raise typer.Exit(run_on_gpus(g, invoked, err, out, lambda root: _analyze(root, out, err, show=not quiet)))
    if device_file is not None:  # refused before any pass runs, not after
        read_device_file(device_file)
    refuse_where_nothing_can_run(s, ncu, nsys)
    tools, skipped = find_tools(s, ncu, nsys, display)
    run_dir = output or default_run_dir(target_label(s.target))
    layout = create_run_dir(run_dir, s.passes)
    if not no_checks:
        preflight(display.warn)  # nsightwrap doctor's quick checks: only what is not ok is shown
    readers = _readers()
    code, status, problems, interrupted = run_passes(
        s, layout, tools, skipped, display, sweep_check=_sweep_check(readers),
        prefetch=None if no_analyze else _prefetch(readers), coverage_check=_coverage_check(readers),
    )  # fmt: skip
    if code == EXIT_INTERRUPTED:
        for r in readers:
            r.settle(10.0)
    place_device_file(layout.root, device_file, err, quiet=quiet)
    for p in problems:
        _print_problem(err, p)
    if interrupted:
        err.print(
            "[bold red]interrupted[/]: the passes were stopped; what they wrote is kept", highlight=False
        )
    if code != EXIT_INTERRUPTED and not no_analyze and not any(p.disk_full for p in problems):
        # A pass's failure (3) or timeout (4) stays the exit code; the analysis can only add one.
        # After a full disk it is not run: what it would find missing is what did not fit.
        analysis_code = _analyze(layout.root, out, err, show=not quiet, readers=readers)
        if code == EXIT_OK and analysis_code != EXIT_OK:
            # The manifest says what the process returns, not only how the passes ended.
            record_exit(layout, analysis_code, ANALYSIS_STATUS.get(analysis_code, "analysis-failed"))
        code = code or analysis_code
        if analysis_code == EXIT_NOTHING_MEASURED:
            status = f"{status}, nothing measured"
    out.print(
        escape(
            f"run directory: {run_dir} ({status}); reports: nsightwrap report {shlex.quote(str(run_dir))}"
        ),
        highlight=False,
    )
    raise typer.Exit(code)
