"""Device files and runs: ``profile`` puts the GPU's cached (or a given) device file into the run
directory, refuses a bad one before any pass runs, and ``report`` holds the run against it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_tools.harness import TARGET, profile, use_fakes
from test_device_file import sample_device

from nsightwrap.device.store import device_doc, read_device_file, save_to_cache, write_device_file

#: The uuid the fake nvidia-smi reports for GPU 0 (tests/fake_tools/_common.py).
FAKE_UUID = "GPU-5c1c2662-50ec-2ab1-aa09-64c88e23aaed"


def test_profile_copies_the_cached_device_file_into_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    cached = save_to_cache(sample_device(uuid=FAKE_UUID))
    r = profile(capsys, "-o", "run", "--passes", "plain,ncu", str(TARGET), "--size", "4096")
    assert r.code in (0, 1), r.err
    copied = tmp_path / "run" / "env" / "device.json"
    assert copied.is_file() and read_device_file(copied) == read_device_file(cached)  # type: ignore[arg-type]
    assert f"roofs: cached device file -> {copied}" in r.err


def test_profile_without_a_cached_file_copies_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    save_to_cache(sample_device(uuid="GPU-some-other-gpu"))
    r = profile(capsys, "-o", "run", "--passes", "plain", "--no-analyze", str(TARGET), "--size", "4096")
    assert r.code == 0, r.err
    assert not (tmp_path / "run" / "env" / "device.json").exists()


def test_profile_given_device_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    given = write_device_file(sample_device(uuid="GPU-measured-elsewhere"), tmp_path / "h200.json")
    r = profile(capsys, "-o", "run", "--passes", "plain", "--no-analyze", "--device-file", str(given), str(TARGET))
    assert r.code == 0, r.err
    assert read_device_file(tmp_path / "run" / "env" / "device.json") == read_device_file(given)
    # A file of an unknown version is refused before any pass runs: no run directory is made.
    bad = tmp_path / "v7.json"
    bad.write_text(json.dumps({**device_doc(sample_device()), "version": 7}))
    r = profile(capsys, "-o", "run2", "--passes", "plain", "--device-file", str(bad), str(TARGET))
    assert r.code == 2 and "device file version 7 is not supported" in r.err
    assert not (tmp_path / "run2").exists()


def test_roofline_counters_are_in_every_ncu_pass_unless_dropped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from fake_tools.harness import manifest, passes

    from nsightwrap.core.contract import ROOFLINE_NCU_METRICS
    from nsightwrap.run.launch import DEFAULT_NCU_METRICS

    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def ncu_metrics(*args: str) -> list[str]:
        out = f"run{len(list(tmp_path.glob('run*')))}"
        r = profile(capsys, "-o", out, "--passes", "ncu", "--no-analyze", "--no-clock-sweep", *args, str(TARGET))
        assert r.code == 0, r.err
        argv = passes(manifest(tmp_path / out))["ncu"]["commands"][0]["argv"]
        return list(argv[argv.index("--metrics") + 1].split(","))

    # By default the tensor-op counters are collected (a GEMM gets its FLOP count from ncu).
    assert set(ROOFLINE_NCU_METRICS) <= set(DEFAULT_NCU_METRICS)
    assert ncu_metrics() == list(DEFAULT_NCU_METRICS)
    # --roofline-counters is still accepted and changes nothing; --no-roofline-counters drops them,
    # unless --metrics names one.
    assert ncu_metrics("--roofline-counters") == list(DEFAULT_NCU_METRICS)
    assert ncu_metrics("--no-roofline-counters") == [m for m in DEFAULT_NCU_METRICS if m not in ROOFLINE_NCU_METRICS]
    kept = ncu_metrics("--no-roofline-counters", "--metrics", ROOFLINE_NCU_METRICS[0])
    assert [m for m in kept if m in ROOFLINE_NCU_METRICS] == [ROOFLINE_NCU_METRICS[0]]
    # The FP32 add and multiply counters are in the default set (free on an H200: no extra pass).
    assert {"sm__sass_thread_inst_executed_op_fadd_pred_on.sum", "sm__sass_thread_inst_executed_op_fmul_pred_on.sum"} <= set(DEFAULT_NCU_METRICS)
