"""What kind of report a file is, from its first bytes (the extension is only a last hint).

Users rename files and tools write CSV to ``.txt``: the content decides. Only a raw nsys capture
(``.qdstrm``) is recognised by its extension alone.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path

from nsightwrap.core.contract import REPORT_FORMAT, SIDECAR_FORMAT
from nsightwrap.core.errors import InputNotFound, ReportParseError
from nsightwrap.core.jsonfile import parse_json
from nsightwrap.core.unpack import named_as, unpacked

_HEAD_BYTES = 64 * 1024


class ReportKind(str, Enum):
    """Kinds of input ``nsightwrap inspect`` understands."""

    NCU_REP = "ncu-rep"  # Nsight Compute report (binary)
    NCU_CSV = "ncu-csv"  # ncu --import ... --csv --page raw (or details)
    NSYS_SQLITE = "nsys-sqlite"  # nsys export --type sqlite
    NSYS_REP = "nsys-rep"  # Nsight Systems report (needs nsys to export)
    QDSTRM = "qdstrm"  # raw nsys capture whose import to .nsys-rep failed
    SMI_XML = "smi-xml"  # nvidia-smi -q -x
    SMI_CSV = "smi-csv"  # nvidia-smi --query-gpu=timestamp,... --format=csv
    TIMER_JSON = "timer-json"  # nsightwrap timer sidecar
    REPORT_JSON = "report-json"  # nsightwrap report JSON


# ncu .ncu-rep files start with "NVR\0".
_NCU_MAGIC = b"NVR\x00"
_SQLITE_MAGIC = b"SQLite format 3\x00"
# .nsys-rep (and the older .qdrep) files open with this banner.
_NSYS_MAGIC = b"NVIDIA Tegra Profiler Report"


def detect(path: str | Path) -> ReportKind:
    """The kind of ``path``; InputNotFound if missing, ReportParseError if not a known kind."""
    p = Path(path)
    if not p.exists():
        raise InputNotFound(f"{p} does not exist; give the path of a report file")
    if p.is_dir():
        raise InputNotFound(
            f"{p} is a directory; give one report file (for a run directory use `nsightwrap report {p}`)"
        )
    try:
        with p.open("rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except OSError as exc:
        raise InputNotFound(f"{p} cannot be read ({exc.strerror})") from exc
    if p.suffix == ".gz" and head.startswith(b"\x1f\x8b"):
        copy = unpacked(p)  # parsers read the .gz through the same unpacked copy
        with named_as(p, copy):
            return detect(copy)
    kind = _from_content(head, p)
    if kind is not None:
        return kind
    suffix = p.suffix.lower()
    if suffix in (".nsys-rep", ".qdrep") and head:
        return ReportKind.NSYS_REP
    if suffix == ".qdstrm":
        return ReportKind.QDSTRM
    if not head:
        raise ReportParseError(f"{p} is empty; the tool that wrote it failed or was killed, run it again")
    if suffix == ".sqlite":
        raise ReportParseError(
            f"{p} is not an SQLite database (truncated or corrupt?); re-export it with `nsys export --type sqlite`"
        )
    if suffix == ".ncu-rep":
        raise ReportParseError(f"{p} is not an Nsight Compute report (truncated or corrupt?); profile again")
    raise ReportParseError(
        f"{p} is not a report nsightwrap knows (.ncu-rep, ncu CSV, nsys .sqlite or .nsys-rep, "
        "nvidia-smi XML or CSV, nsightwrap JSON)"
    )


def _from_content(head: bytes, p: Path) -> ReportKind | None:
    if head.startswith(_SQLITE_MAGIC):
        return ReportKind.NSYS_SQLITE
    if head.startswith(_NCU_MAGIC):
        return ReportKind.NCU_REP
    if head.startswith(_NSYS_MAGIC):
        return ReportKind.NSYS_REP
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    stripped = text.lstrip()
    if stripped.startswith("<?xml") or stripped.startswith("<!DOCTYPE") or stripped.startswith("<"):
        return ReportKind.SMI_XML if "<nvidia_smi_log" in text else None
    if stripped.startswith("{"):
        return _json_kind(p)
    # ncu prints its own ==PROF== / ==WARNING== lines before the CSV when stdout is captured.
    lines = [ln for ln in stripped.splitlines() if not ln.startswith("==")]
    first = lines[0] if lines else ""
    if first.startswith('"ID"') and '"Kernel Name"' in first:
        return ReportKind.NCU_CSV
    low = first.lower()
    if low.startswith("timestamp") and ("clocks." in low or "[mhz]" in low):
        return ReportKind.SMI_CSV
    return None


def _json_kind(p: Path) -> ReportKind | None:
    # Sidecars are small; the head alone may cut a document, so read the whole file.
    try:
        doc = parse_json(p.read_text(encoding="utf-8"), str(p))
    except (OSError, UnicodeDecodeError, ReportParseError):
        return None
    fmt = doc.get("format") if isinstance(doc, dict) else None
    if fmt == SIDECAR_FORMAT:
        return ReportKind.TIMER_JSON
    if fmt == REPORT_FORMAT:
        return ReportKind.REPORT_JSON
    return None
