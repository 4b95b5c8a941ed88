"""Nsight Systems SQLite export (``nsys export --type sqlite``) -> GPU ops, NVTX ranges, attribution.

Frames (columns in docs/contracts.md, details in docs/nsys-parsing.md):
- ``ops``: every kernel, memcpy, memset (and whole-graph activity) on the GPU, with the CUDA API
  call that launched it (joined on correlationId within the same process);
- ``ranges``: NVTX push/pop and start/end ranges with their domain, nesting depth and full path;
- ``attribution``: (op, range) pairs, an op belonging to every range that contains the *start of
  its launch call* on the CPU: GPU work runs later than the range that queued it, so GPU times
  say nothing about which range an op belongs to.

The schema moves between nsys versions: tables and columns are probed, a missing activity table
means no such activity.
"""

from __future__ import annotations

import re
import sqlite3
import warnings
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nsightwrap.core.errors import InputNotFound, ReportParseError
from nsightwrap.core.intervals import containing, span_by_group, union_by_group
from nsightwrap.core.unpack import named_as, unpacked

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
GRAPH = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
NVTX = "NVTX_EVENTS"
ACTIVITY_TABLES = (KERNEL, MEMCPY, MEMSET, GRAPH)

SQLITE_MAGIC = b"SQLite format 3\x00"
REEXPORT = "re-export it with `nsys export --type sqlite`"

# Event type ids of NVTX_EVENTS rows; the file's ENUM_NSYS_EVENT_TYPE wins where present.
_EVENT_TYPE_DEFAULTS = {"NvtxPushPopRange": 59, "NvtxStartEndRange": 60, "NvtxDomainCreate": 75}

_API_VERSION = re.compile(r"_v\d+$")
# globalTid = (hw/vm ids << 48) | (pid << 24) | tid, and globalPid is the same with tid = 0:
# shifting right by 24 gives a per-process key common to both.
_PID_SHIFT = 24
# An NVTX range never closed (the program ended inside it) lasts to the end of time.
_OPEN_END = np.iinfo(np.int64).max

OP_KINDS = ("kernel", "memcpy", "memset", "graph")
RANGE_KINDS = ("pushpop", "startend")
OP_COLUMNS = [
    "op_id", "kind", "name", "start_ns", "end_ns", "duration_ns", "device_id", "context_id",
    "stream_id", "correlation_id", "global_pid", "launch_tid", "launch_api", "bytes",
    "graph_node_id", "grid", "block", "short_name", "launch_start_ns",
    "registers", "shared_static_bytes", "shared_dynamic_bytes",
]  # fmt: skip
RANGE_COLUMNS = [
    "range_id", "kind", "domain", "name", "path", "start_ns", "end_ns", "global_tid",
    "end_global_tid", "depth",
]  # fmt: skip
EVENT_CALL_COLUMNS = ["call", "tid", "start_ns", "end_ns"]
#: API name patterns of ``event_calls``, and the ``call`` each becomes.
_EVENT_CALLS = (("cudaEventRecord%", "record"), ("cuEventRecord%", "record"), ("cudaStreamWaitEvent%", "wait"),
                ("cuStreamWaitEvent%", "wait"))  # fmt: skip
#: Columns of ``NsysReport.setup_calls``: the API name (ABI version stripped), its family, thread
#: and host times.
SETUP_CALL_COLUMNS = ["api", "family", "tid", "start_ns", "end_ns"]
#: CUDA runtime/driver calls that set something up rather than run work, by family (name
#: patterns, all ABI versions): the one-off host work of a first use (lazy module loading runs
#: inside the first launch of a kernel; cuBLAS's handle creation shows as its library loads,
#: entry-point lookups and allocations).
SETUP_CALL_FAMILIES = (
    ("module_load", ("cuModuleLoad%", "cuLibraryLoad%", "cudaLibraryLoad%", "cuLinkCreate%", "cuLinkAddData%",
                     "cuLinkComplete%")),
    ("kernel_lookup", ("cuLibraryGetKernel%", "cuLibraryGetModule%", "cuModuleGetFunction%", "cudaGetFuncBySymbol%",
                       "cuModuleGetGlobal%", "cuLibraryGetGlobal%")),
    ("kernel_setup", ("cuKernelSetAttribute%", "cuFuncSetAttribute%", "cudaFuncSetAttribute%",
                      "cuFuncSetCacheConfig%", "cudaFuncSetCacheConfig%")),
    ("library_init", ("cuGetProcAddress%", "cudaGetDriverEntryPoint%", "cuDevicePrimaryCtxRetain%", "cuCtxCreate%",
                      "cudaStreamCreate%", "cuStreamCreate%")),
    ("graph_setup", ("cudaGraphInstantiate%", "cuGraphInstantiate%", "cudaGraphUpload%", "cuGraphUpload%")),
    ("allocation", ("cudaMalloc%", "cuMemAlloc%", "cudaHostAlloc%", "cuMemHostAlloc%", "cuMemCreate%",
                    "cuMemAddressReserve%")),
)  # fmt: skip
SUMMARY_COLUMNS = [
    "range", "ops", "kernels", "memcpy", "memset", "gpu_time_ns", "busy_ns", "span_ns",
    "instances", "graphs", "domain", "depth",
]  # fmt: skip


#: Columns of ``NsysReport.gpu_clock``: the sample's time (ns, the timeline of the ops), the
#: sampled GPU (``GPU_METRICS.typeId``, one per device) and the GPC clock in Hz.
GPU_CLOCK_COLUMNS = ["t_ns", "gpu", "gpc_clock_hz"]
#: The GPU-metrics counter read as the SM clock (Hopper and later name it so; the SM clock is
#: the GPC clock).
GPC_CLOCK_METRIC = "GPC Clock Frequency%"


