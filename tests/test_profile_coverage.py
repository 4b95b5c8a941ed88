"""The coverage pass (``ncu-cover``) of ``nsightwrap profile``, end to end with the fake ncu / nsys /
nvidia-smi on PATH running the real target: it runs only where a benchmark nsys saw has no ncu
figures of its own, over exactly that benchmark's iteration ranges, with no cap, and the analysis
says what it found. The fake ncu writes the real H200 reference workload's reports, whose ncu pass
profiled none of ``softmax_mlp``'s launches (tests/refrun.py: its filter was ``regex:mm_.*/``)."""

from __future__ import annotations

from pathlib import Path

from fake_tools.harness import TARGET, manifest, passes, profile, tool_calls, use_fakes

from nsightwrap.analysis.load import analyze

T = str(TARGET)


def test_the_coverage_pass_runs_over_the_benchmark_ncu_missed(tmp_path: Path, monkeypatch, capsys) -> None:
    log = use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "--no-analyze", T)
    assert r.code in (0, 1), r.err
    m = manifest(tmp_path / "run")
    cov = m["plan"]["coverage"]
    assert cov["runs"] is True and cov["benchmarks"] == ["softmax_mlp"]
    assert cov["ranges"] == ["softmax_mlp/softmax_mlp/iter"] and "softmax_mlp" in cov["why"]
    assert "ncu-cover pass needed" in r.err
    p = passes(m)
    assert p["ncu-cover"]["status"] == "ok"
    argv = p["ncu-cover"]["commands"][0]["argv"]
    # Exactly that benchmark's iteration ranges (regex-escaped), no per-launch-config cap, the
    # duration and the SM clock only, at the GPU's own clock.
    assert argv[1:3] == ["--clock-control", "none"]
    includes = [argv[i + 1] for i, a in enumerate(argv) if a == "--nvtx-include"]
    assert includes == ["regex:softmax_mlp/softmax_mlp/iter[0-9]+/"] and "--nvtx" in argv
    assert "--launch-count" not in argv and "--filter-mode" not in argv
    assert argv[argv.index("--metrics") + 1] == "gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second"
    assert argv[argv.index("-o") + 1].endswith("ncu-cover/report")
    assert p["ncu-cover"]["env"]["NSIGHTWRAP_PASS"] == "ncu"
    covers = [c for c in tool_calls(log) if c[0] == "ncu" and "ncu-cover/report" in " ".join(c)]
    assert len(covers) == 1
    # The fake's report holds none of softmax_mlp's launches: still no ncu figure, and it says so;
    # the other benchmarks keep the figures of their own.
    by = {b.name: b for b in analyze(tmp_path / "run").benchmarks}
    soft = by["softmax_mlp"]
    # (The fake's target leaves no timings of the reference workload: no_timer, not no_ncu.)
    assert soft.verdict.value == "no_timer" and soft.causes == () and soft.ncu is None
    why = next(n for n in soft.notes if n.startswith("no ncu: "))
    assert "the coverage pass (ncu-cover, no cap) profiled none of them either" in why
    assert "--nvtx-include" not in why  # nsightwrap chose that filter: never the user's to check
    assert by["mm_small"].ncu is not None and by["mm_small"].ncu.iterations_ns


def test_no_coverage_pass_where_nothing_lacks(tmp_path: Path, monkeypatch, capsys) -> None:
    # Without the nsys pass there is nothing to check ncu's coverage against: asked, not needed.
    log = use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "--no-analyze", "--passes", "plain,ncu", T)
    assert r.code == 0, r.err
    m = manifest(tmp_path / "run")
    assert m["plan"]["coverage"]["runs"] is False and m["plan"]["coverage"]["benchmarks"] == []
    assert "ncu-cover" not in passes(m)
    assert not [c for c in tool_calls(log) if c[0] == "ncu" and "ncu-cover/report" in " ".join(c)]
