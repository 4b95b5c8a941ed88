"""``nsightwrap report``: formats, -o, --strict, and one-line errors with exit code 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from refrun import build_run_dir

from nsightwrap.cli import main


def run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``python -m nsightwrap ARGS`` in a child process (the real entry point)."""
    return subprocess.run([sys.executable, "-m", "nsightwrap", *map(str, args)], capture_output=True, text=True)


def call(capsys: pytest.CaptureFixture[str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``nsightwrap ARGS`` in this process (fast): exit code, stdout and stderr."""
    code = 0
    try:
        main([str(a) for a in args])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out.out, out.err)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_run_dir(tmp_path_factory.mktemp("cli"))


def test_table_and_strict(run_dir: Path) -> None:
    r = run("report", run_dir)
    assert r.returncode == 0, r.stderr
    assert "mm_small" in r.stdout and "flagged" in r.stdout
    strict = run("report", run_dir, "--strict", "-f", "json")  # JSON on stdout, exit 1
    assert strict.returncode == 1
    assert json.loads(strict.stdout)["benchmarks"][0]["verdict"] == "flagged"


def test_files_and_options(run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for fmt in ("md", "json", "html", "table"):
        out = tmp_path / f"report.{fmt}"
        r = call(capsys, "report", run_dir, "--format", fmt, "-o", out, "--tolerance", "25", "--clock-ref", "1636MHz")
        assert r.returncode == 0, r.stderr
        assert f"report written to {out}" in r.stderr
        assert out.stat().st_size > 500
    doc = json.loads((tmp_path / "report.json").read_text())
    assert doc["settings"] == {"tolerance": 0.25, "clock_ref": "1636MHz"}
    large = next(b for b in doc["benchmarks"] if b["name"] == "mm_large")
    assert large["verdict"] == "ok" and large["ref_clock_hz"] == 1.636e9


def test_bad_input_is_one_line_exit_2(tmp_path: Path, run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [
        ("report", tmp_path / "nope"),
        ("report", tmp_path),  # a directory without manifest.json
        ("report", run_dir, "--clock-ref", "fast"),
        ("report", run_dir, "--tolerance", "0"),
    ]
    for args in cases:
        r = call(capsys, *args)
        assert r.returncode == 2, (args, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert r.stderr.startswith("error:")
        assert "Traceback" not in r.stderr


def test_future_manifest_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = build_run_dir(tmp_path)
    m = json.loads((d / "manifest.json").read_text())
    m["version"] = 7
    (d / "manifest.json").write_text(json.dumps(m))
    r = call(capsys, "report", d)
    assert r.returncode == 2 and "manifest version 7" in r.stderr