@dataclass(frozen=True)
class IterationCap:
    """At most ``cap`` instances of each iteration range ``<head><i>`` (``head`` among ``heads``:
    a benchmark's ``<nvtx_path>/<iter_prefix>``) are analysed: runs of ``cap // 64`` consecutive
    instances (at least one), as many as fit in ``cap``, evenly spaced over the loop by index, the
    first run at its start and the last at its end. The instance before each run is read too, as its lead-in (the
    stream's previous op, the start event's record: a host ahead of the GPU queued them there)
    and not analysed (``NsysReport.lead_in_ranges``). The other instances, from their start to the
    loop's next instance (what runs between iterations goes with them), are not read: neither the
    ranges that start there, nor the CUDA calls made there, nor their GPU ops."""

    heads: frozenset[str]
    cap: int

    @property
    def run_length(self) -> int:
        """Consecutive instances per run (each run costs one lead-in instance more)."""
        return max(1, self.cap // 64)

    @property
    def runs(self) -> int:
        """Runs per loop."""
        return self.cap // self.run_length

    def layout(self, n: int) -> np.ndarray:
        """For a loop of ``n > cap`` instances, the first position of each run: evenly spaced, in
        integer arithmetic (the same choice on every machine), the last run ending at ``n - 1``.
        Runs never overlap: their spacing is at least ``(n - length) // (runs - 1) >= length``."""
        return (np.arange(self.runs, dtype=np.int64) * (n - self.run_length)) // max(self.runs - 1, 1)


@dataclass(frozen=True, eq=False)
class NsysReport:
    """One nsys capture: GPU ops, NVTX ranges and which ranges each op belongs to."""

    path: Path
    ops: pd.DataFrame
    ranges: pd.DataFrame
    attribution: pd.DataFrame
    #: META_DATA_EXPORT of the file (nsys version, schema version), where present.
    meta: dict[str, str] = field(default_factory=dict)
    #: CUDA calls that shape an event window, one row each (``EVENT_CALL_COLUMNS``): event records
    #: (``record``) and stream waits on an event (``wait``), with their thread and host times.
    event_calls: pd.DataFrame = field(default_factory=lambda: _empty(EVENT_CALL_COLUMNS))
    #: The GPC (SM) clock the GPU's own counters sampled (``GPU_METRICS``, nsys
    #: ``--gpu-metrics-devices``), one row per sample (``GPU_CLOCK_COLUMNS``); empty where the
    #: capture has none.
    gpu_clock: pd.DataFrame = field(default_factory=lambda: _empty(GPU_CLOCK_COLUMNS))
    #: CUDA calls that set something up (``SETUP_CALL_FAMILIES``: module and library loads,
    #: kernel lookups, graph instantiation, allocations), one row each (``SETUP_CALL_COLUMNS``),
    #: sorted by thread and start; what a first use costs on the host.
    setup_calls: pd.DataFrame = field(default_factory=lambda: _empty(SETUP_CALL_COLUMNS))
    #: Per iteration head (``IterationCap.heads``) whose loop held more instances than the cap:
    #: (instances analysed, instances in the export, runs they form). Empty where nothing was capped.
    iterations_read: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    #: ``range_id`` of the iteration instances read only as the lead-in of a run of analysed ones
    #: (``IterationCap``): their ops are real, but they are not iterations to analyse.
    lead_in_ranges: frozenset[int] = frozenset()

    def __repr__(self) -> str:
        return (
            f"NsysReport({str(self.path)!r}: {len(self.ops)} ops, {len(self.ranges)} NVTX ranges, "
            f"{len(self.gpu_clock)} GPU clock samples)"
        )

    @property
    def has_nvtx(self) -> bool:
        """Whether the capture holds any NVTX push/pop or start/end range."""
        return not self.ranges.empty


def read_nsys(path: str | Path, *, detail: bool = True, iterations: IterationCap | None = None) -> NsysReport:
    """Read an nsys ``.sqlite`` export (or ``.sqlite.gz``); raise InputNotFound / ReportParseError on bad input.

    ``detail=False`` reads only what timing and attribution need (kind, times, correlation,
    launch thread and time; range names, kinds and threads): ops' names, shapes, streams and
    API names are then NA. It reads large captures about a third faster.
    ``iterations``: read at most ``cap`` instances of each benchmark's iteration range
    (``IterationCap``; ``iterations_read`` says which loops were cut): the NVTX ranges are read
    first, and SQLite itself leaves out the calls and ops of the others.
    """
    p = unpacked(path)
    with named_as(path, p), _open(p) as con:
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            if not tables & {*ACTIVITY_TABLES, NVTX, "StringIds"}:
                raise ReportParseError(
                    f"{p} is an SQLite database but not an nsys export (no CUPTI_ACTIVITY_KIND_* "
                    f"or NVTX_EVENTS table); {REEXPORT}"
                )
            strings = _Strings(con, tables)
            ranges = _read_ranges(con, tables, detail)
            pids = _PidBounds(con)
            ranges, skip, read, lead_in = _cap_iterations(con, tables, ranges, iterations, pids)
            names = _CallNames(con, tables, detail)
            calls = _Calls(con, names, _columns(con, RUNTIME) if RUNTIME in tables else set(), skip)
            events = _read_event_calls(con, tables, names, calls) if detail else _empty(EVENT_CALL_COLUMNS)
            setup = _read_setup_calls(con, tables, strings, names, calls) if detail else _empty(SETUP_CALL_COLUMNS)
            calls.keep(names.launches)  # the rest is read: its rows need not stay while the ops are read
            ops = _read_ops(con, tables, strings, detail, names, calls, pids)
            meta = _read_meta(con, tables)
            clock = _read_gpu_clock(con, tables)
        except sqlite3.DatabaseError as exc:
            raise ReportParseError(
                f"{p} is not a readable SQLite database ({exc}; truncated or corrupt?); {REEXPORT}"
            ) from exc
        except (ValueError, TypeError, OverflowError) as exc:  # text where nsys writes a number, and the like
            raise ReportParseError(
                f"{p}: a table holds a value nsys never writes ({exc}; corrupt or edited?); {REEXPORT}"
            ) from exc
    return NsysReport(
        path=p, ops=ops, ranges=ranges, attribution=attribute(ops, ranges), meta=meta, event_calls=events,
        gpu_clock=clock, setup_calls=setup, iterations_read=read, lead_in_ranges=lead_in,
    )


def _read_gpu_clock(con: sqlite3.Connection, tables: set[str]) -> pd.DataFrame:
    """The GPC clock samples of ``GPU_METRICS``. nsys 2025.x names the metric "GPC Clock Frequency
    [MHz]" but stores Hz; a capture whose values read like MHz (under 100,000) is scaled."""
    if not {"GPU_METRICS", "TARGET_INFO_GPU_METRICS"} <= tables:
        return _empty(GPU_CLOCK_COLUMNS)
    if not {"timestamp", "typeId", "metricId", "value"} <= _columns(con, "GPU_METRICS"):
        return _empty(GPU_CLOCK_COLUMNS)
    ids = con.execute(
        "SELECT DISTINCT typeId, metricId FROM TARGET_INFO_GPU_METRICS WHERE metricName LIKE ?", (GPC_CLOCK_METRIC,)
    ).fetchall()
    if not ids:
        return _empty(GPU_CLOCK_COLUMNS)
    cond = " OR ".join(f"(typeId = {int(t)} AND metricId = {int(m)})" for t, m in ids)
    df = _query(con, {"t_ns": "timestamp", "gpu": "typeId", "gpc_clock_hz": "value"},
                f"FROM GPU_METRICS WHERE {cond} ORDER BY typeId, timestamp")  # fmt: skip
    hz = pd.to_numeric(df["gpc_clock_hz"], errors="coerce").astype(float)
    if len(hz) and float(hz.median()) < 1e5:
        hz = hz * 1e6
    return df.assign(t_ns=pd.to_numeric(df["t_ns"], errors="coerce").astype(float), gpc_clock_hz=hz)[GPU_CLOCK_COLUMNS]


def _read_event_calls(con: sqlite3.Connection, tables: set[str], names: _CallNames, calls: _Calls) -> pd.DataFrame:
    """Event records and stream waits (``event_calls``): where an event window starts and ends on
    the host, and which streams were joined (the gap decomposition reads them)."""
    rcols = _columns(con, RUNTIME) if RUNTIME in tables else set()
    if not {"globalTid", "start", "end", "nameId"} <= rcols or "StringIds" not in tables:
        return _empty(EVENT_CALL_COLUMNS)
    parts = []
    for ids, call in names.events:
        if ids:
            df = calls.take(ids, {"tid": "globalTid", "start_ns": "start", "end_ns": "end"})
            parts.append(df.assign(call=call))
    if not parts:
        return _empty(EVENT_CALL_COLUMNS)
    out = pd.concat(parts, ignore_index=True).sort_values(["tid", "start_ns"], kind="stable", ignore_index=True)
    return out[EVENT_CALL_COLUMNS]


def _read_setup_calls(
    con: sqlite3.Connection, tables: set[str], strings: _Strings, names: _CallNames, calls: _Calls
) -> pd.DataFrame:
    """The setup calls of ``SETUP_CALL_FAMILIES``: a short list of string ids (a handful of calls
    per loaded library; the runtime table holds every API call)."""
    rcols = _columns(con, RUNTIME) if RUNTIME in tables else set()
    if not {"globalTid", "start", "end", "nameId"} <= rcols or "StringIds" not in tables:
        return _empty(SETUP_CALL_COLUMNS)
    family = names.setup
    if not family:
        return _empty(SETUP_CALL_COLUMNS)
    df = calls.take(family, {"tid": "globalTid", "start_ns": "start", "end_ns": "end", "_name": "nameId"})
    if df.empty:
        return _empty(SETUP_CALL_COLUMNS)
    df["api"] = _strip_api_version(strings.lookup(df["_name"]))
    df["family"] = df["_name"].map(family).astype(object)
    df = df.sort_values(["tid", "start_ns"], kind="stable", ignore_index=True)
    return df[SETUP_CALL_COLUMNS]


@contextmanager
def _open(p: Path) -> Iterator[sqlite3.Connection]:
    if not p.exists():
        raise InputNotFound(f"{p} does not exist; give the path of an nsys .sqlite export")
    if p.is_dir():
        raise InputNotFound(f"{p} is a directory; give the path of an nsys .sqlite export")
    try:
        with p.open("rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise InputNotFound(f"{p} cannot be read ({exc.strerror})") from exc
    if head != SQLITE_MAGIC:
        raise ReportParseError(f"{p} is not an SQLite database (truncated or corrupt?); {REEXPORT}")
    # Read-only and immutable: never create journals next to a user's report.
    uri = p.resolve().as_uri() + "?mode=ro&immutable=1"
    with closing(sqlite3.connect(uri, uri=True)) as con:
        yield con


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"PRAGMA table_info([{table}])")}


# NULL stand-in while reading integer columns: no time, id or size of a real export takes it.
_NULL = -(2**63) + 1


