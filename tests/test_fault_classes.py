"""Faults a user can meet, each as nsightwrap promises: one line, its own exit code, no traceback;
hostile kernel names escaped; outputs that fit their limits and say what they left out."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from lxml import etree
from refrun import build_run_dir

from nsightwrap.analysis.model import Verdict
from nsightwrap.cli import main
from nsightwrap.cli.report_cmd import STRICT_PASS, strict_failures
from nsightwrap.core.errors import EXIT_NO_COMMON, EXIT_NOTHING_MEASURED
from nsightwrap.export.escape import html, md_cell, terminal_safe, xml_safe

HOSTILE = "mm\x1b[2J\x1b]8;;http://x\x07link\u202eevil[dtype=bf16]"


def call(capsys: pytest.CaptureFixture[str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    code = 0
    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out.out, out.err)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_run_dir(tmp_path_factory.mktemp("faults"))


def test_exit_codes_are_distinct() -> None:
    from nsightwrap.core import errors

    codes = [getattr(errors, n) for n in dir(errors) if n.startswith("EXIT_")]
    assert len(codes) == len(set(codes))
    assert EXIT_NOTHING_MEASURED == 6 and EXIT_NO_COMMON == 7


def test_hostile_names_are_escaped_for_every_format() -> None:
    t = terminal_safe(HOSTILE)
    assert "\x1b" not in t and "\x07" not in t and "\u202e" not in t
    assert "\\x1b" in t and "\\u202e" in t and "[dtype=bf16]" in t
    assert "\x1b" not in md_cell(HOSTILE) and "\x1b" not in html(HOSTILE)
    x = xml_safe("a\x00b\x1bc")
    assert "\x00" not in x and "\x1b" not in x


def test_terminal_report_escapes_a_hostile_name(run_dir: Path) -> None:
    from dataclasses import replace
    from io import StringIO

    from rich.console import Console

    from nsightwrap.analysis.load import analyze
    from nsightwrap.export.terminal import print_report

    result = analyze(run_dir)
    b = replace(result.benchmarks[0], name=HOSTILE, params={})
    result = replace(result, benchmarks=(b, *result.benchmarks[1:]))
    buf = StringIO()
    print_report(result, Console(file=buf, width=200, no_color=True))
    text = buf.getvalue()
    assert "\x1b" not in text and "\u202e" not in text
    assert "[dtype=bf16]" in text  # brackets are data, not rich markup
    assert text.splitlines()[0].startswith(f"{len(result.benchmarks)} benchmarks")


def test_strict_fails_on_every_verdict_but_ok_and_explained(run_dir: Path) -> None:
    from dataclasses import replace

    from nsightwrap.analysis.load import analyze

    b = analyze(run_dir).benchmarks[0]
    assert STRICT_PASS == {"ok", "explained"}
    for v in Verdict:
        failing = strict_failures([replace(b, verdict=v)])
        assert bool(failing) == (v.value not in STRICT_PASS or (b.timer is None and b.ncu is None and b.nsys is None))


def test_compare_with_nothing_in_common_exits_7(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = tmp_path / "base.json"
    assert call(capsys, "report", run_dir, "-f", "json", "-o", base).returncode in (0, 1)
    doc = json.loads(base.read_text())
    for b in doc["benchmarks"]:
        b["name"] = "renamed_" + b["name"] + "\x1b[2J"
    cur = tmp_path / "cur.json"
    cur.write_text(json.dumps(doc))
    r = call(capsys, "compare", base, cur)
    assert r.returncode == EXIT_NO_COMMON, r.stderr
    assert "no benchmark in common" in r.stderr and "Traceback" not in r.stderr
    assert "\x1b" not in r.stdout
    junit = tmp_path / "c.xml"
    r = call(capsys, "compare", base, cur, "-f", "junit", "-o", junit)
    assert r.returncode == EXIT_NO_COMMON
    etree.parse(str(junit))  # control characters escaped: still XML
    same = call(capsys, "compare", base, base, "--require-all")
    assert same.returncode in (0, 1), same.stderr


def test_undecodable_json_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"format_version": "\xff\xfe"}')
    r = call(capsys, "compare", bad, bad)
    assert r.returncode == 2, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("bad", ["../..", "/etc", "shards/../../x"])
def test_shard_dir_outside_the_run_is_refused(
    bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    src = Path(__file__).resolve().parents[1] / "fixtures" / "runs" / "h200-shards"
    run = tmp_path / "run"
    shutil.copytree(src, run)
    doc = json.loads((run / "manifest.json").read_text())
    doc["shards"][0]["dir"] = bad
    (run / "manifest.json").write_text(json.dumps(doc))
    for args in (("report", run), ("merge", run, "-o", tmp_path / "out")):
        r = call(capsys, *args)
        assert r.returncode == 2, (args, r.stderr)
        assert "outside the run directory" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


def test_markdown_fits_githubs_limit_and_says_what_it_left_out(run_dir: Path) -> None:
    from dataclasses import replace

    from nsightwrap.analysis.load import analyze
    from nsightwrap.export.markdown import GITHUB_LIMIT, render_markdown

    result = analyze(run_dir)
    many = tuple(
        replace(b, name=f"{b.name}_{i}|<T, U>") for i in range(500) for b in result.benchmarks
    )  # 500 copies of every real benchmark, names with Markdown and HTML syntax
    big = replace(result, benchmarks=many)
    text = render_markdown(big)
    assert len(text) <= GITHUB_LIMIT
    assert "Cut to fit GitHub's" in text and "left out" in text and "--full" in text
    assert text.index("## Summary") < text.index("## Environment")
    assert "<T, U>" not in text  # escaped
    assert len(render_markdown(big, limit=None)) > GITHUB_LIMIT
    assert render_markdown(result) == render_markdown(result, limit=None)  # a small run is whole


def test_html_one_clock_chart_and_a_caption_true_to_the_shading(run_dir: Path) -> None:
    from nsightwrap.analysis.load import analyze
    from nsightwrap.export.charts import has_timeline
    from nsightwrap.export.html import render_html

    result = analyze(run_dir)
    text = render_html(result)
    charts = text.count("<h2>SM clock, plain pass</h2>") + text.count("Plain pass: SM clock, power and temperature")
    assert charts <= 1
    if has_timeline(result) and not any(b.power and b.power.t_start_s is not None for b in result.benchmarks):
        assert "shaded" not in text
