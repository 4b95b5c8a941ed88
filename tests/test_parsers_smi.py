"""nvidia-smi parsers on the real H200 captures (``-q -x`` XML and a ``--query-gpu`` log)."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import pandas as pd
import pytest

from nsightwrap.core.errors import InputNotFound, ReportParseError
from nsightwrap.parsers.smi import Clocks, read_smi_samples, read_smi_xml, read_smi_xml_all

REF = Path(__file__).resolve().parent.parent / "fixtures" / "reference" / "h200-workload"
XML = REF / "nvidia-smi-q-x.xml"
SAMPLES = REF / "smi_samples.csv"


def test_xml_h200() -> None:
    gpu = read_smi_xml(XML)
    assert gpu.index == 0
    assert gpu.name == "NVIDIA H200"
    assert gpu.uuid == "GPU-5c1c2662-50ec-2ab1-aa09-64c88e23aaed"
    assert gpu.pci_bus_id == "00000000:00:06.0"
    assert gpu.architecture == "Hopper"
    assert gpu.driver_version == "580.159.04" and gpu.driver_version.startswith("580.")
    assert gpu.cuda_version == "13.0"
    assert gpu.clocks == Clocks(graphics_hz=1.98e9, sm_hz=1.98e9, mem_hz=3.201e9)
    # applications clocks name no SM clock in the XML
    assert gpu.applications_clocks == Clocks(graphics_hz=1.98e9, sm_hz=None, mem_hz=3.201e9)
    assert gpu.default_applications_clocks == Clocks(graphics_hz=1.98e9, sm_hz=None, mem_hz=3.201e9)
    assert gpu.max_clocks == Clocks(graphics_hz=1.98e9, sm_hz=1.98e9, mem_hz=3.201e9)
    assert gpu.clock_event_reasons == ("gpu_idle",)
    assert gpu.power_draw_w == 125.12
    assert gpu.power_limit_w == 700.0
    assert gpu.temperature_c == 37.0
    assert gpu.persistence_mode is True
    assert gpu.compute_mode == "Default"
    assert gpu.performance_state == "P0"


def _two_gpus(tmp_path: Path) -> Path:
    """The capture with a second, throttled GPU (older driver tag names) appended."""
    text = XML.read_text()
    second = """<gpu id="00000000:00:07.0">
        <product_name>NVIDIA H100 80GB HBM3</product_name>
        <uuid>GPU-00000000-0000-0000-0000-000000000007</uuid>
        <persistence_mode>Disabled</persistence_mode>
        <clocks_throttle_reasons>
            <clocks_throttle_reason_gpu_idle>Not Active</clocks_throttle_reason_gpu_idle>
            <clocks_throttle_reason_sw_power_cap>Active</clocks_throttle_reason_sw_power_cap>
            <clocks_throttle_reason_hw_thermal_slowdown>Active</clocks_throttle_reason_hw_thermal_slowdown>
        </clocks_throttle_reasons>
        <power_readings><power_draw>650.50 W</power_draw><power_limit>700.00 W</power_limit></power_readings>
        <clocks><graphics_clock>1410 MHz</graphics_clock><sm_clock>1410 MHz</sm_clock><mem_clock>N/A</mem_clock></clocks>
    </gpu>
