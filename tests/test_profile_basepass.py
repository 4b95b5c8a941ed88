"""The clock sweep's base pass only where it can change an answer (issue 29): decided after the
other passes from the run so far (analysis/basepass.py), on the shipped H200 runs and end to end
with the fake tools."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fake_tools.harness import TARGET, manifest, passes, use_fakes
from rich.console import Console

from nsightwrap.analysis.basepass import base_pass_unneeded, check_run, clock_gaps
from nsightwrap.analysis.load import analyze
from nsightwrap.cli.profile_cmd import _Display
from nsightwrap.core.contract import PASSES, ncu_default_filter
from nsightwrap.run.launch import DEFAULT_NCU_METRICS, target_argv
from nsightwrap.run.profiling import Settings, find_tools, run_passes
from nsightwrap.run.rundir import create_run_dir

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"


def test_not_needed_where_every_clock_is_within_the_gap() -> None:
    # The three benchmarks of this run timed with the SM clock stamped inside their kernels, at
    # 1.6-2.0 GHz like ncu: within 1.7% of ncu's; the pass it holds moved no ratio more than 0.5%.
    res = analyze(RUNS / "h200-clock-sweep")
    assert max(g for _, g in clock_gaps(res)) < 0.05
    why = base_pass_unneeded(res)
    assert why is not None and why.startswith("every benchmark's measured SM clock is within 5% of ncu's")


def test_needed_where_a_loop_ran_at_another_clock() -> None:
    # do_bench #4 ran its loop at 1.38 GHz (nsys GPU metrics), ncu its kernel at 1.60 GHz.
    res = analyze(RUNS / "h200-sweep")
    assert base_pass_unneeded(res) is None
    assert dict(clock_gaps(res))["sweep.py:17 do_bench #4"] > 0.15
    assert base_pass_unneeded(res, gap=0.5) is not None  # the rule is the gap, nothing else


def test_a_run_without_a_measured_clock_needs_no_elasticity(tmp_path: Path) -> None:
    # Every benchmark is then compared at ncu's own clock: no duration is carried anywhere.
    assert check_run(tmp_path, {"passes": []}) == "no benchmark has a measured SM clock to carry ncu's durations to"


def _settings(argv: tuple[str, ...]) -> Settings:
    return Settings(
        target=argv, argv=tuple(target_argv(list(argv))), passes=PASSES, explicit_passes=False, timeout_s=None,
        fail_fast=False, ncu_iters=3, nvtx_filter=tuple(ncu_default_filter()), metrics=DEFAULT_NCU_METRICS,
        section_set=None, ncu_extra=(), nsys_extra=(), quiet=True, verbose=False,
    )  # fmt: skip


def test_run_asks_after_the_other_passes_and_records_why_not(tmp_path: Path, monkeypatch) -> None:
    use_fakes(monkeypatch, tmp_path)
    s = _settings((str(TARGET),))
    display = _Display(Console(stderr=True), quiet=True, verbose=False)
    tools, skipped = find_tools(s, None, None, display)
    layout = create_run_dir(tmp_path / "run", s.passes)
    seen: list[dict[str, Any]] = []

    def check(root: Path, m: dict[str, Any]) -> str | None:
        seen.append(m)
        assert root == layout.root
        return "the clocks agree"

    code, status, _, _ = run_passes(s, layout, tools, skipped, display, base_check=check)
    assert (code, status) == (0, "complete")
    (m,) = seen
    assert m["status"] == "running"
    assert {p["name"]: p["status"] for p in m["passes"]} == {"plain": "ok", "ncu": "ok", "ncu-duration": "ok", "nsys": "ok"}
    done = manifest(tmp_path / "run")
    base = passes(done)["ncu-base"]
    assert base["status"] == "skipped" and base["message"] == "not needed: the clocks agree"
    assert done["plan"]["cut"] == [{"pass": "ncu-base", "why": "not needed: the clocks agree"}]
    assert not (tmp_path / "run" / "ncu-base" / "report.ncu-rep").exists()


def test_always_runs_it_without_asking(tmp_path: Path, monkeypatch, capsys) -> None:
    from dataclasses import replace

    from fake_tools.harness import profile

    use_fakes(monkeypatch, tmp_path)
    s = replace(_settings((str(TARGET),)), passes=("plain", "ncu"), base_pass="always")
    display = _Display(Console(stderr=True), quiet=True, verbose=False)
    tools, skipped = find_tools(s, None, None, display)
    layout = create_run_dir(tmp_path / "run", s.passes)
    asked: list[Path] = []
    code, _, _, _ = run_passes(s, layout, tools, skipped, display, base_check=lambda root, m: asked.append(root) or "no")
    assert code == 0 and asked == []
    m = manifest(tmp_path / "run")
    assert passes(m)["ncu-base"]["status"] == "ok" and m["settings"]["base_pass"] == "always"
    r = profile(capsys, "-o", "bad", "--base-pass", "never", str(TARGET))
    assert r.code == 2 and "--base-pass 'never' is not auto or always" in r.err
