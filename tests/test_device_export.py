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
from nsightwrap.export.device_html import render_device_html
from nsightwrap.export.device_json import render_device_json
from nsightwrap.export.device_markdown import render_device_markdown
from nsightwrap.export.device_table import print_device
from nsightwrap.export.device_text import rate

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
