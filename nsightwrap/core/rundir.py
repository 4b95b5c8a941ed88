"""The run directory, read side: its layout (the paths of every pass's files), its manifest read
back, checked, and the merged manifest of a run merged from shards. Below the analysis, which
reads run directories; run/rundir.py and run/merge.py write them (and re-export these names for
their writers).

Manifest format history (``"format": "nsightwrap-run"``):
  version 1 (nsightwrap 0.1.0): first version.
Merged manifest history (``"format": "nsightwrap-merged"``):
  version 1 (nsightwrap 0.1.0): first version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nsightwrap.core.contract import PASS_NCU, PASS_NSYS, PASS_PLAIN, PASS_PLAIN_CLOCK
from nsightwrap.core.errors import (
    BadField,
    FormatVersionError,
    InputNotFound,
    NsightwrapError,
    PathEscape,
    ReportParseError,
    UsageError,
)
from nsightwrap.core.jsonfile import check_schema, read_json_object

MANIFEST_FORMAT = "nsightwrap-run"
MANIFEST_VERSION = 1
MANIFEST_NAME = "manifest.json"
#: The clock-sweep pass (the ncu pass again at ``--clock-control base``): its manifest name and
#: directory; the target runs in it as under the ncu pass (NSIGHTWRAP_PASS=ncu).
CLOCK_SWEEP_PASS = "ncu-base"
#: The duration pass (the ncu pass again at ``--clock-control none`` with the duration and the SM
#: clock only): its manifest name and directory. Its durations are the ones the analysis uses: the
#: ncu pass's many counters take 17 replay passes (12 with --no-roofline-counters), which read
#: some kernels several % longer.
DURATION_PASS = "ncu-duration"
#: The coverage pass (ncu at ``--clock-control none``, duration and SM clock only, no cap, only
#: the iteration ranges of the benchmarks the capped passes left without ncu figures of their
#: own): its manifest name and directory. It runs after the clock sweep, only where needed.
COVER_PASS = "ncu-cover"
#: The clock sweep's two passes, in the order they run (after the nsys pass, each only where it
#: can change an answer: analysis/basepass.py).
SWEEP_PASSES = (DURATION_PASS, CLOCK_SWEEP_PASS)
#: ``format`` of the manifest of a run merged from shards (``nsightwrap merge``, ``--gpus``;
#: written by nsightwrap.run.merge, read here, documented in docs/cluster.md).
MERGED_FORMAT = "nsightwrap-merged"
MERGED_VERSION = 1
#: How a merged run's shards split the benchmarks: each benchmark on one GPU, or every
#: benchmark on every GPU (``--replicate``).
MODE_SHARD = "shard"
MODE_REPLICATE = "replicate"
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
    def plain_clock_base(self) -> Path:
        """The clock run's GPU-metrics capture (nsys, no CUDA trace), without suffix."""
        return self.pass_dir(PASS_PLAIN_CLOCK) / "clock"

    @property
    def plain_clock_rep(self) -> Path:
        return self.pass_dir(PASS_PLAIN_CLOCK) / "clock.nsys-rep"

    @property
    def plain_clock_sqlite(self) -> Path:
        """The clock run's capture cut to the clock and NVTX; a run made when the plain pass
        itself ran under nsys (no ``plain-clock/``) kept it in ``plain/``."""
        new = _plain_or_gz(self.pass_dir(PASS_PLAIN_CLOCK) / "clock.sqlite")
        old = _plain_or_gz(self.pass_dir(PASS_PLAIN) / "clock.sqlite")
        return old if not new.exists() and old.exists() else new

    @property
    def clock_windows_dir(self) -> Path:
        """Where the sidecars that place each timing's windows against the clock capture lie:
        the clock run's (``plain-clock/``), or the plain pass's in a run made before it had one."""
        d = self.pass_dir(PASS_PLAIN_CLOCK)
        return d if d.is_dir() else self.pass_dir(PASS_PLAIN)

    @property
    def startup_file(self) -> Path:
        """What the plain pass's first Python process imported, for the passes started early
        (``contract.ENV_STARTUP_FILE``)."""
        return self.pass_dir(PASS_PLAIN) / "startup.json"

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

    @property
    def ncu_cover_report_base(self) -> Path:
        """The coverage pass's report, without suffix."""
        return self.pass_dir(COVER_PASS) / "report"

    @property
    def ncu_cover_report(self) -> Path:
        return _plain_or_gz(self.pass_dir(COVER_PASS) / "report.ncu-rep")

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
    check_schema(data, "manifest", f"run manifest {path}")
    return data


class DamagedMerged(ReportParseError):
    """A merged manifest whose shard list cannot be followed (a shard number that is none)."""


def read_merged(run_dir: Path) -> dict[str, Any] | None:
    """The merged manifest of ``run_dir``, or None when it is not a merged run."""
    path = Path(run_dir) / MANIFEST_NAME
    if not path.is_file():
        return None
    doc = read_json_object(path, "run manifest")
    if doc.get("format") != MERGED_FORMAT:
        return None
    if doc.get("version") != MERGED_VERSION:
        raise FormatVersionError(
            f"{path} has merged-run version {doc.get('version')!r}; this nsightwrap reads {MERGED_VERSION}",
            hint="use the nsightwrap version that merged the run",
        )
    for s in doc.get("shards") or []:
        if isinstance(s, Mapping) and s.get("dir"):
            index = s.get("index")
            if isinstance(index, bool) or not isinstance(index, int) or index < 0:
                raise DamagedMerged(
                    f"{path}: shard {s['dir']!r} has index {index!r}, not a shard number (0, 1, ...)",
                    hint="the manifest was changed by hand or is damaged; merge the shards again",
                )
            check_inside(Path(run_dir), str(s["dir"]), path)
    check_schema(doc, "manifest", f"run manifest {path}")
    return doc


def check_inside(run_dir: Path, rel: str, manifest: Path) -> None:
    """Refuse a shard directory that leaves the run (absolute, ``..``, or a link out of it):
    a manifest is data, and must never make report read, or merge link, files elsewhere."""
    p = Path(rel)
    root = Path(run_dir).resolve()
    if p.is_absolute() or ".." in p.parts or not (root / p).resolve().is_relative_to(root):
        raise PathEscape(
            f"{manifest}: shard directory {rel!r} is outside the run directory",
            hint="a merged run's shards live under its shards/ folder; merge the shards again",
        )
    if (root / p).resolve() == root:
        # "." (or a link back to the run): the merged run would hold itself, level after level.
        raise PathEscape(
            f"{manifest}: shard directory {rel!r} is the merged run itself",
            hint="a merged run's shards live under its shards/ folder; merge the shards again",
        )


def is_merged(run_dir: Path) -> bool:
    """Whether ``run_dir`` is a merged run (``nsightwrap merge`` or ``profile --gpus``)."""
    try:
        return read_merged(run_dir) is not None
    except (PathEscape, DamagedMerged, BadField):  # a merged run, a hostile or damaged one: never read as a plain run
        raise
    except NsightwrapError:
        return False


def shard_dirs(run_dir: Path) -> list[tuple[int, Path]]:
    """(index, directory) of each shard of a merged run that left a run directory."""
    doc = read_merged(run_dir) or {}
    out = []
    for s in doc.get("shards") or []:
        if isinstance(s, Mapping) and s.get("dir"):
            d = Path(run_dir) / str(s["dir"])
            if (d / MANIFEST_NAME).is_file():
                out.append((int(s["index"]), d))
    return out
