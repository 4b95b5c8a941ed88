"""The base pass started early (on by default): it starts as the duration pass goes,
held by the capture layer before the script's first line until its turn; it goes while the
analysis decides whether it is needed and is stopped when it is not. Real
subprocesses: the capture layer over the stand-ins, the fake tools on PATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from capture_helpers import layer_env
from fake_tools.harness import TARGET, manifest, passes, use_fakes
from test_profile_basepass import _run, _settings

from nsightwrap.core.contract import ENV_GO_FILE, ENV_GO_OWNER, ENV_PREIMPORT, ENV_STARTUP_FILE
from nsightwrap.run.profiling import Settings


def _early(argv: tuple[str, ...]) -> Settings:
    return replace(_settings(argv), early_start=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _starts(path: Path) -> list[tuple[str, int, float]]:
    """The target's first lines, in order: (pass, pid, epoch s)."""
    rows = [ln.split() for ln in path.read_text().splitlines()]
    return [(r[0], int(r[1]), float(r[2])) for r in rows]


def _cmd(m: dict, name: str, i: int = 0) -> dict:
    return passes(m)[name]["commands"][i]


def test_the_base_pass_starts_as_the_duration_pass_goes(tmp_path: Path, monkeypatch) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("TARGET_PID_FILE", str(tmp_path / "pids"))
    monkeypatch.setenv("TARGET_DELAY", "1.2")
    monkeypatch.setenv("FAKE_NSYS_EXPORT_DELAY", "0.5")  # ends while the duration pass runs
    code, status, _ = _run(_early((str(TARGET),)), tmp_path / "run", lambda name: (True, "a verdict moves"))
    assert (code, status) == (0, "complete")
    m = manifest(tmp_path / "run")
    export, dur, base = _cmd(m, "nsys", -1), _cmd(m, "ncu-duration"), _cmd(m, "ncu-base")
    assert export["argv"][1] == "export"
    # Started before its turn, as the duration pass went (beside the nsys export: CPU work on
    # the report alone); its times count from its turn.
    assert base["early_s"] > 0.3
    launched = base["start"] - base["early_s"]
    assert dur["start"] - 0.05 <= launched < export["end"] and launched < dur["end"] <= base["start"] + 0.05
    assert all(_cmd(m, n).get("early_s") is None for n in ("plain", "ncu", "nsys", "ncu-duration"))
    # The script's first line ran only at its turn: after the pass before it ended.
    starts = [t for p, _, t in _starts(tmp_path / "pids") if p == "ncu"]
    assert len(starts) == 3  # the ncu pass, the duration pass, the base pass
    assert starts[2] >= dur["end"]
    # The record is the pass's own: no go-file variables, no go file left.
    assert not {ENV_GO_FILE, ENV_PREIMPORT, ENV_GO_OWNER} & set(base["env"])
    assert not list((tmp_path / "run").glob(".*.go"))
    assert m["settings"]["early_start"] is True
    assert (tmp_path / "run" / "ncu-base" / "report.ncu-rep").is_file()


def test_a_base_pass_started_while_its_need_is_decided_is_stopped_when_not_needed(
    tmp_path: Path, monkeypatch
) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("TARGET_PID_FILE", str(tmp_path / "pids"))
    monkeypatch.setenv("TARGET_DELAY", "2.5")

    def answer(name: str) -> tuple[bool, str]:
        # The analysis takes a while: long enough for the base pass's script to start (waited for,
        # up to 20 s, rather than a fixed sleep that a loaded machine can outrun).
        pids, until = tmp_path / "pids", time.monotonic() + 20.0
        while time.monotonic() < until and sum(p == "ncu" for p, _, _ in _starts(pids)) < 3:
            time.sleep(0.05)
        return False, "the clocks agree"

    code, status, _ = _run(_early((str(TARGET),)), tmp_path / "run", answer)
    assert (code, status) == (0, "complete")
    m = manifest(tmp_path / "run")
    base = passes(m)["ncu-base"]
    assert base["status"] == "skipped" and base["message"] == "not needed: the clocks agree"
    assert base["commands"] == []
    pids = [pid for p, pid, _ in _starts(tmp_path / "pids") if p == "ncu"]
    assert len(pids) == 3  # it had started, then was stopped
    assert not _alive(pids[-1])
    assert not (tmp_path / "run" / "ncu-base").exists()
    assert m["plan"]["cut"] == [{"pass": "ncu-base", "why": "not needed: the clocks agree"}]


def test_with_no_early_start_each_pass_runs_from_scratch(tmp_path: Path, monkeypatch) -> None:
    use_fakes(monkeypatch, tmp_path)
    assert _settings((str(TARGET),)).early_start is True  # the default
    s = replace(_settings((str(TARGET),)), early_start=False)
    code, _, _ = _run(s, tmp_path / "run", lambda name: (True, "a verdict moves"))
    assert code == 0
    m = manifest(tmp_path / "run")
    for name in ("plain", "ncu", "nsys", "ncu-duration", "ncu-base"):
        assert _cmd(m, name).get("early_s") is None, name
    assert _cmd(m, "ncu-base")["start"] >= _cmd(m, "ncu-duration")["end"]
    assert not (tmp_path / "run" / "plain" / "startup.json").exists()
    assert m["settings"]["early_start"] is False


