"""The pieces under ``nsightwrap profile``: argv building, running and stopping processes, tool
lookup, the run directory and its manifest, the clock sampler."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from fake_tools.harness import FAKES, TARGET, alive, use_fakes

from nsightwrap.core.errors import (
    FormatVersionError,
    InputNotFound,
    ReportParseError,
    ToolNotFound,
    UsageError,
)
from nsightwrap.run.launch import (
    Command,
    ncu_argv,
    nsys_argv,
    nsys_export_argv,
    run_command,
    split_args,
    target_argv,
)
from nsightwrap.run.rundir import (
    Manifest,
    PassRecord,
    create_run_dir,
    default_run_dir,
    read_manifest,
    write_manifest,
)
from nsightwrap.run.smisampler import SMI_QUERY, SmiSampler, sampler_argv
from nsightwrap.run.tools import (
    find_qdstrm_importer,
    find_tool,
    git_state,
    supports_flag,
    with_version,
)


def test_target_argv_kinds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "b.py").write_text("")
    assert target_argv(["b.py", "-x"]) == [sys.executable, str(tmp_path / "b.py"), "-x"]
    assert target_argv(["-m", "pkg.mod", "--size", "1"]) == [sys.executable, "-m", "pkg.mod", "--size", "1"]
    assert target_argv(["true", "a"]) == [shutil.which("true"), "a"]
    with pytest.raises(UsageError, match="-m needs a module name"):
        target_argv(["-m"])
    with pytest.raises(InputNotFound, match="target script c.py not found"):
        target_argv(["c.py"])
    (tmp_path / "d").mkdir()
    with pytest.raises(UsageError, match="not an executable file"):
        target_argv(["./d"])
    (tmp_path / "b").touch()
    with pytest.raises(UsageError, match="is a file but not a command"):
        target_argv(["b"])


def test_profiler_argv_are_exact_lists() -> None:
    base = Path("/r/ncu/report")
    assert ncu_argv("ncu", ["py", "t.py"], base, nvtx_filter=["--nvtx", "--nvtx-include", "a/"], metrics=["m1", "m2"]) == [
        "ncu", "--clock-control", "none", "--nvtx", "--nvtx-include", "a/", "--metrics", "m1,m2",
        "-o", "/r/ncu/report", "-f", "py", "t.py",
    ]  # fmt: skip
    assert nsys_argv("nsys", ["t"], Path("/r/nsys/report"), cuda_event_trace_flag=False) == [
        "nsys", "profile", "-t", "cuda,nvtx", "-s", "none", "--cpuctxsw=none", "--cuda-graph-trace=node",
        "-o", "/r/nsys/report", "-f", "true", "t",
    ]  # fmt: skip
    assert "--cuda-event-trace=false" in nsys_argv("nsys", ["t"], base, cuda_event_trace_flag=True)
    assert nsys_export_argv("nsys", Path("a.nsys-rep"), Path("a.sqlite"))[-5:] == [
        "-o",
        "a.sqlite",
        "-f",
        "true",
        "a.nsys-rep",
    ]
    assert split_args("--a 'b c' d\\ e", "--x") == ["--a", "b c", "d e"]
    assert split_args(None, "--x") == []
    with pytest.raises(UsageError, match="--ncu-args: cannot split"):
        split_args("'open", "--ncu-args")


def _cmd(tmp_path: Path, argv: list[str], **kw) -> Command:
    return Command(tuple(argv), str(tmp_path), str(tmp_path / "out.log"), str(tmp_path / "err.log"), **kw)


def test_run_command_streams_output_and_reports_exit(tmp_path: Path) -> None:
    lines: list[tuple[str, str]] = []
    code = "import sys; print('one'); print('two', file=sys.stderr); sys.stdout.buffer.write(b'\\xff\\n'); sys.exit(5)"
    res = run_command(
        _cmd(tmp_path, [sys.executable, "-c", code], env={"X_Y": "1"}),
        on_line=lambda s, ln: lines.append((s, ln)),
    )
    assert (res.status, res.returncode, res.signal, res.env) == ("failed", 5, None, {"X_Y": "1"})
    assert (tmp_path / "out.log").read_bytes() == b"one\n\xff\n"  # bytes kept as the child wrote them
    assert (tmp_path / "err.log").read_text() == "two\n"
    assert ("stdout", "one") in lines and ("stderr", "two") in lines
    assert res.end >= res.start and res.wall_s > 0


def test_run_command_timeout_escalates_and_reaps(tmp_path: Path) -> None:
    # The child ignores SIGINT and SIGTERM: only SIGKILL stops it.
    code = (
        "import os, signal, time; signal.signal(signal.SIGINT, signal.SIG_IGN); "
        "signal.signal(signal.SIGTERM, signal.SIG_IGN); print(os.getpid(), flush=True); time.sleep(60)"
    )
    t0 = time.monotonic()
    res = run_command(_cmd(tmp_path, [sys.executable, "-c", code], timeout_s=0.5, grace_s=(0.2, 0.2)))
    assert res.status == "timeout" and res.signal == "SIGKILL"
    assert time.monotonic() - t0 < 5
    assert not alive(int((tmp_path / "out.log").read_text().split()[0]))


def test_run_command_that_cannot_start(tmp_path: Path) -> None:
    res = run_command(_cmd(tmp_path, [str(tmp_path / "nope")]))
    assert res.status == "not-started" and res.returncode is None and "FileNotFoundError" in str(res.error)


def test_find_tool_order_and_versions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fakes(monkeypatch, tmp_path)
    ncu = find_tool("ncu")
    assert (ncu.path, ncu.found_by) == (str(FAKES / "bin" / "ncu"), "PATH")
    assert with_version(ncu).version == "2025.3.1.0"
    assert with_version(find_tool("nsys")).version == "2025.3.1.90-253135822126v0"
    monkeypatch.setenv("NSIGHTWRAP_NSYS", str(FAKES / "target-linux-x64" / "nsys"))
    assert find_tool("nsys").found_by == "NSIGHTWRAP_NSYS"
    assert find_tool("nsys", explicit="ncu").found_by == "--nsys"  # the flag wins over the env
    with pytest.raises(ToolNotFound, match=r"nsys not found at /x/nsys \(given by --nsys\)"):
        find_tool("nsys", explicit="/x/nsys")
    assert (
        find_qdstrm_importer(str(FAKES / "target-linux-x64" / "nsys"))
        == FAKES / "linux-desktop-glibc_2_11_3-x64" / "QdstrmImporter"
    )
    assert (
        find_qdstrm_importer(str(FAKES / "bin" / "ncu"))
        == FAKES / "linux-desktop-glibc_2_11_3-x64" / "QdstrmImporter"
    )
    help_text = "  --cuda-event-trace=\n  --cuda-graph-trace=\n"
    assert supports_flag(help_text, "--cuda-event-trace") and not supports_flag(help_text, "--cuda-event")


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_state(tmp_path: Path) -> None:
    assert git_state(tmp_path) is None

    def git(*a: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True)

    git("init", "-q")
    (tmp_path / "a.py").write_text("1\n")
    git("add", "a.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    g = git_state(tmp_path)
    assert g is not None and len(g.commit) == 40 and g.dirty is False and Path(g.root) == tmp_path.resolve()
    (tmp_path / "a.py").write_text("2\n")
    assert git_state(tmp_path).dirty is True  # type: ignore[union-attr]


def test_run_dir_never_overwrites_and_default_names(tmp_path: Path) -> None:
    layout = create_run_dir(tmp_path / "r", ("plain", "ncu"))
    assert sorted(p.name for p in layout.root.iterdir()) == ["env", "ncu", "plain"]
    with pytest.raises(UsageError, match="exists already; nsightwrap never overwrites a run"):
        create_run_dir(tmp_path / "r", ("plain",))
    now = datetime(2026, 11, 30, 2, 7, 0)
    first = default_run_dir("bench example.py", now, root=tmp_path)
    assert first == tmp_path / "20261130-020700-bench_example"
    first.mkdir()
    assert default_run_dir("bench example.py", now, root=tmp_path).name == "20261130-020700-bench_example-2"


def _manifest(status: str = "complete") -> Manifest:
    return Manifest(
        status=status, target={"argv": ["t.py"]}, passes=(PassRecord("plain", "ok"),), tools={}, gpu=None,
        git=None, settings={}, sampler=None, start=10.0, end=12.5, nsightwrap_version="0.1.0", exit_code=0,
    )  # fmt: skip


def test_manifest_roundtrip_and_version_check(tmp_path: Path) -> None:
    layout = create_run_dir(tmp_path / "r", ("plain",))
    write_manifest(layout, _manifest())
    m = read_manifest(layout.root)
    assert (m["format"], m["version"], m["status"], m["wall_s"]) == ("nsightwrap-run", 1, "complete", 2.5)
    assert m["passes"][0] == {"name": "plain", "status": "ok", "env": {}, "commands": [], "files": [],
                              "kernels_profiled": None, "message": None}  # fmt: skip
    assert [p.name for p in layout.root.iterdir() if p.name.startswith(".")] == []  # no temp file left
    layout.manifest.write_text(json.dumps({**m, "version": 2}))
    with pytest.raises(FormatVersionError, match="manifest version 2; this nsightwrap reads version 1"):
        read_manifest(layout.root)
    layout.manifest.write_text(json.dumps({"format": "other"}))
    with pytest.raises(ReportParseError, match="not an nsightwrap run manifest"):
        read_manifest(layout.root)
    layout.manifest.write_text("{")
    with pytest.raises(ReportParseError, match="not valid JSON"):
        read_manifest(layout.root)
    with pytest.raises(InputNotFound):
        read_manifest(tmp_path)


def test_smi_sampler_with_fake_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fakes(monkeypatch, tmp_path)
    smi = str(FAKES / "bin" / "nvidia-smi")
    assert sampler_argv(smi) == [smi, f"--query-gpu={SMI_QUERY}", "--format=csv", "-lms", "50"]
    out = tmp_path / "smi_samples.csv"
    with SmiSampler(smi, out) as s:
        time.sleep(1.0)
    rec = s.record
    assert rec.status == "ok" and rec.samples >= 3, rec
    lines = out.read_text().splitlines()
    assert lines[0].startswith("timestamp, clocks.current.sm [MHz]") and "1980 MHz" in lines[1]
    with SmiSampler(None, tmp_path / "none.csv") as s2:
        pass
    assert s2.record.status == "skipped" and not (tmp_path / "none.csv").exists()


def test_smi_sampler_gives_a_short_pass_its_first_sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fakes(monkeypatch, tmp_path)
    slow = tmp_path / "slow-smi"  # an nvidia-smi that takes 0.6 s to print its first sample
    slow.write_text(f"#!/bin/sh\nsleep 0.6\nexec {sys.executable} {FAKES / 'bin' / 'nvidia-smi'} \"$@\"\n")
    slow.chmod(0o755)
    with SmiSampler(str(slow), tmp_path / "short.csv") as s:
        pass  # a pass far shorter than the sampler's start-up
    assert s.record.status == "ok" and s.record.samples >= 1, s.record
    dead = tmp_path / "dead-smi"  # one that dies at once: no wait for a sample that cannot come
    dead.write_text("#!/bin/sh\nexit 0\n")
    dead.chmod(0o755)
    t0 = time.monotonic()
    with SmiSampler(str(dead), tmp_path / "dead.csv") as s2:
        time.sleep(0.2)
    assert s2.record.status == "empty" and time.monotonic() - t0 < 1.5, s2.record


def test_profile_target_runs_without_nsightwrap_env(tmp_path: Path) -> None:
    cp = subprocess.run([sys.executable, str(TARGET), "x"], capture_output=True, text=True, cwd=tmp_path)
    assert cp.returncode == 0 and cp.stdout.startswith('target: pass=none argv=["x"]')
