"""Whether an ncu report holds every kernel its pass profiled, by the run's manifest.

A ``.ncu-rep`` cut exactly at a block boundary (a copy stopped between two kernels, a full disk
on a block's edge) is a valid shorter report: nothing in the file tells it from a whole one
(docs/ncu-parsing.md). The run's manifest does: each ncu pass records ``kernels_profiled``, the
kernels ncu said it profiled (its ``==PROF== Profiling`` lines, else the report's own count at
the time). A report that holds fewer is partial, and its figures would be set against timings
of kernels it lacks: the analysis refuses the ncu pass's report and drops a clock-sweep report
with a note (analysis/load.py); ``inspect`` refuses a report that sits in a run directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nsightwrap.core.contract import PASS_NCU
from nsightwrap.core.errors import NsightwrapError, ReportParseError
from nsightwrap.core.rundir import MANIFEST_NAME, SWEEP_PASSES, read_manifest

#: The passes whose directory holds an ncu report (``<pass>/report.ncu-rep``).
NCU_PASSES = (PASS_NCU, *SWEEP_PASSES)


def pass_record(manifest: Mapping[str, Any], name: str) -> Mapping[str, Any] | None:
    """The manifest's record of pass ``name``, or None."""
    return next(
        (p for p in manifest.get("passes") or [] if isinstance(p, Mapping) and p.get("name") == name), None
    )


def profiled(record: Mapping[str, Any] | None) -> int | None:
    """How many kernels the pass of ``record`` profiled, where the manifest says (a count above 0)."""
    n = (record or {}).get("kernels_profiled")
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None


def shortfall(report: Path, held: int, record: Mapping[str, Any] | None, run_dir: Path) -> str | None:
    """Why ``report`` (``held`` kernels) is partial by its pass's ``record``, as one sentence naming
    the file and both counts; None when it holds every kernel the pass profiled, or the manifest
    has no count."""
    want = profiled(record)
    if want is None or held >= want:
        return None
    rec = record or {}
    status = rec.get("status")
    if status in (None, "ok"):
        why = "the report was cut short (a copy stopped early, a full disk)"
    else:  # the pass itself ended early: its report holds what ncu wrote before
        ended = {"timeout": "timed out", "interrupted": "was interrupted"}.get(str(status), str(status))
        why = f"the report is partial (the pass {ended}" + (f": {rec['message']})" if rec.get("message") else ")")
    return (
        f"{report}: Nsight Compute report holds {held} of the {want} kernels its {rec.get('name', 'ncu')} pass "
        f"profiled ({run_dir / MANIFEST_NAME}): {why}"
    )


def check_whole(report: Path, held: int, record: Mapping[str, Any] | None, run_dir: Path) -> None:
    """Raise ReportParseError (exit 2) when ``report`` holds fewer kernels than its pass profiled."""
    why = shortfall(report, held, record, run_dir)
    if why is not None:
        raise ReportParseError(why, hint="take the run again with nsightwrap profile (the file is kept as it is)")


def run_record(report: Path) -> tuple[Path, Mapping[str, Any]] | None:
    """``(run directory, pass record)`` of a report that sits in a run directory as one of its ncu
    passes' reports (``RUN/ncu/report.ncu-rep[.gz]``, ``RUN/ncu-base/...``); None for a report
    anywhere else, or beside a manifest that cannot be read (the report is read on its own then)."""
    report = Path(report)
    name = report.name[: -len(".gz")] if report.name.endswith(".gz") else report.name
    pass_name = report.parent.name
    run_dir = report.parent.parent
    if name != "report.ncu-rep" or pass_name not in NCU_PASSES or not (run_dir / MANIFEST_NAME).is_file():
        return None
    try:
        manifest = read_manifest(run_dir)
    except NsightwrapError:
        return None
    record = pass_record(manifest, pass_name)
    return (run_dir, record) if record is not None else None
