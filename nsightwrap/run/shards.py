"""Shards of a ``profile`` run: what a shard's manifest records, the GPUs of this host, and
``--gpus``: one ``nsightwrap profile --shard I/N`` process per GPU, in parallel.

Each shard is a complete ``nsightwrap profile`` run of its own (the same command a Slurm array
task runs), started by this module as a separate process pinned to one GPU with
``CUDA_VISIBLE_DEVICES``, and with its own ``TMPDIR``: ncu serializes profiling on a host through
``$TMPDIR/nsight-compute-lock``, so shards sharing one temporary directory would profile one
after the other. A shard that fails fails alone; the caller merges what the shards left
(nsightwrap.run.merge).
"""

from __future__ import annotations

import os
import re
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsightwrap.core.contract import ENV_SHARD, ENV_SHARD_BY, PASS_NCU, PASSES, SIDECAR_GLOB
from nsightwrap.core.errors import EXIT_INTERRUPTED, EXIT_OK, EXIT_TIMEOUT, ToolNotFound, UsageError
from nsightwrap.core.jsonfile import read_json_object
from nsightwrap.core.rundir import MANIFEST_NAME, MODE_REPLICATE, MODE_SHARD, RunLayout
from nsightwrap.core.shard import LOG_GLOB, SHARD_BY, parse_shard, read_log
from nsightwrap.run.launch import Background, probe

CUDA_VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"


# --------------------------------------------------------------------------- what a shard is


@dataclass(frozen=True)
class ShardSpec:
    """``--shard I/N`` (``mode`` shard: run I's share) or ``--replicate`` (run everything, as
    replica I of N, to compare GPUs)."""

    index: int
    count: int
    by: str = SHARD_BY[0]
    mode: str = MODE_SHARD

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    def target_env(self) -> dict[str, str]:
        """The variables every pass gives the target (none for a replica: it runs everything)."""
        if self.mode == MODE_REPLICATE:
            return {}
        return {ENV_SHARD: self.label, ENV_SHARD_BY: self.by}

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "index": self.index, "count": self.count, "by": self.by, "spec": self.label}


def shard_spec(text: str | None, by: str, replicate: bool) -> ShardSpec | None:
    """The ShardSpec of ``--shard TEXT [--shard-by BY] [--replicate]`` (None without ``--shard``)."""
    if text is None:
        return None
    s = parse_shard(text, by)
    return ShardSpec(s.index, s.count, s.by, MODE_REPLICATE if replicate else MODE_SHARD)


@dataclass(frozen=True)
class Dealt:
    """What the processes of one pass dealt: keys in first-seen order with their position and
    whether this shard owns them."""

    positions: dict[str, int] = field(default_factory=dict)
    mine: tuple[str, ...] = ()
    logs: int = 0

    @property
    def seen(self) -> int:
        return len(self.positions)


def read_dealt(pass_dir: Path) -> Dealt:
    """The dealing logs (``shard-<pid>.jsonl``) of one pass directory, every process pooled."""
    positions: dict[str, int] = {}
    mine: dict[str, None] = {}
    logs = sorted(pass_dir.glob(LOG_GLOB)) if pass_dir.is_dir() else []
    for path in logs:
        _, entries = read_log(path)
        for e in entries:
            key = e["key"]
            positions.setdefault(key, int(e.get("position", len(positions))))
            if e.get("mine"):
                mine[key] = None
    return Dealt(positions, tuple(mine), len(logs))


def owns_nothing(pass_dir: Path) -> bool:
    """True when the target dealt benchmarks in this pass and none of them to this shard (so an
    ncu pass that profiled nothing did what it should)."""
    d = read_dealt(pass_dir)
    return d.logs > 0 and d.seen > 0 and not d.mine


def _sidecar_device(layout: RunLayout) -> Mapping[str, Any] | None:
    for path in sorted(layout.pass_dir("plain").glob(SIDECAR_GLOB)):
        try:
            dev = read_json_object(path, "timer sidecar").get("device")
        except Exception:  # noqa: BLE001 - a damaged sidecar is the analysis' to report
            continue
        if isinstance(dev, Mapping):
            return dev
    return None


