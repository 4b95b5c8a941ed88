"""``nsightwrap doctor`` on a real GPU with real ncu: counters, report reading, clock lock."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent


def _doctor(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "nsightwrap", "doctor", *args], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def test_doctor_on_the_gpu() -> None:
    if shutil.which("ncu") is None:
        pytest.skip("ncu is not on PATH")
    out = _doctor("--format", "json")
    doc = json.loads(out.stdout)
    checks = {c["name"]: c for c in doc["checks"]}
    assert out.returncode == doc["exit_code"] in (0, 1, 2)
    assert checks["gpu"]["status"] == "ok" and "NVIDIA" in checks["gpu"]["message"]
    assert checks["gpu counters"]["status"] == "ok", checks["gpu counters"]
    assert checks["ncu-report reads ncu"]["status"] == "ok", checks["ncu-report reads ncu"]
    assert checks["ncu"]["evidence"]["version"]


def test_doctor_names_the_crashing_ncu_report_of_nsight_compute() -> None:
    extras = sorted(Path("/opt/nvidia/nsight-compute").glob("*/extras/python"))
    if not extras:
        pytest.skip("no Nsight Compute extras/python here")
    path = os.pathsep.join([str(extras[-1]), str(ROOT), os.environ.get("PYTHONPATH", "")])
    out = _doctor("--quick", env_extra={"PYTHONPATH": path})
    line = next(ln for ln in out.stdout.splitlines() if ln[6:].startswith("ncu-report  "))
    assert "Nsight Compute's extras/python" in line and str(extras[-1]) in line


def test_doctor_refuses_a_gpu_that_does_not_exist() -> None:
    out = _doctor("--quick", "--gpu", "99")
    assert out.returncode == 2 and "--gpu 99: no such GPU" in out.stderr
