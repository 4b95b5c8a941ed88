"""``nsightwrap merge``: shard run directories made anywhere -> one merged run directory.

Layout of a merged run (docs/cluster.md)::

    MERGED/
      manifest.json      "format": "nsightwrap-merged", "version": 1 (written last, atomically)
      shards/<i>/        shard i's complete run directory, every raw file kept as it was
      logs/shard-<i>.{stdout,stderr}.log   (``--gpus`` only) what each shard's nsightwrap printed

Before anything is written the shards are checked: one split (the same N, mode and dealing
rule), every shard 0..N-1 present once, one GPU model and one nsightwrap version (unless
``allow_mixed``), and, from each shard's dealing logs, every benchmark owned by exactly one
shard. Each refusal is one UsageError line (exit 2).

The merged manifest is read back by ``nsightwrap.core.rundir`` (``read_merged``), which keeps
its format history.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nsightwrap import __version__
from nsightwrap.core.contract import PASS_PLAIN, PASSES, SIDECAR_GLOB
from nsightwrap.core.errors import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TIMEOUT,
    EXIT_TOOL_FAILED,
    InputNotFound,
    NsightwrapError,
    ReportParseError,
    UsageError,
)
from nsightwrap.core.jsonfile import read_json_object, write_json_atomic
from nsightwrap.core.rundir import (
    MANIFEST_FORMAT,
    MANIFEST_NAME,
    MERGED_FORMAT,
    MERGED_VERSION,
    MODE_REPLICATE,
    MODE_SHARD,
    RunLayout,
    read_manifest,
    read_merged,
    shard_dirs,
)
from nsightwrap.core.shard import hash_slot
from nsightwrap.run.shards import Dealt, read_dealt

SHARDS_DIR = "shards"
LOGS_DIR = "logs"


# --------------------------------------------------------------------------- reading shards


@dataclass(frozen=True)
class ShardDir:
    """One shard run directory, read for merging."""

    path: Path
    manifest: Mapping[str, Any]
    mode: str
    index: int
    count: int
    by: str
    dealt: Dealt
    gpu_name: str | None
    gpu_uuid: str | None
    version: str | None

    @property
    def status(self) -> str:
        return str(self.manifest.get("status") or "failed")

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"


def _norm_uuid(u: Any) -> str | None:
    # torch writes "5c1c2662-...", nvidia-smi "GPU-5c1c2662-...": one spelling, nvidia-smi's.
    if not u:
        return None
    s = str(u).strip()
    return s if s.upper().startswith(("GPU-", "MIG-")) else f"GPU-{s}"


def _first_dealt(layout: RunLayout) -> Dealt:
    for p in PASSES:
        d = read_dealt(layout.pass_dir(p))
        if d.logs:
            return d
    return Dealt()


def _timed(layout: RunLayout) -> Dealt:
    """What a replica timed (it deals nothing): the benchmarks of its sidecars, in their order."""
    names: dict[str, int] = {}
    for path in sorted(layout.pass_dir(PASS_PLAIN).glob(SIDECAR_GLOB)):
        try:
            benches = read_json_object(path, "timer sidecar").get("benchmarks") or []
        except NsightwrapError:
            continue
        for b in benches:
            if isinstance(b, Mapping) and isinstance(b.get("name"), str):
                names.setdefault(b["name"], len(names))
    return Dealt(names, tuple(names), 0)


def read_shard(path: Path) -> list[ShardDir]:
    """A shard run directory (or every shard of a merged one); UsageError when it is not one."""
    path = Path(path)
    if not path.is_dir():
        raise InputNotFound(f"{path}: no such run directory", hint="give the run directories of the shards")
    merged = read_merged(path)
    if merged is not None:
        return [s for _, d in shard_dirs(path) for s in read_shard(d)]
    m = read_manifest(path)
    rec = m.get("shard")
    if not isinstance(rec, Mapping):
        raise UsageError(
            f"{path} is a whole run, not a shard (it was profiled without --shard)",
            hint="merge the runs of nsightwrap profile --shard I/N ...",
        )
    gpu: Mapping[str, Any] = rec["gpu"] if isinstance(rec.get("gpu"), Mapping) else {}
    mgpu: Mapping[str, Any] = m["gpu"] if isinstance(m.get("gpu"), Mapping) else {}
    uuid = _norm_uuid(gpu.get("uuid"))
    if uuid is None:
        # No timer ran: the GPU the shard was pinned to, when nvidia-smi listed it.
        vis = rec.get("cuda_visible_devices")
        for g in mgpu.get("gpus") or []:
            if isinstance(g, Mapping) and vis and g.get("uuid") == vis:
                uuid = _norm_uuid(vis)
    name = gpu.get("name") or mgpu.get("name")
    try:
        index, count = int(rec["index"]), int(rec["count"])
    except (KeyError, TypeError, ValueError):
        raise ReportParseError(f"{path}/{MANIFEST_NAME}: field 'shard' has no index/count") from None
    return [
        ShardDir(
            path=path, manifest=m, mode=str(rec.get("mode") or MODE_SHARD), index=index, count=count,
            by=str(rec.get("by") or "index"),
            dealt=_timed(RunLayout(path)) if rec.get("mode") == MODE_REPLICATE else _first_dealt(RunLayout(path)),
            gpu_name=str(name) if name else None, gpu_uuid=uuid,
            version=str(m.get("nsightwrap_version")) if m.get("nsightwrap_version") else None,
        )  # fmt: skip
    ]


# --------------------------------------------------------------------------- checks


@dataclass(frozen=True)
class Plan:
    """The checked merge: shards by index, the benchmarks in the script's order."""

    mode: str
    count: int
    by: str
    shards: tuple[ShardDir, ...]
    order: tuple[str, ...]
    owner: Mapping[str, int] = field(default_factory=dict)  # key -> shard index (shard mode)
    lost: tuple[str, ...] = ()  # keys owned by a shard that failed before it timed them
    missing: tuple[int, ...] = ()  # shard indices with no run directory (allowed only for --gpus)


