"""``nsightwrap profile bench.py -o run --passes plain``: everything after TARGET goes to the target,
and one note says when some of it looks like nsightwrap's own options.

Real runs with the fake ncu/nsys/nvidia-smi on PATH; the target prints the argv it received.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_tools.harness import TARGET, manifest, profile, use_fakes

T = str(TARGET)


def target_argv(run: Path) -> list[str]:
    """The arguments the target itself saw in the plain pass (it prints them first)."""
    first = (run / "plain" / "stdout.log").read_text().splitlines()[0]
    assert first.startswith("target: pass=plain argv=")
    return json.loads(first.split("argv=", 1)[1])


def notes(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("note:")]


def test_options_after_target_go_to_it_with_one_note(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "--passes", "plain", "--no-analyze", "-o", "mine", T, "-o", "run", "--passes=ncu", "--size", "8")
    assert r.code == 0, r.err
    # The rule holds: nsightwrap used its options before TARGET, the target got the rest.
    assert not (tmp_path / "run").exists()
    assert target_argv(tmp_path / "mine") == ["-o", "run", "--passes=ncu", "--size", "8"]
    assert [p["name"] for p in manifest(tmp_path / "mine")["passes"] if p["status"] == "ok"] == ["plain"]
    (note,) = notes(r.err)
    assert note.startswith(f"note: -o, --passes after {T} went to {T}, not to nsightwrap")
    # The fix, spelled out: the options moved before TARGET, the target's own arguments kept.
    assert f"nsightwrap profile -o run --passes=ncu {T} --size 8" in note
    assert "write -- after" in note


def test_flags_and_values_are_told_apart(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "--passes", "plain", "--no-analyze", "-o", "a", T, "--fail-fast", "--timeout", "9", "-v", "x")
    assert r.code == 0, r.err
    (note,) = notes(r.err)
    assert note.startswith(f"note: --fail-fast, --timeout, -v after {T}")
    # --fail-fast and -v take no value (x stays the target's); --timeout takes 9.
    assert f"nsightwrap profile --fail-fast --timeout 9 -v {T} x" in note


@pytest.mark.parametrize(
    "after",
    [
        ["--size", "4096", "-n", "3"],  # nothing nsightwrap would read
        ["--", "-o", "run", "--passes", "plain"],  # the user said they are the target's
    ],
)
def test_no_note(after: list[str], tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "--passes", "plain", "--no-analyze", "-o", "a", T, *after)
    assert r.code == 0, r.err
    assert notes(r.err) == []
    assert target_argv(tmp_path / "a") == [a for a in after if a != "--"]


def test_quiet_has_no_note(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-q", "--passes", "plain", "--no-analyze", "-o", "a", T, "--passes", "nsys")
    assert r.code == 0, r.err
    assert notes(r.err) == []
    assert target_argv(tmp_path / "a") == ["--passes", "nsys"]
