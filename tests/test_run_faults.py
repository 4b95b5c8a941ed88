"""Faults of the run side, each one line, its exit code and nothing lost (docs/faults.md, "Runs
and outputs"): a full disk (a real file size limit, RLIMIT_FSIZE, with SIGXFSZ ignored so that a
write fails with EFBIG; and /dev/full), a target that leaves a process in another session, and
merges that would copy a run into itself. Real ``python -m nsightwrap`` processes with the fake
tools on PATH, real files from fixtures/."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
from fake_tools.harness import FAKE_PATH, ROOT, alive

from nsightwrap.core.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_TIMEOUT, EXIT_TOOL_FAILED
from nsightwrap.schemas import load

EXAMPLE = ROOT / "fixtures" / "runs" / "h200-example"
SHARDS = ROOT / "fixtures" / "runs" / "h200-shards"

LOUD = """\
import sys
for i in range(int(sys.argv[1])):
    print(f"line {i:06d} " + "x" * 60)
"""

#: A target that leaves a sleeping process in a session of its own (``setsid``, which holds the
#: target's stdout pipe too), writes its pid, then sleeps STRAY_TARGET_SLEEP seconds.
STRAY = """\
import os, subprocess, sys, time
kid = subprocess.Popen(["setsid", sys.executable, "-c", "import time; print('grandchild up', flush=True); time.sleep(120)"])
with open(os.environ["STRAY_PID_FILE"], "w") as f:
    f.write(str(kid.pid))