def _query(
    con: sqlite3.Connection, exprs: dict[str, str], rest: str, text: frozenset[str] = frozenset()
) -> pd.DataFrame:
    """``SELECT exprs... rest`` as a frame, fast: exports hold millions of rows of integers.

    pandas.read_sql converts value by value; here integer NULLs become a sentinel in SQL, the rows
    become one numpy matrix in one call (int64, or objects when ``text`` names text columns),
    and the sentinel becomes NA (Int64). An integer column that holds text after all (old
    exports stored names inline) stays objects.
    """
    names = list(exprs)
    if not text and "ORDER BY" not in rest:
        fast = _int_matrix(con, [exprs[a] for a in names], rest)
        if fast is not None:
            return _frame(fast, names)
    select = ", ".join(exprs[a] if a in text else f"IFNULL({exprs[a]}, {_NULL})" for a in names)
    return _frame(_matrix(con.execute(f"SELECT {select} {rest}").fetchall(), len(names), bool(text)), names, text)


#: What SQLite's text of an integer holds: a value with anything else (a float, text) is read
#: row by row instead.
_INT_TEXT = b"0123456789,-"


def _int_matrix(con: sqlite3.Connection, exprs: list[str], rest: str) -> np.ndarray | None:
    """``SELECT exprs... rest`` (integer columns, NULL as ``_NULL``) as one int64 matrix, or None
    where a value is not an integer.

    Python's cursor builds a tuple and an int object per value (about 0.3 µs each: millions of
    rows); here SQLite hands over each column as one comma-separated text (``group_concat``, in
    the order the rows are visited, as a plain SELECT would return them) and numpy parses it in
    C. Only text made of digits, '-' and ',' is parsed, and each column must give exactly the
    row count; anything else (a float, text in an integer column, a column too long for one
    SQLite string) returns None, and the caller reads row by row as before.
    """
    select = ", ".join(f"group_concat(IFNULL({e}, {_NULL}))" for e in exprs)
    try:
        got = con.execute(f"SELECT count(*), {select} {rest}").fetchone()
    except sqlite3.DataError:  # longer than SQLite's longest string
        return None
    n = int(got[0])
    out = np.empty((n, len(exprs)), dtype=np.int64)
    if not n:
        return out
    for i, col in enumerate(got[1:]):
        if not isinstance(col, str):
            return None
        raw = col.encode("ascii", "replace")
        if raw.translate(None, _INT_TEXT):
            return None
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # text numpy cannot read to its end: not integers
                values = np.fromstring(raw, dtype=np.int64, sep=",")
        except (ValueError, DeprecationWarning):
            return None
        if len(values) != n:
            return None
        out[:, i] = values
    return out


def _matrix(rows: list[Any], width: int, text: bool) -> np.ndarray:
    """Fetched rows as one (rows, width) matrix: int64 where every value is an integer."""
    if not text:
        try:
            # One pass over the values (about 1.7x np.array's speed on a list of tuples).
            return np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=len(rows) * width).reshape(
                len(rows), width
            )
        except (TypeError, ValueError, OverflowError):
            pass
    return np.array(rows, dtype=object).reshape(len(rows), width)


def _ints(con: sqlite3.Connection, exprs: list[str], select: str, rest: str) -> np.ndarray:
    """``_int_matrix``, or where it declines, ``SELECT select rest`` row by row (``_matrix``)."""
    fast = _int_matrix(con, exprs, rest)
    if fast is not None:
        return fast
    return _matrix(con.execute(f"SELECT {select} {rest}").fetchall(), len(exprs), False)


def _frame(matrix: np.ndarray, names: list[str], text: frozenset[str] = frozenset()) -> pd.DataFrame:
    """``_query``'s frame of a fetched matrix (or a subset of its rows)."""
    if not len(matrix):
        return pd.DataFrame({a: pd.Series(dtype=object if a in text else "Int64") for a in names})
    out: dict[str, Any] = {}
    for i, a in enumerate(names):
        col = matrix[:, i]
        if a in text:
            out[a] = col
            continue
        if col.dtype == object:
            try:
                col = col.astype(np.int64)
            except (TypeError, ValueError, OverflowError):
                col = col.copy()
                col[col == _NULL] = None
                out[a] = col
                continue
        null = col == _NULL
        out[a] = pd.arrays.IntegerArray(np.ascontiguousarray(col), null) if null.any() else col
    return pd.DataFrame(out)


class _CallNames:
    """The string ids of the runtime calls the parser reads: launch APIs (``_LAUNCH_API_PATTERNS``),
    event records and waits (``_EVENT_CALLS``, with ``detail``) and setup calls
    (``SETUP_CALL_FAMILIES``, with ``detail``)."""

    def __init__(self, con: sqlite3.Connection, tables: set[str], detail: bool) -> None:
        self.launches: list[int] = []
        self.events: list[tuple[list[int], str]] = []
        self.setup: dict[int, str] = {}
        rcols = _columns(con, RUNTIME) if RUNTIME in tables else set()
        if "StringIds" not in tables or "nameId" not in rcols:
            return
        where = " OR ".join("value LIKE ?" for _ in _LAUNCH_API_PATTERNS)
        self.launches = [
            int(i) for (i,) in con.execute(f"SELECT id FROM StringIds WHERE {where}", _LAUNCH_API_PATTERNS)
        ]
        if not detail:
            return
        for pattern, call in _EVENT_CALLS:
            ids = [int(i) for (i,) in con.execute("SELECT id FROM StringIds WHERE value LIKE ?", (pattern,))]
            self.events.append((ids, call))
        for fam, patterns in SETUP_CALL_FAMILIES:
            where = " OR ".join("value LIKE ?" for _ in patterns)
            for (i,) in con.execute(f"SELECT id FROM StringIds WHERE {where}", patterns):
                self.setup.setdefault(int(i), fam)

    def all(self) -> set[int]:
        """Every id above: the runtime rows to fetch."""
        return {*self.launches, *(i for ids, _ in self.events for i in ids), *self.setup}


class _Calls:
    """The CUDA runtime calls the parser reads (launches, event records and waits, setup calls),
    fetched in one scan of the runtime table: it holds every API call (millions of rows in a long
    capture), so each further scan costs about as much as the rows read.

    ``take(ids, exprs)`` is the frame ``_query(con, exprs, "FROM RUNTIME WHERE nameId IN (ids)")``
    gives, from the rows already fetched.
    """

    COLUMNS = {"nameId": "nameId", "globalTid": "globalTid", "start": "start", "end": "end",
               "correlationId": "correlationId"}  # fmt: skip

    def __init__(
        self, con: sqlite3.Connection, names: _CallNames, rcols: set[str], skip: _Skip | None = None
    ) -> None:
        ids = names.all()
        cols = [c for c in self.COLUMNS if c in rcols]
        self._cols = cols
        #: The correlation-id windows whose GPU ops are not read (``_Skip.op_windows``): an op
        #: whose launch call was not read; None where every op is read.
        self.op_windows: _Windows | None = None
        if not ids or "nameId" not in cols:
            self._rows = np.empty((0, len(cols)), dtype=np.int64)
            return
        select = ", ".join(f"IFNULL(r.[{c}], {_NULL})" for c in cols)
        where = f"r.nameId IN ({','.join(map(str, sorted(ids)))})"
        if skip is None or "start" not in cols:
            self._rows = _ints(con, [f"r.[{c}]" for c in cols], select, f"FROM {RUNTIME} r WHERE {where}")
            return
        source, cond = skip.calls.sql(con, RUNTIME, "start")
        rows = _ints(con, [f"r.[{c}]" for c in cols], select, f"FROM {source} WHERE {cond} AND {where}")
        self._rows = rows[~skip.calls.holds(rows[:, cols.index("start")])]
        if "correlationId" in cols:
            self.op_windows = skip.op_windows(
                self._rows[:, cols.index("start")], self._rows[:, cols.index("correlationId")]
            )

    def keep(self, ids: Iterable[int]) -> None:
        """Drop every row but the calls whose nameId is among ``ids``."""
        if len(self._rows):
            self._rows = self._rows[np.isin(self._rows[:, self._cols.index("nameId")], np.fromiter(ids, dtype=np.int64))]

    def take(self, ids: Iterable[int], exprs: dict[str, str]) -> pd.DataFrame:
        """Calls whose nameId is among ``ids``: ``exprs`` maps each alias to a runtime column."""
        names = list(exprs)
        if not len(self._rows):
            return _frame(self._rows, names)
        sub = self._rows[np.isin(self._rows[:, self._cols.index("nameId")], np.fromiter(ids, dtype=np.int64))]
        return _frame(sub[:, [self._cols.index(exprs[a]) for a in names]], names)