def test_an_executable_target_is_never_started_early(tmp_path: Path, monkeypatch) -> None:
    # Nothing would hold it: only the capture layer of a Python process waits for its turn.
    use_fakes(monkeypatch, tmp_path)
    exe = tmp_path / "bench"
    exe.write_text(f"#!{sys.executable}\nprint('bench ran')\n")
    exe.chmod(0o755)
    code, _, _ = _run(_early((str(exe),)), tmp_path / "run", lambda name: (True, "a verdict moves"))
    m = manifest(tmp_path / "run")
    assert passes(m)["ncu-base"]["status"] == "ok", code
    assert _cmd(m, "ncu-base").get("early_s") is None


# --- the capture layer's side -----------------------------------------------------------------


def test_the_plain_pass_notes_what_the_script_imported_and_set_before_torch(tmp_path: Path) -> None:
    script = tmp_path / "s.py"
    out = tmp_path / "startup.json"
    script.write_text(
        "import os, subprocess, sys\n"
        "os.environ['OMP_NUM_THREADS'] = '1'\n"
        "import torch\n"
        "os.environ['LATER'] = '1'\n"
        f"subprocess.run([sys.executable, '-c', 'import os; print(os.environ.get(\"{ENV_STARTUP_FILE}\"))'])\n"
    )
    env = layer_env(tmp_path, "plain", **{ENV_STARTUP_FILE: str(out)})
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "None"  # the script's own children neither wait nor note
    doc = json.loads(out.read_text())
    assert doc == {"imports": ["torch"], "env_before_torch": ["OMP_NUM_THREADS"]}
    script.write_text("import torch\nimport triton.testing\n")
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert json.loads(out.read_text()) == {"imports": ["torch", "triton", "triton.testing"], "env_before_torch": []}


def test_what_a_held_pass_imports_follows_the_plain_pass(tmp_path: Path) -> None:
    from nsightwrap.run.profiling import Profiler
    from nsightwrap.run.rundir import create_run_dir

    layout = create_run_dir(tmp_path / "run", ("plain", "ncu", "nsys"))
    prof = Profiler(_settings((str(TARGET),)), layout, {}, None)  # type: ignore[arg-type]
    assert prof.read_preimports() == ()  # no word from the plain pass
    layout.startup_file.write_text(json.dumps({"imports": ["triton", "torch"], "env_before_torch": []}))
    assert prof.read_preimports() == ("torch", "triton")
    layout.startup_file.write_text(json.dumps({"imports": ["torch"], "env_before_torch": ["TORCH_LOGS"]}))
    assert prof.read_preimports() == ()  # torch would read TORCH_LOGS at import: not early
    layout.startup_file.write_text("{ truncated")
    assert prof.read_preimports() == ()


def test_a_held_process_imports_then_waits_for_its_go_file(tmp_path: Path) -> None:
    go = tmp_path / "go"
    script = tmp_path / "s.py"
    script.write_text(
        "import os, sys, time\n"
        f"print('first line', time.time(), 'torch' in sys.modules, os.environ.get({ENV_GO_FILE!r}), flush=True)\n"
    )
    env = layer_env(tmp_path, "ncu", **{ENV_GO_FILE: str(go), ENV_PREIMPORT: "torch", ENV_GO_OWNER: str(os.getpid())})
    p = subprocess.Popen([sys.executable, str(script)], env=env, stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)
    assert p.poll() is None  # held
    t_go = time.time()
    go.touch()
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 0
    _, _, at, imported, seen = out.split()
    assert float(at) >= t_go - 0.01 and imported == "True" and seen == "None"


def test_a_held_process_leaves_when_its_profile_is_gone(tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    script = tmp_path / "s.py"
    script.write_text("print('must not run')\n")
    env = layer_env(tmp_path, "ncu", **{ENV_GO_FILE: str(tmp_path / "go"), ENV_GO_OWNER: str(dead.pid)})
    p = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=30)
    assert p.returncode == 1 and "must not run" not in p.stdout
    assert "the profile that started this pass early has ended" in p.stderr


def test_it_is_on_by_default_and_the_command_line_turns_it_off(tmp_path: Path, monkeypatch, capsys) -> None:
    from fake_tools.harness import profile

    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("TARGET_DELAY", "1")
    r = profile(capsys, "-o", "run", "--base-pass", "always", "--no-analyze", str(TARGET))
    assert r.code == 0, r.err
    m = manifest(tmp_path / "run")
    assert m["settings"]["early_start"] is True
    assert _cmd(m, "ncu-base")["early_s"] > 0
    assert json.loads((tmp_path / "run" / "plain" / "startup.json").read_text()) == {"imports": [], "env_before_torch": []}
    r = profile(capsys, "-o", "off", "--no-early-start", "--base-pass", "always", "--no-analyze", str(TARGET))
    assert r.code == 0, r.err
    m = manifest(tmp_path / "off")
    assert m["settings"]["early_start"] is False and _cmd(m, "ncu-base").get("early_s") is None
    assert not (tmp_path / "off" / "plain" / "startup.json").exists()
