"""The device file's views (terminal table, Markdown, HTML, JSON) on the real H200 device file
shipped in fixtures/device/h200.json, and ``nsightwrap device --input`` writing each of them."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from nsightwrap.device.store import device_doc, read_device_file
from nsightwrap.export.device_text import rate
from nsightwrap.export.html import render_device_html
from nsightwrap.export.jsonio import render_device_json
from nsightwrap.export.markdown import render_device_markdown
from nsightwrap.export.terminal import print_device

ROOT = Path(__file__).resolve().parent.parent
H200 = ROOT / "fixtures" / "device" / "h200.json"


@pytest.fixture(scope="module")
def dev():  # type: ignore[no-untyped-def]
    return read_device_file(H200)


def test_the_shipped_file_is_a_full_h200_run(dev) -> None:  # type: ignore[no-untyped-def]
    assert dev.gpu.name == "NVIDIA H200" and dev.mode == "full" and dev.gpu.uuid.startswith("GPU-")
    for group, name in (("bandwidth", "hbm_read"), ("bandwidth", "hbm_copy"), ("latency", "hbm"), ("compute", "bf16")):
        m = dev.get(group, name)
        assert m is not None and m.measured and m.sm_clock_hz, (group, name)
    assert len(dev.bandwidth_curve) == 10 and len(dev.latency_curve) >= 12
    # Throttle reasons seen while measuring (the matmuls' sw_power_cap) make a figure `throttled`.
    for m in dev.measurements:
        if m.group in ("bandwidth", "compute"):
            assert (m.status == "throttled") == bool(m.throttle_reasons), m.name


def test_terminal_table(dev) -> None:  # type: ignore[no-untyped-def]
    con = Console(record=True, width=160, file=io.StringIO())
    print_device(dev, con)
    text = con.export_text()
    for title in ("Memory bandwidth", "Latency (pointer chase, one thread)", "Kernel launch", "Compute peaks",
                  "Copy bandwidth against transfer size", "Pointer-chase latency against working set", "Roofs: memory"):
        assert title in text, title  # fmt: skip
    copy = dev.get("bandwidth", "hbm_copy")
    assert rate(copy.value, "B/s") in text
    bf16 = dev.get("compute", "bf16")
    assert rate(bf16.value, "FLOP/s") in text and f"{bf16.sm_clock_hz / 1e9:.2f} GHz" in text
    ridge = bf16.value / max(dev.get("bandwidth", n).value for n in ("hbm_read", "hbm_copy", "hbm_write"))
    assert re.search(rf"bf16 .* {ridge:.0f} ", text)


def test_markdown_tables_keep_their_columns(dev) -> None:  # type: ignore[no-untyped-def]
    md = render_device_markdown(dev)
    assert md.startswith("# nsightwrap device") and "## Compute peaks (dense, random data)" in md
    tables: list[list[str]] = []
    for line in md.splitlines():
        if line.startswith("|"):
            if not tables or not tables[-1]:
                tables.append([])
            tables[-1].append(line)
        elif tables and tables[-1]:
            tables.append([])
    for t in (t for t in tables if t):
        counts = {len(re.findall(r"(?<!\\)\|", row)) for row in t}
        assert len(counts) == 1, t[0]


def test_html_is_self_contained_with_three_charts(dev) -> None:  # type: ignore[no-untyped-def]
    page = render_device_html(dev)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert page.count("<svg") == 3  # bandwidth curve, latency curve, roofline
    assert not re.search(r"(src|href)=[\"']?(https?:)?//", page)


def test_json_is_the_device_document(dev) -> None:  # type: ignore[no-untyped-def]
    assert json.loads(render_device_json(dev)) == device_doc(dev)


def test_cli_input_writes_every_format(tmp_path: Path) -> None:
    for fmt in ("table", "md", "html", "json"):
        out = tmp_path / f"d.{fmt}"
        r = subprocess.run([sys.executable, "-m", "nsightwrap", "device", "--input", str(H200), "-f", fmt, "-o", str(out)],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert out.stat().st_size > 1000 and f"written to {out}" in r.stderr
    assert read_device_file(tmp_path / "d.json") == read_device_file(H200)


#: Rows of the measured-figures table in docs/device.md -> the figure of the shipped file.
DOC_ROWS = {
    "HBM read": ("bandwidth", "hbm_read"), "HBM write": ("bandwidth", "hbm_write"),
    "HBM copy": ("bandwidth", "hbm_copy"), "L2 read": ("bandwidth", "l2_read"),
    "L1 hit latency": ("latency", "l1"), "L2 hit latency": ("latency", "l2"), "HBM latency": ("latency", "hbm"),
    "empty kernel, queue held": ("launch", "empty_held"), "empty kernels back to back": ("launch", "back_to_back"),
    "empty kernel, queue not held": ("launch", "unheld"), "host launch cost": ("launch", "host_to_start"),
    "bf16 matmul": ("compute", "bf16"), "fp16 matmul": ("compute", "fp16"), "tf32 matmul": ("compute", "tf32"),
    "fp8 e4m3 matmul": ("compute", "fp8"), "int8 matmul": ("compute", "int8"), "fp32 FMA": ("compute", "fp32"),
}  # fmt: skip
_SCALE = {"": 1.0, "k": 1e3, "G": 1e9, "T": 1e12, "P": 1e15, "n": 1.0, "u": 1e3, "m": 1e6}


def _figure(cell: str) -> float:
    """``4.57 TB/s`` -> 4.57e12 (B/s), ``1.66 us`` -> 1660.0 (ns)."""
    hit = re.match(r"([\d.]+) ([kGTP]?)(?:B/s|FLOP/s|OP/s)|([\d.]+) ([num])s\b", cell.strip())
    assert hit, cell
    number, prefix = (hit[1], hit[2]) if hit[1] else (hit[3], hit[4])
    return float(number) * _SCALE[prefix]


def test_docs_give_the_shipped_files_figures(dev) -> None:  # type: ignore[no-untyped-def]
    doc = (ROOT / "docs" / "device.md").read_text()
    section = doc.split("## Measured on an NVIDIA H200", 1)[1].split("\n## ", 1)[0]
    assert dev.created[:10] in section and dev.gpu.name in section
    seen: list[str] = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        key = next((k for k in DOC_ROWS if cells[0].startswith(k)), None) if len(cells) == 5 else None
        if key is None:
            continue
        seen.append(key)
        m = dev.get(*DOC_ROWS[key])
        assert m is not None and m.value is not None, key
        # Three significant figures: within half a unit of the third digit.
        assert _figure(cells[1]) == pytest.approx(m.value, rel=6e-3), (key, cells[1], m.value)
        if m.unit == "ns" and m.group == "latency":
            cycles = re.search(r"([\d.]+) cycles", cells[1])
            assert cycles and abs(float(cycles[1]) - m.params["cycles"]) <= 0.5, (key, cells[1])
        clock = re.match(r"([\d.]+) GHz", cells[2])
        if clock:
            assert m.sm_clock_hz and abs(float(clock[1]) * 1e9 - m.sm_clock_hz) <= 6e6, (key, cells[2])
        assert (m.status == "throttled") == ("throttled" in cells[2]), (key, cells[2], m.status)
        for reason in m.throttle_reasons:
            assert reason in cells[2], (key, reason)
    assert sorted(seen) == sorted(DOC_ROWS)
