"""What ``nsightwrap inspect`` shows of one report file: a frame, shaped per GPU op or per NVTX range.

The file's kind is read from its content (``parsers.kind``); each kind goes to its parser, and the
result is one ``View``. Exporters (``export.frames``) print it. What needs a tool or a child
process is the caller's to pass: the export of a ``.nsys-rep`` to SQLite (``nsys export``) and
the reader of a ``.ncu-rep`` (the CLI's runs the native ``ncu_report`` in a child process).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from nsightwrap.analysis.ncucount import check_whole, run_record
from nsightwrap.core.errors import ReportParseError, UsageError
from nsightwrap.parsers.kind import ReportKind, detect
from nsightwrap.parsers.ncu import read_ncu_rep

#: Exports a ``.nsys-rep`` to SQLite and returns the export's path (``nsys export``).
NsysExporter = Callable[[Path], Path]
#: Reads a ``.ncu-rep`` (or ``.ncu-rep.gz``) into ncu's kernel frame, as ``parsers.ncu.read_ncu_rep``.
NcuRepReader = Callable[[Path], pd.DataFrame]


@dataclasses.dataclass(frozen=True)
class View:
    """What inspect shows: a frame, its title, and the columns worth a terminal table."""

    title: str
    frame: pd.DataFrame
    table_columns: tuple[str, ...]
    #: Columns of the Markdown table (default: table_columns); Markdown can afford full names.
    md_columns: tuple[str, ...] = ()


RANGE_TABLE = (
    "range",
    "instances",
    "ops",
    "kernels",
    "memcpy",
    "memset",
    "gpu_time_ns",
    "busy_ns",
    "span_ns",
)
NSYS_OP_TABLE = (
    "op_id",
    "kind",
    "short_name",
    "start_ns",
    "duration_ns",
    "stream_id",
    "launch_api",
    "nvtx_path",
)
NCU_KERNEL_TABLE = ("launch_id", "kernel_short", "grid", "block", "duration_ns", "sm_clock_hz", "nvtx_path")


def load_view(
    path: Path,
    by: str = "kernel",
    *,
    export_nsys: NsysExporter | None = None,
    read_ncu: NcuRepReader = read_ncu_rep,
) -> View:
    """Read ``path`` as whatever report it is and shape it for ``by`` (``kernel`` or ``range``).
    A ``.nsys-rep`` is read through ``export_nsys`` (None: refused, with the command that exports
    it); a ``.ncu-rep`` through ``read_ncu``."""
    kind = detect(path)
    if kind in (ReportKind.NSYS_SQLITE, ReportKind.NSYS_REP):
        return _nsys_view(path, kind, by, export_nsys)
    if kind in (ReportKind.NCU_REP, ReportKind.NCU_CSV):
        return _ncu_view(path, kind, by, read_ncu)
    if kind is ReportKind.SMI_XML:
        from nsightwrap.parsers.smi import read_smi_xml

        info = read_smi_xml(path)
        rows = [{"field": k, "value": v} for k, v in _flatten(dataclasses.asdict(info))]
        return View(f"nvidia-smi: {path}", pd.DataFrame(rows, columns=["field", "value"]), ("field", "value"))
    if kind is ReportKind.SMI_CSV:
        from nsightwrap.parsers.smi import read_smi_samples

        samples = read_smi_samples(path)
        return View(f"nvidia-smi samples: {path}", samples, tuple(samples.columns))
    if kind is ReportKind.TIMER_JSON:
        return _timer_view(path)
    if kind is ReportKind.QDSTRM:
        raise ReportParseError(
            f"{path} is a raw nsys capture that was never imported into a .nsys-rep (nsys's "
            "QdstrmImporter failed, often for a missing libdw.so.1); install libdw1 (elfutils) "
            "and profile again, or run QdstrmImporter on it"
        )
    raise UsageError(f"{path} is an nsightwrap report JSON; compare two of them with `nsightwrap compare`")


def _flatten(fields: dict[str, object], prefix: str = "") -> list[tuple[str, object]]:
    """Nested fields (clock sets) as dotted names: ``clocks.sm_hz``."""
    out: list[tuple[str, object]] = []
    for k, v in fields.items():
        if isinstance(v, dict):
            out += _flatten(v, f"{prefix}{k}.")
        else:
            out.append((f"{prefix}{k}", v))
    return out


def _nsys_view(path: Path, kind: ReportKind, by: str, export_nsys: NsysExporter | None) -> View:
    from nsightwrap.parsers.nsys import read_nsys, summarize_by_range

    sqlite = path
    if kind is ReportKind.NSYS_REP:
        if export_nsys is None:
            raise UsageError(
                f"{path} is an nsys report, read through its SQLite export",
                hint=f"export it with `nsys export --type sqlite {path}` and give the .sqlite",
            )
        sqlite = export_nsys(path)
    # Per range only times count: skip names, shapes and streams (a third faster on big files).
    rep = read_nsys(sqlite, detail=by != "range")
    if by == "range":
        if not rep.has_nvtx:
            raise ReportParseError(
                f"{path} has no NVTX ranges, so there is nothing to group by; use --by kernel, "
                "or profile with `nsys profile -t cuda,nvtx` around code that opens NVTX ranges"
            )
        return View(f"NVTX ranges: {path}", summarize_by_range(rep), RANGE_TABLE)
    if rep.ops.empty:
        raise ReportParseError(
            f"{path} holds no CUDA kernels, copies or memsets; profile with `nsys profile -t cuda,nvtx`"
        )
    # A shallow copy with one more column: a deep one doubles the memory of a million-op export.
    ops = rep.ops.copy(deep=False)
    ops["nvtx_path"] = _innermost_path(rep.attribution, rep.ranges, ops["op_id"])
    md = tuple("name" if c == "short_name" else c for c in NSYS_OP_TABLE)
    return View(f"GPU ops: {path}", ops, NSYS_OP_TABLE, md)


def _innermost_path(attribution: pd.DataFrame, ranges: pd.DataFrame, op_ids: pd.Series) -> pd.Series:
    """Per op, the path of the deepest push/pop range it was launched in (else a start/end one)."""
    if attribution.empty:
        return pd.Series(pd.NA, index=op_ids.index, dtype=object)
    a = attribution.merge(ranges[["range_id", "kind", "depth", "path"]], on="range_id")
    a["_pp"] = (a["kind"] == "pushpop").astype(np.int8)
    last = a.sort_values(["op_id", "_pp", "depth", "range_id"]).drop_duplicates("op_id", keep="last")
    return op_ids.map(last.set_index("op_id")["path"])


def _ncu_view(path: Path, kind: ReportKind, by: str, read_ncu: NcuRepReader) -> View:
    from nsightwrap.parsers import ncu

    kernels = read_ncu(path) if kind is ReportKind.NCU_REP else ncu.read_ncu_csv(path)
    if kind is ReportKind.NCU_REP and (found := run_record(path)) is not None:
        check_whole(path, len(kernels), found[1], found[0])  # a report in a run directory: by its manifest
    if by == "kernel":
        return View(f"ncu kernels: {path}", kernels, NCU_KERNEL_TABLE)
    ranges = ncu.kernels_by_range(kernels)
    if ranges.empty:
        raise ReportParseError(
            f"{path} has no NVTX ranges on its kernels; use --by kernel, or profile with `ncu --nvtx`"
        )
    # ncu profiles kernels only, serialized and replayed: no copies, and busy time and span
    # mean nothing there.
    out = pd.DataFrame(
        {
            "range": ranges["range"],
            "ops": ranges["kernels"],
            "kernels": ranges["kernels"],
            "memcpy": 0,
            "memset": 0,
            "gpu_time_ns": ranges["gpu_time_ns"],
            "busy_ns": None,
            "span_ns": None,
            "instances": ranges["instances"],
            "unique_kernels": ranges["unique_kernels"],
        }
    )
    return View(f"NVTX ranges (ncu): {path}", out, RANGE_TABLE)


TIMER_COLUMNS = (
    "name",
    "n",
    "median_ns",
    "min_ns",
    "mean_ns",
    "stdev_ns",
    "sm_clock_hz",
    "clock_source",
    "nvtx_path",
)


def _timer_view(path: Path) -> View:
    from nsightwrap.parsers.sidecar import read_sidecar_doc

    benches = read_sidecar_doc(path)["benchmarks"]
    frame = pd.DataFrame([{c: b.get(c) for c in TIMER_COLUMNS} for b in benches], columns=list(TIMER_COLUMNS))
    return View(f"timer sidecar: {path}", frame, TIMER_COLUMNS)