class _Windows:
    """Sorted, disjoint half-open windows ``[starts, ends)`` of one integer column (a call's host
    start, an op's correlationId) whose rows are not read, and how SQLite leaves them out.

    Exports carry no indexes, so "does this row's value lie in a window" costs a B-tree search
    per row when asked in SQL. Instead the table's rows are taken in blocks of consecutive
    rowids, between samples of the column (one every few hundred rows: about ``_BLOCKS`` a
    window): a block whose sampled values span at most ``_SLOTS`` windows gets those windows as
    plain comparisons (in nsys's exports rowid order follows time, so most blocks lie in one
    window or none), a block of any other shape (values out of order, NULL, more windows) none.
    SQL so leaves out most rows in windows at a few comparisons a row (it still visits them), and
    ``holds`` finds the rest in numpy: the rows read are exactly those outside every window,
    whatever the row order; an order that does not follow the column costs time only."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray) -> None:
        self.starts, self.ends = starts, ends

    def holds(self, values: np.ndarray) -> np.ndarray:
        """Where each value (``_NULL`` for NULL: in no window) lies in a window."""
        w = np.searchsorted(self.starts, values, side="right") - 1
        if not len(self.starts):
            return np.zeros(len(values), dtype=bool)
        return (w >= 0) & (values < self.ends[np.maximum(w, 0)]) & (values != _NULL)

    def sql(self, con: sqlite3.Connection, table: str, column: str) -> tuple[str, str]:
        """The FROM source (``table`` as ``r``) and WHERE condition that read ``table`` without
        most of its rows whose ``column`` lies in a window (``holds`` finds the rest)."""
        whole = f"[{table}] r", "1"
        # Two queries: SQLite finds MIN or MAX of the rowid alone by a seek, both at once by a scan.
        (lo,) = con.execute(f"SELECT MIN(rowid) FROM [{table}]").fetchone()
        (hi,) = con.execute(f"SELECT MAX(rowid) FROM [{table}]").fetchone()
        if lo is None or not len(self.starts):
            return whole
        lo, hi = int(lo), int(hi)
        step = max(_MIN_BLOCK, (hi - lo + 1) // (_BLOCKS * len(self.starts)))
        probes = con.execute(
            f"WITH RECURSIVE k(i) AS (VALUES({lo}) UNION ALL SELECT i + {step} FROM k WHERE i + {step} <= {hi}) "
            f"SELECT r.rowid, IFNULL(r.[{column}], {_NULL}) FROM k CROSS JOIN [{table}] r ON r.rowid = k.i "
            f"UNION SELECT rowid, IFNULL([{column}], {_NULL}) FROM [{table}] WHERE rowid = {hi} ORDER BY 1"
        ).fetchall()
        m = _matrix(probes, 2, False)
        if m.dtype != np.int64 or not len(m):
            return whole
        at, v = m[:, 0], m[:, 1]
        # Block j: rowids [at[j], at[j + 1]), its values (in rowid order) from v[j] to v[j + 1];
        # the last block is the last row alone.
        first, last = v, np.r_[v[1:], v[-1:]]
        ok = (first != _NULL) & (last != _NULL) & (first <= last)
        # Windows [s, e) meeting [first, last]: from the first ending after ``first`` to the last
        # starting at or before ``last``.
        w0 = np.searchsorted(self.ends, first, side="right")
        n = np.searchsorted(self.starts, last, side="right") - w0
        ok &= n <= _SLOTS
        # As many comparisons a row as the most windows a block meets (each costs SQLite a few
        # instructions a row).
        width = int(n[ok].max()) if ok.any() else 0
        if not width:
            return whole
        slots = np.zeros((len(at), 2 * width), dtype=np.int64)  # [0, 0): no window
        for k in range(width):
            use = ok & (n > k)
            slots[use, 2 * k] = self.starts[w0[use] + k]
            slots[use, 2 * k + 1] = self.ends[w0[use] + k]
        # Neighbouring blocks alike (the rows of one window, or of none) become one.
        new = np.ones(len(at), dtype=bool)
        new[1:] = (slots[1:] != slots[:-1]).any(axis=1)
        starts = at[new]
        stops = np.r_[starts[1:], hi + 1]
        name = f"nw_blocks_{table.lower()}_{column.lower()}"
        cols = ", ".join(f"nw_s{k} INTEGER NOT NULL, nw_e{k} INTEGER NOT NULL" for k in range(width))
        con.execute(f"DROP TABLE IF EXISTS temp.{name}")
        con.execute(f"CREATE TEMP TABLE {name} (nw_a INTEGER PRIMARY KEY, nw_b INTEGER NOT NULL, {cols})")
        con.executemany(
            f"INSERT INTO temp.{name} VALUES ({', '.join('?' * (2 + 2 * width))})",
            np.column_stack([starts, stops, slots[new]]).tolist(),
        )
        c = f"r.[{column}]"
        cond = " AND ".join(
            ["r.rowid >= g.nw_a AND r.rowid < g.nw_b"]
            + [f"({c} IS NULL OR {c} < g.nw_s{k} OR {c} >= g.nw_e{k})" for k in range(width)]
        )
        return f"temp.{name} g CROSS JOIN [{table}] r", cond


#: Windows named per block of rows at most (more: no condition, every row of the block read).
_SLOTS = 4
#: Blocks sampled per window (about: a window spans a few blocks, a block rarely more than two windows).
_BLOCKS = 2
#: Rows per block at least: each sample and each block costs SQLite a B-tree search.
_MIN_BLOCK = 32


class _Skip:
    """The host-time windows of the iteration instances ``IterationCap`` leaves out: a CUDA call
    is read unless it started inside one (``[start, end)``, as ``attribute`` has it), and a GPU
    op unless its correlationId lies between the ids of the calls read just before and just
    after such a window. Correlation ids count the CUDA calls of a process in the order they were
    made, so the ids a window's calls took lie in that gap; a capture of one process only is
    capped (``_cap_iterations``). An op whose launch call is read after all finds it
    (``_join_launches``)."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray) -> None:
        #: Disjoint, sorted windows of host time.
        self.calls = _Windows(starts, ends)

    def op_windows(self, start: np.ndarray, corr: np.ndarray) -> _Windows | None:
        """The correlation-id windows of the ops not read, from the calls read (``start``,
        ``corr``: their host starts and correlation ids)."""
        if not len(start):
            return None
        order = np.argsort(start, kind="stable")
        t = start[order]
        c = corr[order]
        # Per window: the highest id of a call read before it, the lowest of one read after it.
        below = np.maximum.accumulate(np.where(c == _NULL, -1, c))
        above = np.minimum.accumulate(np.where(c == _NULL, _NO_ID, c)[::-1])[::-1]
        i = np.searchsorted(t, self.calls.starts, side="left") - 1
        j = np.searchsorted(t, self.calls.ends, side="left")
        lo = np.where(i >= 0, below[np.maximum(i, 0)], -1)
        hi = np.where(j < len(t), above[np.minimum(j, len(t) - 1)], _NO_ID)
        # Gaps in id order, overlapping ones merged (windows with no call read between them);
        # the ids strictly between lo and hi: [lo + 1, hi).
        o = np.argsort(lo, kind="stable")
        lo, hi = lo[o], hi[o]
        reach = np.maximum.accumulate(hi)
        new = np.ones(len(lo), dtype=bool)
        new[1:] = lo[1:] >= reach[:-1]
        first = np.flatnonzero(new)
        last = np.r_[first[1:], len(lo)] - 1
        s, e = lo[first] + 1, reach[last]
        keep = s < e  # an empty gap (adjacent ids) holds no op
        return _Windows(s[keep], e[keep])


#: Above every correlation id (32-bit in CUPTI).
_NO_ID = 2**62


