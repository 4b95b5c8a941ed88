"""Text the profiled program chose (its argv, kernel and NVTX names) in every output: control
characters and bidi overrides shown escaped, CSV cells that a spreadsheet would run as formulas
quoted, a Markdown code block that the text cannot end."""

from __future__ import annotations

import csv
import gzip
import io
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from nsightwrap.cli import main
from nsightwrap.export.escape import code_block, csv_cell

ROOT = Path(__file__).resolve().parent.parent
BLOG = ROOT / "fixtures" / "runs" / "h200-blog"
#: OSC 8 link, OSC 52 clipboard write, clear screen, CSI (8-bit), right-to-left override.
HOSTILE = "\x1b]8;;http://evil\x07click\x1b]8;;\x07\x1b]52;c;ZXZpbA==\x07\x1b[2J\x9b31m\u202eevil"
BREAKOUT = "x\n```\n# Heading\n<img src=x onerror=alert(1)>\n[link](http://evil)\n````"


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def assert_clean(text: str) -> None:
    for c in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert c not in text, repr(c)


def test_csv_cell_quotes_formulas_and_keeps_numbers() -> None:
    assert csv_cell("=HYPERLINK(\"http://x\")") == "'=HYPERLINK(\"http://x\")"
    assert [csv_cell(s) for s in ("+1", "-1", "@SUM(A1)")] == ["'+1", "'-1", "'@SUM(A1)"]
    assert csv_cell(-3.5) == -3.5 and csv_cell(-7) == -7  # numbers stay numbers
    assert csv_cell("\tcmd") == "\\x09cmd" and csv_cell("void k<float>()") == "void k<float>()"
    assert csv_cell(HOSTILE).count("\\x1b") == 4 and "\\u202e" in str(csv_cell(HOSTILE))


def test_code_block_fence_is_longer_than_any_run_of_backticks_in_it() -> None:
    lines = code_block(BREAKOUT + "\x1b[2J", "sh")
    assert lines[0] == "`````sh" and lines[-1] == "`````"
    assert all(len(line) < 5 or line.strip("`") for line in lines[1:-1])  # no inner line closes it
    assert "\\x1b[2J" in lines[-2] and "# Heading" in lines
    assert code_block("a b", "sh") == ["```sh", "a b", "```"]


@pytest.fixture()
def hostile_run(tmp_path: Path) -> Path:
    """h200-blog with the target's argv and a benchmark name holding a Markdown breakout and
    terminal escapes."""
    run = tmp_path / "run"
    run.mkdir()
    for part in ("manifest.json", "plain", "env"):  # the timer's side only: a quick analysis
        (shutil.copytree if (BLOG / part).is_dir() else shutil.copy)(BLOG / part, run / part)
    m = json.loads((run / "manifest.json").read_text())
    m["target"]["argv"] = ["bench.py", BREAKOUT, HOSTILE]
    (run / "manifest.json").write_text(json.dumps(m))
    sidecar = next((run / "plain").glob("timer-*.json"))
    doc = json.loads(sidecar.read_text())
    doc["benchmarks"][0]["name"] = "=HYPERLINK(\"http://evil\")" + HOSTILE
    sidecar.write_text(json.dumps(doc))
    return run


def test_markdown_report_keeps_a_hostile_argv_inside_its_code_block(
    hostile_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, md, err = run_cli(capsys, "report", str(hostile_run), "--format", "md")
    assert code in (0, 1), err
    assert_clean(md)
    lines = md.splitlines()
    start = lines.index("## Reproduce") + 2
    fence = lines[start].removesuffix("sh")
    assert set(fence) == {"`"} and len(fence) > 4
    end = lines.index(fence, start + 1)
    block = lines[start + 1 : end]
    assert "# Heading" in block and "<img src=x onerror=alert(1)>" in block  # text inside, not Markdown
    assert "# Heading" not in lines[:start] + lines[end:]
    for fmt in ("table", "html"):
        code, text, err = run_cli(capsys, "report", str(hostile_run), "--format", fmt)
        if code == 8:  # the html extra is not installed here
            continue
        assert code in (0, 1), err
        assert_clean(text)


def test_inspect_csv_of_hostile_kernel_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "report.sqlite"
    db.write_bytes(gzip.decompress((BLOG / "nsys" / "report.sqlite.gz").read_bytes()))
    with sqlite3.connect(db) as con:
        con.execute("UPDATE StringIds SET value = '=HYPERLINK(\"http://evil\",\"x\")' || value || ?", (HOSTILE,))
    con.close()
    for by in ("kernel", "range"):
        code, out, err = run_cli(capsys, "inspect", str(db), "--by", by, "--format", "csv")
        assert code == 0, err
        assert_clean(out)
        rows = list(csv.DictReader(io.StringIO(out)))
        assert rows
        names = [v for r in rows for v in r.values() if v and "HYPERLINK" in v]
        assert names and all("\\x1b]52" in v for v in names)
        assert by == "range" or any(v.startswith("'=HYPERLINK") for v in names)  # a kernel name starts so
        # No cell a spreadsheet would run: one starting with = + - @ is a number or quoted.
        for v in (v for r in rows for v in r.values() if v and v[0] in "=+-@"):
            float(v)
        # Numeric columns stay numbers: no quote before any of them.
        numeric = [k for k in rows[0] if k.endswith("_ns")]
        assert numeric and all(not r[k].startswith("'") for r in rows for k in numeric)
    for fmt in ("table", "md", "json"):
        code, out, err = run_cli(capsys, "inspect", str(db), "--format", fmt)
        assert code == 0, err
        assert_clean(out)
