"""nvidia-smi outputs: ``nvidia-smi -q -x`` (lxml) and ``--query-gpu ... --format=csv`` sample logs.

Clocks in Hz, power in W, temperature in degrees C. Older drivers say ``clocks_throttle_reasons``
where newer ones say ``clocks_event_reasons``; both are read.
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from lxml import etree

from nsightwrap.core.errors import InputNotFound, ReportParseError
from nsightwrap.core.units import parse_quantity

XML_HINT = "pass the output of `nvidia-smi -q -x`"
_CSV_HINT = "log with `nvidia-smi --query-gpu=timestamp,clocks.sm,... --format=csv -lms 50`"


@dataclass(frozen=True)
class Clocks:
    """One set of clocks from ``nvidia-smi -q -x``, in Hz (None where nvidia-smi gives none)."""

    graphics_hz: float | None
    sm_hz: float | None
    mem_hz: float | None


@dataclass(frozen=True)
class GpuInfo:
    """One GPU as ``nvidia-smi -q -x`` describes it."""

    index: int
    name: str
    uuid: str | None
    pci_bus_id: str | None
    architecture: str | None
    driver_version: str | None
    cuda_version: str | None
    clocks: Clocks
    applications_clocks: Clocks
    default_applications_clocks: Clocks
    max_clocks: Clocks
    #: Clock event (throttle) reasons reported Active, e.g. ("gpu_idle",).
    clock_event_reasons: tuple[str, ...]
    power_draw_w: float | None
    power_limit_w: float | None
    temperature_c: float | None
    persistence_mode: bool | None
    compute_mode: str | None
    performance_state: str | None


#: What nvidia-smi prints for a value it has not (XML and CSV alike).
_NA = {"", "N/A", "[N/A]", "[Not Supported]", "Not Supported", "[Unknown Error]"}


def text_at(node: etree._Element, path: str) -> str | None:
    """The text at ``path``, None when absent or one of nvidia-smi's not-available words (this
    module's and smi_state's: one reading of the XML for both)."""
    found = node.find(path)
    if found is None or found.text is None:
        return None
    text = found.text.strip()
    return None if text in _NA else text


def quantity_at(node: etree._Element, *paths: str) -> float | None:
    """First of ``paths`` that holds a number (``"1980 MHz"`` -> 1.98e9), else None."""
    for path in paths:
        text = text_at(node, path)
        if text is None:
            continue
        try:
            value = parse_quantity(text)
        except ValueError:
            continue
        if not math.isnan(value):
            return value
    return None


def _clocks(gpu: etree._Element, tag: str) -> Clocks:
    return Clocks(
        graphics_hz=quantity_at(gpu, f"{tag}/graphics_clock"),
        sm_hz=quantity_at(gpu, f"{tag}/sm_clock"),
        mem_hz=quantity_at(gpu, f"{tag}/mem_clock"),
    )


def active_reasons(gpu: etree._Element) -> tuple[str, ...]:
    """The clock event (throttle) reasons of one ``<gpu>`` element that are ``Active``, named as
    nvidia-smi names them without the tag prefix (``sw_power_cap``); older drivers call the
    block ``clocks_throttle_reasons``."""
    for tag, prefix in (("clocks_event_reasons", "clocks_event_reason_"),
                        ("clocks_throttle_reasons", "clocks_throttle_reason_")):  # fmt: skip
        node = gpu.find(tag)
        if node is not None:
            return tuple(
                str(child.tag).removeprefix(prefix)
                for child in node
                if isinstance(child.tag, str) and (child.text or "").strip() == "Active"
            )
    return ()


def _gpu_info(index: int, gpu: etree._Element, root: etree._Element) -> GpuInfo:
    persistence = text_at(gpu, "persistence_mode")
    return GpuInfo(
        index=index,
        name=text_at(gpu, "product_name") or "unknown GPU",
        uuid=text_at(gpu, "uuid"),
        pci_bus_id=text_at(gpu, "pci/pci_bus_id") or gpu.get("id"),
        architecture=text_at(gpu, "product_architecture"),
        driver_version=text_at(root, "driver_version"),
        cuda_version=text_at(root, "cuda_version"),
        clocks=_clocks(gpu, "clocks"),
        applications_clocks=_clocks(gpu, "applications_clocks"),
        default_applications_clocks=_clocks(gpu, "default_applications_clocks"),
        max_clocks=_clocks(gpu, "max_clocks"),
        clock_event_reasons=active_reasons(gpu),
        # newer drivers: gpu_power_readings/average_power_draw; older: power_readings/power_draw
        power_draw_w=quantity_at(
            gpu,
            "gpu_power_readings/average_power_draw",
            "gpu_power_readings/power_draw",
            "power_readings/power_draw",
            "gpu_power_readings/instant_power_draw",
        ),
        power_limit_w=quantity_at(
            gpu,
            "gpu_power_readings/current_power_limit",
            "gpu_power_readings/power_limit",
            "power_readings/power_limit",
            "power_readings/enforced_power_limit",
        ),
        temperature_c=quantity_at(gpu, "temperature/gpu_temp"),
        persistence_mode=None if persistence is None else persistence == "Enabled",
        compute_mode=text_at(gpu, "compute_mode"),
        performance_state=text_at(gpu, "performance_state"),
    )


#: The largest nvidia-smi XML file read (bytes).
MAX_XML_BYTES = 64 * 1024 * 1024


def parse_smi_xml(data: bytes, where: str) -> etree._Element:
    """The ``<nvidia_smi_log>`` root of an ``nvidia-smi -q -x`` document (``where`` names it in
    errors); ReportParseError for anything else."""
    # no_network: the document names a DTD that must not be fetched; entities are not expanded.
    parser = etree.XMLParser(no_network=True, resolve_entities=False, load_dtd=False)
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        # libxml2's own advice (XML_PARSE_HUGE) lifts the depth limit that keeps this parse safe.
        why = re.sub(r",? use XML_PARSE_HUGE option", "", str(exc))
        raise ReportParseError(f"{where}: not valid XML ({why})", hint=XML_HINT) from None
    if root is None or root.tag != "nvidia_smi_log":
        tag = f" (root element <{root.tag}>)" if root is not None else ""
        raise ReportParseError(f"{where}: not nvidia-smi XML{tag}", hint=XML_HINT)
    return root


def read_smi_xml_all(path: str | Path) -> list[GpuInfo]:
    """Every GPU in an ``nvidia-smi -q -x`` file, in the order listed."""
    p = Path(path)
    if not p.is_file():
        raise InputNotFound(f"{p}: no such nvidia-smi XML file", hint=XML_HINT)
    size = p.stat().st_size
    if size > MAX_XML_BYTES:  # an 8-GPU machine's is ~250 KB
        raise ReportParseError(
            f"{p}: {size / 2**20:,.0f} MiB is not nvidia-smi XML (at most {MAX_XML_BYTES // 2**20} MiB are read)",
            hint=XML_HINT,
        )
    root = parse_smi_xml(p.read_bytes(), str(p))
    gpus = root.findall("gpu")
    if not gpus:
        raise ReportParseError(f"{p}: nvidia-smi XML lists no GPU", hint=XML_HINT)
    return [_gpu_info(i, gpu, root) for i, gpu in enumerate(gpus)]


def read_smi_xml(path: str | Path, index: int = 0) -> GpuInfo:
    """The GPU at position ``index`` (default the first) of an ``nvidia-smi -q -x`` file."""
    gpus = read_smi_xml_all(path)
    if not 0 <= index < len(gpus):
        raise ReportParseError(f"{path}: no GPU {index}; the file lists {len(gpus)}",
                               hint="pick an index below that")  # fmt: skip
    return gpus[index]


# --query-gpu field (as printed in the header, unit stripped) -> column
_SAMPLE_FIELDS = {
    "timestamp": "time",
    "index": "gpu",
    "uuid": "gpu_uuid",
    "clocks.current.sm": "sm_clock_hz", "clocks.sm": "sm_clock_hz",
    "clocks.current.memory": "mem_clock_hz", "clocks.mem": "mem_clock_hz",
    "clocks.current.graphics": "graphics_clock_hz", "clocks.gr": "graphics_clock_hz",
    "power.draw": "power_w", "power.draw.average": "power_w", "power.draw.instant": "power_w",
    "temperature.gpu": "temperature_c",
    "clocks_event_reasons.active": "clock_event_reasons",
    "clocks_throttle_reasons.active": "clock_event_reasons",
}  # fmt: skip
SAMPLE_COLUMNS = ("time", "sm_clock_hz", "mem_clock_hz", "power_w", "temperature_c", "clock_event_reasons")
_HEADER = re.compile(r"^\s*([^\[]+?)\s*(?:\[(.*)\])?\s*$")


def _bitmask(text: str) -> float:
    t = text.strip()
    if t in _NA:
        return math.nan
    return float(int(t, 0))


def read_smi_samples(path: str | Path) -> pd.DataFrame:
    """A ``nvidia-smi --query-gpu=... --format=csv[,nounits]`` log as a frame.

    Columns: ``time`` (datetime), ``sm_clock_hz``, ``mem_clock_hz``, ``power_w``,
    ``temperature_c``, ``clock_event_reasons`` (bitmask, nullable int), plus ``gpu`` and
    ``graphics_clock_hz`` when queried. The header names the fields, in any order; fields
    not queried are NaN. A last line cut short (the sampler killed mid-write) is dropped.
    """
    p = Path(path)
    if not p.is_file():
        raise InputNotFound(f"{p}: no such nvidia-smi sample log", hint=_CSV_HINT)
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ReportParseError(f"{p}: not a text file", hint=_CSV_HINT) from None
    rows = [r for r in csv.reader(io.StringIO(text), skipinitialspace=True) if r]
    if not rows:
        raise ReportParseError(f"{p}: empty nvidia-smi sample log", hint=_CSV_HINT)
    fields: list[tuple[str | None, str]] = []  # (column, unit from the header)
    for head in rows[0]:
        m = _HEADER.match(head)
        name, unit = (m.group(1), m.group(2) or "") if m else (head, "")
        fields.append((_SAMPLE_FIELDS.get(name.strip()), unit))
    if not any(col for col, _ in fields):
        raise ReportParseError(f"{p}: no known --query-gpu field in the header {rows[0][:3]}",
                               hint=_CSV_HINT)  # fmt: skip
    body = rows[1:]
    if body and len(body[-1]) != len(fields):
        body = body[:-1]
    records: list[dict[str, object]] = []
    for line, row in enumerate(body, start=2):
        if len(row) != len(fields):
            raise ReportParseError(f"{p}: line {line} has {len(row)} fields, the header {len(fields)}",
                                   hint=_CSV_HINT)  # fmt: skip
        rec: dict[str, object] = {}
        for (col, unit), value in zip(fields, row, strict=True):
            if col is None:
                continue
            try:
                if col == "time":
                    rec[col] = value.strip()
                elif col == "clock_event_reasons":
                    rec[col] = _bitmask(value)
                elif col == "gpu":
                    rec[col] = int(value)
                elif col == "gpu_uuid":
                    rec[col] = value.strip()
                else:
                    rec[col] = math.nan if value.strip() in _NA else parse_quantity(value, unit)
            except ValueError:
                raise ReportParseError(f"{p}: line {line}: {value!r} is not a valid {col}",
                                       hint=_CSV_HINT) from None  # fmt: skip
        records.append(rec)
    extra = [c for c in ("gpu", "gpu_uuid", "graphics_clock_hz") if any(c == col for col, _ in fields)]
    df = pd.DataFrame.from_records(records, columns=[*SAMPLE_COLUMNS, *extra])
    try:
        df["time"] = pd.to_datetime(df["time"], format="%Y/%m/%d %H:%M:%S.%f")
    except ValueError:
        raise ReportParseError(f"{p}: timestamps not in nvidia-smi's YYYY/MM/DD HH:MM:SS.fff form",
                               hint=_CSV_HINT) from None  # fmt: skip
    for col in ("sm_clock_hz", "mem_clock_hz", "power_w", "temperature_c"):
        df[col] = df[col].astype("float64")
    df["clock_event_reasons"] = df["clock_event_reasons"].astype("float64").astype("Int64")
    return df
