"""Reports read ahead while the passes go on: each report the analysis needs is read
in the background once its pass has ended, so that the clock sweep's checks and the final
analysis find it read (``analysis.basepass.ReadOnce``, ``Profiler.read_ahead``)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fake_tools.harness import TARGET, manifest, passes, profile, use_fakes
from rich.console import Console

from nsightwrap.analysis.basepass import ReadOnce
from nsightwrap.cli.profile_cmd import _Display
from nsightwrap.core.contract import PASSES, ncu_default_filter
from nsightwrap.run.launch import DEFAULT_NCU_METRICS, target_argv
from nsightwrap.run.profiling import Settings, find_tools, run_passes
from nsightwrap.run.rundir import create_run_dir


class _Counted:
    """A reader that counts its reads, can be slowed down, and fails on request."""

    def __init__(self, delay_s: float = 0.0, fail: BaseException | None = None) -> None:
        self.reads: list[str] = []
        self.threads: list[str] = []
        self.delay_s = delay_s
        self.fail = fail

    def __call__(self, path: Path) -> Any:
        self.reads.append(Path(path).name)
        self.threads.append(threading.current_thread().name)
        time.sleep(self.delay_s)
        if self.fail is not None:
            raise self.fail
        return {"text": Path(path).read_text(), "rows": [1, 2, 3]}


def test_a_file_read_ahead_is_read_once_in_the_background_and_handed_out_as_copies(tmp_path: Path) -> None:
    f = tmp_path / "report.ncu-rep"
    f.write_text("kernels")
    reader = _Counted(delay_s=0.3)
    once = ReadOnce(reader)
    t0 = time.monotonic()
    once.prefetch(f)
    assert time.monotonic() - t0 < 0.2  # prefetch does not wait for the read
    a = once(f)  # waits for the read going on, does not start another
    b = once(f)
    assert a == b == {"text": "kernels", "rows": [1, 2, 3]}
    assert reader.reads == ["report.ncu-rep"] and reader.threads == ["nsightwrap-prefetch"]
    a["rows"].append(4)  # a copy: what the next analysis gets is as read
    assert once(f)["rows"] == [1, 2, 3]
    # A file that changed is read again; a missing one is not read ahead (nothing to read).
    f.write_text("more kernels")
    assert once(f)["text"] == "more kernels" and len(reader.reads) == 2
    once.prefetch(tmp_path / "missing.sqlite")
    assert len(reader.reads) == 2


def test_a_failed_read_ahead_fails_the_reader_as_a_read_then_would(tmp_path: Path) -> None:
    from nsightwrap.core.errors import ReportParseError

    f = tmp_path / "report.sqlite"
    f.write_text("truncated")
    reader = _Counted(fail=ReportParseError("report.sqlite is truncated"))
    once = ReadOnce(reader)
    once.prefetch(f)
    once.settle(5.0)
    for _ in range(2):
        with pytest.raises(ReportParseError, match="truncated"):
            once(f)
    assert len(reader.reads) == 1  # the report's error is its answer: not read again


def test_an_interrupted_read_is_not_kept(tmp_path: Path) -> None:
    f = tmp_path / "report.ncu-rep"
    f.write_text("kernels")
    reader = _Counted(fail=KeyboardInterrupt())
    once = ReadOnce(reader)
    with pytest.raises(KeyboardInterrupt):
        once(f)
    reader.fail = None
    assert once(f)["text"] == "kernels" and len(reader.reads) == 2


def _settings() -> Settings:
    argv = (str(TARGET),)
    return Settings(
        target=argv, argv=tuple(target_argv(list(argv))), passes=PASSES, explicit_passes=False, timeout_s=None,
        fail_fast=False, ncu_iters=3, nvtx_filter=tuple(ncu_default_filter()), metrics=DEFAULT_NCU_METRICS,
        section_set=None, ncu_extra=(), nsys_extra=(), quiet=True, verbose=False,
    )  # fmt: skip


def _passes(run: Path, prefetch: Any, s: Settings | None = None) -> int:
    """The passes of ``s`` (default: every one) on the fakes into ``run`` (each sweep pass
    needed), reports handed to ``prefetch``; the exit code."""
    s = s or _settings()
    display = _Display(Console(stderr=True), quiet=True, verbose=False)
    tools, skipped = find_tools(s, None, None, display)
    layout = create_run_dir(run, s.passes)
    return run_passes(s, layout, tools, skipped, display, sweep_check=lambda name, root, m: (True, "asked"),
                      prefetch=prefetch)[0]  # fmt: skip


def test_each_report_is_handed_to_prefetch_once_its_pass_has_ended(tmp_path: Path, monkeypatch) -> None:
    use_fakes(monkeypatch, tmp_path)
    # The export ends while the duration pass runs: its SQLite is read ahead when it ends.
    monkeypatch.setenv("FAKE_NSYS_EXPORT_DELAY", "1.0")
    handed: dict[str, float] = {}
    lock = threading.Lock()

    def prefetch(path: Path) -> None:
        with lock:
            assert path.name not in handed, f"{path} handed twice"
            assert path.is_file()
            handed[path.parent.name + "/" + path.name] = time.time()

    assert _passes(tmp_path / "run", prefetch) == 0
    p = passes(manifest(tmp_path / "run"))
    ends = {n: p[n]["commands"][0]["end"] for n in ("ncu", "ncu-duration", "ncu-base")}
    export = p["nsys"]["commands"][-1]
    assert export["argv"][1] == "export"
    assert set(handed) == {"ncu/report.ncu-rep", "ncu-duration/report.ncu-rep", "ncu-base/report.ncu-rep",
                           "nsys/report.sqlite"}  # fmt: skip
    # The ncu pass's report goes once the nsys trace has ended (no reader beside the traced
    # loops), the export's as the export ends (beside the duration pass), each sweep report as its
    # pass ends.
    assert ends["ncu"] < p["nsys"]["commands"][0]["end"] <= handed["ncu/report.ncu-rep"] < ends["ncu-duration"]
    assert export["end"] <= handed["nsys/report.sqlite"] < export["end"] + 1.0
    assert ends["ncu-duration"] <= handed["ncu-duration/report.ncu-rep"] < p["ncu-base"]["commands"][0]["start"]
    assert ends["ncu-base"] <= handed["ncu-base/report.ncu-rep"]


def test_nothing_is_read_ahead_of_a_failed_export(tmp_path: Path, monkeypatch) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("FAKE_TOOLS_MODE", "nsys-export-fail")
    handed: list[str] = []
    assert _passes(tmp_path / "run", lambda path: handed.append(path.name)) != 0
    assert "report.sqlite" not in handed and "report.ncu-rep" in handed


def test_without_an_nsys_pass_the_ncu_report_goes_when_its_pass_ends(tmp_path: Path, monkeypatch) -> None:
    from dataclasses import replace

    use_fakes(monkeypatch, tmp_path)
    handed: dict[str, float] = {}
    s = replace(_settings(), passes=("plain", "ncu"))
    assert _passes(tmp_path / "run", lambda path: handed.setdefault(path.parent.name, time.time()), s) == 0
    p = passes(manifest(tmp_path / "run"))
    assert p["ncu"]["commands"][0]["end"] <= handed["ncu"] < p["ncu-duration"]["commands"][0]["end"]
    assert "nsys" not in handed


def test_profile_with_reports_read_ahead_reports_what_report_says(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", str(TARGET))
    assert r.code == 0, r.err
    from nsightwrap.cli import main

    with pytest.raises(SystemExit):
        main(["report", "run", "--format", "table"])
    again = capsys.readouterr().out
    # The profile's own summary (made from reports read ahead) is the report command's.
    first = next(ln for ln in again.splitlines() if "benchmarks:" in ln)
    assert first in r.out
