"""Run directory layout and its manifest (what ran, with which argv and environment, how it ended,
which files it left). The manifest is written last and atomically: a run directory without one
is a run that never finished writing.

The read side (layout, manifest reading, the format's history) is nsightwrap.core.rundir, below
the analysis; its names are re-exported here for the writers.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from nsightwrap.core.errors import UsageError
from nsightwrap.core.jsonfile import read_json_object, write_json_atomic
from nsightwrap.core.rundir import (
    CLOCK_SWEEP_PASS,
    COVER_PASS,
    DEFAULT_ROOT,
    DURATION_PASS,
    MANIFEST_FORMAT,
    MANIFEST_NAME,
    MANIFEST_VERSION,
    MERGED_FORMAT,
    SWEEP_PASSES,
    RunLayout,
    read_manifest,
)
from nsightwrap.run.launch import CommandResult

__all__ = [
    "CLOCK_SWEEP_PASS", "COVER_PASS", "DEFAULT_ROOT", "DURATION_PASS", "MANIFEST_FORMAT", "MANIFEST_NAME", "MANIFEST_VERSION",
    "MERGED_FORMAT", "SWEEP_PASSES", "Manifest", "PassRecord", "RunLayout", "create_run_dir", "default_run_dir",
    "read_manifest", "record_exit", "write_manifest",
]  # fmt: skip

def default_run_dir(target: str, now: datetime | None = None, root: Path = Path(DEFAULT_ROOT)) -> Path:
    """``nsightwrap-runs/<YYYYmmdd-HHMMSS>-<target stem>``; a suffix ``-2``, ``-3`` ... when a run
    of the same second exists already (a default name must never collide with an old run)."""
    stem = re.sub(r"[^A-Za-z0-9_.\-]+", "_", Path(target).stem or target).strip("_") or "target"
    base = root / f"{(now or datetime.now()).strftime('%Y%m%d-%H%M%S')}-{stem}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def create_run_dir(path: Path, passes: tuple[str, ...]) -> RunLayout:
    """Create a new run directory with its env/ and pass directories; refuse an existing path."""
    if path.exists() or path.is_symlink():
        raise UsageError(
            f"run directory {path} exists already; nsightwrap never overwrites a run",
            hint="give a new -o/--output path, or remove the old run",
        )
    try:
        path.mkdir(parents=True)
    except OSError as exc:
        raise UsageError(
            f"cannot create run directory {path}: {exc.strerror}", hint="choose another -o path"
        ) from None
    layout = RunLayout(path.absolute())
    layout.env_dir.mkdir()
    for name in passes:
        layout.pass_dir(name).mkdir()
    return layout


@dataclass(frozen=True)
class PassRecord:
    """One pass in the manifest: its commands (profile, import, export), env changes, files."""

    name: str
    status: str
    env: dict[str, str] = field(default_factory=dict)
    commands: tuple[CommandResult, ...] = ()
    files: tuple[str, ...] = ()
    kernels_profiled: int | None = None
    message: str | None = None  # why it failed or was skipped


@dataclass(frozen=True)
class Manifest:
    """Everything needed to know later what this run was. Times are epoch seconds."""

    status: str
    target: dict[str, Any]
    passes: tuple[PassRecord, ...]
    tools: dict[str, Any]
    gpu: dict[str, Any] | None
    git: dict[str, Any] | None
    settings: dict[str, Any]
    sampler: dict[str, Any] | None
    start: float
    end: float
    nsightwrap_version: str
    exit_code: int
    #: ``--shard`` / ``--replicate``: which part of a larger run this is (nsightwrap.run.shards).
    shard: dict[str, Any] | None = None
    #: What the run planned (passes, estimates, ``--budget``, what it cut) and each pass's actual
    #: wall time (nsightwrap.run.profiling.Plan; docs/profile.md, "Plan and budget").
    plan: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        body = asdict(self)
        body["wall_s"] = round(self.end - self.start, 6)
        return {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, **body}


def write_manifest(layout: RunLayout, manifest: Manifest) -> Path:
    """Write ``manifest.json`` atomically (the last file a run writes)."""
    write_json_atomic(layout.manifest, manifest.to_json())
    return layout.manifest


def record_exit(layout: RunLayout, exit_code: int, status: str) -> None:
    """Set the manifest's ``exit_code`` and ``status`` to what ``profile`` returns, where the
    analysis at its end changed them (nothing measured, a reader crash): the manifest always
    says what the process returned."""
    doc = read_json_object(layout.manifest, "run manifest")
    if doc.get("exit_code") == exit_code and doc.get("status") == status:
        return
    doc["exit_code"], doc["status"] = exit_code, status
    write_json_atomic(layout.manifest, doc)
