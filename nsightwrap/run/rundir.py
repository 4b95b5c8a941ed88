"""Run directory layout and its manifest (what ran, with which argv and environment, how it ended,
which files it left). The manifest is written last and atomically: a run directory without one
is a run that never finished writing.

Manifest format history (``"format": "nsightwrap-run"``):
  version 1 (nsightwrap 0.1.0): first version.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from nsightwrap.core.contract import PASS_NCU, PASS_NSYS, PASS_PLAIN
from nsightwrap.core.errors import FormatVersionError, InputNotFound, ReportParseError, UsageError
from nsightwrap.core.jsonfile import read_json_object, write_json_atomic
from nsightwrap.run.launch import CommandResult

MANIFEST_FORMAT = "nsightwrap-run"
MANIFEST_VERSION = 1
MANIFEST_NAME = "manifest.json"
#: The clock-sweep pass (the ncu pass again at ``--clock-control base``): its manifest name and
#: directory; the target runs in it as under the ncu pass (NSIGHTWRAP_PASS=ncu).
CLOCK_SWEEP_PASS = "ncu-base"
#: The duration pass (the ncu pass again at ``--clock-control none`` with the duration and the SM
#: clock only): its manifest name and directory. Its durations are the ones the analysis uses: the
#: ncu pass's many counters take 12 replay passes, which read some kernels several % longer.
DURATION_PASS = "ncu-duration"
#: The clock sweep's two passes, in the order they run (right after the ncu pass).
SWEEP_PASSES = (DURATION_PASS, CLOCK_SWEEP_PASS)
#: ``format`` of the manifest of a run merged from shards (``nsightwrap merge``, ``--gpus``;
#: written and read by nsightwrap.run.merge, documented in docs/cluster.md).
MERGED_FORMAT = "nsightwrap-merged"
DEFAULT_ROOT = "nsightwrap-runs"


def _plain_or_gz(path: Path) -> Path:
    # A shipped run directory may hold its largest reports gzipped (parsers read both).
    gz = path.with_name(path.name + ".gz")
    return gz if not path.exists() and gz.exists() else path


@dataclass(frozen=True)
class RunLayout:
    """Paths inside one run directory (see docs/contracts.md)."""

    root: Path

    @property
    def manifest(self) -> Path:
        return self.root / MANIFEST_NAME

    @property
    def env_dir(self) -> Path:
        return self.root / "env"

    @property
    def smi_xml(self) -> Path:
        return self.env_dir / "nvidia-smi-q-x.xml"

    @property
    def tools_json(self) -> Path:
        return self.env_dir / "tools.json"

    def pass_dir(self, name: str) -> Path:
        return self.root / name

    def logs(self, name: str, prefix: str = "") -> tuple[Path, Path]:
        """(stdout, stderr) log paths of a command of pass ``name``."""
        d = self.pass_dir(name)
        return d / f"{prefix}stdout.log", d / f"{prefix}stderr.log"

    @property
    def smi_samples(self) -> Path:
        return self.pass_dir(PASS_PLAIN) / "smi_samples.csv"

    @property
    def ncu_report_base(self) -> Path:
        return self.pass_dir(PASS_NCU) / "report"

    @property
    def ncu_report(self) -> Path:
        return _plain_or_gz(self.pass_dir(PASS_NCU) / "report.ncu-rep")

    @property
    def ncu_base_report_base(self) -> Path:
        """The clock-sweep pass's report (ncu at ``--clock-control base``), without suffix."""
        return self.pass_dir(CLOCK_SWEEP_PASS) / "report"

    @property
    def ncu_base_report(self) -> Path:
        return _plain_or_gz(self.pass_dir(CLOCK_SWEEP_PASS) / "report.ncu-rep")

    @property
    def ncu_duration_report_base(self) -> Path:
        """The duration pass's report (ncu at ``--clock-control none``, two metrics), without suffix."""
        return self.pass_dir(DURATION_PASS) / "report"

    @property
    def ncu_duration_report(self) -> Path:
        return _plain_or_gz(self.pass_dir(DURATION_PASS) / "report.ncu-rep")

    def sweep_report_base(self, name: str) -> Path:
        """Report path (without suffix) of one of the clock sweep's passes (``SWEEP_PASSES``)."""
        return self.ncu_duration_report_base if name == DURATION_PASS else self.ncu_base_report_base

    def sweep_report(self, name: str) -> Path:
        return self.ncu_duration_report if name == DURATION_PASS else self.ncu_base_report

    @property
    def nsys_report_base(self) -> Path:
        return self.pass_dir(PASS_NSYS) / "report"

    @property
    def nsys_rep(self) -> Path:
        return self.pass_dir(PASS_NSYS) / "report.nsys-rep"

    @property
    def nsys_qdstrm(self) -> Path:
        return self.pass_dir(PASS_NSYS) / "report.qdstrm"

    @property
    def nsys_sqlite(self) -> Path:
        return _plain_or_gz(self.pass_dir(PASS_NSYS) / "report.sqlite")

    def files(self, name: str) -> list[str]:
        """Files under pass ``name``'s directory, relative to the run directory, sorted."""
        d = self.pass_dir(name)
        if not d.is_dir():
            return []
        return sorted(str(p.relative_to(self.root)) for p in d.rglob("*") if p.is_file())


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


def read_manifest(run_dir: Path) -> dict[str, Any]:
    """The manifest of a run directory as a dict; refuses other formats and unknown versions."""
    path = run_dir / MANIFEST_NAME if run_dir.is_dir() else run_dir
    if not path.is_file():
        raise InputNotFound(
            f"{path} not found",
            hint="give a run directory made by nsightwrap profile (an unfinished run has none)",
        )
    data = read_json_object(path, "run manifest")
    if data.get("format") == MERGED_FORMAT:
        raise UsageError(
            f"{path} is the manifest of a run merged from shards, not of one run",
            hint="nsightwrap report and compare read it as a whole; each shard's own run is under shards/<i>/",
        )
    if data.get("format") != MANIFEST_FORMAT:
        raise ReportParseError(
            f"{path} is not an nsightwrap run manifest",
            hint="give a run directory made by nsightwrap profile",
        )
    if data.get("version") != MANIFEST_VERSION:
        raise FormatVersionError(
            f"{path} has manifest version {data.get('version')!r}; this nsightwrap reads version {MANIFEST_VERSION}",
            hint="use the nsightwrap version that made the run",
        )
    return data