print("target: started", kid.pid, flush=True)
time.sleep(float(os.environ["STRAY_TARGET_SLEEP"]))
"""


def _limit(nbytes: int) -> Callable[[], None]:
    def preexec() -> None:
        # Ignored, SIGXFSZ no longer kills: a write past the limit fails with EFBIG (and the
        # disposition survives exec, so the target under nsightwrap sees the same limit).
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (nbytes, nbytes))

    return preexec


def nsightwrap(
    tmp_path: Path, *args: str, fsize: int | None = None, env: dict[str, str] | None = None,
    stdout: int | None = None,
) -> subprocess.CompletedProcess[str]:  # fmt: skip
    full_env = {
        "HOME": str(tmp_path),
        "PATH": os.pathsep.join([*FAKE_PATH, os.path.dirname(sys.executable), "/usr/bin", "/bin"]),
        "PYTHONPATH": str(ROOT),
        "FAKE_TOOLS_LOG": str(tmp_path / "fake_tools.log"),
        # Every command analyses afresh and stores nothing into the shipped runs (tests/conftest.py).
        "NSIGHTWRAP_ANALYSIS_STORE": "off",
        **(env or {}),
    }
    if fsize is not None:
        # Under a file size limit Python would leave truncated .pyc files behind (a short write
        # is no error to it): such a process writes no bytecode.
        full_env["PYTHONDONTWRITEBYTECODE"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "nsightwrap", *args], cwd=tmp_path, env=full_env, text=True, timeout=120,
        stdout=stdout if stdout is not None else subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=_limit(fsize) if fsize is not None else None,
    )  # fmt: skip


def errors(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("error:")]


def clean(stderr: str) -> None:
    assert "Traceback" not in stderr and "Exception in thread" not in stderr and "Exception ignored" not in stderr, stderr


# --------------------------------------------------------------------------- a full disk


def test_a_log_that_fills_the_disk_fails_the_pass_with_one_line_and_keeps_the_run(tmp_path: Path) -> None:
    (tmp_path / "loud.py").write_text(LOUD)
    r = nsightwrap(tmp_path, "profile", "-q", "--passes", "plain", "--no-checks", "-o", "run", "loud.py", "4000",
                   fsize=100_000)  # fmt: skip
    clean(r.stderr)
    assert r.returncode == EXIT_TOOL_FAILED, r.stderr
    log = tmp_path / "run" / "plain" / "stdout.log"
    [line] = errors(r.stderr)  # the analysis is not run after a full disk: no second line
    assert line.startswith(f"error: plain pass: cannot write {log}: no space left on device (file size limit reached)")
    assert f"what was written is kept in {tmp_path / 'run'}" in line
    assert log.stat().st_size == 100_000  # what fitted is kept
    m = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert (m["status"], m["exit_code"]) == ("failed", EXIT_TOOL_FAILED)
    [plain] = m["passes"]
    assert plain["status"] == "failed" and "no space left on device" in plain["commands"][0]["log_error"]
    jsonschema.validate(m, load("manifest"))
    assert r.stdout.strip() == "run directory: run (failed); reports: nsightwrap report run"


def test_a_manifest_that_does_not_fit_is_one_line_and_leaves_no_half_file(tmp_path: Path) -> None:
    (tmp_path / "loud.py").write_text(LOUD)
    r = nsightwrap(tmp_path, "profile", "-q", "--passes", "plain", "--no-checks", "-o", "run", "loud.py", "5",
                   fsize=2_000)  # fmt: skip
    clean(r.stderr)
    assert r.returncode == EXIT_TOOL_FAILED
    assert errors(r.stderr)[-1] == (
        f"error: cannot write {tmp_path / 'run' / 'manifest.json'}: no space left on device (file size limit "
        "reached); free space on that file system and try again"
    )
    run = tmp_path / "run"
    assert not (run / "manifest.json").exists() and not list(run.rglob("*.tmp"))
    assert (run / "env").is_dir()  # the run directory and what was written are kept


def test_compare_and_report_o_on_a_full_disk_leave_no_file_and_keep_an_old_one(tmp_path: Path) -> None:
    sidecar = str(next((ROOT / "fixtures" / "runs" / "h200-timer" / "plain").glob("timer-*.json")))
    out = tmp_path / "compare.md"
    line = (
        f"error: cannot write {out}: no space left on device (file size limit reached); free space there, "
        "or choose another -o path"
    )
    r = nsightwrap(tmp_path, "compare", sidecar, sidecar, "--format", "md", "-o", str(out), fsize=1_000)
    clean(r.stderr)
    assert (r.returncode, errors(r.stderr)) == (EXIT_TOOL_FAILED, [line])
    assert os.listdir(tmp_path) == []  # no 0-byte file, no temporary
    out.write_text("the old comparison\n")
    r = nsightwrap(tmp_path, "compare", sidecar, sidecar, "--format", "md", "-o", str(out), fsize=1_000)
    assert (r.returncode, errors(r.stderr)) == (EXIT_TOOL_FAILED, [line])
    assert out.read_text() == "the old comparison\n" and os.listdir(tmp_path) == ["compare.md"]
    r = nsightwrap(tmp_path, "report", str(EXAMPLE), "--format", "md", "-o", "/dev/full")
    clean(r.stderr)
    assert (r.returncode, errors(r.stderr)) == (
        EXIT_TOOL_FAILED, ["error: cannot write /dev/full: no space left on device; free space there, or choose another -o path"]
    )  # fmt: skip


def test_a_full_disk_under_the_unpack_cache_is_told_as_such_not_as_a_corrupt_report(tmp_path: Path) -> None:
    # The shipped run's reports are gzipped; reading one unpacks it into the cache (under HOME).
    r = nsightwrap(tmp_path, "report", str(EXAMPLE), "--format", "json", fsize=1_000)
    clean(r.stderr)
    assert r.returncode == EXIT_TOOL_FAILED
    [line] = errors(r.stderr)
    cache = tmp_path / ".cache" / "nsightwrap" / "unpacked"
    assert line.startswith(f"error: cannot write {cache}/") and "no space left on device (file size limit reached)" in line
    assert "truncated or corrupt" not in line and "nsightwrap's unpack cache (XDG_CACHE_HOME moves it)" in line
    assert not [p for p in cache.rglob("*") if p.is_file()]  # no half copy left to be read later


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_inspect_and_report_to_a_full_stdout_are_one_line_exit_3(tmp_path: Path, fmt: str) -> None:
    xml = EXAMPLE / "env" / "nvidia-smi-q-x.xml"
    line = "error: cannot write standard output: no space left on device; free space where the output goes, or write it with -o elsewhere"
    with open("/dev/full", "w") as full:
        r = nsightwrap(tmp_path, "inspect", str(xml), "--format", fmt, stdout=full.fileno())
        clean(r.stderr)
        assert (r.returncode, errors(r.stderr)) == (EXIT_TOOL_FAILED, [line])
        if fmt == "csv":
            r = nsightwrap(tmp_path, "report", str(EXAMPLE), "--format", "md", stdout=full.fileno())
            clean(r.stderr)
            assert (r.returncode, errors(r.stderr)) == (EXIT_TOOL_FAILED, [line])


# --------------------------------------------------------------------------- processes left running


@pytest.mark.skipif(shutil.which("setsid") is None, reason="no setsid here")
@pytest.mark.parametrize(("sleep", "timeout", "code"), [("0.3", "60", EXIT_OK), ("60", "1.5", EXIT_TIMEOUT)])
def test_a_process_the_target_left_in_another_session_is_ended(tmp_path: Path, sleep: str, timeout: str, code: int) -> None:
    (tmp_path / "stray.py").write_text(STRAY)
    pid_file = tmp_path / "stray.pid"
    t0 = time.monotonic()
    r = nsightwrap(
        tmp_path, "profile", "--passes", "plain", "--no-checks", "--no-analyze", "--timeout", timeout, "-o", "run",
        "stray.py", env={"STRAY_PID_FILE": str(pid_file), "STRAY_TARGET_SLEEP": sleep},
    )  # fmt: skip
    took = time.monotonic() - t0
    pid = int(pid_file.read_text())
    try:
        clean(r.stderr)
        assert r.returncode == code, r.stderr
        assert not alive(pid)  # gone before nsightwrap exited (a zombie reads as gone)
        m = json.loads((tmp_path / "run" / "manifest.json").read_text())
        [cmd] = m["passes"][0]["commands"]
        assert cmd["strays_ended"] == 1 and m["exit_code"] == code
        jsonschema.validate(m, load("manifest"))
        log = (tmp_path / "run" / "plain" / "stderr.log").read_text()
        assert f"nsightwrap: ended 1 process(es) the command left running (pid {pid})" in log
        assert "grandchild up" in (tmp_path / "run" / "plain" / "stdout.log").read_text()  # its output kept
        assert "warning: plain pass: ended 1 process(es) the target left running in another session" in r.stderr
        assert took < 60  # not held by the grandchild's pipe
    finally:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


# --------------------------------------------------------------------------- merges


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    """``nsightwrap ARGS`` in this process: its exit code and stderr."""
    from nsightwrap.cli import main

    with pytest.raises(SystemExit) as exc:
        main(list(args))
    code = exc.value.code
    return (code if isinstance(code, int) else 0), capsys.readouterr().err


def test_merge_into_one_of_its_inputs_is_refused_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for i in (0, 1):
        shutil.copytree(SHARDS / "shards" / str(i), tmp_path / f"s{i}")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    code, err = cli(capsys, "merge", "s0", "s1", "-o", "s0/merged")
    clean(err)
    assert code == EXIT_BAD_INPUT
    assert errors(err) == [
        "error: the merged run s0/merged would be inside the run s0 it merges (it would copy itself into itself); "
        "give an -o path outside every run directory merged"
    ]
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    # Through a link to the input, too.
    (tmp_path / "link").symlink_to(tmp_path / "s1")
    code, err = cli(capsys, "merge", "s0", "s1", "-o", "link/merged")
    assert code == EXIT_BAD_INPUT and "would be inside the run s1" in err
    assert not (tmp_path / "s1" / "merged").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"dir": "."}, "shard directory '.' is the merged run itself"),
        ({"index": "abc"}, "shard 'shards/0' has index 'abc', not a shard number (0, 1, ...)"),
    ],
)
def test_a_merged_manifest_that_points_at_itself_or_has_no_shard_number_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    change: dict[str, str], message: str,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "merged"
    shutil.copytree(SHARDS, run)
    doc = json.loads((run / "manifest.json").read_text())
    doc["shards"][0].update(change)
    (run / "manifest.json").write_text(json.dumps(doc))
    for args in (("report", "merged", "--format", "json"), ("merge", "merged", "-o", "again")):
        code, err = cli(capsys, *args)
        clean(err)
        assert code == EXIT_BAD_INPUT, err
        [line] = errors(err)
        assert line.startswith(f"error: merged/manifest.json: {message}")
    assert not (tmp_path / "again").exists()
