"""``nsightwrap profile --gpus ...``: one shard per GPU, in parallel, with a progress row per GPU,
then one merged run directory (the processes and the merge are nsightwrap.run.shards / merge).
"""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from nsightwrap.core.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_TIMEOUT, EXIT_TOOL_FAILED, UsageError
from nsightwrap.run.merge import LOGS_DIR, SHARDS_DIR, merge_in_place
from nsightwrap.run.profiling import sigterm_as_interrupt
from nsightwrap.run.rundir import default_run_dir
from nsightwrap.run.shards import (
    CUDA_VISIBLE_DEVICES,
    GpuSlot,
    ShardJob,
    ShardOutcome,
    ShardState,
    resolve_gpus,
    run_shards,
)
from nsightwrap.run.tools import find_optional

#: Options of the parent run that its shards must not get (they get their own instead).
_DROP_WITH_VALUE = ("--gpus", "-o", "--output", "--shard", "--shard-by")
_DROP_FLAGS = ("--replicate", "--allow-failed-shards", "--no-analyze")


def shard_options(invoked: Sequence[str], target_tokens: int) -> tuple[list[str], list[str]]:
    """(root options, profile options) of the command line ``invoked``, without the target's
    ``target_tokens`` last words and without the options each shard gets on its own."""
    words = list(invoked)
    at = words.index("profile")
    root, opts = words[:at], words[at + 1 : len(words) - target_tokens]
    if opts and opts[-1] == "--":
        opts = opts[:-1]
    kept: list[str] = []
    skip = False
    for w in opts:
        if skip:
            skip = False
            continue
        name = w.split("=", 1)[0]
        if name in _DROP_WITH_VALUE:
            skip = "=" not in w
            continue
        if w in _DROP_FLAGS or (w.startswith("-o") and not w.startswith("--") and len(w) > 2):
            continue
        kept.append(w)
    return root, kept


@dataclass(frozen=True)
class GpuRun:
    """``profile --gpus``, resolved from the command line."""

    gpus: str
    target: tuple[str, ...]  # as nsightwrap passes it on (no leading "--")
    target_tokens: int  # words of the command line that were the target (a "--" included)
    output: Path | None
    replicate: bool
    shard_by: str
    allow_failed: bool
    quiet: bool
    no_analyze: bool
    label: str  # stem of the default run directory name


class _GpuDisplay:
    """A progress row per shard (its GPU, the pass running, kernels profiled, time), or one line
    per finished shard when stderr is not a terminal."""

    def __init__(self, console: Console, jobs: Sequence[ShardJob], *, quiet: bool) -> None:
        self.console = console
        self.quiet = quiet
        self.progress: Progress | None = None
        self.tasks: dict[int, TaskID] = {}
        if not quiet and console.is_terminal:
            self.progress = Progress(
                SpinnerColumn(), TextColumn("[bold]{task.description}"), TimeElapsedColumn(),
                TextColumn("{task.fields[state]}"), console=console,
            )  # fmt: skip
            for job in jobs:
                desc = f"shard {job.index}/{job.count} on {escape(job.gpu.label)}"
                self.tasks[job.index] = self.progress.add_task(desc, state="starting")

    def __enter__(self) -> _GpuDisplay:
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.progress is not None:
            self.progress.stop()

    def state(self, job: ShardJob, st: ShardState, elapsed: float) -> None:
        if self.progress is None:
            return
        what = "finishing" if st.done else (f"{st.pass_name} pass" if st.pass_name else "starting")
        if st.kernels:
            what += f", {st.kernels} kernels profiled"
        self.progress.update(self.tasks[job.index], state=escape(what))

    def done(self, o: ShardOutcome) -> None:
        mark = "[green]complete[/]" if o.status == "complete" else f"[red]{o.status}[/]"
        # Why a shard failed is told once, at the end, with the others.
        line = f"shard {o.job.index}/{o.job.count} on {escape(o.job.gpu.label)}: {mark} ({o.wall_s:.1f} s)"
        if self.progress is not None:
            self.progress.update(self.tasks[o.job.index], state=line.split(": ", 1)[1], completed=1, total=1)
        elif not self.quiet or o.status != "complete":
            self.console.print(line, highlight=False)