def _cap_iterations(
    con: sqlite3.Connection, tables: set[str], ranges: pd.DataFrame, cap: IterationCap | None, pids: _PidBounds
) -> tuple[pd.DataFrame, _Skip | None, dict[str, tuple[int, int, int]], frozenset[int]]:
    """``ranges`` without the iteration instances ``cap`` leaves out (and the ranges that start
    inside them), the windows to skip, what was analysed of each capped loop
    (``NsysReport.iterations_read``) and the range ids of the lead-in instances."""
    none: frozenset[int] = frozenset()
    if cap is None or ranges.empty or not cap.heads or cap.cap < 2:
        return ranges, None, {}, none
    paths = ranges["path"].astype(str).tolist()
    heads = [p.rstrip("0123456789") for p in paths]
    # As iterations.nsys_iterations splits a path; a path it splits otherwise is not capped.
    rows = [i for i, (p, h) in enumerate(zip(paths, heads, strict=True))
            if h in cap.heads and len(h) < len(p) and "\n" not in p and not h[-1:].isdecimal()]  # fmt: skip
    df = pd.DataFrame(
        {
            "head": [heads[i] for i in rows],
            "index": [int(paths[i][len(heads[i]) :]) for i in rows],
            "start": ranges["start_ns"].to_numpy(dtype=np.int64)[rows],
            "end": ranges["end_ns"].astype("float64").to_numpy()[rows],
            "row": np.asarray(rows, dtype=np.int64),
        }
    )
    sizes = df.groupby("head").size()
    over = sizes[sizes > cap.cap]
    if over.empty or not _one_process(con, tables, ranges, pids):
        return ranges, None, {}, none
    df = df[df["head"].isin(over.index)].sort_values(["head", "index", "start"], kind="stable")
    if df["end"].isna().any():  # an iteration never closed: its loop is read whole
        open_heads = set(df.loc[df["end"].isna(), "head"])
        df = df[~df["head"].isin(open_heads)]
        over = over.drop(list(open_heads))
        if over.empty:
            return ranges, None, {}, none
    pos = df.groupby("head", sort=False).cumcount().to_numpy(dtype=np.int64)
    kept = np.zeros(len(df), dtype=bool)
    lead = np.zeros(len(df), dtype=bool)
    length = cap.run_length
    at = 0
    for m in df.groupby("head", sort=False).size().tolist():  # one loop per capped benchmark
        firsts = cap.layout(m)
        p = pos[at : at + m]
        run = np.searchsorted(firsts, p, side="right") - 1
        kept[at : at + m] = (run >= 0) & (p - firsts[np.maximum(run, 0)] < length)
        lead[at : at + m] = np.isin(p + 1, firsts[firsts > 0])
        at += m
    lead &= ~kept
    # An instance left out takes with it what follows it up to the loop's next instance (the
    # flush, the event records and the like between iterations), so that what is read keeps the
    # loop's proportions; the last instance in time keeps what follows it.
    by_time = df.assign(_gone=~kept & ~lead).sort_values(["head", "start"], kind="stable")
    nxt = by_time.groupby("head", sort=False)["start"].shift(-1)
    until = nxt.fillna(by_time["end"]).to_numpy(dtype=np.int64)
    gone = by_time["_gone"].to_numpy()
    ws, we = _disjoint(by_time["start"].to_numpy(dtype=np.int64)[gone], until[gone])
    t = ranges["start_ns"].to_numpy(dtype=np.int64)
    w = np.searchsorted(ws, t, side="right") - 1
    inside = (w >= 0) & (t < we[np.maximum(w, 0)]) if len(ws) else np.zeros(len(t), dtype=bool)
    is_lead = np.zeros(len(ranges), dtype=bool)
    is_lead[df["row"].to_numpy()[lead]] = True
    out = ranges[~inside].reset_index(drop=True)
    out["range_id"] = np.arange(len(out), dtype=np.int64)
    lead_ids = frozenset(np.flatnonzero(is_lead[~inside]).tolist())
    read = {str(h): (cap.runs * length, int(m), cap.runs) for h, m in over.items()}
    return out, _Skip(ws, we) if len(ws) else None, read, lead_ids


