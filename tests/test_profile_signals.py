"""Ctrl-C during ``nsightwrap profile``: children stopped and reaped, what was written kept,
manifest ``interrupted``, exit 130. Runs the CLI as its own process group, as a terminal would."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from fake_tools.harness import FAKE_PATH, TARGET, alive, spawn_profile


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NSIGHTWRAP_", "TARGET_", "FAKE_TOOLS_"))}
    env["PATH"] = os.pathsep.join([*FAKE_PATH, env["PATH"]])
    env["TARGET_PID_FILE"] = str(tmp_path / "pids")
    env.update(extra)
    return env


def _wait_for_pid(path: Path, pass_name: str, timeout: float = 20) -> int:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if path.exists():
            for line in path.read_text().splitlines():
                name, pid = line.split()[:2]
                if name == pass_name:
                    return int(pid)
        time.sleep(0.05)
    raise AssertionError(f"the target never started its {pass_name} pass")


def _sampler_pids() -> list[int]:
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes()
            except OSError:
                continue
            if b"fake_tools/bin/nvidia-smi" in cmd and b"-lms" in cmd and alive(int(d.name)):
                pids.append(int(d.name))
    return pids


def test_ctrl_c_in_the_plain_pass(tmp_path: Path) -> None:
    proc = spawn_profile(
        ["-o", "run", "--no-analyze", str(TARGET)],
        _env(tmp_path, TARGET_SLEEP="plain", TARGET_DELAY="0"),
        tmp_path,
    )
    pid = _wait_for_pid(tmp_path / "pids", "plain")
    time.sleep(0.3)  # let the sampler write a line or two
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    m = json.loads((tmp_path / "run/manifest.json").read_text())
    p = {x["name"]: x for x in m["passes"]}
    assert (m["status"], m["exit_code"]) == ("interrupted", 130)
    assert (p["plain"]["status"], p["ncu"]["status"], p["nsys"]["status"]) == (
        "interrupted",
        "skipped",
        "skipped",
    )
    assert p["plain"]["commands"][0]["status"] == "interrupted"
    assert "target: pass=plain" in (tmp_path / "run/plain/stdout.log").read_text()  # output kept
    assert not alive(pid)
    assert _sampler_pids() == []
    assert "run directory: run (interrupted)" in out


def test_ctrl_c_in_the_ncu_pass_reaches_the_target_under_ncu(tmp_path: Path) -> None:
    # The target ignores SIGINT: the fake ncu exits on it, the target must still be killed.
    env = _env(tmp_path, TARGET_SLEEP="ncu", TARGET_IGNORE_SIGINT="1")
    proc = spawn_profile(
        ["-o", "run", "--no-analyze", "--passes", "plain,ncu,nsys", str(TARGET)], env, tmp_path
    )
    pid = _wait_for_pid(tmp_path / "pids", "ncu")
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    m = json.loads((tmp_path / "run/manifest.json").read_text())
    p = {x["name"]: x for x in m["passes"]}
    assert (p["plain"]["status"], p["ncu"]["status"], p["nsys"]["status"]) == ("ok", "interrupted", "skipped")
    assert not alive(pid)


def test_sigterm_stops_like_ctrl_c(tmp_path: Path) -> None:
    proc = spawn_profile(
        ["-o", "run", "--no-analyze", "--passes", "plain", str(TARGET)],
        _env(tmp_path, TARGET_SLEEP="plain"),
        tmp_path,
    )
    pid = _wait_for_pid(tmp_path / "pids", "plain")
    os.kill(proc.pid, signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert json.loads((tmp_path / "run/manifest.json").read_text())["status"] == "interrupted"
    assert not alive(pid)
