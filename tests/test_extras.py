"""matplotlib is the ``html`` extra: every output but the device page works without it (the HTML
report included), and the device page asked for without it is one line naming
``pip install 'nsightwrap[html]'`` and exit 8. Each case is a real
``nsightwrap`` process in which ``import matplotlib`` fails (``sys.modules`` holds None for it,
as Python does for a module that cannot be imported)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nsightwrap.core.errors import EXIT_MISSING_EXTRA

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "fixtures" / "runs" / "h200-example"
DEVICE = ROOT / "fixtures" / "device" / "h200.json"

#: The CLI with matplotlib unimportable; afterwards, whether any of it was imported.
_SCRIPT = """
import sys
sys.modules["matplotlib"] = None
from nsightwrap.cli import main
try:
    main(sys.argv[1:])
finally:
    loaded = sorted(m for m, v in sys.modules.items() if m.startswith("matplotlib") and v is not None)
    print("matplotlib loaded:", loaded, file=sys.stderr)
"""


def without_matplotlib(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _SCRIPT, *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_the_html_report_needs_no_matplotlib(tmp_path: Path) -> None:
    """The report's charts are SVG written by nsightwrap: the page is whole without matplotlib."""
    out = tmp_path / "r.html"
    r = without_matplotlib("report", RUN, "--format", "html", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "matplotlib loaded: []" in r.stderr
    page = out.read_text()
    assert page.count("<svg") >= 7 and "add_small" in page and "class=\"nw-point\"" in page


def test_device_page_without_matplotlib_exits_8(tmp_path: Path) -> None:
    r = without_matplotlib("device", "--input", DEVICE, "--format", "html", "-o", tmp_path / "d.html")
    assert r.returncode == EXIT_MISSING_EXTRA == 8 and "the HTML device page needs matplotlib" in r.stderr
    assert "pip install 'nsightwrap[html]'" in r.stderr


@pytest.mark.parametrize("fmt", ["table", "md", "json"])
def test_every_other_report_needs_no_matplotlib(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"r.{fmt}"
    r = without_matplotlib("report", RUN, "--format", fmt, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "matplotlib loaded: []" in r.stderr
    text = out.read_text()
    assert "add_small" in text
    if fmt == "json":
        assert json.loads(text)["format"] == "nsightwrap-report"


def test_compare_and_the_notebook_frames_need_no_matplotlib(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    assert without_matplotlib("report", RUN, "--format", "json", "-o", report).returncode == 0
    r = without_matplotlib("compare", report, report, "--format", "json", "-o", tmp_path / "c.json")
    assert r.returncode == 0 and "matplotlib loaded: []" in r.stderr, r.stderr
    code = (
        "import sys; sys.modules['matplotlib'] = None\n"
        "import nsightwrap as nw\n"
        f"run = nw.load_run({str(RUN)!r})\n"
        "assert len(run.to_frame()) == 7 and 'add_small' in run._repr_html_()\n"
        "print('svgs:', run.full_html().count('<svg'))\n"
    )
    nb = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert nb.returncode == 0, nb.stderr
    assert int(nb.stdout.split("svgs:")[1]) >= 7