</nvidia_smi_log>"""
    path = tmp_path / "two.xml"
    path.write_text(text.replace("</nvidia_smi_log>", second))
    return path


def test_xml_several_gpus(tmp_path: Path) -> None:
    path = _two_gpus(tmp_path)
    gpus = read_smi_xml_all(path)
    assert [g.name for g in gpus] == ["NVIDIA H200", "NVIDIA H100 80GB HBM3"]
    second = read_smi_xml(path, 1)
    assert second == gpus[1] and second.index == 1
    assert second.clock_event_reasons == ("sw_power_cap", "hw_thermal_slowdown")
    assert second.power_draw_w == 650.5 and second.power_limit_w == 700.0
    assert second.clocks == Clocks(graphics_hz=1.41e9, sm_hz=1.41e9, mem_hz=None)
    assert second.persistence_mode is False
    assert second.driver_version == "580.159.04"  # from the log, shared by all GPUs
    assert second.pci_bus_id == "00000000:00:07.0"  # from the id attribute when <pci> is absent
    assert second.temperature_c is None and second.architecture is None
    with pytest.raises(ReportParseError, match="no GPU 2; the file lists 2"):
        read_smi_xml(path, 2)


def test_xml_errors(tmp_path: Path) -> None:
    with pytest.raises(InputNotFound, match="no such nvidia-smi XML"):
        read_smi_xml(tmp_path / "none.xml")
    bad = tmp_path / "bad.xml"
    bad.write_text(XML.read_text()[:5000])  # cut mid-document
    with pytest.raises(ReportParseError, match="bad.xml: not valid XML"):
        read_smi_xml(bad)
    other = tmp_path / "other.xml"
    other.write_text("<testsuites/>")
    with pytest.raises(ReportParseError, match="not nvidia-smi XML"):
        read_smi_xml(other)
    empty = tmp_path / "nogpu.xml"
    empty.write_text("<nvidia_smi_log><driver_version>580.1</driver_version></nvidia_smi_log>")
    with pytest.raises(ReportParseError, match="lists no GPU"):
        read_smi_xml(empty)


def test_samples_fixture() -> None:
    df = read_smi_samples(SAMPLES)
    assert list(df.columns) == ["time", "sm_clock_hz", "mem_clock_hz", "power_w", "temperature_c",
                                "clock_event_reasons"]  # fmt: skip
    with SAMPLES.open(newline="") as f:
        rows = list(csv.reader(f, skipinitialspace=True))[1:]
    assert len(df) == len(rows) == 129
    assert df["sm_clock_hz"].tolist() == [float(r[1].split()[0]) * 1e6 for r in rows]
    assert df["sm_clock_hz"].min() == 345e6 and df["sm_clock_hz"].max() == 1980e6
    assert (df["sm_clock_hz"] == 1980e6).sum() == 29
    assert set(df["mem_clock_hz"]) == {3201e6}
    assert df["power_w"].iloc[0] == 125.12 and df["power_w"].max() == 135.88
    assert df["clock_event_reasons"].value_counts().to_dict() == {1: 105, 0: 24}
    assert str(df["clock_event_reasons"].dtype) == "Int64"
    assert df["time"].iloc[0] == pd.Timestamp("2026-11-30 02:07:00.123")
    assert (df["time"].iloc[-1] - df["time"].iloc[0]).total_seconds() == pytest.approx(6.431)
    assert df["time"].is_monotonic_increasing


def test_samples_any_order_nounits_and_na(tmp_path: Path) -> None:
    log = tmp_path / "s.csv"
    log.write_text(
        "index, clocks_event_reasons.active, power.draw [W], clocks.sm [MHz], timestamp\n"
        "0, 0x0000000000000004, 650.10, 1755, 2026/11/30 02:07:00.123\n"
        "0, [N/A], [N/A], 1410, 2026/11/30 02:07:00.173\n"
        "0, 0x0000000000000000, 700.0"  # the sampler killed mid-line
    )
    df = read_smi_samples(log)
    assert len(df) == 2
    assert df["sm_clock_hz"].tolist() == [1.755e9, 1.41e9]
    assert df["power_w"].iloc[0] == 650.1 and math.isnan(df["power_w"].iloc[1])
    assert df["clock_event_reasons"].iloc[0] == 4 and df["clock_event_reasons"].isna().iloc[1]
    assert df["mem_clock_hz"].isna().all() and df["temperature_c"].isna().all()  # not queried
    assert df["gpu"].tolist() == [0, 0]


def test_samples_errors(tmp_path: Path) -> None:
    with pytest.raises(InputNotFound):
        read_smi_samples(tmp_path / "none.csv")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ReportParseError, match="empty nvidia-smi sample log"):
        read_smi_samples(empty)
    other = tmp_path / "other.csv"
    other.write_text("a,b\n1,2\n")
    with pytest.raises(ReportParseError, match="no known --query-gpu field"):
        read_smi_samples(other)
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "timestamp, clocks.sm [MHz]\n2026/11/30 02:07:00.123, fast\n2026/11/30 02:07:00.2, 1 MHz\n"
    )
    with pytest.raises(ReportParseError, match=r"line 2: 'fast' is not a valid sm_clock_hz"):
        read_smi_samples(bad)
    short = tmp_path / "short.csv"
    short.write_text("timestamp, clocks.sm [MHz]\n2026/11/30 02:07:00.123\n2026/11/30 02:07:00.2, 1 MHz\n")
    with pytest.raises(ReportParseError, match="line 2 has 1 fields, the header 2"):
        read_smi_samples(short)
    with pytest.raises(ReportParseError, match="not a text file"):
        read_smi_samples(REF / "workload.ncu-rep.gz")
