"""``nsightwrap device`` on a real GPU: a quick run measures plausible ceilings in under 30 s and
caches them per GPU; without triton the Triton measurements are marked skipped, not faked."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nsightwrap.device.store import cache_path, read_device_file

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent


def _env(tmp: Path, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    env["XDG_CACHE_HOME"] = str(tmp / "cache")  # never the user's own cache
    env.update(extra)
    return env


def test_quick_run_measures_ceilings_and_caches_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # where the child caches it
    out = tmp_path / "device.json"
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "nsightwrap", "device", "--quick", "-f", "json", "-o", str(out)],
        env=_env(tmp_path), capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    wall = time.monotonic() - t0
    assert r.returncode == 0, r.stderr[-3000:]
    print(r.stderr[-3000:])
    dev = read_device_file(out)
    assert dev.mode == "quick"
    assert wall < 30, f"--quick took {wall:.1f} s"
    cached = cache_path(dev.gpu.uuid or "")
    assert cached.is_file() and read_device_file(cached) == dev
    copy = dev.get("bandwidth", "hbm_copy")
    bf16 = dev.get("compute", "bf16")
    l1, l2, hbm = (dev.get("latency", n) for n in ("l1", "l2", "hbm"))
    assert copy is not None and copy.measured and copy.value and copy.value > 5e11
    assert bf16 is not None and bf16.measured and bf16.value and bf16.value > 5e13
    assert bf16.sm_clock_hz and 0.5e9 < bf16.sm_clock_hz < 3e9
    assert l1 and l2 and hbm and l1.value and l2.value and hbm.value
    assert l1.value < l2.value < hbm.value
    if "H200" in dev.gpu.name:  # the anchors of docs/device.md, loosely
        assert 3.0e12 < copy.value < 5.0e12
        assert 4.0e14 < bf16.value < 1.0e15
        assert 300 < hbm.value < 2000  # ns
    assert len(dev.bandwidth_curve) >= 5 and len(dev.latency_curve) >= 5


def test_without_triton_the_triton_measurements_are_marked_skipped(tmp_path: Path) -> None:
    blocker = tmp_path / "no_triton" / "triton"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError('triton is blocked in this test')\n")
    out = tmp_path / "device.json"
    env = _env(tmp_path)
    env["PYTHONPATH"] = os.pathsep.join([str(blocker.parent), env["PYTHONPATH"]])
    r = subprocess.run(
        [sys.executable, "-m", "nsightwrap", "device", "--quick", "--only", "latency,launch", "--no-save",
         "-f", "json", "-o", str(out)],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert "triton is not usable" in r.stderr
    dev = read_device_file(out)
    lat = dev.group("latency")
    assert lat and all(m.status == "skipped" and "triton" in m.message for m in lat)
    held = dev.get("launch", "empty_held")
    assert held is not None and held.measured and held.value and 100 < held.value < 50_000
    assert not (tmp_path / "cache").exists()
