"""The timer sidecar (``plain/timer-<pid>.json``): read and checked in one place for every reader.

The timer writes it (``nsightwrap.timer.write_sidecar``); the analysis, ``inspect`` and
``compare`` read it through ``read_sidecar_doc`` and map its benchmarks as each needs;
``read_sidecar`` gives the timer's own ``BenchResult`` objects back. Only the standard library is
used (no pandas).

Format versions (``"version"``):
  1 (2026-11): first version; fields in docs/contracts.md.
  2 (2026-12): per-sample clocks, power and energy, captured timings of unmodified scripts
               (``source``, ``user_value_ns``); version-1 files still read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nsightwrap.core.contract import SIDECAR_FORMAT
from nsightwrap.core.errors import FormatVersionError, ReportParseError
from nsightwrap.core.jsonfile import check_schema, read_json_object
from nsightwrap.timer.result import BenchResult

#: Sidecar versions this nsightwrap reads.
SIDECAR_VERSIONS = (1, 2)


def check_sidecar(path: str | os.PathLike[str], doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` if it is a timer sidecar of a known version with a list of benchmarks."""
    if doc.get("format") != SIDECAR_FORMAT:
        raise ReportParseError(
            f"{path} is not a timer sidecar (format {doc.get('format')!r}, {SIDECAR_FORMAT!r} expected)"
        )
    if doc.get("version") not in SIDECAR_VERSIONS:
        raise FormatVersionError(
            f"timer sidecar {path} has version {doc.get('version')!r}; this nsightwrap reads "
            f"version {', '.join(map(str, SIDECAR_VERSIONS))}",
            hint="use the nsightwrap version that made the run, or run the plain pass again",
        )
    if not isinstance(doc.get("benchmarks"), list):
        raise ReportParseError(
            f"timer sidecar {path}: field 'benchmarks' is missing or not a list",
            hint="the timer did not finish",
        )
    # Every field a reader takes, of its type (nsightwrap/schemas/sidecar.schema.json).
    check_schema(doc, "sidecar", f"timer sidecar {path}")
    return doc


def read_sidecar_doc(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The checked JSON document of one timer sidecar."""
    return check_sidecar(path, read_json_object(path, "timer sidecar"))


@dataclass(frozen=True)
class TimerSidecar:
    """A parsed timer sidecar."""

    pid: int
    device: Mapping[str, Any]
    torch_version: str | None
    benchmarks: tuple[BenchResult, ...]


def read_sidecar(path: str | os.PathLike[str]) -> TimerSidecar:
    """Read a sidecar written by ``write_sidecar``, refusing unknown formats and versions."""
    doc = read_sidecar_doc(path)
    return TimerSidecar(
        pid=int(doc.get("pid") or 0),
        device=dict(doc.get("device") or {}),
        torch_version=doc.get("torch_version"),
        benchmarks=tuple(BenchResult.from_dict(b) for b in doc.get("benchmarks", [])),
    )
