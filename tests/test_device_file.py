"""The device file: JSON round trip, strict reading (unknown versions and foreign files refused with
one line), the per-GPU cache, and ``nsightwrap device`` errors and views on a machine without a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from nsightwrap.core.contract import uuid_key
from nsightwrap.core.errors import FormatVersionError, ReportParseError
from nsightwrap.device.result import BandwidthPoint, DeviceFile, GpuId, LatencyPoint, Measurement
from nsightwrap.device.roofs import datasheet_roofs, measured_roofs
from nsightwrap.device.store import (
    DEVICE_FORMAT,
    cache_path,
    device_doc,
    find_cached,
    read_device_file,
    save_to_cache,
    write_device_file,
)

ROOT = Path(__file__).resolve().parent.parent
H200 = ROOT / "fixtures" / "device" / "h200.json"


def sample_device(name: str = "NVIDIA H200", uuid: str = "GPU-AbC-123") -> DeviceFile:
    ms = (
        Measurement("bandwidth", "hbm_read", "HBM read", 4.1e12, "B/s", median_ns=2.6e5, n=12, sm_clock_hz=1.98e9,
                    clock_source="probe", power_mean_w=350.0, power_max_w=380.0, work=2**30),
        Measurement("bandwidth", "hbm_copy", "HBM copy", 4.3e12, "B/s", n=12),
        Measurement("bandwidth", "l2_read", "L2 read", 1.0e13, "B/s"),
        Measurement("latency", "l1", "L1 hit latency", 16.0, "ns", params={"cycles": 31.7}),
        Measurement("compute", "bf16", "bf16 matmul", 7.9e14, "FLOP/s", status="throttled",
                    message="clock held down (sw_power_cap) in 3 of 20 samples", sm_clock_hz=1.6e9,
                    throttle_reasons=("sw_power_cap",)),
        Measurement("compute", "fp32", "fp32 FMA", 5.0e13, "FLOP/s", sm_clock_hz=1.9e9),
        Measurement("compute", "fp8", "fp8 matmul", None, "FLOP/s", status="unsupported", message="no fp8 here"),
    )  # fmt: skip
    return DeviceFile(
        gpu=GpuId(name, uuid, sm_count=132, l2_bytes=62914560, compute_capability="9.0"),
        mode="full", created="2026-12-01T00:00:00+00:00", wall_s=61.0, measurements=ms,
        bandwidth_curve=(BandwidthPoint(4096.0, 1.2e9, 6800.0), BandwidthPoint(2.0**30, 4.2e12, 5.1e5)),
        latency_curve=(LatencyPoint(4096.0, 16.0, 31.7, 1.98e9), LatencyPoint(2.0**28, 640.0, 1267.0, 1.98e9)),
        software={"torch": "2.11.0", "triton": "3.6.0", "cuda": "13.0"}, warnings=("a warning",),
        nsightwrap_version="0.1.0",
    )  # fmt: skip


def test_round_trip_is_exact(tmp_path: Path) -> None:
    dev = sample_device()
    p = write_device_file(dev, tmp_path / "sub" / "d.json")
    back = read_device_file(p)
    assert back == dev
    doc = json.loads(p.read_text())
    assert (doc["format"], doc["version"]) == (DEVICE_FORMAT, 1)
    assert doc["measurements"]["compute"]["bf16"]["status"] == "throttled"
    assert doc["measurements"]["compute"]["fp8"]["value"] is None


def test_unknown_version_and_foreign_files_are_refused(tmp_path: Path) -> None:
    doc = device_doc(sample_device())
    p = tmp_path / "d.json"
    p.write_text(json.dumps({**doc, "version": 99}))
    with pytest.raises(FormatVersionError, match=r"device file version 99 is not supported") as e:
        read_device_file(p)
    assert e.value.exit_code == 2 and str(p) in str(e.value)
    p.write_text(json.dumps({**doc, "format": "nsightwrap-report"}))
    with pytest.raises(ReportParseError, match="not an nsightwrap device file"):
        read_device_file(p)
    broken = json.loads(json.dumps(doc))
    del broken["measurements"]["compute"]["bf16"]["unit"]
    p.write_text(json.dumps(broken))
    with pytest.raises(ReportParseError, match=r"compute\.bf16 is missing field 'unit'"):
        read_device_file(p)
    p.write_text(json.dumps(doc)[:200])
    with pytest.raises(ReportParseError, match="not valid JSON"):
        read_device_file(p)


def test_cache_is_per_gpu_uuid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert uuid_key("GPU-AbC-123") == uuid_key("abc-123") == "abc-123"
    assert find_cached("GPU-abc-123") is None
    dev = sample_device()
    p = save_to_cache(dev)
    assert p == tmp_path / "nsightwrap" / "device" / "abc-123.json" == cache_path("abc-123")
    assert find_cached("gpu-ABC-123") == p and read_device_file(p) == dev
    assert find_cached("GPU-other") is None and find_cached(None) is None
    with pytest.raises(ValueError):
        cache_path("../x")


def test_measured_roofs_take_the_best_hbm_figure_and_every_measured_peak() -> None:
    r = measured_roofs(sample_device(), where="here")
    assert (r.source, r.memory_bytes_per_s, r.memory_name, r.l2_bytes_per_s) == ("measured", 4.3e12, "hbm_copy", 1.0e13)
    assert [(p.name, p.flops_per_s, p.sm_clock_hz) for p in r.peaks] == [("bf16", 7.9e14, 1.6e9), ("fp32", 5.0e13, 1.9e9)]


def test_datasheet_roofs_only_for_known_gpus() -> None:
    h200 = datasheet_roofs("NVIDIA H200")
    assert h200 is not None and h200.source == "datasheet" and h200.memory_bytes_per_s == 4.8e12
    bf16 = h200.peak("bf16")
    assert bf16 is not None and bf16.flops_per_s == 989.4e12 and bf16.sm_clock_hz == 1.83e9
    # NVIDIA's tensor figure is 132 SMs x 4096 FLOP per clock at 1.83 GHz; its fp32 figure is at
    # the 1.98 GHz boost clock (132 x 128 FMA x 2).
    assert bf16.flops_per_s == pytest.approx(132 * 4096 * bf16.sm_clock_hz, rel=1e-3)
    fp32 = h200.peak("fp32")
    assert fp32 is not None and fp32.flops_per_s == pytest.approx(132 * 256 * fp32.sm_clock_hz, rel=2e-3)
    assert datasheet_roofs("NVIDIA H100 PCIe").memory_bytes_per_s == 2.0e12  # type: ignore[union-attr]
    assert datasheet_roofs("NVIDIA H100 80GB HBM3").where == "NVIDIA H100 SXM datasheet"  # type: ignore[union-attr]
    assert datasheet_roofs("NVIDIA A100-SXM4-80GB") is None and datasheet_roofs(None) is None


# ----------------------------------------------------------------------------- CLI (real subprocesses)


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    e = dict(os.environ if env is None else env)
    e["PYTHONPATH"] = os.pathsep.join([str(ROOT), e.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "nsightwrap", *args], capture_output=True, text=True, env=e, timeout=120)


def _lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()]


def test_without_torch_one_line_and_exit_2() -> None:
    pytest.importorskip("nsightwrap")
    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("torch is installed here: the no-torch path is the next test's")
    r = _cli("device", "--quick")
    assert r.returncode == 2, r.stderr
    assert _lines(r.stderr) == [
        "error: nsightwrap device needs torch with CUDA, and torch is not installed; "
        "install a CUDA build of torch (pip install torch) on the GPU machine"
    ]
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_torch_without_a_gpu_one_line_and_exit_2(tmp_path: Path) -> None:
    # A torch whose CUDA finds no device (what a CPU build or a machine without a driver reports).
    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "__version__ = '2.13.0+cpu'\n"
        "class version:\n    cuda = None\n"
        "class cuda:\n    @staticmethod\n    def is_available():\n        return False\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(fake.parent), str(ROOT)])
    r = _cli("device", env=env)
    assert r.returncode == 2, r.stderr
    assert _lines(r.stderr) == [
        "error: nsightwrap device found no CUDA GPU (torch 2.13.0+cpu, CUDA build none); run it on a machine "
        "with an NVIDIA GPU, driver and a CUDA build of torch"
    ]


def test_usage_errors_are_one_line(tmp_path: Path) -> None:
    r = _cli("device", "--only", "bandwidth,nonsense")
    assert r.returncode == 2 and _lines(r.stderr) == [
        "error: --only: unknown group nonsense; choose from bandwidth,latency,launch,compute"
    ]
    p = write_device_file(sample_device(), tmp_path / "d.json")
    r = _cli("device", "--input", str(p), "--quick")
    assert r.returncode == 2 and "--input shows a saved file" in r.stderr
    bad = tmp_path / "v9.json"
    bad.write_text(json.dumps({**device_doc(sample_device()), "version": 9}))
    r = _cli("device", "--input", str(bad))
    assert r.returncode == 2 and len(_lines(r.stderr)) == 1 and "device file version 9 is not supported" in r.stderr
    r = _cli("device", "--input", str(tmp_path / "missing.json"))
    assert r.returncode == 2 and len(_lines(r.stderr)) == 1 and "does not exist" in r.stderr