def _disjoint(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Windows ``[s, e)`` sorted and merged where they overlap or touch."""
    o = np.argsort(s, kind="stable")
    s, e = s[o], e[o]
    if not len(s):
        return s, e
    reach = np.maximum.accumulate(e)
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > reach[:-1]  # half-open: touching windows merge
    first = np.flatnonzero(new)
    last = np.r_[first[1:], len(s)] - 1
    return s[first], reach[last]


def _one_process(con: sqlite3.Connection, tables: set[str], ranges: pd.DataFrame, pids: _PidBounds) -> bool:
    """Whether the NVTX ranges and every GPU op come from one process (``_Skip`` needs it)."""
    seen = set(np.right_shift(ranges["global_tid"].dropna().to_numpy(dtype=np.int64), _PID_SHIFT).tolist())
    for table in ACTIVITY_TABLES:
        if table in tables and "globalPid" in _columns(con, table):
            lo, hi = pids.bounds(table)
            if lo is not None and hi is not None:
                seen |= {lo >> _PID_SHIFT, hi >> _PID_SHIFT}
    return len(seen) <= 1


class _PidBounds:
    """MIN and MAX of an activity table's globalPid, each table scanned once: the iteration cap's
    single-process check and ``_read_activity`` both ask (a scan of millions of ops each)."""

    def __init__(self, con: sqlite3.Connection) -> None:
        self._con = con
        self._seen: dict[str, tuple[int | None, int | None]] = {}

    def bounds(self, table: str) -> tuple[int | None, int | None]:
        """(MIN, MAX) of ``table``'s globalPid; (None, None) where it holds no value."""
        if table not in self._seen:
            lo, hi = self._con.execute(f"SELECT MIN(globalPid), MAX(globalPid) FROM [{table}]").fetchone()
            self._seen[table] = (None, None) if lo is None else (int(lo), int(hi))
        return self._seen[table]


class _Strings:
    """StringIds lookups, reading only the ids a frame uses (StringIds can be large)."""

    def __init__(self, con: sqlite3.Connection, tables: set[str]) -> None:
        self._con = con
        self._ok = "StringIds" in tables

    def lookup(self, ids: pd.Series) -> pd.Series:
        """Map a column of string ids (or of text, in old exports) to text; unknown ids -> NA."""
        if ids.empty:
            return pd.Series(pd.NA, index=ids.index, dtype=object)
        if ids.dtype == object and ids.map(lambda v: isinstance(v, str)).any():
            return ids
        if not self._ok:
            return pd.Series(pd.NA, index=ids.index, dtype=object)
        wanted = pd.unique(ids.dropna().astype(np.int64))
        table: dict[int, str] = {}
        for i in range(0, len(wanted), 50_000):
            chunk = ",".join(str(int(v)) for v in wanted[i : i + 50_000])
            table.update(self._con.execute(f"SELECT id, value FROM StringIds WHERE id IN ({chunk})"))
        return ids.map(table)


def _read_ops(
    con: sqlite3.Connection, tables: set[str], strings: _Strings, detail: bool, names: _CallNames, calls: _Calls,
    pids: _PidBounds,
) -> pd.DataFrame:
    present = [
        (t, k) for t, k in ((KERNEL, "kernel"), (MEMCPY, "memcpy"), (MEMSET, "memset"), (GRAPH, "graph"))
    ]
    parts = [_read_activity(con, t, k, strings, detail, calls.op_windows, pids) for t, k in present if t in tables]
    parts = [p for p in parts if not p.empty]
    if not parts:
        return _empty(OP_COLUMNS)
    ops = pd.concat(parts, ignore_index=True)
    # Categorical: millions of rows, four values, compared often.
    ops["kind"] = pd.Categorical(ops["kind"], categories=OP_KINDS)
    ops = _join_launches(con, tables, ops, strings, detail, names, calls)
    ops = ops.sort_values(["start_ns", "end_ns", "kind"], kind="stable", ignore_index=True)
    ops["op_id"] = np.arange(len(ops), dtype=np.int64)
    ops["duration_ns"] = ops["end_ns"] - ops["start_ns"]
    return ops[OP_COLUMNS]


def _read_activity(
    con: sqlite3.Connection, table: str, kind: str, strings: _Strings, detail: bool,
    windows: _Windows | None = None, pids: _PidBounds | None = None,
) -> pd.DataFrame:
    cols = _columns(con, table)
    if not {"start", "end"} <= cols:
        return _empty(OP_COLUMNS)
    name_col = next((c for c in ("demangledName", "name", "mangledName", "shortName") if c in cols), None)
    wanted = {
        "start_ns": "start", "end_ns": "end", "device_id": "deviceId", "context_id": "contextId",
        "stream_id": "streamId", "correlation_id": "correlationId", "global_pid": "globalPid",
        "bytes": "bytes", "graph_node_id": "graphNodeId", "_short": "shortName", "_copy_kind": "copyKind",
        "_graph_id": "graphId",
    }  # fmt: skip
    if name_col:
        wanted["_name"] = name_col
    if not detail:
        wanted = {
            a: c for a, c in wanted.items() if a in ("start_ns", "end_ns", "correlation_id", "global_pid")
        }
    # Only columns this export has: fewer columns to fetch, and old schemas lack some.
    exprs = {alias: f"[{c}]" for alias, c in wanted.items() if c in cols}
    if detail and {"gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ"} <= cols:
        # Launch shape packed in one integer per triple (y, z < 2^16, x < 2^31): fewer columns.
        exprs["_grid"] = "(gridX << 32) | (gridY << 16) | gridZ"
        exprs["_block"] = "(blockX << 32) | (blockY << 16) | blockZ"
    if detail and {"registersPerThread", "staticSharedMemory", "dynamicSharedMemory"} <= cols:
        # A kernel's resources (registers per thread < 2^16, shared memory per block in bytes
        # < 2^24 each) packed in one integer: which compiled variant ran (analysis/autotuned.py).
        exprs["_res"] = "(registersPerThread << 48) | (staticSharedMemory << 24) | dynamicSharedMemory"
    single_pid = None
    pids = pids or _PidBounds(con)
    if "global_pid" in exprs:
        # One process (the usual case): a cheap scan in SQLite saves a column of Python ints.
        lo, hi = pids.bounds(table)
        if lo is not None and lo == hi:
            single_pid = lo
            del exprs["global_pid"]
    where = "start IS NOT NULL AND end IS NOT NULL"
    source = f"[{table}]"
    skip = windows if windows is not None and "correlation_id" in exprs else None
    if skip is not None:
        source, cond = skip.sql(con, table, "correlationId")
        where += " AND " + cond
    df = _query(con, exprs, f"FROM {source} WHERE {where}")
    if skip is not None and not df.empty:  # the ops in a window that SQL let through
        corr = df["correlation_id"].fillna(_NULL).to_numpy(dtype=np.int64)
        df = df[~skip.holds(corr)].reset_index(drop=True)
    if df.empty:
        return _empty(OP_COLUMNS)
    if single_pid is not None:
        df["global_pid"] = np.full(len(df), single_pid, dtype=np.int64)
    needed = ["device_id", "context_id", "stream_id", "bytes", "graph_node_id", "_short", "_copy_kind"]
    for alias in [*wanted, *needed, "_graph_id", "_name", "_grid", "_block", "_res"]:
        if alias not in df:
            df[alias] = pd.NA
    df["kind"] = kind
    if detail:
        df["name"] = _op_names(con, df, kind, strings)
        df["short_name"] = strings.lookup(df["_short"]) if kind == "kernel" else df["name"]
    else:
        df["name"] = df["short_name"] = pd.NA
    if detail and kind == "kernel" and df["_grid"].notna().any():
        df["grid"] = _xyz(df["_grid"])
        df["block"] = _xyz(df["_block"])
    else:
        df["grid"] = pd.NA
        df["block"] = pd.NA
    res = pd.Series(_int64_or_na(df["_res"]), index=df.index)
    for col, shift, bits in (("registers", 48, 16), ("shared_static_bytes", 24, 24), ("shared_dynamic_bytes", 0, 24)):
        df[col] = (res // (1 << shift)) % (1 << bits)  # nullable ints have no >> or &; NA but for kernels
    for c in ("start_ns", "end_ns"):
        df[c] = df[c].astype(np.int64)
    for c in (
        "device_id",
        "context_id",
        "stream_id",
        "correlation_id",
        "global_pid",
        "bytes",
        "graph_node_id",
    ):
        df[c] = _int64_or_na(df[c])
    df["op_id"] = 0
    df["duration_ns"] = 0
    for c in ("launch_tid", "launch_start_ns", "launch_api"):
        df[c] = pd.NA
    return df[OP_COLUMNS]


#: Name patterns of the CUDA calls that put work on the GPU (runtime and driver API, all ABI
#: versions). Only a speed-up: ops whose launch is not among them are looked up by correlationId.
_LAUNCH_API_PATTERNS = (
    "cudaLaunch%", "cuLaunch%", "cudaMemcpy%", "cuMemcpy%", "cudaMemset%", "cuMemset%",
    "cudaGraphLaunch%", "cuGraphLaunch%",
)  # fmt: skip


def _join_launches(
    con: sqlite3.Connection, tables: set[str], ops: pd.DataFrame, strings: _Strings, detail: bool,
    names: _CallNames, calls_read: _Calls,
) -> pd.DataFrame:
    """Add the CUDA API call that launched each op: its thread, start time and name.

    The runtime table is the largest of an export by far (every API call, ~10 per kernel under
    PyTorch) and exports carry no indexes, so a SQL join would index it first. Instead: one scan
    for the calls whose name is a launch API (a short list of string ids), matched to ops in
    pandas on correlationId and process (correlationIds are unique per process only); then, only
    for ops still unmatched, one scan for their correlationIds.
    """
    rcols = _columns(con, RUNTIME) if RUNTIME in tables else set()
    if not {"correlationId", "globalTid", "start"} <= rcols:
        return ops
    exprs = {"correlation_id": "correlationId", "launch_tid": "globalTid", "launch_start_ns": "start"}
    if detail and "nameId" in rcols:
        exprs["_api"] = "nameId"
    ops = ops.drop(columns=["launch_tid", "launch_start_ns", "launch_api"])
    calls = pd.DataFrame({c: pd.Series(dtype="Int64") for c in exprs})
    if "nameId" in rcols and "StringIds" in tables and names.launches:
        calls = calls_read.take(names.launches, exprs)
        calls_read.keep(())  # every row read is now in ``calls``: not held twice during the join
    merged = _merge_launches(ops, calls, strings)
    missing = merged["launch_tid"].isna() & merged["correlation_id"].notna()
    if missing.any():
        ids = ",".join(str(int(c)) for c in pd.unique(merged.loc[missing, "correlation_id"]))
        more = _query(con, exprs, f"FROM {RUNTIME} WHERE correlationId IN ({ids})")
        if not more.empty:
            merged = _merge_launches(ops, pd.concat([calls, more], ignore_index=True), strings)
    return merged


def _merge_launches(ops: pd.DataFrame, calls: pd.DataFrame, strings: _Strings) -> pd.DataFrame:
    """Ops with the columns of their launch call, matched on correlationId within one process.

    A sorted-array join (numpy searchsorted) on one int64 key, process code << 32 | correlationId
    (CUPTI correlation ids are 32-bit): several times faster than a DataFrame merge at 10^6 rows.
    Should an export repeat a (process, correlationId), the first call wins.
    """
    ops_pid = np.right_shift(ops["global_pid"].fillna(-1).to_numpy(dtype=np.int64), _PID_SHIFT)
    call_pid = np.right_shift(calls["launch_tid"].fillna(-1).to_numpy(dtype=np.int64), _PID_SHIFT)
    both = np.concatenate([ops_pid, call_pid])
    if both.size and both.min() == both.max():
        ops_code, call_code = np.zeros(len(ops), np.int64), np.zeros(len(calls), np.int64)
    else:
        codes, _ = pd.factorize(both)
        ops_code, call_code = codes[: len(ops)].astype(np.int64), codes[len(ops) :].astype(np.int64)
    op_corr = ops["correlation_id"].fillna(-1).to_numpy(dtype=np.int64)
    call_corr = calls["correlation_id"].fillna(-1).to_numpy(dtype=np.int64)
    op_key = np.where(op_corr >= 0, (ops_code << 32) | (op_corr & 0xFFFFFFFF), -1)
    call_key = np.where(call_corr >= 0, (call_code << 32) | (call_corr & 0xFFFFFFFF), -2)
    order = np.argsort(call_key, kind="stable")
    sorted_keys = call_key[order]
    pos = np.minimum(np.searchsorted(sorted_keys, op_key, side="left"), max(len(order) - 1, 0))
    hit = (sorted_keys[pos] == op_key) if len(order) else np.zeros(len(ops), dtype=bool)
    row = order[pos] if len(order) else pos
    out = ops.copy()
    for src, dst in (("launch_tid", "launch_tid"), ("launch_start_ns", "launch_start_ns")):
        values = calls[src].fillna(0).to_numpy(dtype=np.int64)
        out[dst] = pd.arrays.IntegerArray(values[row] if len(order) else np.zeros(len(ops), np.int64), ~hit)
    if "_api" in calls and len(order):
        api = _strip_api_version(strings.lookup(calls["_api"])).to_numpy(dtype=object)
        picked = api[row]
        picked[~hit] = None
        out["launch_api"] = picked
    else:
        out["launch_api"] = None
    return out


def _op_names(con: sqlite3.Connection, df: pd.DataFrame, kind: str, strings: _Strings) -> pd.Series:
    if kind == "kernel":
        return strings.lookup(df["_name"]).fillna("<unnamed kernel>")
    if kind == "memcpy":
        # The label nsys itself prints: "[CUDA memcpy Device-to-Device]".
        labels = _enum(con, "ENUM_CUDA_MEMCPY_OPER")
        codes = df["_copy_kind"].astype("Int64")
        kinds = codes.map(labels).astype(object)
        unknown = kinds.isna() & codes.notna()
        kinds[unknown] = "kind " + codes[unknown].astype(str)
        return ("[CUDA memcpy " + kinds.fillna("").astype(str) + "]").str.replace(" ]", "]", regex=False)
    if kind == "memset":
        return pd.Series("[CUDA memset]", index=df.index)
    gid = df["_graph_id"].astype("Int64")
    return ("[CUDA graph " + gid.astype(str).where(gid.notna(), "") + "]").str.replace(" ]", "]", regex=False)


def _enum(con: sqlite3.Connection, table: str) -> dict[int, str]:
    try:
        return {int(i): str(label) for i, label in con.execute(f"SELECT id, label FROM [{table}]")}
    except sqlite3.OperationalError:  # no such table in this nsys version
        return {}


def _strip_api_version(api: pd.Series) -> pd.Series:
    """API names without their ABI version ("cudaLaunchKernel_v7000" -> "cudaLaunchKernel")."""
    codes, uniques = pd.factorize(api)
    stripped = np.array([_API_VERSION.sub("", str(u)) for u in uniques] + [None], dtype=object)
    return pd.Series(stripped[codes], index=api.index, dtype=object)  # code -1 (missing) -> None


def _xyz(packed: pd.Series) -> pd.Series:
    """ "x,y,z" text of packed launch dimensions, formatted once per distinct shape (there are few)."""
    codes, uniques = pd.factorize(packed)
    text = np.array(
        [f"{int(u) >> 32},{(int(u) >> 16) & 0xFFFF},{int(u) & 0xFFFF}" for u in uniques] + [None],
        dtype=object,
    )
    return pd.Series(text[codes], index=packed.index, dtype=object)  # code -1 (missing) -> None


def _int64_or_na(col: pd.Series) -> pd.Series | pd.arrays.IntegerArray:
    """``col`` as Int64 (nullable), cheaply when it is already int64 or entirely missing."""
    if col.dtype == np.int64 or col.dtype == "Int64":
        return col
    if col.isna().all():
        n = len(col)
        return pd.arrays.IntegerArray(np.zeros(n, dtype=np.int64), np.ones(n, dtype=bool))
    return col.astype("Int64")


def _empty(columns: list[str]) -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=object) for c in columns})


