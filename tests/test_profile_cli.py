"""``nsightwrap profile`` end to end on CPU, with fake ncu / nsys / nvidia-smi on PATH that run
the real target, print the real tools' messages and write the real reference reports."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest
from fake_tools.harness import (
    FAKE_PATH,
    FAKES,
    TARGET,
    alive,
    manifest,
    passes,
    profile,
    tool_calls,
    use_fakes,
)

from nsightwrap.core.contract import capture_boot_dir
from nsightwrap.run.launch import DEFAULT_NCU_METRICS
from nsightwrap.run.tools import known_locations

T = str(TARGET)


def test_full_run_writes_layout_and_manifest(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "--no-analyze", "--duration-pass", "always", "--base-pass", "always", T, "--size", "4096")
    assert r.code == 0, r.err
    run = tmp_path / "run"
    for f in (
        "manifest.json", "env/nvidia-smi-q-x.xml", "env/tools.json", "plain/stdout.log", "plain/stderr.log",
        "plain/smi_samples.csv", "ncu/report.ncu-rep", "ncu/stdout.log", "nsys/report.nsys-rep",
        "nsys/report.sqlite", "nsys/stdout.log",
    ):  # fmt: skip
        assert (run / f).is_file(), f
    assert len(list((run / "plain").glob("timer-*.json"))) == 1
    m = manifest(run)
    assert (m["format"], m["version"], m["status"], m["exit_code"]) == ("nsightwrap-run", 1, "complete", 0)
    assert m["target"]["argv"] == [T, "--size", "4096"]
    assert m["target"]["command"] == [sys.executable, T, "--size", "4096"]
    assert m["target"]["cwd"] == str(tmp_path)
    assert (
        m["gpu"]["name"] == "NVIDIA H200"
        and m["gpu"]["driver"] == "580.159.04"
        and m["gpu"]["cuda"] == "13.0"
    )
    assert m["tools"]["ncu"]["version"] == "2025.3.1.0"
    assert m["tools"]["nsys"]["version"] == "2025.3.1.90-253135822126v0"
    assert m["tools"]["ncu"]["found_by"] == "PATH"
    assert m["end"] >= m["start"] and m["wall_s"] >= 0
    p = passes(m)
    # the clock sweep (ncu again at none and at base, two metrics) follows the ncu pass: tests/test_clocks.py
    # ... and the coverage pass, for the benchmark the reference report holds no kernel of (softmax_mlp)
    assert [x["name"] for x in m["passes"]] == ["plain", "ncu", "ncu-duration", "ncu-base", "ncu-cover", "nsys"]
    assert all(x["status"] == "ok" for x in m["passes"])
    run_abs = str(run)
    # Every pass loads the capture layer (docs/capture.md): its boot folder first on PYTHONPATH.
    paths = [capture_boot_dir(), *[q for q in os.environ.get("PYTHONPATH", "").split(os.pathsep) if q]]
    layer = {"NSIGHTWRAP_CAPTURE": "1", "PYTHONPATH": os.pathsep.join(paths)}
    assert p["plain"]["env"] == {"NSIGHTWRAP_RUN_DIR": run_abs, "NSIGHTWRAP_PASS": "plain", **layer}
    assert p["ncu"]["env"] == {
        "NSIGHTWRAP_RUN_DIR": run_abs,
        "NSIGHTWRAP_PASS": "ncu",
        "NSIGHTWRAP_NCU_ITERS": "3",
        **layer,
    }
    assert p["ncu"]["kernels_profiled"] == 18  # the ==PROF== lines of the reference log
    ncu = p["ncu"]["commands"][0]["argv"]
    assert ncu[:8] == [
        str(FAKES / "bin" / "ncu"),
        "--clock-control",
        "none",
        "--nvtx",
        "--nvtx-include",
        "regex:nsightwrap@.*/iter[0-9]+/",
        "--nvtx-include",  # the first instances of the script's own NVTX ranges, mirrored
        "regex:nsightwrap_nvtx@.*/iter[0-9]+/",
    ]
    # Each distinct kernel launch configuration profiled once (--ncu-counters-cap's default: the
    # duration pass, which runs by default, times 3 instances of each, --ncu-kernel-cap's).
    assert ncu[8:12] == ["--filter-mode", "per-launch-config", "--launch-count", "1"]
    assert ncu[12] == "--metrics" and ncu[13].split(",") == list(DEFAULT_NCU_METRICS)
    assert ncu[14:] == ["-o", f"{run_abs}/ncu/report", "-f", sys.executable, T, "--size", "4096"]
    profile_cmd, export_cmd = p["nsys"]["commands"]
    assert profile_cmd["argv"][1:] == [
        "profile", "-t", "cuda,nvtx", "-s", "none", "--cpuctxsw=none", "--cuda-graph-trace=node",
        "--cuda-event-trace=false", "-o", f"{run_abs}/nsys/report", "-f", "true", sys.executable, T, "--size", "4096",
    ]  # fmt: skip
    assert export_cmd["argv"][1:] == [
        "export", "--type", "sqlite", "-o", f"{run_abs}/nsys/report.sqlite", "-f", "true", f"{run_abs}/nsys/report.nsys-rep"
    ]  # fmt: skip
    assert (
        p["plain"]["commands"][0]["returncode"] == 0
        and p["plain"]["commands"][0]["stdout"] == "plain/stdout.log"
    )
    assert "plain/smi_samples.csv" in p["plain"]["files"] and "ncu/report.ncu-rep" in p["ncu"]["files"]
    assert m["sampler"]["status"] in ("ok", "empty") and m["sampler"]["file"] == "plain/smi_samples.csv"
    # The target saw the pass and its arguments; the ncu pass got the iteration count.
    assert 'pass=plain argv=["--size", "4096"]' in (run / "plain/stdout.log").read_text()
    assert "ncu iters=3" in (run / "ncu/stdout.log").read_text()
    assert (run / "nsys/report.sqlite").read_bytes()[:16] == b"SQLite format 3\x00"
    assert "plain pass: ok" in r.err and "18 kernels profiled" in r.err
    assert r.out.strip().endswith("reports: nsightwrap report run")


def test_never_overwrites_an_existing_run(tmp_path: Path, monkeypatch, capsys) -> None:
    log = use_fakes(monkeypatch, tmp_path)
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "keep.txt").write_text("old")
    r = profile(capsys, "-o", "run", T)
    assert r.code == 2
    assert "run directory run exists already; nsightwrap never overwrites a run" in r.err
    assert sorted(os.listdir(tmp_path / "run")) == ["keep.txt"]
    assert not [c for c in tool_calls(log) if c[0] != "nvidia-smi"]  # nothing ran


def test_default_run_dir_is_timestamped_under_nsightwrap_runs(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    assert profile(capsys, "--passes", "plain", "--no-analyze", T).code == 0
    assert profile(capsys, "--passes", "plain", "--no-analyze", T).code == 0
    runs = sorted(os.listdir(tmp_path / "nsightwrap-runs"))
    assert len(runs) == 2 and all(r[:8].isdigit() and "-profile_target" in r for r in runs)
    assert all((tmp_path / "nsightwrap-runs" / r / "manifest.json").is_file() for r in runs)


def test_passes_selection_runs_only_those(tmp_path: Path, monkeypatch, capsys) -> None:
    log = use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "--passes", "nsys,plain", "--no-analyze", T)
    assert r.code == 0, r.err
    m = manifest(tmp_path / "run")
    assert [p["name"] for p in m["passes"]] == ["plain", "nsys"]
    assert not (tmp_path / "run" / "ncu").exists()
    assert not [c for c in tool_calls(log) if c[0] == "ncu"]
    assert m["settings"]["passes"] == ["plain", "nsys"]


def test_unknown_pass_is_usage_error(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "--passes", "plain,nvprof", T)
    assert r.code == 2 and "--passes: unknown pass nvprof" in r.err
    assert not (tmp_path / "run").exists()


def _path_without_ncu(tmp_path: Path) -> list[str]:
    # The venv's bin (python3 for the fakes' shebang) and only the fake nsys and nvidia-smi.
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, src in (
        ("nsys", FAKES / "target-linux-x64" / "nsys"),
        ("nvidia-smi", FAKES / "bin" / "nvidia-smi"),
    ):
        (bin_ / name).symlink_to(src)
    return [str(bin_), os.path.dirname(sys.executable), "/usr/bin", "/bin"]


needs_no_real_ncu = pytest.mark.skipif(bool(known_locations("ncu")), reason="a real ncu is installed here")


@needs_no_real_ncu
def test_missing_tool_skips_its_pass_with_a_warning(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path, path=_path_without_ncu(tmp_path))
    r = profile(capsys, "-o", "run", "--no-analyze", T)
    assert r.code == 0, r.err
    assert "warning: ncu not found (looked in PATH, /usr/local/cuda/bin/ncu" in r.err
    assert "point at it with --ncu PATH or NSIGHTWRAP_NCU=PATH; skipping the ncu pass" in r.err
    p = passes(manifest(tmp_path / "run"))
    assert (p["plain"]["status"], p["ncu"]["status"], p["nsys"]["status"]) == ("ok", "skipped", "ok")
    assert "ncu" not in manifest(tmp_path / "run")["tools"]


@needs_no_real_ncu
def test_missing_tool_of_a_named_pass_fails_with_exit_3(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path, path=_path_without_ncu(tmp_path))
    r = profile(capsys, "-o", "run", "--passes", "plain,ncu", T)
    assert r.code == 3
    assert "error: ncu not found (looked in PATH" in r.err and "--ncu PATH or NSIGHTWRAP_NCU=PATH" in r.err
    assert not (tmp_path / "run").exists()


def test_tool_given_by_env_and_flag(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("NSIGHTWRAP_NCU", str(tmp_path / "no-such-ncu"))
    r = profile(capsys, "-o", "run", T)
    assert r.code == 3
    assert f"ncu not found at {tmp_path / 'no-such-ncu'} (given by NSIGHTWRAP_NCU)" in r.err
    monkeypatch.delenv("NSIGHTWRAP_NCU")
    monkeypatch.setenv("PATH", os.pathsep.join([os.path.dirname(sys.executable), "/usr/bin", "/bin"]))
    ncu = str(FAKES / "bin" / "ncu")
    r = profile(capsys, "-o", "run2", "--passes", "ncu", "--ncu", ncu, "--no-analyze", T)
    assert r.code == 0, r.err
    m = manifest(tmp_path / "run2")
    assert m["tools"]["ncu"] == {"path": ncu, "version": "2025.3.1.0", "found_by": "--ncu"}


def test_target_not_found_or_not_executable(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "missing.py")
    assert r.code == 2 and "target script missing.py not found" in r.err
    (tmp_path / "prog").write_text("#!/bin/sh\necho hi\n")
    r = profile(capsys, "-o", "run", "--", "./prog", "--size", "1")
    assert r.code == 2 and "target ./prog is not an executable file; chmod +x ./prog" in r.err
    r = profile(capsys, "-o", "run", "no-such-program-xyz")
    assert r.code == 2 and "target no-such-program-xyz not found on PATH" in r.err
    assert not (tmp_path / "run").exists()


def test_executable_target_after_double_dash(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    exe = tmp_path / "bench_binary"
    exe.write_text(f"#!{sys.executable}\n" + TARGET.read_text())
    exe.chmod(0o755)
    r = profile(
        capsys, "-o", "run", "--passes", "plain,ncu", "--no-analyze", "--", "./bench_binary", "--size", "4096"
    )
    assert r.code == 0, r.err
    m = manifest(tmp_path / "run")
    assert m["target"]["command"] == [str(exe), "--size", "4096"]
    assert passes(m)["ncu"]["commands"][0]["argv"][-3:] == [str(exe), "--size", "4096"]


def test_double_dash_after_the_script_is_not_passed_on(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "--passes", "plain", "--no-analyze", T, "--", "--quick", "--", "x")
    assert r.code == 0, r.err
    assert 'argv=["--quick", "--", "x"]' in (tmp_path / "run/plain/stdout.log").read_text()


def test_module_target_and_target_options_pass_through(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.syspath_prepend(str(TARGET.parent))
    monkeypatch.setenv("PYTHONPATH", str(TARGET.parent))
    r = profile(
        capsys,
        "-o",
        "run",
        "--passes",
        "plain",
        "--no-analyze",
        "-m",
        "profile_target",
        "-o",
        "x",
        "--passes",
        "y",
    )
    assert r.code == 0, r.err
    m = manifest(tmp_path / "run")
    assert m["target"]["command"] == [sys.executable, "-m", "profile_target", "-o", "x", "--passes", "y"]
    assert 'argv=["-o", "x", "--passes", "y"]' in (tmp_path / "run/plain/stdout.log").read_text()


def test_target_failure_in_one_pass_still_runs_the_others(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("TARGET_FAIL", "plain")
    r = profile(capsys, "-o", "run", "--no-analyze", T)
    assert r.code == 3
    assert "error: plain pass: the target exited with code 7 (see " in r.err
    assert "RuntimeError: CUDA error: out of memory (simulated)" in r.err  # the tail of its stderr
    m = manifest(tmp_path / "run")
    p = passes(m)
    assert (m["status"], p["plain"]["status"], p["ncu"]["status"], p["nsys"]["status"]) == (
        "failed",
        "failed",
        "ok",
        "ok",
    )
    assert p["plain"]["commands"][0]["returncode"] == 7


def test_fail_fast_skips_the_remaining_passes(tmp_path: Path, monkeypatch, capsys) -> None:
    log = use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("TARGET_FAIL", "plain")
    r = profile(capsys, "-o", "run", "--fail-fast", "--no-analyze", T)
    assert r.code == 3
    p = passes(manifest(tmp_path / "run"))
    assert p["ncu"] == {**p["ncu"], "status": "skipped", "message": "--fail-fast after an earlier failure"}
    assert p["nsys"]["status"] == "skipped"
    assert not [c for c in tool_calls(log) if c[0] == "ncu" and c[1:] != ["--version"]]


def test_target_killed_by_a_signal(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("TARGET_SIGNAL", "plain")
    r = profile(capsys, "-o", "run", "--passes", "plain", "--no-analyze", T)
    assert r.code == 3 and "error: plain pass: the target was killed by signal SIGKILL" in r.err
    cmd = passes(manifest(tmp_path / "run"))["plain"]["commands"][0]
    assert (cmd["returncode"], cmd["signal"], cmd["status"]) == (-9, "SIGKILL", "failed")


def test_ncu_without_counter_permission(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("FAKE_TOOLS_MODE", "ncu-perm")
    r = profile(capsys, "-o", "run", "--passes", "ncu", "--no-analyze", T)
    assert r.code == 3
    assert "ncu pass: no permission to read the GPU performance counters (ERR_NVGPUCTRPERM)" in r.err
    assert (
        "NVreg_RestrictProfilingToAdminUsers=0" in r.err
        and "https://developer.nvidia.com/ERR_NVGPUCTRPERM" in r.err
    )
    assert "ERR_NVGPUCTRPERM" in (tmp_path / "run/ncu/stdout.log").read_text()  # the raw log is kept
    assert passes(manifest(tmp_path / "run"))["ncu"]["status"] == "failed"


def test_ncu_zero_kernels_names_the_ranges_nsys_saw(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("FAKE_TOOLS_MODE", "ncu-zero")
    r = profile(capsys, "-o", "run", "--no-analyze", T)
    assert r.code == 3
    err = " ".join(r.err.split())
    assert "ncu pass: no kernel was profiled with the NVTX filter 'regex:nsightwrap@.*/iter[0-9]+/'" in err
    # Filters in ncu's own syntax, copied from what nsys saw (default-domain push/pop: 'name/').
    assert "filters for the NVTX ranges of the nsys pass: mm_small/, 'regex:mm_small/mm_small/iter[0-9]+/' (x20), mm_skinny/" in err
    assert "--nvtx-include FILTER (repeatable; push/pop ranges end in '/', start/end ranges do not" in err
    p = passes(manifest(tmp_path / "run"))
    assert (p["ncu"]["status"], p["ncu"]["kernels_profiled"], p["nsys"]["status"]) == ("failed", 0, "ok")


def test_ncu_zero_kernels_without_nsys_pass(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("FAKE_TOOLS_MODE", "ncu-zero")
    r = profile(capsys, "-o", "run", "--passes", "plain,ncu", "--no-analyze", T)
    assert r.code == 3 and "run the nsys pass too to list the NVTX ranges" in " ".join(r.err.split())


def test_ncu_options_reach_its_argv_as_tokens(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(
        capsys, "-o", "run", "--passes", "ncu", "--no-analyze", "--nvtx-include", "nsightwrap@mm_small/",
        "--nvtx-include", "regex:nsightwrap@mm_.*/iter1/", "--ncu-args", "--cache-control none --launch-count '5'",
        "--metrics", "smsp__inst_executed.sum,gpu__time_duration.sum", "--set", "full", "--ncu-iters", "5", T,
    )  # fmt: skip
    assert r.code == 0, r.err
    p = passes(manifest(tmp_path / "run"))["ncu"]
    argv = p["commands"][0]["argv"]
    assert argv[1:8] == [
        "--clock-control", "none", "--nvtx", "--nvtx-include", "nsightwrap@mm_small/", "--nvtx-include",
        "regex:nsightwrap@mm_.*/iter1/",
    ]  # fmt: skip
    assert argv[8:10] == ["--set", "full"]
    assert argv[11].split(",") == [*DEFAULT_NCU_METRICS, "smsp__inst_executed.sum"]
    assert argv[12:18] == [
        "-o",
        f"{tmp_path}/run/ncu/report",
        "-f",
        "--cache-control",
        "none",
        "--launch-count",
    ]
    assert argv[18] == "5"
    assert p["env"]["NSIGHTWRAP_NCU_ITERS"] == "5"
    assert "ncu iters=5" in (tmp_path / "run/ncu/stdout.log").read_text()


def test_bad_quotes_in_ncu_args_is_usage_error(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "--ncu-args", "--nvtx-include 'oops", T)
    assert r.code == 2 and "--ncu-args: cannot split" in r.err


def test_nsys_qdstrm_only_is_converted_by_the_importer(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("FAKE_TOOLS_MODE", "nsys-qdstrm")
    r = profile(capsys, "-o", "run", "--passes", "nsys", "--no-analyze", T)
    assert r.code == 0, r.err
    assert "nsys could not import its capture (Importer error status); converted report.qdstrm" in r.err
    p = passes(manifest(tmp_path / "run"))["nsys"]
    importer = FAKES / "linux-desktop-glibc_2_11_3-x64" / "QdstrmImporter"
    assert [c["argv"][0] for c in p["commands"]] == [
        str(FAKES / "target-linux-x64" / "nsys"),
        str(importer),
        str(FAKES / "target-linux-x64" / "nsys"),
    ]
    assert p["commands"][1]["argv"][1:] == ["-i", f"{tmp_path}/run/nsys/report.qdstrm"]
    assert (tmp_path / "run/nsys/report.sqlite").is_file()


def test_nsys_qdstrm_with_importer_missing_libdw(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("FAKE_TOOLS_MODE", "nsys-qdstrm,importer-libdw")
    r = profile(capsys, "-o", "run", "--passes", "plain,nsys", "--no-analyze", T)
    assert r.code == 3
    err = " ".join(r.err.split())
    assert (
        "nsys pass: nsys could not import its capture (Importer error status); QdstrmImporter cannot start: "
        in err
    )
    assert "libdw.so.1: cannot open shared object file" in err
    assert (
        "install your distribution's libdw (Debian/Ubuntu: libdw1, Fedora/RHEL: elfutils-libs) or put libdw.so.1 on LD_LIBRARY_PATH"
        in err
    )
    assert (tmp_path / "run/nsys/report.qdstrm").is_file()  # the capture is kept
    m = manifest(tmp_path / "run")
    assert (m["status"], passes(m)["nsys"]["status"], passes(m)["plain"]["status"]) == (
        "failed",
        "failed",
        "ok",
    )


def test_nsys_qdstrm_with_no_importer_beside_nsys(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("FAKE_TOOLS_MODE", "nsys-qdstrm")
    alone = tmp_path / "nsys-alone" / "bin"
    alone.mkdir(parents=True)
    wrapper = alone / "nsys"  # like a distribution's wrapper script: no importer next to it
    wrapper.write_text(f'#!/bin/sh\nexec "{FAKES}/target-linux-x64/nsys" "$@"\n')
    wrapper.chmod(0o755)
    r = profile(capsys, "-o", "run", "--passes", "nsys", "--nsys", str(wrapper), "--no-analyze", T)
    assert r.code == 3
    err = " ".join(r.err.split())
    assert "nsys pass: nsys could not import its capture (Importer error status) and left only" in err
    assert "no QdstrmImporter found (looked at " in err and "libdw1" in err


def test_nsys_without_cuda_event_trace_flag(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("FAKE_TOOLS_MODE", "nsys-no-event-flag")
    r = profile(capsys, "-o", "run", "--passes", "nsys", "--nsys-args", "--duration 60", "--no-analyze", T)
    assert r.code == 0, r.err
    argv = passes(manifest(tmp_path / "run"))["nsys"]["commands"][0]["argv"]
    assert not any(a.startswith("--cuda-event-trace") for a in argv)
    assert argv[argv.index("-f") + 2 :][:2] == ["--duration", "60"]
    tools = (tmp_path / "run/env/tools.json").read_text()
    assert '"cuda_event_trace_flag": false' in tools


def test_timeout_stops_the_pass_with_exit_4(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("TARGET_SLEEP", "plain")
    monkeypatch.setenv("TARGET_PID_FILE", str(tmp_path / "pids"))
    r = profile(capsys, "-o", "run", "--timeout", "1", "--no-analyze", T)
    assert r.code == 4
    assert "error: plain pass: the target ran past --timeout 1 s and was stopped" in r.err
    m = manifest(tmp_path / "run")
    p = passes(m)
    assert (m["status"], p["plain"]["status"], p["ncu"]["status"], p["nsys"]["status"]) == (
        "failed",
        "timeout",
        "ok",
        "ok",
    )
    assert 1.0 <= p["plain"]["commands"][0]["wall_s"] < 6
    pid = int((tmp_path / "pids").read_text().split()[1])
    assert not alive(pid)


def test_target_path_with_spaces_and_semicolon_never_goes_through_a_shell(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    use_fakes(monkeypatch, tmp_path)
    d = tmp_path / "my dir; touch INJECTED"
    d.mkdir()
    script = d / "bench $(touch INJECTED2); x.py"
    shutil.copyfile(TARGET, script)
    r = profile(capsys, "-o", "run", "--no-analyze", str(script), "a b", ";", "&&", "touch INJECTED3")
    assert r.code == 0, r.err
    assert not list(tmp_path.rglob("INJECTED*"))
    assert 'argv=["a b", ";", "&&", "touch INJECTED3"]' in (tmp_path / "run/plain/stdout.log").read_text()
    assert len(list((tmp_path / "run/plain").glob("timer-*.json"))) == 1
    argv = passes(manifest(tmp_path / "run"))["nsys"]["commands"][0]["argv"]
    assert argv[-5:] == [str(script), "a b", ";", "&&", "touch INJECTED3"]


def test_quiet_prints_only_the_final_line(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "--quiet", "--no-analyze", T)
    assert r.code == 0 and r.err == ""
    assert r.out.strip().splitlines() == ["run directory: run (complete); reports: nsightwrap report run"]


def test_verbose_shows_the_target_output(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "-v", "--passes", "plain", "--no-analyze", T, "--size", "<8,16>|x")
    assert r.code == 0
    assert 'target: pass=plain argv=["--size", "<8,16>|x"]' in r.err


def test_failing_nvidia_smi_is_a_warning_only(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("FAKE_TOOLS_MODE", "smi-fail")
    monkeypatch.setenv("TARGET_DELAY", "1")
    r = profile(capsys, "-o", "run", "--passes", "plain", "--no-analyze", T)
    assert r.code == 0, r.err
    assert "warning: no nvidia-smi -q -x" in r.err and "clock sampler: NVIDIA-SMI has failed" in r.err
    m = manifest(tmp_path / "run")
    assert m["gpu"] is None and m["sampler"]["status"] == "failed"
    assert not (tmp_path / "run/env/nvidia-smi-q-x.xml").exists()


def test_git_state_of_the_target_repo(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "--passes", "plain", "--no-analyze", T)
    assert r.code == 0
    git = manifest(tmp_path / "run")["git"]
    if shutil.which("git") and (TARGET.parent.parent / ".git").exists():
        assert git["root"] == str(TARGET.parent.parent) and len(git["commit"]) == 40
        assert isinstance(git["dirty"], bool)


def test_analysis_summary_and_final_line(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", T)
    assert r.code == 0, r.err
    assert r.out.strip().splitlines()[-1] == "run directory: run (complete); reports: nsightwrap report run"
    assert "mm_large" in r.out  # the summary of the analysed reference reports


def test_fake_path_is_what_the_tests_use() -> None:
    assert all(Path(p, n).is_file() for p, n in zip(FAKE_PATH, ("ncu", "nsys"), strict=True))
    assert not alive(2**22 + 1)


def test_ncu_quiet_counts_kernels_from_the_report(tmp_path: Path, monkeypatch, capsys) -> None:
    """ncu --quiet prints no ==PROF== lines: the kernels are counted in the report instead, and a
    good run is not taken for one that profiled nothing."""
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "--passes", "ncu", "--no-analyze", "--ncu-args", "--quiet", T)
    assert r.code == 0, r.err
    p = passes(manifest(tmp_path / "run"))["ncu"]
    assert (p["status"], p["kernels_profiled"]) == ("ok", 18)
    assert (tmp_path / "run" / "ncu" / "stdout.log").read_text().count("==PROF==") == 0
