"""Exporters by one protocol: every (kind, format) in ``export.registry`` renders real results (the
shipped run fixtures/runs/h200-example, its timer sidecar compared with itself, the shipped device
file), the same bytes as the format module's own function; formats load on first use."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from lxml import etree

from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import RunResult
from nsightwrap.compare.sides import load_side
from nsightwrap.compare.verdicts import Comparison, compare
from nsightwrap.device.result import DeviceFile
from nsightwrap.device.store import read_device_file
from nsightwrap.export import html, jsonio, junit, markdown, registry, terminal

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "fixtures" / "runs" / "h200-example"


def _no_svg(page: str | bytes) -> str:
    """``page`` with each inline SVG as ``<svg/>``: matplotlib stamps a date and random ids."""
    assert isinstance(page, str)
    return re.sub(r"<svg.*?</svg>", "<svg/>", page, flags=re.S)


@pytest.fixture(scope="module")
def run() -> RunResult:
    return analyze(RUN)


@pytest.fixture(scope="module")
def comparison() -> Comparison:
    sidecar = next((RUN / "plain").glob("timer-*.json"))
    return compare(load_side(sidecar), load_side(sidecar))


@pytest.fixture(scope="module")
def device() -> DeviceFile:
    return read_device_file(ROOT / "fixtures" / "device" / "h200.json")


def test_each_kind_lists_its_formats() -> None:
    assert registry.formats("report") == ("terminal", "md", "html", "json")
    assert registry.formats("compare") == ("terminal", "md", "json", "junit")
    assert registry.formats("device") == ("terminal", "md", "html", "json")
    for section in ("gap", "power", "shards", "roofline"):
        assert registry.formats(section) == ("md", "html")


def test_unknown_pairs_say_what_exists() -> None:
    with pytest.raises(LookupError, match=r"no 'junit' exporter for 'report'; it has: terminal, md, html, json"):
        registry.get("report", "junit")
    with pytest.raises(ValueError, match="unknown exporter"):
        registry.exporter("report", "pdf")


def test_report_through_the_protocol(run: RunResult) -> None:
    md = registry.render("report", "md", run)
    assert md == markdown.render_markdown(run) and md.startswith("# nsightwrap report\n")
    assert registry.render("report", "json", run) == jsonio.write_report_json(run)
    assert json.loads(registry.render("report", "json", run))["summary"]["benchmarks"] == 7
    text = registry.render("report", "terminal", run)
    assert isinstance(text, str) and text.splitlines()[0].startswith("7 benchmarks: ")
    assert text == terminal.report_plain(run)
    page = registry.render("report", "html", run)
    assert isinstance(page, str) and page.startswith("<!DOCTYPE html>") and page.endswith("</body></html>")


def test_sections_through_the_protocol(run: RunResult) -> None:
    assert registry.render("gap", "md", run) == "\n".join(markdown.gap_markdown(run))
    assert "## Where the gap comes from" in registry.render("gap", "md", run)
    assert registry.render("roofline", "md", run).startswith("## Roofline")
    assert "<h2>Where the gap comes from</h2>" in registry.render("gap", "html", run)
    assert registry.render("shards", "md", run) == ""  # one shard: nothing to say
    power = registry.render("power", "html", run)
    assert _no_svg(power) == _no_svg("\n".join(html.power_html(run))) and "<svg/>" in _no_svg(power)


def test_compare_through_the_protocol(comparison: Comparison) -> None:
    assert registry.render("compare", "md", comparison) == markdown.compare_markdown(comparison)
    doc = json.loads(registry.render("compare", "json", comparison))
    assert doc["format"] == "nsightwrap-compare" and doc["version"] == 2
    xml = registry.render("compare", "junit", comparison)
    assert isinstance(xml, bytes) and xml == junit.compare_junit(comparison)
    assert etree.fromstring(xml).find("testsuite").get("failures") == "0"  # type: ignore[union-attr]
    assert "compared:" in registry.render("compare", "terminal", comparison)


def test_device_through_the_protocol(device: DeviceFile) -> None:
    assert registry.render("device", "md", device) == markdown.render_device_markdown(device)
    assert registry.render("device", "json", device) == jsonio.render_device_json(device)
    assert "nsightwrap device: " in registry.render("device", "terminal", device)
    page = registry.render("device", "html", device)
    assert _no_svg(page) == _no_svg(html.render_device_html(device)) and "<h1>nsightwrap device</h1>" in page


def test_a_format_loads_only_what_it_needs() -> None:
    code = (
        "import sys; from nsightwrap.export import registry; registry.get('report', 'md'); "
        "print('matplotlib' in sys.modules, 'lxml' in sys.modules, 'nsightwrap.export.html' in sys.modules)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False", "False"]