def _names(paths: Sequence[Path]) -> str:
    return ", ".join(str(p) for p in paths)


def plan_merge(
    shards: Sequence[ShardDir], *, allow_mixed: bool = False, allow_missing: Sequence[int] = ()
) -> Plan:
    """Check that ``shards`` make one whole run; raise UsageError naming the first problem.

    ``allow_missing``: shard indices known to have failed without a run directory (``--gpus``)."""
    if not shards and not allow_missing:
        raise UsageError("nothing to merge", hint="give the run directories of the shards")
    splits = {(s.mode, s.count, s.by) for s in shards}
    if len(splits) > 1:
        desc = "; ".join(f"{s.path} is {s.mode} {s.label} by {s.by}" for s in shards)
        raise UsageError(f"the runs are not shards of one split ({desc})", hint="merge the shards of one --shard I/N run")
    mode, count, by = next(iter(splits)) if splits else (MODE_SHARD, len(allow_missing), "index")
    by_index: dict[int, list[ShardDir]] = {}
    for s in shards:
        by_index.setdefault(s.index, []).append(s)
    twice = {i: ss for i, ss in by_index.items() if len(ss) > 1}
    if twice:
        i, ss = sorted(twice.items())[0]
        raise UsageError(
            f"overlap: shard {i}/{count} is given {len(ss)} times ({_names([s.path for s in ss])})",
            hint="give each shard once",
        )
    missing = sorted(set(range(count)) - set(by_index) - set(allow_missing))
    if missing:
        raise UsageError(
            f"missing shard(s) {', '.join(map(str, missing))} of {count}: have {', '.join(map(str, sorted(by_index)))}",
            hint="give every shard's run directory (or profile the missing ones with --shard I/N)",
        )
    if not allow_mixed:
        for what, get in (("GPU models", lambda s: s.gpu_name), ("nsightwrap versions", lambda s: s.version)):
            seen: dict[str, list[Path]] = {}
            for s in shards:
                if get(s):
                    seen.setdefault(str(get(s)), []).append(s.path)
            if len(seen) > 1:
                desc = "; ".join(f"{k} in {_names(v)}" for k, v in sorted(seen.items()))
                raise UsageError(
                    f"the shards ran with different {what} ({desc}): their timings are not comparable",
                    hint="pass --allow-mixed to merge them anyway",
                )
    ordered = tuple(sorted(shards, key=lambda s: s.index))
    if mode == MODE_REPLICATE:
        order: dict[str, None] = {}
        for s in ordered:
            for k in sorted(s.dealt.positions, key=s.dealt.positions.__getitem__):
                order.setdefault(k)
        return Plan(mode, count, by, ordered, tuple(order), missing=tuple(allow_missing))
    return _plan_shards(ordered, count, by, tuple(allow_missing))


