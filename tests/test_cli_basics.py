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
