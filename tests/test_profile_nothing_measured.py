"""``nsightwrap profile`` that measured nothing exits 6 with one line naming why and the fix: on a
PATH without any GPU tool at once, leaving nothing behind; where something could measure but
nothing did, after the passes, with the raw files kept and the manifest saying exit 6. Real
``python -m nsightwrap`` processes."""

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


def run_profile(
    tmp_path: Path, path: list[str], *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {
        "HOME": str(tmp_path),
        "PATH": os.pathsep.join(path),
        "PYTHONPATH": str(ROOT),  # this checkout's nsightwrap, whatever is installed
        "FAKE_TOOLS_LOG": str(tmp_path / "fake_tools.log"),
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "nsightwrap", "profile", *args], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def error_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("error:")]


@pytest.mark.skipif(has_real_tools, reason="ncu, nsys or nvidia-smi is installed where nsightwrap looks")
@pytest.mark.parametrize("flags", [("-q",), (), ("--no-analyze",)])
def test_no_gpu_no_ncu_no_nsys_exits_6_at_once_with_one_line_and_leaves_nothing(tmp_path: Path, flags: tuple[str, ...]) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    r = run_profile(tmp_path, [str(empty)], *flags, "-o", "run", str(TARGET))
    assert r.returncode == EXIT_NOTHING_MEASURED, r.stderr
    # Checked before anything runs: one line (no doctor lines, no warnings, no empty table) ...
    assert r.stderr.splitlines() == [
        "error: nothing can be measured on this machine: no NVIDIA GPU (nvidia-smi not found); ncu and nsys not "
        "found; run on a machine with an NVIDIA GPU and its driver (nsightwrap doctor), with the CUDA toolkit's "
        "Nsight tools installed or given by --ncu/--nsys PATH; nothing was run and no run directory was made"
    ]
    assert r.stdout == ""
    # ... and nothing left behind: no run directory, no default one, the target never ran.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin"]
    # Without a run directory given either.
    r = run_profile(tmp_path, [str(empty)], *flags, str(TARGET))
    assert r.returncode == EXIT_NOTHING_MEASURED and sorted(p.name for p in tmp_path.iterdir()) == ["bin"]


def test_the_nothing_measured_line_names_each_cause_its_manifest_shows(tmp_path: Path, monkeypatch) -> None:
    # A run whose manifest has no GPU and skipped ncu and nsys passes, read on a PATH without
    # nvidia-smi (where something could measure, the run goes on to this line).
    from nsightwrap.cli.profile_cmd import nothing_measured_line

    monkeypatch.setenv("PATH", str(tmp_path))
    run = tmp_path / "run"
    (run / "plain").mkdir(parents=True)
    (run / "plain" / "stdout.log").write_text("target: pass=plain\n")
    passes = [{"name": "plain", "status": "ok"}, {"name": "ncu", "status": "skipped"}, {"name": "nsys", "status": "skipped"}]
    (run / "manifest.json").write_text(json.dumps({"gpu": None, "passes": passes}))
    line = nothing_measured_line(run)
    why, fix = line.split(" (fix: ", 1)
    assert why == f"nothing was measured in {run}: no NVIDIA GPU (nvidia-smi not found), ncu and nsys not found, no timings were captured"
    assert "nsightwrap doctor" in fix and "--ncu/--nsys PATH" in fix and "nsightwrap.bench" in fix
    assert f"(the target's output: {run / 'plain' / 'stdout.log'})" in fix
    assert line.endswith(f"raw files kept in {run}")


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
    assert (m["status"], m["exit_code"]) == ("nothing-measured", EXIT_NOTHING_MEASURED)  # what the process returned
    # report --strict on that run fails too (no silent green in CI).
    rep = subprocess.run(
        [sys.executable, "-m", "nsightwrap", "report", str(run), "--strict", "--format", "json"],
        env={"PATH": str(tmp_path), "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}, capture_output=True, text=True,
    )  # fmt: skip
    assert rep.returncode == 1 and "nothing was measured" in rep.stderr
    assert (run / "plain" / "smi_samples.csv").is_file() and (run / "env" / "nvidia-smi-q-x.xml").is_file()