def _plan_shards(shards: tuple[ShardDir, ...], count: int, by: str, missing: tuple[int, ...]) -> Plan:
    nothing = [s for s in shards if not s.dealt.logs and s.status == "complete"]
    if nothing:
        raise UsageError(
            f"{nothing[0].path}: the target dealt no benchmarks to shards (no shard-*.jsonl): it does not "
            "time with nsightwrap.bench / nsightwrap.benchmark, so every shard ran all of it",
            hint="shard a script that times with nsightwrap, or profile the whole run once",
        )
    owner: dict[str, int] = {}
    position: dict[str, tuple[int, int]] = {}  # key -> (position, shard that saw it first)
    # Positions first: a script that reaches its benchmarks in another order in each process
    # explains any overlap or gap that follows, and has its own fix.
    for s in shards:
        for k, pos in s.dealt.positions.items():
            have = position.get(k)
            if have is None:
                position[k] = (pos, s.index)
            elif by == "index" and have[0] != pos:
                raise UsageError(
                    f"the shards saw different benchmark lists: {k!r} is benchmark {have[0]} in shard "
                    f"{have[1]} but {pos} in shard {s.index} ({s.path})",
                    hint="the script reaches its benchmarks in a different order in different processes; "
                    "profile with --shard-by hash, or give every shard the same arguments",
                )
    for s in shards:
        for k in s.dealt.mine:
            if k in owner:
                raise UsageError(
                    f"overlap: benchmark {k!r} was timed by shard {owner[k]} and by shard {s.index} "
                    f"({s.path})",
                    hint="the shards were dealt by different rules or different scripts; profile them again "
                    "with one command line",
                )
            owner[k] = s.index
    failed = {s.index for s in shards if s.status != "complete"} | set(missing)
    shard = {s.index: s for s in shards}
    lost: list[str] = []
    for k, (pos, _) in sorted(position.items(), key=lambda kv: kv[1][0]):
        if k in owner:
            continue
        slot = pos % count if by == "index" else hash_slot(k, count)
        if slot in failed:
            lost.append(k)  # its shard failed before timing it: reported with the failure
            continue
        where = shard.get(slot)
        raise UsageError(
            f"gap: benchmark {k!r} was dealt to shard {slot}, which did not time it"
            + (f" ({where.path})" if where else ""),
            hint="the shards saw different benchmark lists (different arguments or script versions); "
            "profile them again with one command line",
        )
    order = tuple(k for k, _ in sorted(position.items(), key=lambda kv: kv[1][0]))
    return Plan(MODE_SHARD, count, by, shards, order, owner, tuple(lost), missing)


# --------------------------------------------------------------------------- writing


def _link_or_copy(src: str, dst: str) -> object:
    # Hard links where the file system allows (instant, no extra space; reports are never
    # changed after a run), a copy elsewhere.
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
    return dst


def _shard_entry(s: ShardDir | None, index: int, plan: Plan, outcome: Mapping[str, Any] | None, source: str | None) -> dict[str, Any]:
    o = dict(outcome or {})
    if s is None:
        return {
            "index": index, "dir": None, "source": None, "status": o.get("status", "failed"),
            "exit_code": o.get("returncode"), "message": o.get("message") or "left no run directory",
            "gpu": o.get("gpu"), "host": None, "nsightwrap_version": None, "benchmarks": [], "wall_s": o.get("wall_s"),
        }  # fmt: skip
    rec: Mapping[str, Any] = s.manifest["shard"] if isinstance(s.manifest.get("shard"), Mapping) else {}
    mine = [k for k in plan.order if plan.owner.get(k) == index] if plan.mode == MODE_SHARD else list(plan.order)
    status = s.status
    message = o.get("message")
    if status != "complete" and not message:
        bad = [p for p in s.manifest.get("passes") or [] if isinstance(p, Mapping) and p.get("status") not in ("ok", "skipped")]
        message = "; ".join(f"{p.get('name')} pass {p.get('status')}" for p in bad) or f"status {status}"
    return {
        "index": index,
        "dir": f"{SHARDS_DIR}/{index}",
        "source": source,
        "status": status,
        "exit_code": s.manifest.get("exit_code"),
        "message": message or (rec.get("message") if not rec.get("consistent", True) else None),
        "gpu": {"name": s.gpu_name, "uuid": s.gpu_uuid, "cuda_visible_devices": rec.get("cuda_visible_devices")},
        "host": rec.get("host"),
        "nsightwrap_version": s.version,
        "benchmarks": mine,
        "wall_s": o.get("wall_s", s.manifest.get("wall_s")),
    }


def _status(entries: Sequence[Mapping[str, Any]], interrupted: bool) -> tuple[str, int]:
    if interrupted or any(e["status"] == "interrupted" for e in entries):
        return "interrupted", EXIT_INTERRUPTED
    bad = [e for e in entries if e["status"] != "complete"]
    if not bad:
        return "complete", EXIT_OK
    if all(e["status"] == "timeout" for e in bad):
        return "failed", EXIT_TIMEOUT
    return "failed", EXIT_TOOL_FAILED


