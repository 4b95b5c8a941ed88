"""``nsightwrap profile`` that measured nothing exits 6 with one line naming why and the fix,
and keeps the raw files: a real ``python -m nsightwrap`` process, once on a PATH without any GPU
tool and once with the fake tools on PATH and a target that timed nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_tools.harness import FAKE_PATH, ROOT, TARGET

from nsightwrap.core.errors import EXIT_NOTHING_MEASURED
from nsightwrap.run.tools import known_locations

#: ncu/nsys installed where nsightwrap looks besides PATH, or a driver's nvidia-smi: not a
#: machine without GPU tools, whatever PATH says.
has_real_tools = bool(known_locations("ncu") or known_locations("nsys") or Path("/usr/bin/nvidia-smi").exists())


def run_profile(tmp_path: Path, path: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "HOME": str(tmp_path),
        "PATH": os.pathsep.join(path),
        "PYTHONPATH": str(ROOT),  # this checkout's nsightwrap, whatever is installed
        "FAKE_TOOLS_LOG": str(tmp_path / "fake_tools.log"),
    }
    return subprocess.run(
        [sys.executable, "-m", "nsightwrap", "profile", *args], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def error_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("error:")]


@pytest.mark.skipif(has_real_tools, reason="ncu, nsys or nvidia-smi is installed where nsightwrap looks")
def test_no_gpu_no_ncu_no_nsys_exits_6_naming_each_cause_and_fix(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    r = run_profile(tmp_path, [str(empty)], "-q", "-o", "run", str(TARGET))
    assert r.returncode == EXIT_NOTHING_MEASURED, r.stderr
    assert "Traceback" not in r.stderr
    lines = error_lines(r.stderr)
    assert len(lines) == 1, r.stderr  # one line, even with -q
    line = lines[0]
    run = tmp_path / "run"
    assert line.startswith(f"error: nothing was measured in {run}: ")
    why, fix = line.split(" (fix: ", 1)
    assert "no NVIDIA GPU (nvidia-smi not found)" in why and "ncu and nsys not found" in why
    assert "no timings were captured" in why
    assert "nsightwrap doctor" in fix and "--ncu/--nsys PATH" in fix and "nsightwrap.bench" in fix
    assert line.endswith(f"raw files kept in {run}")
    assert r.stdout.strip() == "run directory: run (complete, nothing measured); reports: nsightwrap report run"
    # The raw files are kept: the manifest, the plain pass's output and its (empty) sidecar.
    m = json.loads((run / "manifest.json").read_text())
    assert {p["name"]: p["status"] for p in m["passes"]} == {"plain": "ok", "ncu": "skipped", "nsys": "skipped"}
    assert "target: pass=plain" in (run / "plain" / "stdout.log").read_text()
    assert len(list((run / "plain").glob("timer-*.json"))) == 1
    # report --strict on that run fails too (no silent green in CI).
    rep = subprocess.run(
        [sys.executable, "-m", "nsightwrap", "report", str(run), "--strict", "--format", "json"],
        env={"PATH": str(empty), "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}, capture_output=True, text=True,
    )  # fmt: skip
    assert rep.returncode == 1 and "nothing was measured" in rep.stderr


def test_tools_that_measured_nothing_exit_6_with_the_timing_fix(tmp_path: Path) -> None:
    # The fake nvidia-smi, ncu and nsys are on PATH; the plain pass runs and the target times nothing.
    r = run_profile(tmp_path, [*FAKE_PATH, os.path.dirname(shutil.which("env") or "/usr/bin/env")],
                    "-o", "run", "--passes", "plain", "--no-checks", str(TARGET))  # fmt: skip
    assert r.returncode == EXIT_NOTHING_MEASURED, r.stderr
    assert "Traceback" not in r.stderr
    [line] = error_lines(r.stderr)
    run = tmp_path / "run"
    assert "no timings were captured" in line and "not found" not in line and "no NVIDIA GPU" not in line
    assert f"(the target's output: {run / 'plain' / 'stdout.log'})" in line
    assert "nsightwrap.bench or do_bench" in line and "--nvtx-include" in line
    assert "0 benchmarks" in r.stdout  # the report was still printed, and says so
    m = json.loads((run / "manifest.json").read_text())
    assert [p["name"] for p in m["passes"]] == ["plain"] and m["passes"][0]["status"] == "ok"
    assert (run / "plain" / "smi_samples.csv").is_file() and (run / "env" / "nvidia-smi-q-x.xml").is_file()
