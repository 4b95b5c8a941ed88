"""Nsight Compute results -> one row per profiled kernel (docs/contracts.md, docs/ncu-parsing.md).

Two sources give the same frame: the ``.ncu-rep`` itself, read through ``ncu_report`` (no ncu,
no GPU needed), and ``ncu --csv --page raw`` exports (units as printed or ``--print-units base``).
Values are converted to base units: ns, Hz, bytes. Device attributes (``device__attribute_*``
and the other per-device facts) are not repeated on every kernel row: ``read_ncu_devices``
returns them, one row per device.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import pandas as pd

from nsightwrap.core.contract import NVTX_DOMAIN
from nsightwrap.core.errors import InputNotFound, ReportParseError
from nsightwrap.core.units import parse_number, unit_factor
from nsightwrap.core.unpack import named_as, unpacked

#: ncu_report's name of the unnamed NVTX domain; paths in it carry no ``domain:`` prefix.
DEFAULT_DOMAIN = "<default domain>"

#: Metrics that describe the device or the machine, not the kernel: they go to
#: ``read_ncu_devices``, not into the kernel frame.
STATIC_PREFIXES = ("device__attribute_", "nvlink__", "numa__", "c2clink__")

#: The columns every kernel frame starts with, in this order; collected metrics follow.
KERNEL_COLUMNS = (
    "launch_id", "kernel", "kernel_short", "grid", "block", "device", "context", "stream",
    "duration_ns", "sm_clock_hz", "dram_bytes_read", "dram_bytes_write", "dram_bytes",
    "sm_throughput_pct", "memory_throughput_pct", "dram_throughput_pct",
    "nvtx_path", "nvtx_ranges",
)  # fmt: skip

# Derived column -> ncu metrics tried in order (the first one collected wins).
_DERIVED: Mapping[str, tuple[str, ...]] = {
    "duration_ns": ("gpu__time_duration.sum",),
    # The SM clock during the kernel; gpc cycles run on the same clock where sm's are absent.
    "sm_clock_hz": ("sm__cycles_elapsed.avg.per_second", "gpc__cycles_elapsed.avg.per_second"),
    "dram_bytes_read": ("dram__bytes_read.sum",),
    "dram_bytes_write": ("dram__bytes_write.sum",),
    "sm_throughput_pct": ("sm__throughput.avg.pct_of_peak_sustained_elapsed",),
    "memory_throughput_pct": ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",),
    "dram_throughput_pct": (
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
    ),
}

# .ncu-rep layout (what a structural check needs): b"NVR\0", a little-endian uint32 length and
# that many bytes of file header, then blocks of [uint32 header length][protobuf block header]
# [payload], up to the end of the file. In the block header, field 2 counts the results
# (profiled kernels) in the block and field 5 is the payload length. ncu writes blocks as it
# goes, so a killed ncu leaves a file cut mid-block; ncu_report then returns the kernels before
# the cut without complaint, and on a damaged payload it returns none: hence this check.
_MAGIC = b"NVR\0"
_RESULTS_FIELD = 2
_PAYLOAD_FIELD = 5
# No block payload of a real report ends in a zero byte (every report in fixtures/); a file that
# ends in this many is taken as zero-filled. Zero runs are read this far at most.
_ZERO_TAIL = 16
_ZERO_PROBE = 1 << 20

_CSV_REQUIRED = ("ID", "Kernel Name")
_CSV_PUSHPOP_PREFIX = "thread Domain:Push/Pop_Range"
_CSV_STARTEND_PREFIX = "Id:Domain:Start/Stop_Range"
# Each NVTX range in a CSV cell ends in these six fields:
# PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg.
_CSV_NVTX_TAIL_FIELDS = 6
_CSV_IDENTITY = {
    "ID": "launch_id",
    "Kernel Name": "kernel",
    "Context": "context",
    "Stream": "stream",
    "Device": "device",
    "Block Size": "block",
    "Grid Size": "grid",
}
_CSV_SKIP = {"Process ID", "Process Name", "Host Name", "CC"}


# --------------------------------------------------------------------------------------------
# NVTX paths
# --------------------------------------------------------------------------------------------


def _prefix(domain: str) -> str:
    return "" if domain in ("", DEFAULT_DOMAIN) else f"{domain}:"


def nvtx_paths(
    push_pop: Mapping[str, Sequence[str]], start_end: Mapping[str, Sequence[str]]
) -> tuple[str | None, tuple[str, ...]]:
    """``(nvtx_path, nvtx_ranges)`` of one kernel from its NVTX state.

    ``push_pop`` maps a domain to its push/pop stack, outermost first; ``start_end`` maps a
    domain to the start/end ranges open at the launch. Every enclosing push/pop range gives
    one path (``domain:outer/inner``, no prefix in the default domain); start/end ranges give
    ``domain:name``. ``nvtx_path`` is the innermost push/pop path in the ``nsightwrap`` domain,
    else the deepest push/pop path of any domain, else the first start/end range, else None.
    """
    ranges: list[str] = []
    best: tuple[int, int, str] | None = None  # (preferred domain, depth, path)
    for domain, stack in push_pop.items():
        for depth in range(1, len(stack) + 1):
            path = _prefix(domain) + "/".join(stack[:depth])
            ranges.append(path)
            key = (int(domain == NVTX_DOMAIN), depth, path)
            if best is None or key[:2] > best[:2]:
                best = key
    start_end_paths = [_prefix(d) + name for d, names in start_end.items() for name in names]
    ranges.extend(start_end_paths)
    if best is not None:
        return best[2], tuple(ranges)
    own = [p for p in start_end_paths if p.startswith(f"{NVTX_DOMAIN}:")]
    chosen = own or start_end_paths
    return (chosen[0] if chosen else None), tuple(ranges)


# --------------------------------------------------------------------------------------------
# Kernel names
# --------------------------------------------------------------------------------------------


def _strip_group(text: str, close: str, open_: str) -> str:
    """Drop a trailing bracketed group (``(...)`` or ``<...>``), nesting respected."""
    text = text.rstrip()
    if not text.endswith(close):
        return text
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        if text[i] == close:
            depth += 1
        elif text[i] == open_:
            depth -= 1
            if depth == 0:
                return text[:i].rstrip()
    return text


def short_name(demangled: str) -> str:
    """The bare function name of a demangled kernel name, as ncu's ``FUNCTION`` base prints it.

    ``void at::vectorized_elementwise_kernel<4, at::FillFunctor<unsigned char>, ...>(int, T2, T3)``
    -> ``vectorized_elementwise_kernel``. Used for CSV exports, which carry only one name.
    """
    name = _strip_group(demangled, ")", "(")
    name = _strip_group(name, ">", "<")
    name = name.rsplit("::", 1)[-1]
    return name.split()[-1] if name.split() else demangled


# --------------------------------------------------------------------------------------------
# Frame assembly (shared by both readers)
# --------------------------------------------------------------------------------------------


def _first(metrics: Mapping[str, Any], names: Iterable[str]) -> float:
    for n in names:
        v = metrics.get(n)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    return math.nan


def _dims(metrics: Mapping[str, Any], what: str) -> str | None:
    """``"x,y,z"`` from ``launch__{what}_dim_*``, else ``"n,1,1"`` from ``launch__{what}_size``."""
    xyz = [metrics.get(f"launch__{what}_dim_{a}") for a in "xyz"]
    if all(isinstance(v, (int, float)) and not math.isnan(v) for v in xyz):
        return ",".join(str(int(v)) for v in xyz)  # type: ignore[arg-type]
    size = metrics.get(f"launch__{what}_size")
    if isinstance(size, (int, float)) and not math.isnan(size):
        return f"{int(size)},1,1"
    return None


def _kernel_row(
    launch_id: int,
    kernel: str,
    kernel_short: str,
    metrics: dict[str, Any],
    nvtx: tuple[str | None, tuple[str, ...]],
    identity: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    identity = identity or {}
    row: dict[str, Any] = {"launch_id": launch_id, "kernel": kernel, "kernel_short": kernel_short}
    row["grid"] = identity.get("grid") or _dims(metrics, "grid")
    row["block"] = identity.get("block") or _dims(metrics, "block")
    for col, metric in (("device", "launch__device_id"), ("context", "launch__context_id"),
                        ("stream", "launch__stream_id")):  # fmt: skip
        value = identity.get(col, metrics.get(metric))
        row[col] = int(value) if isinstance(value, (int, float)) and not math.isnan(value) else None
    for col, names in _DERIVED.items():
        row[col] = _first(metrics, names)
    if "dram__bytes.sum" in metrics:
        row["dram_bytes"] = _first(metrics, ("dram__bytes.sum",))
    else:  # NaN when either half is missing
        row["dram_bytes"] = row["dram_bytes_read"] + row["dram_bytes_write"]
    row["nvtx_path"], row["nvtx_ranges"] = nvtx
    for name, value in metrics.items():
        if not name.startswith(STATIC_PREFIXES):
            row[name] = value
    return row


def _frame(rows: list[dict[str, Any]], source: Path) -> pd.DataFrame:
    if not rows:
        raise ReportParseError(
            f"{source}: no kernels were profiled (NVTX filters matched nothing?)",
            hint="check the --nvtx-include filters and that the ranges enclose kernel launches",
        )
    df = pd.DataFrame(rows)
    metric_cols = sorted(c for c in df.columns if c not in KERNEL_COLUMNS)
    df = df.reindex(columns=[*KERNEL_COLUMNS, *metric_cols])
    for col in ("device", "context", "stream"):
        df[col] = df[col].astype("Int64")
    df["launch_id"] = df["launch_id"].astype("int64")
    return df.sort_values("launch_id", kind="stable").reset_index(drop=True)


def _device_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    df = df.drop_duplicates(subset="device", keep="first").sort_values("device")
    return df.reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# .ncu-rep through ncu_report
# --------------------------------------------------------------------------------------------


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("varint runs past its buffer")
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def _block_header(header: bytes) -> tuple[int, int]:
    """``(results, payload length)`` from a block header (protobuf wire format; 0 if absent)."""
    i, results, payload = 0, 0, 0
    while i < len(header):
        key, i = _varint(header, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(header, i)
            if field == _PAYLOAD_FIELD:
                payload = value
            elif field == _RESULTS_FIELD:
                results = value
        elif wire == 2:
            length, i = _varint(header, i)
            i += length
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wire}")
        if i > len(header):
            raise ValueError("field runs past the block header")
    return results, payload


def _refuse(path: Path, what: str) -> ReportParseError:
    return ReportParseError(f"{path}: Nsight Compute report is {what}",
                            hint="take the report again (the file is kept as it is)")  # fmt: skip


def _zero_run(f: BinaryIO, at: int, size: int) -> int:
    """How many zero bytes follow ``at`` (at most ``_ZERO_PROBE``, so a huge file costs one read)."""
    f.seek(at)
    chunk = f.read(min(_ZERO_PROBE, size - at))
    return len(chunk) - len(chunk.lstrip(b"\0"))


def _zero_tail(f: BinaryIO, size: int) -> int:
    """How many zero bytes end the file (up to ``_ZERO_PROBE``)."""
    n = min(_ZERO_PROBE, size)
    f.seek(size - n)
    chunk = f.read(n)
    return len(chunk) - len(chunk.rstrip(b"\0"))


def check_ncu_rep(path: Path) -> int:
    """Raise ReportParseError unless ``path`` looks like a complete ``.ncu-rep``; return its kernel count.

    Reads the magic, the file header's length and every block header (seeking past payloads, so a
    report of any size costs a few reads per kernel): ncu_report itself accepts text files,
    truncated, zero-filled and damaged reports without a word, returning no kernels or only those
    before the damage. The count is what the block headers declare, to be checked against what
    ncu_report reads. A file cut exactly at a block boundary passes: it is a valid shorter report
    (the run's manifest tells how many kernels its pass profiled: analysis/ncucount.py).
    """
    try:
        size = path.stat().st_size
        f = path.open("rb")
    except OSError as exc:
        raise InputNotFound(f"{path}: cannot be read ({exc.strerror})", hint="check the path and its permissions") from None
    with f:
        head = f.read(8)
        if head[:4] != _MAGIC:
            if not head.strip(b"\0"):
                what = "empty" if not head else f"zero-filled from its start ({size:,} bytes)"
                raise ReportParseError(f"{path}: not an Nsight Compute report: the file is {what}",
                                       hint="take the report again (the ncu that wrote it failed or was killed)")  # fmt: skip
            raise ReportParseError(f"{path}: not an Nsight Compute report (no NVR header)",
                                   hint="pass the .ncu-rep file written by ncu -o")  # fmt: skip
        if len(head) < 8:
            raise _refuse(path, f"truncated: {size} bytes, shorter than its file header")
        i = 8 + int.from_bytes(head[4:], "little")
        if i > size:
            raise _refuse(path, f"truncated: its file header runs past the end ({size:,} bytes)")
        declared = 0
        while i < size:
            f.seek(i)
            raw = f.read(4)
            if len(raw) < 4:
                raise _refuse(path, f"truncated: cut at byte {size:,}, inside the block header at byte {i:,} "
                              f"({declared} kernels before it)")  # fmt: skip
            length = int.from_bytes(raw, "little")
            if length == 0:  # ncu never writes an empty block header: zeros where data belongs
                zeros = _zero_run(f, i, size)
                how = "zeros to the end" if i + zeros == size else f"at least {zeros:,} zero bytes"
                raise _refuse(path, f"zero-filled from byte {i:,} of {size:,} ({how}; {declared} kernels "
                              "before it): the file lost its end (disk full, a copy cut short, a crash)")  # fmt: skip
            if i + 4 + length > size:
                raise _refuse(path, f"truncated: cut at byte {size:,}, inside the block header at byte {i:,} "
                              f"({declared} kernels before it)")  # fmt: skip
            try:
                results, payload = _block_header(f.read(length))
            except ValueError as exc:
                raise _refuse(path, f"truncated or corrupt (the block header at byte {i:,}: {exc})") from None
            end = i + 4 + length + payload
            if end > size:
                raise _refuse(path, f"truncated: cut at byte {size:,}, inside the block at byte {i:,} that needs "
                              f"{end - size:,} bytes more ({declared} kernels before it)")  # fmt: skip
            declared += results
            i = end
        zeros = _zero_tail(f, size)
        if zeros >= _ZERO_TAIL:
            # No payload of a real report ends in a zero byte (checked on every fixture): this is a
            # tail overwritten with zeros inside the last block, which ncu_report may read as data.
            raise _refuse(path, f"zero-filled at its end (its last {zeros:,} bytes are zeros): the file "
                          "lost its end (disk full, a copy cut short, a crash)")  # fmt: skip
    return declared


def _metric_value(raw: Any, factors: dict[str, float]) -> Any:
    """A raw metric of ``ncu_native`` in base units: float for numbers, str for strings, None if
    unreadable."""
    if raw is None:
        return None
    if raw[0] == "str":
        return raw[1] or math.nan  # empty, as the CSV export shows it: missing
    _, value, unit = raw
    factor = factors.get(unit)
    if factor is None:
        factor = factors[unit] = unit_factor(unit)[0]
    return value * factor


#: Reads the kernels of an unpacked ``.ncu-rep`` as ``ncu_native.read_actions`` does. The
#: default reads in this process; ``nsightwrap.run.ncu_isolated.read_actions_isolated`` reads
#: in a child process, so that a crash of the native library does not end this one.
ActionReader = Callable[[Path], list[dict[str, Any]]]


def _load_rep(
    path: str | Path, reader: ActionReader | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Path]:
    p = Path(path)
    if not p.is_file():
        raise InputNotFound(f"{p}: no such Nsight Compute report",
                            hint="check the path, or run `nsightwrap profile` first")  # fmt: skip
    src, p = p, unpacked(p)
    with named_as(src, p):
        return _read_rep(p, reader)


def _read_rep(
    p: Path, reader: ActionReader | None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Path]:
    declared = check_ncu_rep(p)
    from nsightwrap.parsers import ncu_native

    try:
        actions = (reader or ncu_native.read_actions)(p)
    except ncu_native.ModuleMissing as exc:
        raise ReportParseError(f"{p}: cannot read .ncu-rep files: the ncu_report module is missing",
                               hint="pip install ncu-report, or export the report with "
                               "`ncu --import FILE --csv --page raw`") from exc  # fmt: skip
    except ncu_native.CorruptReport as exc:
        raise ReportParseError(f"{p}: Nsight Compute report is corrupt ({exc})",
                               hint="take the report again") from None  # fmt: skip
    kernels: list[dict[str, Any]] = []
    devices: list[dict[str, Any]] = []
    factors: dict[str, float] = {}
    # launch_id: ncu's "ID", the running index over all ranges, as the CSV export prints it
    for launch_id, action in enumerate(actions):
        metrics = {n: _metric_value(v, factors) for n, v in action["metrics"].items()}
        nvtx = nvtx_paths(*action["nvtx"]) if action["nvtx"] is not None else (None, ())
        row = _kernel_row(launch_id, action["name"], action["short"], metrics, nvtx)
        kernels.append(row)
        devices.append(_device_row(row["device"], metrics))
    if len(kernels) < declared:  # a damaged payload: ncu_report skips what it cannot decode
        raise ReportParseError(f"{p}: Nsight Compute report is corrupt: it holds {declared} "
                               f"profiled kernels, only {len(kernels)} could be read",
                               hint="take the report again")  # fmt: skip
    return kernels, devices, p


def _device_row(device: Any, metrics: Mapping[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"device": device}
    row.update((k, v) for k, v in metrics.items() if k.startswith(STATIC_PREFIXES))
    return row


def read_ncu_rep(path: str | Path, reader: ActionReader | None = None) -> pd.DataFrame:
    """Kernels of a ``.ncu-rep`` report, one row per profiled kernel (docs/contracts.md).

    ``reader`` does the native part (``ActionReader``); by default it runs in this process."""
    kernels, _, p = _load_rep(path, reader)
    return _frame(kernels, p)


# --------------------------------------------------------------------------------------------
# ncu --csv --page raw
# --------------------------------------------------------------------------------------------

_QUOTED = re.compile(r'"([^"]*)"')


def _csv_nvtx_entries(cell: str, with_id: bool) -> dict[str, list[str]]:
    """Domain -> range names from an NVTX cell of the raw CSV, in the order printed.

    Push/pop cells read ``<tid>  "<domain>:<name>:<6 fields>"  "..."`` (outermost first);
    start/end cells carry ``"<id>:<domain>:<name>:<6 fields>"`` entries.
    """
    out: dict[str, list[str]] = {}
    for entry in _QUOTED.findall(cell):
        head = entry.rsplit(":", _CSV_NVTX_TAIL_FIELDS)[0]
        if with_id:
            first, _, rest = head.partition(":")
            if first.strip().isdigit():
                head = rest
        domain, sep, name = head.partition(":")
        if not sep:
            domain, name = DEFAULT_DOMAIN, head
        out.setdefault(domain, []).append(name)
    return out


def _dims_text(text: str) -> str | None:
    """``"(2, 64, 1)"`` -> ``"2,64,1"``."""
    nums = re.findall(r"\d+", text or "")
    return ",".join(nums) if nums else None


def _read_csv_table(p: Path) -> pd.DataFrame:
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ReportParseError(f"{p}: not a text file; expected an `ncu --csv --page raw` export",
                               hint="for .ncu-rep files use read_ncu_rep / pass the .ncu-rep") from None  # fmt: skip
    # ncu run with --csv (not --import) mixes its ==PROF== log lines into stdout
    lines = [ln for ln in text.splitlines() if not ln.startswith("==")]
    if not lines:
        raise ReportParseError(f"{p}: empty file; expected an `ncu --csv --page raw` export")
    import io

    try:
        df = pd.read_csv(io.StringIO("\n".join(lines)), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise ReportParseError(f"{p}: not a valid CSV file ({exc})",
                               hint="export with `ncu --import REPORT --csv --page raw > FILE`") from None  # fmt: skip
    hint = "export with `ncu --import REPORT --csv --page raw > FILE`"
    if "Metric Name" in df.columns:  # one row per metric, not per kernel
        raise ReportParseError(f"{p}: this is a --page details export, not --page raw", hint=hint)
    missing = [c for c in _CSV_REQUIRED if c not in df.columns]
    if missing:
        raise ReportParseError(f"{p}: not an ncu raw-page CSV: no column {missing[0]!r}", hint=hint)
    return df


def _load_csv(path: str | Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Path]:
    p = Path(path)
    if not p.is_file():
        raise InputNotFound(f"{p}: no such ncu CSV export", hint="check the path")
    df = _read_csv_table(p)
    units: dict[str, str] = {}
    if len(df) and df["ID"].iloc[0].strip() == "":  # second line: the unit of every column
        units = {str(c): str(v).strip() for c, v in df.iloc[0].items()}
        df = df.iloc[1:]
    pushpop_col = next((c for c in df.columns if c.startswith(_CSV_PUSHPOP_PREFIX)), None)
    startend_col = next((c for c in df.columns if c.startswith(_CSV_STARTEND_PREFIX)), None)
    metric_cols = [
        c for c in df.columns
        if c not in _CSV_IDENTITY and c not in _CSV_SKIP and c not in (pushpop_col, startend_col)
    ]  # fmt: skip
    factors = {c: unit_factor(units.get(c, ""))[0] for c in metric_cols}
    kernels: list[dict[str, Any]] = []
    devices: list[dict[str, Any]] = []
    for line, rec in enumerate(df.to_dict("records"), start=2 + bool(units)):
        try:
            launch_id = int(rec["ID"].replace(",", ""))
        except ValueError:
            raise ReportParseError(f"{p}: line {line}: ID {rec['ID']!r} is not a number",
                                   hint="export with `ncu --import REPORT --csv --page raw > FILE`") from None  # fmt: skip
        metrics: dict[str, Any] = {}
        for c in metric_cols:
            raw = rec[c]
            try:
                metrics[c] = parse_number(raw) * factors[c]
            except ValueError:
                metrics[c] = raw  # a string metric (e.g. launch__func_cache_config)
        identity: dict[str, Any] = {
            "grid": _dims_text(rec.get("Grid Size", "")),
            "block": _dims_text(rec.get("Block Size", "")),
        }
        for col in ("Device", "Context", "Stream"):
            if col in rec and rec[col].strip().isdigit():
                identity[_CSV_IDENTITY[col]] = int(rec[col])
        push_pop = _csv_nvtx_entries(rec.get(pushpop_col or "", "") or "", with_id=False)
        start_end = _csv_nvtx_entries(rec.get(startend_col or "", "") or "", with_id=True)
        kernel = rec["Kernel Name"]
        row = _kernel_row(launch_id, kernel, short_name(kernel), metrics,
                          nvtx_paths(push_pop, start_end), identity)  # fmt: skip
        kernels.append(row)
        devices.append(_device_row(row["device"], metrics))
    return kernels, devices, p


def read_ncu_csv(path: str | Path) -> pd.DataFrame:
    """Kernels of an ``ncu --csv --page raw`` export, same frame as ``read_ncu_rep``.

    Works with units as printed (the second line names each column's unit) and with
    ``--print-units base``; values are converted to ns, Hz and bytes either way.
    """
    kernels, _, p = _load_csv(path)
    return _frame(kernels, p)


# --------------------------------------------------------------------------------------------
# Dispatch and summaries
# --------------------------------------------------------------------------------------------


def _load(
    path: str | Path, reader: ActionReader | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Path]:
    return _load_csv(path) if Path(path).suffix.lower() == ".csv" else _load_rep(path, reader)


def read_ncu(path: str | Path, reader: ActionReader | None = None) -> pd.DataFrame:
    """Kernels of an ncu report: ``.csv`` files as raw-page exports, anything else as ``.ncu-rep``
    (``reader``: see ``read_ncu_rep``)."""
    kernels, _, p = _load(path, reader)
    return _frame(kernels, p)


def read_ncu_devices(path: str | Path, reader: ActionReader | None = None) -> pd.DataFrame:
    """Per-device facts of an ncu report (``.ncu-rep`` or raw CSV), one row per device id.

    Columns: ``device`` and every ``device__attribute_*``, ``nvlink__*``, ``numa__*`` and
    ``c2clink__*`` metric, under its ncu name (e.g. ``device__attribute_display_name``,
    ``device__attribute_max_gpu_frequency_khz``: values as ncu stores them, which for these
    attributes means the unit in their name).
    """
    kernels, devices, p = _load(path, reader)
    _frame(kernels, p)  # same errors as the kernel readers
    return _device_frame(devices)


def kernels_by_range(kernels: pd.DataFrame) -> pd.DataFrame:
    """Kernels grouped by every NVTX range they ran in (a kernel counts in each enclosing range).

    Columns: ``range``, ``kernels`` (launches), ``unique_kernels`` (distinct names),
    ``gpu_time_ns`` (sum of durations), ``instances``, ``first_launch_id``; in launch order.
    ncu keeps no range instance ids: ``instances`` counts runs of consecutive launches inside
    the range, so two instances with no launch outside the range between them count as one.
    """
    columns = ["range", "kernels", "unique_kernels", "gpu_time_ns", "instances", "first_launch_id"]
    if kernels.empty:
        return pd.DataFrame(columns=columns)
    k = kernels[["launch_id", "kernel", "duration_ns", "nvtx_ranges"]].sort_values("launch_id")
    order = {lid: i for i, lid in enumerate(k["launch_id"])}
    ex = k.explode("nvtx_ranges").dropna(subset=["nvtx_ranges"]).rename(columns={"nvtx_ranges": "range"})
    if ex.empty:
        return pd.DataFrame(columns=columns)
    pos = ex["launch_id"].map(order)
    ex = ex.assign(_run=pos.groupby(ex["range"]).transform(lambda s: (s.diff() != 1).cumsum()))
    out = ex.groupby("range", sort=False).agg(
        kernels=("launch_id", "size"),
        unique_kernels=("kernel", "nunique"),
        gpu_time_ns=("duration_ns", lambda s: s.sum(min_count=1)),
        instances=("_run", "max"),
        first_launch_id=("launch_id", "min"),
    )
    out = out.reset_index().sort_values(["first_launch_id", "range"], kind="stable")
    return out.reset_index(drop=True)[columns]