def write_merged(
    root: Path,
    plan: Plan,
    *,
    outcomes: Mapping[int, Mapping[str, Any]] | None = None,
    interrupted: bool = False,
    allow_mixed: bool = False,
    extra: Mapping[str, Any] | None = None,
    sources: Mapping[int, str] | None = None,
) -> dict[str, Any]:
    """Write ``root/manifest.json`` for ``plan`` (shards already under ``root/shards/<i>``);
    ``sources``: where each shard was merged from."""
    outcomes = outcomes or {}
    shard = {s.index: s for s in plan.shards}
    entries = [
        _shard_entry(shard.get(i), i, plan, outcomes.get(i), (sources or {}).get(i)) for i in range(plan.count)
    ]
    status, code = _status(entries, interrupted)
    first = plan.shards[0].manifest if plan.shards else {}
    doc = {
        "format": MERGED_FORMAT,
        "version": MERGED_VERSION,
        "status": status,
        "exit_code": code,
        "mode": plan.mode,
        "count": plan.count,
        "by": plan.by,
        "created": time.time(),
        "nsightwrap_version": __version__,
        "allow_mixed": allow_mixed,
        "target": first.get("target"),
        "gpu_names": sorted({s.gpu_name for s in plan.shards if s.gpu_name}),
        "benchmarks": len(plan.order),
        "order": list(plan.order),
        "lost": list(plan.lost),
        "shards": entries,
        **dict(extra or {}),
    }
    write_json_atomic(root / MANIFEST_NAME, doc, indent=1)
    return doc


def merge_runs(sources: Sequence[Path], out: Path, *, allow_mixed: bool = False) -> dict[str, Any]:
    """Check ``sources`` (shard run directories, or merged ones), then copy them into ``out``
    (hard links where possible) and write its manifest. ``out`` must not exist."""
    if out.exists() or out.is_symlink():
        raise UsageError(
            f"{out} exists already; nsightwrap never overwrites a run", hint="give a new -o/--output path"
        )
    refuse_nested(sources, out)
    shards = [s for src in sources for s in read_shard(Path(src))]
    plan = plan_merge(shards, allow_mixed=allow_mixed)
    try:
        (out / SHARDS_DIR).mkdir(parents=True)
    except OSError as exc:
        raise UsageError(f"cannot create {out}: {exc.strerror}", hint="choose another -o path") from None
    moved = []
    for s in plan.shards:
        dst = out / SHARDS_DIR / str(s.index)
        shutil.copytree(s.path, dst, copy_function=_link_or_copy, symlinks=True)
        moved.append(replace(s, path=dst))
    origin = {s.index: str(s.path.resolve()) for s in plan.shards}
    return write_merged(out, replace(plan, shards=tuple(moved)), allow_mixed=allow_mixed, sources=origin)


def refuse_nested(sources: Sequence[Path], out: Path) -> None:
    """UsageError, before anything is written, when the output would lie inside an input (the
    copy would copy itself, level after level); links are followed. (An input inside the
    output cannot happen: the output must not exist.)"""
    dst = Path(out).resolve()
    for src in sources:
        if dst.is_relative_to(Path(src).resolve()):
            raise UsageError(
                f"the merged run {out} would be inside the run {src} it merges (it would copy itself into itself)",
                hint="give an -o path outside every run directory merged",
            )


def merge_in_place(
    root: Path,
    outcomes: Mapping[int, Mapping[str, Any]],
    count: int,
    *,
    interrupted: bool = False,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """``--gpus``: the shards ran into ``root/shards/<i>``; check and write the merged manifest.

    A shard that left no run directory (it failed at once) is recorded as failed; when the
    shards cannot be merged (a dealing problem), the manifest says so and keeps every shard."""
    present = [i for i in range(count) if (root / SHARDS_DIR / str(i) / MANIFEST_NAME).is_file()]
    absent = [i for i in range(count) if i not in present]
    shards = [s for i in present for s in read_shard(root / SHARDS_DIR / str(i))]
    # Shards of one --gpus run share versions and GPU models by construction; a mix (two GPU
    # models in one box) is recorded, not refused.
    try:
        plan = plan_merge(shards, allow_mixed=True, allow_missing=absent)
    except UsageError as exc:
        plan = Plan(MODE_SHARD, count, shards[0].by if shards else "index", tuple(sorted(shards, key=lambda s: s.index)), ())
        extra = {**dict(extra or {}), "merge_error": str(exc)}
    doc = write_merged(root, plan, outcomes=outcomes, interrupted=interrupted, allow_mixed=True, extra=extra)
    if "merge_error" in doc and doc["status"] == "complete":
        doc["status"], doc["exit_code"] = "failed", EXIT_TOOL_FAILED
        write_json_atomic(root / MANIFEST_NAME, doc, indent=1)
    return doc


def manifest_format(path: Path) -> str | None:
    """The ``format`` of a run directory's manifest (``nsightwrap-run``, ``nsightwrap-merged``)."""
    try:
        fmt = read_json_object(Path(path) / MANIFEST_NAME, "run manifest").get("format")
    except NsightwrapError:
        return None
    return str(fmt) if fmt in (MANIFEST_FORMAT, MERGED_FORMAT) else None
