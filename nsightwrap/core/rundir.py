"""The run directory, read side: its layout (the paths of every pass's files) and its manifest
read back, checked. Below the analysis, which reads run directories; run/rundir.py writes them
(and re-exports these names for its writers).

Manifest format history (``"format": "nsightwrap-run"``):
  version 1 (nsightwrap 0.1.0): first version.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nsightwrap.core.contract import PASS_NCU, PASS_NSYS, PASS_PLAIN
from nsightwrap.core.errors import FormatVersionError, InputNotFound, ReportParseError, UsageError
from nsightwrap.core.jsonfile import read_json_object

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
