"""``nsightwrap profile`` without a terminal (CI logs, nohup, notebooks): one line per pass start
and end and a heartbeat while a pass runs, with the fake tools on PATH running a target that sleeps."""

from __future__ import annotations

import re
from pathlib import Path

from fake_tools.harness import TARGET, profile, use_fakes


def test_plain_lines_and_heartbeat_without_a_terminal(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("TARGET_DELAY", "1.0")  # every pass runs >= 1 s
    monkeypatch.setenv("NSIGHTWRAP_HEARTBEAT_S", "0.2")
    r = profile(capsys, "-o", "run", "--no-analyze", "--duration-pass", "always", "--base-pass", "always", str(TARGET))
    assert r.code == 0, r.err
    lines = r.err.splitlines()
    names = ["plain", "ncu", "nsys", "ncu-duration", "ncu-base"]  # the sweep last: it may not be needed
    for i, name in enumerate(names, 1):
        head = f"pass {i}/5 {name}"
        assert any(ln.startswith(f"{head}: started (") for ln in lines), (head, r.err)
        assert any(ln.startswith(f"{head}: ended; {name} pass: ok (") for ln in lines), (head, r.err)
        if name == "nsys":  # its export runs beside the duration pass, and says so when it starts
            assert any(ln.startswith(f"{head}: traced; nsys pass: exporting its trace beside the next pass (")
                       for ln in lines), r.err  # fmt: skip
        beats = [ln for ln in lines if re.fullmatch(rf"{re.escape(head)}: (\d+ kernels, )?\d+ s", ln)]
        assert beats, (head, r.err)
    # The ncu pass's heartbeat counts the ==PROF== lines seen so far; its end line the total.
    assert any(re.fullmatch(r"pass 2/5 ncu: \d+ kernels, \d+ s", ln) for ln in lines)
    assert "pass 2/5 ncu: ended; ncu pass: ok" in r.err and "18 kernels profiled" in r.err


def test_quiet_prints_no_progress(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("NSIGHTWRAP_HEARTBEAT_S", "0.05")
    monkeypatch.setenv("TARGET_DELAY", "0.3")
    r = profile(capsys, "-q", "-o", "run", "--no-analyze", str(TARGET))
    assert r.code == 0, r.err
    assert "pass 1/5" not in r.err