def _event_types(con: sqlite3.Connection, tables: set[str]) -> dict[str, int]:
    types = dict(_EVENT_TYPE_DEFAULTS)
    if "ENUM_NSYS_EVENT_TYPE" in tables:
        names = ",".join(f"'{n}'" for n in types)
        for i, name in con.execute(f"SELECT id, name FROM ENUM_NSYS_EVENT_TYPE WHERE name IN ({names})"):
            types[str(name)] = int(i)
    return types


def _read_ranges(con: sqlite3.Connection, tables: set[str], detail: bool) -> pd.DataFrame:
    if NVTX not in tables:
        return _empty(RANGE_COLUMNS)
    cols = _columns(con, NVTX)
    if not {"start", "eventType"} <= cols:
        return _empty(RANGE_COLUMNS)
    et = _event_types(con, tables)
    pushpop, startend, domain_create = et["NvtxPushPopRange"], et["NvtxStartEndRange"], et["NvtxDomainCreate"]

    text = "e.text" if "text" in cols else "NULL"
    join = ""
    if "textId" in cols and "StringIds" in tables:
        text = f"COALESCE({text}, s.value)"
        join = " LEFT JOIN StringIds s ON s.id = e.textId"

    def col(name: str) -> str:
        return f"e.[{name}]" if name in cols else "NULL"

    exprs = {
        "start_ns": "e.start", "end_ns": col("end"), "_type": "e.eventType", "name": text,
        "global_tid": col("globalTid"), "end_global_tid": col("endGlobalTid"), "domain_id": col("domainId"),
    }  # fmt: skip
    if not detail:
        del exprs["end_global_tid"]
    where = f"e.eventType IN ({pushpop}, {startend}, {domain_create})"
    ev = _ranges_by_text(con, exprs, where, "text" in cols, bool(join))
    if ev is None:
        ev = _query(con, exprs, f"FROM {NVTX} e{join} WHERE {where} ORDER BY e.rowid", text=frozenset({"name"}))
    ev["_row"] = np.arange(len(ev))  # rowid order: the order nsys wrote the events in
    if "end_global_tid" not in ev:
        ev["end_global_tid"] = _int64_or_na(pd.Series(pd.NA, index=ev.index))
    ev["domain_id"] = ev["domain_id"].fillna(0).astype(np.int64)
    ev["global_tid"] = ev["global_tid"].astype("Int64")
    ev["_pid"] = np.right_shift(ev["global_tid"].fillna(0).to_numpy(dtype=np.int64), _PID_SHIFT)
    created = ev[ev["_type"] == domain_create]
    ev = ev[ev["_type"].isin([pushpop, startend])].copy()
    if ev.empty:
        return _empty(RANGE_COLUMNS)
    # Domain ids are per process; domain 0 is the default domain, which has no name.
    names = created.drop_duplicates(["_pid", "domain_id"]).set_index(["_pid", "domain_id"])["name"]
    key = pd.MultiIndex.from_arrays([ev["_pid"], ev["domain_id"]])
    ev["domain"] = pd.Series(names.reindex(key).to_numpy(), index=ev.index)
    by_id = created.drop_duplicates("domain_id").set_index("domain_id")["name"]
    ev["domain"] = ev["domain"].fillna(ev["domain_id"].map(by_id))
    ev.loc[ev["domain_id"] == 0, "domain"] = None
    ev["name"] = ev["name"].fillna("")
    ev["kind"] = pd.Categorical(
        np.where(ev["_type"] == pushpop, "pushpop", "startend"), categories=RANGE_KINDS
    )
    ev["start_ns"] = ev["start_ns"].astype(np.int64)
    ev["end_ns"] = ev["end_ns"].astype("Int64")
    ev["end_global_tid"] = ev["end_global_tid"].astype("Int64")
    ev["depth"] = 0
    ev["path"] = _prefix(ev["domain"]) + ev["name"]
    pp = ev[ev["kind"] == "pushpop"]
    if not pp.empty:
        depth, path = _nest(pp)
        ev.loc[pp.index, "depth"] = depth
        ev.loc[pp.index, "path"] = path
    ev = ev.sort_values(["start_ns", "depth", "_row"], kind="stable", ignore_index=True)
    ev["range_id"] = np.arange(len(ev), dtype=np.int64)
    ev["depth"] = ev["depth"].astype(np.int64)
    return ev[RANGE_COLUMNS]


def _ranges_by_text(
    con: sqlite3.Connection, exprs: dict[str, str], where: str, inline: bool, by_id: bool
) -> pd.DataFrame | None:
    """``_read_ranges``' query (``name``: ``COALESCE(e.text, StringIds.value)``) with its integer
    columns read by ``_int_matrix``, in rowid order: the text of each distinct ``textId`` looked
    up once, inline text read for the rows that have it. None where ``_int_matrix`` declines or
    StringIds repeats an id (the join would repeat rows): read row by row then."""
    ints = [a for a in exprs if a != "name"]
    m = _int_matrix(con, ["e.rowid", *(exprs[a] for a in ints), "e.textId" if by_id else "NULL"],
                    f"FROM {NVTX} e WHERE {where}")  # fmt: skip
    if m is None:
        return None
    if not len(m):
        return _frame(m, list(exprs), frozenset({"name"}))
    if len(m) > 1 and (np.diff(m[:, 0]) < 0).any():
        m = m[np.argsort(m[:, 0], kind="stable")]
    rowid, ids = m[:, 0], m[:, -1]
    name = np.full(len(m), None, dtype=object)
    if by_id:
        wanted = np.unique(ids[ids != _NULL])
        found: dict[Any, Any] = {}
        rows = 0
        for i in range(0, len(wanted), 50_000):
            chunk = ",".join(map(str, wanted[i : i + 50_000].tolist()))
            got = con.execute(f"SELECT id, value FROM StringIds WHERE id IN ({chunk})").fetchall()
            rows += len(got)
            found.update(got)
        if rows != len(found):
            return None
        codes, uniques = pd.factorize(ids)
        text = np.array([found.get(int(u)) for u in uniques] + [None], dtype=object)
        name = text[codes]
    if inline:
        got = con.execute(f"SELECT e.rowid, e.text FROM {NVTX} e WHERE {where} AND e.text IS NOT NULL").fetchall()
        if got:
            at = np.searchsorted(rowid, np.fromiter((r for r, _ in got), dtype=np.int64, count=len(got)))
            name[at] = [t for _, t in got]
    frame = _frame(m[:, 1:-1], ints)
    frame.insert(list(exprs).index("name"), "name", name)
    return frame