def _jobs(g: GpuRun, slots: Sequence[GpuSlot], root: Path, invoked: Sequence[str]) -> list[ShardJob]:
    root_opts, opts = shard_options(invoked, g.target_tokens)
    n = len(slots)
    jobs = []
    for i, slot in enumerate(slots):
        run_dir = root / SHARDS_DIR / str(i)
        tmp = root / "tmp" / str(i)
        tmp.mkdir(parents=True)
        argv = [
            sys.executable, "-m", "nsightwrap", *root_opts, "profile", *opts,
            "--shard", f"{i}/{n}", "--shard-by", g.shard_by, *(["--replicate"] if g.replicate else []),
            # Shards' plain passes run at once, and nsys samples one GPU's metrics for one
            # session at a time: their clocks come from their nsys passes.
            *(["--no-plain-clock"] if n > 1 else []),
            "-o", str(run_dir), "--no-analyze", "--", *g.target,
        ]  # fmt: skip
        # Its own GPU, and its own TMPDIR: ncu serializes profiling on a host through
        # $TMPDIR/nsight-compute-lock, so shards sharing /tmp would profile one at a time.
        env = {CUDA_VISIBLE_DEVICES: slot.visible, "TMPDIR": str(tmp)}
        logs = root / LOGS_DIR
        jobs.append(
            ShardJob(i, n, slot, tuple(argv), env, run_dir, logs / f"shard-{i}.stdout.log",
                     logs / f"shard-{i}.stderr.log", str(Path.cwd()))  # fmt: skip
        )
    return jobs


def run_on_gpus(
    g: GpuRun, invoked: Sequence[str], err: Console, out: Console, analyze: Callable[[Path], int]
) -> int:
    """Run ``g``'s shards, merge them and (unless ``--no-analyze``) analyse; the exit code."""
    smi = find_optional("nvidia-smi")
    slots = resolve_gpus(g.gpus, smi.path if smi else None)
    root = g.output or default_run_dir(g.label)
    if root.exists() or root.is_symlink():
        raise UsageError(
            f"run directory {root} exists already; nsightwrap never overwrites a run",
            hint="give a new -o/--output path, or remove the old run",
        )
    try:
        root.mkdir(parents=True)
    except OSError as exc:
        raise UsageError(f"cannot create run directory {root}: {exc.strerror}", hint="choose another -o path") from None
    jobs = _jobs(g, slots, root.resolve(), invoked)
    if not g.quiet:
        what = "every benchmark on every GPU" if g.replicate else f"{len(jobs)} shards, one per GPU"
        err.print(escape(f"profiling {what}: {', '.join(s.label for s in slots)}"), highlight=False)
    # SIGTERM (a cancelled CI job) stops the shards as Ctrl-C does.
    with sigterm_as_interrupt(), _GpuDisplay(err, jobs, quiet=g.quiet) as display:
        outcomes, interrupted = run_shards(jobs, on_state=display.state, on_done=display.done)
    shutil.rmtree(root / "tmp", ignore_errors=True)
    record: dict[int, dict[str, Any]] = {
        o.job.index: {
            "status": o.status, "returncode": o.returncode, "message": o.message, "wall_s": o.wall_s,
            "gpu": {"name": o.job.gpu.name, "uuid": o.job.gpu.uuid, "cuda_visible_devices": o.job.gpu.visible},
        }
        for o in outcomes
    }  # fmt: skip
    extra = {"command": ["nsightwrap", *invoked], "replicate": g.replicate}
    doc = merge_in_place(root, record, len(jobs), interrupted=interrupted, extra=extra)
    if doc.get("merge_error"):
        err.print(f"[bold red]error:[/] merge: {escape(str(doc['merge_error']))}", highlight=False)
    failed = [e for e in doc["shards"] if e["status"] != "complete"]
    for e in failed:
        gpu = (e.get("gpu") or {}).get("uuid") or (e.get("gpu") or {}).get("cuda_visible_devices")
        err.print(
            escape(f"error: shard {e['index']}/{doc['count']} (GPU {gpu}) {e['status']}: {e.get('message')}"),
            highlight=False,
        )
    code = int(doc["exit_code"])
    if g.allow_failed and code in (EXIT_TOOL_FAILED, EXIT_TIMEOUT) and len(failed) < len(jobs):
        code = EXIT_OK  # --allow-failed-shards: the merged run says which shards failed
    if not interrupted and not g.no_analyze and len(failed) < len(jobs):
        analysis_code = analyze(root)  # shown whatever the shards' exit code
        code = code or analysis_code
    if interrupted:
        code = EXIT_INTERRUPTED
        err.print("[bold red]interrupted[/]: every shard was stopped; what they wrote is kept", highlight=False)
    out.print(
        escape(
            f"run directory: {root} ({doc['status']}, {len(jobs) - len(failed)} of {len(jobs)} shards complete); "
            f"reports: nsightwrap report {shlex.quote(str(root))}"
        ),
        highlight=False,
    )
    return code