def shard_record(layout: RunLayout, spec: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest's ``shard`` block: the spec, where it ran (host, GPU) and what it was dealt.

    ``benchmarks`` lists the keys this shard owns, in the order the script reached them (from the
    first pass that dealt any); ``consistent`` is False when the passes dealt differently (the
    script reached its benchmarks in another order in another process)."""
    dev = _sidecar_device(layout)
    per_pass = {p: read_dealt(layout.pass_dir(p)) for p in PASSES}
    dealing = [(p, d) for p, d in per_pass.items() if d.logs]
    first = dealing[0][1] if dealing else Dealt()
    consistent = all(set(d.mine) == set(first.mine) for _, d in dealing)
    rec: dict[str, Any] = {
        **spec,
        "host": socket.gethostname(),
        CUDA_VISIBLE_DEVICES.lower(): os.environ.get(CUDA_VISIBLE_DEVICES),
        "gpu": {k: dev.get(k) for k in ("name", "uuid", "index")} if dev else None,
        "dealt": first.seen if dealing else None,
        "benchmarks": list(first.mine) if dealing else None,
        "consistent": consistent,
    }
    if not consistent:
        counts = ", ".join(f"{p} {len(d.mine)}" for p, d in dealing)
        rec["message"] = (
            f"the passes dealt different benchmarks to this shard ({counts}): the script reaches its "
            "benchmarks in a different order from one run to the next; profile with --shard-by hash"
        )
    return rec


# --------------------------------------------------------------------------- GPUs of this host


@dataclass(frozen=True)
class GpuSlot:
    """One GPU a shard runs on: ``visible`` is what its ``CUDA_VISIBLE_DEVICES`` is set to."""

    visible: str
    index: int | None = None  # nvidia-smi's index, when known
    name: str | None = None
    uuid: str | None = None

    @property
    def label(self) -> str:
        head = f"GPU {self.index}" if self.index is not None else f"GPU {self.visible}"
        # The UUID's last digits tell the GPUs of one box apart (its first ones often do not).
        return f"{head} ({self.uuid[:4]}…{self.uuid[-8:]})" if self.uuid and len(self.uuid) > 16 else head


_SMI_LINE = re.compile(r"^GPU (\d+): (.+?) \(UUID: ([^)]+)\)\s*$")


def parse_gpu_list(text: str) -> list[GpuSlot]:
    """``nvidia-smi -L`` output -> one GpuSlot per GPU (MIG lines are left out), pinned by UUID:
    nvidia-smi numbers GPUs in PCI order, CUDA by default fastest first, so an index could name
    another GPU inside the process than in nvidia-smi; a UUID cannot."""
    out = []
    for line in text.splitlines():
        m = _SMI_LINE.match(line.strip())
        if m:
            out.append(GpuSlot(visible=m.group(3), index=int(m.group(1)), name=m.group(2), uuid=m.group(3)))
    return out


def list_gpus(nvidia_smi: str | None) -> list[GpuSlot]:
    """Every GPU ``nvidia-smi -L`` lists; ToolNotFound when it cannot be asked."""
    if nvidia_smi is None:
        raise ToolNotFound(
            "--gpus: cannot list the GPUs: nvidia-smi not found", hint="name them instead: --gpus 0,1,2,3"
        )
    p = probe([nvidia_smi, "-L"], timeout_s=60)
    gpus = parse_gpu_list(p.stdout) if p.ok else []
    if not gpus:
        why = (p.error or p.stderr.strip() or p.stdout.strip() or f"exit code {p.returncode}").splitlines()
        raise ToolNotFound(
            f"--gpus: nvidia-smi -L listed no GPU ({why[-1] if why else 'no output'})",
            hint="check the driver with nvidia-smi, or name the GPUs: --gpus 0,1",
        )
    return gpus


def resolve_gpus(text: str, nvidia_smi: str | None, environ: Mapping[str, str] | None = None) -> list[GpuSlot]:
    """The GPUs of ``--gpus all|I,J,...|UUID,...``.

    When this process already has ``CUDA_VISIBLE_DEVICES`` (a Slurm allocation, a container),
    ``all`` means those devices and an index is a position in that list, as in CUDA; otherwise
    indices are nvidia-smi's and each shard is pinned by the GPU's UUID."""
    env = os.environ if environ is None else environ
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise UsageError("--gpus needs a list of GPUs", hint="e.g. --gpus 0,1,2,3 or --gpus all")
    inherited = [d.strip() for d in env.get(CUDA_VISIBLE_DEVICES, "").split(",") if d.strip()]
    known: list[GpuSlot] = []
    try:
        known = list_gpus(nvidia_smi) if nvidia_smi else []
    except ToolNotFound:
        if items == ["all"] and not inherited:
            raise
    by_uuid = {g.uuid: g for g in known if g.uuid}
    by_index = {g.index: g for g in known if g.index is not None}

    def describe(visible: str) -> GpuSlot:
        if visible in by_uuid:
            return by_uuid[visible]
        g = by_index.get(int(visible)) if visible.isdigit() and not inherited else None
        return GpuSlot(visible, g.index if g else None, g.name if g else None, g.uuid if g else None)

    if inherited:
        pool = inherited
        where = f"CUDA_VISIBLE_DEVICES={','.join(inherited)}"
    else:
        if not known and items == ["all"]:
            list_gpus(nvidia_smi)  # raises the reason
        pool = [g.visible for g in known]
        where = "nvidia-smi -L"
    if items == ["all"]:
        chosen = [describe(v) for v in pool]
    else:
        chosen = []
        for item in items:
            if item.lower().startswith(("gpu-", "mig-")):
                chosen.append(describe(item))
            elif item.isdigit():
                i = int(item)
                if inherited or known:
                    positions = range(len(pool)) if inherited else [g.index for g in known]
                    if i not in positions:
                        have = ", ".join(str(p) for p in positions)
                        raise UsageError(f"--gpus: there is no GPU {i} ({where} has {have})", hint="see nvidia-smi -L")
                    chosen.append(describe(pool[i]) if inherited else by_index[i])
                else:
                    chosen.append(GpuSlot(item, i))  # no nvidia-smi: trust the user's index
            else:
                raise UsageError(f"--gpus: {item!r} is not a GPU index or UUID", hint="e.g. --gpus 0,1 or --gpus all")
    seen: set[str] = set()
    for g in chosen:
        if g.visible in seen:
            raise UsageError(f"--gpus names {g.label} twice", hint="give each GPU once")
        seen.add(g.visible)
    return chosen


# --------------------------------------------------------------------------- running shards


@dataclass(frozen=True)
class ShardJob:
    """One shard's ``nsightwrap profile`` process: its argv, the environment it adds, its logs."""

    index: int
    count: int
    gpu: GpuSlot
    argv: tuple[str, ...]
    env: Mapping[str, str]
    run_dir: Path
    stdout: Path
    stderr: Path
    cwd: str


@dataclass(frozen=True)
class ShardState:
    """A running shard as its run directory shows it: the pass now running, kernels so far."""

    pass_name: str | None = None
    kernels: int = 0
    done: bool = False


@dataclass(frozen=True)
class ShardOutcome:
    """How one shard ended: ``complete``, ``failed``, ``timeout`` or ``interrupted``."""

    job: ShardJob
    status: str
    returncode: int | None
    wall_s: float
    message: str | None = None


_PROF_LINE = b'==PROF== Profiling "'


class _Watch:
    """Reads a shard's run directory as it grows: which pass runs, how many kernels ncu profiled
    (its ``==PROF== Profiling`` lines, read incrementally)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.offset = 0
        self.kernels = 0
        self.tail = b""

    def state(self) -> ShardState:
        if (self.run_dir / MANIFEST_NAME).is_file():
            return ShardState(None, self.kernels, True)
        running = None
        for p in PASSES:  # each pass opens its log when it starts; the last one present runs
            if (self.run_dir / p / "stdout.log").is_file():
                running = p
        log = self.run_dir / PASS_NCU / "stdout.log"
        if log.is_file():
            try:
                with log.open("rb") as f:
                    f.seek(self.offset)
                    chunk = f.read()
            except OSError:
                chunk = b""
            self.offset += len(chunk)
            data = self.tail + chunk
            lines = data.split(b"\n")
            self.tail = lines.pop()  # an unfinished line waits for the next read
            self.kernels += sum(1 for ln in lines if ln.startswith(_PROF_LINE))
        return ShardState(running, self.kernels, False)


def failure_message(job: ShardJob, returncode: int | None) -> str:
    """Why a shard failed, in one line: the shard's own error lines, else its exit code."""
    errors: list[str] = []
    if job.stderr.is_file():
        for line in job.stderr.read_text(errors="replace").splitlines():
            if line.startswith(("error:", "interrupted")):
                errors.append(line.removeprefix("error:").strip())
    if errors:
        return "; ".join(errors[:2]) + (f" (and {len(errors) - 2} more)" if len(errors) > 2 else "")
    if returncode is not None and returncode < 0:
        return f"nsightwrap profile was killed by signal {-returncode}"
    return f"nsightwrap profile exited with code {returncode}; see {job.stderr}"


def _status(returncode: int | None) -> str:
    if returncode == EXIT_OK:
        return "complete"
    if returncode == EXIT_INTERRUPTED:
        return "interrupted"
    if returncode == EXIT_TIMEOUT:
        return "timeout"
    return "failed"


#: Seconds a shard's nsightwrap gets after SIGINT and after SIGTERM: it stops its own pass
#: first (3 + 2 s) and writes its manifest.
SHARD_GRACE_S = (8.0, 4.0)


def run_shards(
    jobs: Sequence[ShardJob],
    *,
    on_state: Callable[[ShardJob, ShardState, float], None] | None = None,
    on_done: Callable[[ShardOutcome], None] | None = None,
    poll_s: float = 0.25,
) -> tuple[list[ShardOutcome], bool]:
    """Start every shard at once and wait for all of them; (outcomes in job order, interrupted).

    A shard that fails does not stop the others. Ctrl-C (KeyboardInterrupt here) stops every
    shard still running (SIGINT to its process group: it writes its manifest) and returns."""
    for job in jobs:
        job.stdout.parent.mkdir(parents=True, exist_ok=True)
    procs: dict[int, Background] = {}
    started: dict[int, float] = {}
    outcomes: dict[int, ShardOutcome] = {}
    watches = {job.index: _Watch(job.run_dir) for job in jobs}

    def finish(job: ShardJob, rc: int | None, message: str | None = None) -> None:
        status = _status(rc) if message is None else "failed"
        if status != "complete" and message is None:
            message = failure_message(job, rc)
        out = ShardOutcome(job, status, rc, round(time.monotonic() - started[job.index], 3), message)
        outcomes[job.index] = out
        if on_done is not None:
            on_done(out)

    interrupted = False
    try:
        for job in jobs:
            bg = Background(job.argv, job.stdout, job.stderr, env=job.env, cwd=job.cwd)
            started[job.index] = time.monotonic()
            if bg.start():
                procs[job.index] = bg
            else:
                finish(job, None, f"cannot start {job.argv[0]}: {bg.error}")
        pending = [j for j in jobs if j.index in procs]
        while pending:
            for job in list(pending):
                proc = procs[job.index].proc
                assert proc is not None
                rc = proc.poll()
                if rc is not None:
                    procs[job.index].stop()  # reaps it and anything it left in its group
                    pending.remove(job)
                    finish(job, rc)
                elif on_state is not None:
                    on_state(job, watches[job.index].state(), time.monotonic() - started[job.index])
            if pending:
                time.sleep(poll_s)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        for job in jobs:
            if job.index in procs and job.index not in outcomes:
                rc = procs[job.index].stop(grace=SHARD_GRACE_S)
                finish(job, EXIT_INTERRUPTED if interrupted else rc)
    return [outcomes[j.index] for j in jobs], interrupted