def _prefix(domain: pd.Series) -> pd.Series:
    return (domain.astype(object) + ":").where(domain.notna(), "").astype(object)


def _nest(pp: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Depth and full path of push/pop ranges, nested per (thread, domain), vectorized.

    Push/pop ranges of one thread and domain form a stack, so they nest properly. Sorting each
    group by (start, longest first) and walking +1 at each start and -1 at each end gives the
    depth; a range's parent is the last range before it, in that order, one level up.
    """
    end = pp["end_ns"].astype("float64").fillna(float(_OPEN_END)).astype(np.int64)
    df = pd.DataFrame(
        {
            "g_tid": pp["global_tid"].fillna(-1).astype(np.int64),
            "g_dom": pp["domain_id"].to_numpy(),
            "s": pp["start_ns"].to_numpy(),
            "e": end.to_numpy(),
            "neg_e": -end.to_numpy(),
        },
        index=pp.index,
    )
    df = df.sort_values(["g_tid", "g_dom", "s", "neg_e"], kind="stable")
    n = len(df)
    group = df.groupby(["g_tid", "g_dom"], sort=False).ngroup().to_numpy()
    # Events: (group, time, order) with ends before starts at equal times (ranges are half-open),
    # except that a zero-length range's end comes after its own start.
    s, e = df["s"].to_numpy(), df["e"].to_numpy()
    zero = e == s
    ev_group = np.concatenate([group, group])
    ev_time = np.concatenate([s, e])
    ev_order = np.concatenate([np.ones(n), np.where(zero, 2, 0)])
    ev_seq = np.concatenate([np.arange(n), np.arange(n)])
    ev_delta = np.concatenate([np.ones(n, dtype=np.int64), -np.ones(n, dtype=np.int64)])
    order = np.lexsort((ev_seq, ev_order, ev_time, ev_group))
    level = np.cumsum(ev_delta[order])
    is_start = order < n
    # Each group's events sum to zero (every range ends), so the running sum needs no reset.
    depth = np.empty(n, dtype=np.int64)
    depth[order[is_start]] = level[is_start] - 1
    names = pp.loc[df.index, "name"].to_numpy(dtype=object)
    prefix = _prefix(pp.loc[df.index, "domain"]).to_numpy(dtype=object)
    path = np.empty(n, dtype=object)
    positions = np.arange(n)
    top = depth == 0
    path[top] = prefix[top] + names[top]
    for d in range(1, int(depth.max()) + 1 if n else 0):
        here = positions[depth == d]
        above = positions[depth == d - 1]
        parent = above[np.searchsorted(above, here) - 1]
        path[here] = path[parent] + "/" + names[here]
    return pd.Series(depth, index=df.index), pd.Series(path, index=df.index)


def _read_meta(con: sqlite3.Connection, tables: set[str]) -> dict[str, str]:
    if "META_DATA_EXPORT" not in tables:
        return {}
    return {str(k): str(v) for k, v in con.execute("SELECT name, value FROM META_DATA_EXPORT")}


def attribute(ops: pd.DataFrame, ranges: pd.DataFrame) -> pd.DataFrame:
    """(op_id, range_id) for every range containing the start of the op's launch call.

    Push/pop ranges count only on the launching thread (they are per-thread stacks); start/end
    ranges count on any thread of the same process (they may start and end on different threads).
    Ops whose launch call was not recorded belong to no range.
    """
    empty = pd.DataFrame({"op_id": pd.Series(dtype=np.int64), "range_id": pd.Series(dtype=np.int64)})
    if ops.empty or ranges.empty:
        return empty
    launched = ops[ops["launch_start_ns"].notna() & ops["launch_tid"].notna()]
    pts = pd.DataFrame(
        {
            "op_id": launched["op_id"].to_numpy(dtype=np.int64),
            "t": launched["launch_start_ns"].to_numpy(dtype=np.int64),
            "tid": launched["launch_tid"].to_numpy(dtype=np.int64),
        }
    )
    pts["pid"] = np.right_shift(pts["tid"].to_numpy(), _PID_SHIFT)
    ivs = pd.DataFrame(
        {
            "range_id": ranges["range_id"].to_numpy(dtype=np.int64),
            "kind": ranges["kind"].to_numpy(),
            "start_ns": ranges["start_ns"].to_numpy(dtype=np.int64),
            "end_ns": ranges["end_ns"].astype("float64").fillna(float(_OPEN_END)).to_numpy(dtype=np.int64),
            "tid": ranges["global_tid"].fillna(-1).to_numpy(dtype=np.int64),
        }
    )
    ivs["pid"] = np.right_shift(ivs["tid"].to_numpy(), _PID_SHIFT)
    pushpop = ivs[ivs["kind"] == "pushpop"]
    startend = ivs[ivs["kind"] == "startend"]
    parts = [
        containing(pts, pushpop, point_key="op_id", interval_key="range_id", group="tid"),
        containing(pts, startend, point_key="op_id", interval_key="range_id", group="pid"),
    ]
    out = pd.concat([p for p in parts if not p.empty] or [empty], ignore_index=True)
    op = out["op_id"].to_numpy(dtype=np.int64)
    rid = out["range_id"].to_numpy(dtype=np.int64)
    order = np.lexsort((rid, op))
    return pd.DataFrame({"op_id": op[order], "range_id": rid[order]})


def _with_ops(attribution: pd.DataFrame, ops: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """``attribution`` with ``cols`` of each op; by position when op_id is the row number (as
    read_nsys makes it), which is much cheaper than a merge on millions of rows."""
    ids = attribution["op_id"].to_numpy(dtype=np.int64)
    if np.array_equal(ops["op_id"].to_numpy(), np.arange(len(ops))):
        picked = ops[cols].take(ids).reset_index(drop=True)
        return pd.concat([attribution.reset_index(drop=True), picked], axis=1)
    return attribution.merge(ops[["op_id", *cols]], on="op_id", how="inner")


def summarize_by_range(report: NsysReport) -> pd.DataFrame:
    """Per range path, over all its instances: op counts, GPU time, busy time and span (ns).

    ``gpu_time_ns`` sums op durations; ``busy_ns`` sums, over instances, the union of the op
    intervals (overlapping streams counted once); ``span_ns`` sums, over instances, last op end
    minus first op start. Ranges without ops count with zeros.
    """
    ranges = report.ranges
    if ranges.empty:
        return _empty(SUMMARY_COLUMNS)
    att = _with_ops(report.attribution, report.ops, ["kind", "start_ns", "end_ns", "duration_ns"])
    for kind in OP_KINDS:
        att[kind] = (att["kind"] == kind).astype(np.int64)
    per_inst = att.groupby("range_id").agg(
        ops=("op_id", "size"),
        kernels=("kernel", "sum"),
        memcpy=("memcpy", "sum"),
        memset=("memset", "sum"),
        graphs=("graph", "sum"),
        gpu_time_ns=("duration_ns", "sum"),
    )
    per_inst = per_inst.join(union_by_group(att, "range_id")).join(span_by_group(att, "range_id"))
    inst = ranges[["range_id", "path", "domain", "depth", "start_ns"]].set_index("range_id").join(per_inst)
    counts = ["ops", "kernels", "memcpy", "memset", "graphs", "gpu_time_ns", "busy_ns", "span_ns"]
    inst[counts] = inst[counts].fillna(0).astype(np.int64)
    out = inst.groupby("path", sort=False).agg(
        **{c: (c, "sum") for c in counts},
        instances=("start_ns", "size"),
        domain=("domain", "first"),
        depth=("depth", "first"),
        first=("start_ns", "min"),
    )
    out = out.sort_values(["first", "depth"], kind="stable").drop(columns="first")
    out = out.reset_index().rename(columns={"path": "range"})
    return out[SUMMARY_COLUMNS]
