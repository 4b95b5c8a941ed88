"""The CLI entry points exist and behave as the contract says."""

from __future__ import annotations

import subprocess
import sys


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nsightwrap", *args], capture_output=True, text=True)


def test_version_and_help() -> None:
    r = run("--version")
    assert r.returncode == 0
    assert r.stdout.startswith("nsightwrap ")
    h = run("--help")
    assert h.returncode == 0
    assert "nsightwrap" in h.stdout


def test_unknown_command_is_usage_error() -> None:
    r = run("no-such-command")
    assert r.returncode == 2


def test_a_reader_that_stops_early_is_no_finding(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``report ... | head``: the pipe closes under a long output; exit 0 and no traceback (exit 1
    would read as a finding in CI)."""
    import subprocess
    import sys

    from conftest import FIXTURES

    cmd = [sys.executable, "-m", "nsightwrap", "report", str(FIXTURES / "runs" / "h200-mixed"), "--format", "json", "--detail"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert p.stdout is not None and p.stderr is not None
    p.stdout.read(100)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "Exception" not in err
