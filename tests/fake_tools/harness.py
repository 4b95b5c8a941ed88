"""Test helpers for ``nsightwrap profile``: an environment with the fake tools on PATH, and the
CLI run in-process (fast) or as a separate process group (for Ctrl-C)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

FAKES = Path(__file__).resolve().parent
TESTS = FAKES.parent
ROOT = TESTS.parent
TARGET = TESTS / "profile_target.py"
FAKE_PATH = [str(FAKES / "bin"), str(FAKES / "target-linux-x64")]
_CLEARED = (
    "NSIGHTWRAP_NCU", "NSIGHTWRAP_NSYS", "NSIGHTWRAP_RUN_DIR", "NSIGHTWRAP_PASS", "NSIGHTWRAP_NCU_ITERS",
    "FAKE_TOOLS_MODE", "TARGET_FAIL", "TARGET_SIGNAL", "TARGET_SLEEP", "TARGET_IGNORE_SIGINT", "TARGET_PID_FILE", "TARGET_DELAY",
    "FAKE_NSYS_EXPORT_DELAY",
)  # fmt: skip


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


def use_fakes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, path: list[str] | None = None) -> Path:
    """Fake ncu/nsys/nvidia-smi first on PATH (or exactly ``path``), cwd in tmp_path, and a log
    of every fake tool call; returns that log's path."""
    for var in _CLEARED:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(
        "PATH", os.pathsep.join(path if path is not None else [*FAKE_PATH, os.environ["PATH"]])
    )
    log = tmp_path / "fake_tools.log"
    monkeypatch.setenv("FAKE_TOOLS_LOG", str(log))
    monkeypatch.chdir(tmp_path)
    return log


def profile(capsys: pytest.CaptureFixture[str], *args: str) -> Result:
    """``nsightwrap profile ARGS`` in this process; its exit code and output."""
    from nsightwrap.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["profile", *args])
    cap = capsys.readouterr()
    code = exc.value.code
    return Result(code if isinstance(code, int) else (0 if code is None else 1), cap.out, cap.err)


def manifest(run_dir: Path) -> dict[str, Any]:
    return json.loads((run_dir / "manifest.json").read_text())


def passes(m: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["name"]: p for p in m["passes"]}


def tool_calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def alive(pid: int) -> bool:
    """A process that exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def spawn_profile(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    """``python -m nsightwrap profile ARGS`` in its own process group (a terminal's Ctrl-C goes
    to the whole foreground group; a test sends SIGINT to this one)."""
    return subprocess.Popen(
        [sys.executable, "-m", "nsightwrap", "profile", *args], cwd=cwd, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
