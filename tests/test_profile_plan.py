"""``nsightwrap profile``'s plan, ``--budget`` and ``--ncu-kernel-cap``, end to end with
the fake ncu / nsys / nvidia-smi on PATH running the real target."""

from __future__ import annotations

import json
from pathlib import Path

from fake_tools.harness import FAKE_PATH, TARGET, manifest, passes, profile, use_fakes

T = str(TARGET)
#: Both clock-sweep passes in every run (by default each runs only where the analysis of the
#: other passes says it can move an answer: tests/test_profile_basepass.py).
SWEEP = ("--duration-pass", "always", "--base-pass", "always")


def test_plan_printed_and_kept_with_actual_pass_times(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "--no-analyze", T)
    assert r.code == 0, r.err
    order = ["plain", "ncu", "nsys", "ncu-duration", "ncu-base"]  # the sweep last: it may not be needed
    for i, name in enumerate(order, 1):
        assert f"plan {i}/5 {name}: " in r.err
    assert "plan 2/5 ncu: ncu counters: 3 iteration(s) per benchmark; each distinct kernel (name, grid, block) " \
        "profiled once in the pass (--ncu-counters-cap), the duration pass times the other instances" in r.err
    # The duration pass runs in every run by default (the ncu pass then profiles each shape once).
    assert "plan 4/5 ncu-duration: ncu duration and SM clock at --clock-control none: the ncu pass's " \
        "iterations; each distinct kernel profiled at most 24 times (8x --ncu-kernel-cap)" in r.err
    assert "plan 5/5 ncu-base: ncu duration and SM clock at --clock-control base (only if it can move a " \
        "verdict or a cause: decided after the other passes)" in r.err
    assert "plan 3/5 nsys: nsys trace of CUDA and NVTX, every iteration; do_bench and Timer loops capped at " \
        "100 ms (--nsys-loop-ms)" in r.err
    m = manifest(tmp_path / "run")
    plan = m["plan"]
    assert [p["name"] for p in plan["passes"]] == order
    ran = {x["name"] for x in m["passes"] if x["status"] == "ok"}
    assert {"plain", "ncu", "nsys"} <= ran
    assert all(isinstance(p["actual_s"], float) and p["actual_s"] >= 0 for p in plan["passes"] if p["name"] in ran)
    assert all(p["estimate_s"] is not None for p in plan["passes"])
    assert plan["budget_s"] is None and (plan["ncu_kernel_cap"], plan["ncu_counters_cap"], plan["ncu_sweep_cap"]) == (3, 1, 24)
    # The base pass asked the analysis first and the answer is kept, run or not.
    assert [d["pass"] for d in plan["decided"]] == ["ncu-base"]
    assert all(isinstance(d["runs"], bool) and d["why"] for d in plan["decided"])
    assert plan["cut"] == [{"pass": d["pass"], "why": "not needed: " + d["why"]} for d in plan["decided"] if not d["runs"]]
    assert "(--ncu-counters-cap)" in plan["passes"][1]["what"] and "(--ncu-kernel-cap)" not in plan["passes"][1]["what"]
    # The manifest keeps the clock sweep's records beside the ncu pass's, as before, and the
    # coverage pass's after them (the reference workload's softmax_mlp has no ncu kernel:
    # tests/test_profile_coverage.py).
    assert [x["name"] for x in m["passes"]] == ["plain", "ncu", "ncu-duration", "ncu-base", "ncu-cover", "nsys"]
    p = passes(m)
    assert p["nsys"]["env"]["NSIGHTWRAP_NSYS_LOOP_MS"] == "100" and m["settings"]["nsys_loop_ms"] == 100
    r = profile(capsys, "-o", "run2", "--no-analyze", *SWEEP, T)
    assert r.code == 0, r.err
    m = manifest(tmp_path / "run2")
    assert m["plan"]["cut"] == [] and m["plan"]["decided"] == []  # "always": nothing asked
    p = passes(m)
    # The cap is on by default, in every ncu pass: 1 in the ncu pass (--ncu-counters-cap), since
    # the duration pass runs too and times 24 instances (8x --ncu-kernel-cap: one replay each).
    for name, cap in (("ncu", "1"), ("ncu-duration", "24"), ("ncu-base", "24")):
        argv = p[name]["commands"][0]["argv"]
        i = argv.index("--filter-mode")
        assert argv[i : i + 4] == ["--filter-mode", "per-launch-config", "--launch-count", cap], name
        assert argv.index("-f") > i
    r = profile(capsys, "-o", "run3", "--no-analyze", "--duration-pass", "auto", T)
    assert r.code == 0, r.err
    p = passes(manifest(tmp_path / "run3"))  # without a duration pass in every run, the ncu pass keeps 3
    argv = p["ncu"]["commands"][0]["argv"]
    assert argv[argv.index("--launch-count") + 1] == "3"
    assert "plan 4/5 ncu-duration: ncu duration and SM clock at --clock-control none (only if it can " in r.err


def test_budget_cuts_the_clock_sweep_and_says_so(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("TARGET_DELAY", "0.5")
    r = profile(capsys, "-o", "run", "--no-analyze", "--budget", "1", *SWEEP, T)
    assert r.code == 0, r.err
    m = manifest(tmp_path / "run")
    p = passes(m)
    assert p["ncu-duration"]["status"] == "skipped" and "--budget 1 s" in p["ncu-duration"]["message"]
    assert p["ncu-base"]["status"] == "skipped"
    assert p["ncu"]["status"] == "ok" and p["nsys"]["status"] == "ok"  # never cut
    assert [c["pass"] for c in m["plan"]["cut"]] == ["ncu-duration", "ncu-base"]
    assert "ncu-duration pass cut: --budget 1 s" in r.err


def test_generous_budget_cuts_nothing(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "--no-analyze", "--budget", "3600", *SWEEP, T)
    assert r.code == 0, r.err
    m = manifest(tmp_path / "run")
    assert all(x["status"] == "ok" for x in m["passes"]) and m["plan"]["cut"] == []


def test_kernel_cap_reaches_every_ncu_pass(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "--no-analyze", "--ncu-kernel-cap", "5", *SWEEP, T)
    assert r.code == 0, r.err
    p = passes(manifest(tmp_path / "run"))
    for name, cap in (("ncu", "1"), ("ncu-duration", "40"), ("ncu-base", "40")):
        argv = p[name]["commands"][0]["argv"]
        i = argv.index("--filter-mode")
        assert argv[i : i + 4] == ["--filter-mode", "per-launch-config", "--launch-count", cap], name
        assert argv.index("-f") > i  # an ncu option, before the target
    assert manifest(tmp_path / "run")["settings"]["ncu_kernel_cap"] == 5
    # --ncu-counters-cap 0 (or above the kernel cap): the ncu pass at the kernel cap too.
    for counters in ("0", "9"):
        r = profile(capsys, "-o", f"run-{counters}", "--no-analyze", "--ncu-kernel-cap", "5",
                    "--ncu-counters-cap", counters, *SWEEP, T)  # fmt: skip
        assert r.code == 0, r.err
        argv = passes(manifest(tmp_path / f"run-{counters}"))["ncu"]["commands"][0]["argv"]
        assert argv[argv.index("--launch-count") + 1] == "5", counters
    # --ncu-kernel-cap 0: nothing capped anywhere, whatever the counters cap says.
    r = profile(capsys, "-o", "run-nocap", "--no-analyze", "--ncu-kernel-cap", "0", "--ncu-counters-cap", "1", *SWEEP, T)
    assert r.code == 0, r.err
    assert all("--launch-count" not in p["commands"][0]["argv"]
               for p in manifest(tmp_path / "run-nocap")["passes"] if p["name"].startswith("ncu"))  # fmt: skip


def test_nsys_loop_cap_is_the_users_choice(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "--no-analyze", "--passes", "plain,nsys", "--nsys-loop-ms", "0", T)
    assert r.code == 0, r.err
    m = manifest(tmp_path / "run")
    assert passes(m)["nsys"]["env"]["NSIGHTWRAP_NSYS_LOOP_MS"] == "0"
    assert "every iteration; the timing loops as the script runs them" in m["plan"]["passes"][1]["what"]
    r = profile(capsys, "-o", "bad", "--nsys-loop-ms", "-1", T)
    assert r.code == 2


def test_profile_cost_benchmark_on_the_fakes(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    from benchmarks import profile_cost

    out = tmp_path / "cost.json"
    profile_cost.main(["--work", str(tmp_path / "w"), "--json", str(out), "--profile-args=--no-analyze",
                       "--ncu", str(FAKE_PATH[0]) + "/ncu", T])  # fmt: skip
    res = json.loads(out.read_text())
    rows = res["rows"]
    assert rows["plain"]["rc"] == 0 and rows["nsightwrap profile"]["rc"] == 0
    names = [p["name"] for p in rows["nsightwrap profile"]["passes"]]
    assert names == ["plain", "ncu", "ncu-duration", "ncu-base", "ncu-cover", "nsys"]
    assert rows["ncu by hand (same filter)"]["kernels"] == 18
    # Each log line carries the seconds since its run's launch, in order.
    stamps = [float(ln.split(None, 1)[0]) for ln in Path(rows["ncu by hand (same filter)"]["log"]).read_text().splitlines()]
    assert stamps and stamps == sorted(stamps) and 0 <= stamps[0] <= stamps[-1] <= rows["ncu by hand (same filter)"]["wall_s"]
    assert rows["nsightwrap profile"]["x_plain"] > 0
    assert "nsightwrap profile" in capsys.readouterr().out
    # The time outside the passes counts two passes at once (the nsys export beside the duration
    # pass) once: it is the run's wall time less the union of the commands' spans.
    row = rows["nsightwrap profile"]
    assert 0 <= row["outside_passes_s"] <= row["wall_s"] and row["overlapped_s"] >= 0
    m = {"passes": [{"commands": [{"start": 0.0, "end": 4.0}, {"start": 4.0, "end": 7.0}]},
                    {"commands": [{"start": 5.0, "end": 9.0}]}, {"commands": [{"start": 10.0, "end": 11.0}]}]}
    assert profile_cost._busy(m) == (10.0, 2.0)
    # Split: 1 s before the first command, the 1 s gap at 9-10 s between, 2 s after the last.
    assert profile_cost.outside_split(m, -1.0, 14.0) == {"before_s": 1.0, "between_s": 1.0, "after_s": 2.0}
    assert profile_cost.outside_split({"passes": []}, 0.0, 1.0) is None
    split = row["outside_split_s"]
    assert abs(split["before_s"] + split["between_s"] + split["after_s"] - row["outside_passes_s"]) < 0.01


def test_profile_cost_compares_the_verdicts_with_a_baseline(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    from benchmarks import profile_cost

    out = tmp_path / "cost.json"
    rc = profile_cost.main(["--work", str(tmp_path / "w"), "--json", str(out), "--profile-args=--no-analyze",
                            "--baseline-args=--no-analyze --ncu-kernel-cap 0", "--no-by-hand", T])  # fmt: skip
    res = json.loads(out.read_text())
    assert set(res["rows"]) == {"plain", "nsightwrap profile", "nsightwrap profile (baseline: --no-analyze --ncu-kernel-cap 0)"}
    v = res["verdicts"]
    assert v["defaults"] and v["defaults"] == v["baseline"] and v["same"] and rc == 0
    assert f"the same {len(v['defaults'])} benchmark(s) and verdicts as the baseline" in capsys.readouterr().out


def test_no_cap_with_zero_or_with_the_users_own_launch_count(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run0", "--no-analyze", "--no-clock-sweep", "--ncu-kernel-cap", "0", T)
    assert r.code == 0, r.err
    assert "--filter-mode" not in passes(manifest(tmp_path / "run0"))["ncu"]["commands"][0]["argv"]
    assert "profiled at most" not in r.err
    r = profile(capsys, "-o", "run1", "--no-analyze", "--no-clock-sweep", "--ncu-args", "-c 5", T)
    assert r.code == 0, r.err
    argv = passes(manifest(tmp_path / "run1"))["ncu"]["commands"][0]["argv"]
    assert "--filter-mode" not in argv and argv[argv.index("-c") + 1] == "5"


def test_capped_run_is_analysed(tmp_path: Path, monkeypatch, capsys) -> None:
    # The analysis reads the cap from the ncu command and rebuilds the sums (analysis/ncusample.py);
    # the fake writes every kernel, so nothing is carried and the report is the uncapped one.
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "--no-clock-sweep", T)
    assert r.code == 0, r.err
    from nsightwrap.analysis.load import analyze
    from nsightwrap.analysis.ncusample import kernel_cap

    assert kernel_cap(manifest(tmp_path / "run")) == 3
    res = analyze(tmp_path / "run")
    assert res.benchmarks and not any("carried by the median" in n for b in res.benchmarks for n in b.notes)


def test_profile_cost_sets_two_runs_ncu_readings_side_by_side(tmp_path: Path) -> None:
    import shutil

    from benchmarks import profile_cost

    run = Path(__file__).resolve().parent.parent / "fixtures" / "runs" / "h200-sweep"
    same = profile_cost.kernel_drift(run, run)
    assert same is not None and same["instances"] > 0
    for col in ("duration_ns", "base_duration_ns", "counters_duration_ns", "sm_clock_hz"):
        assert same[col]["median"] == same[col]["p10"] == same[col]["p90"] == 1.0 and same[col]["n"] == same["instances"]
    # A run whose duration pass is gone: its kernels keep the counters pass's durations, which
    # the other run's duration pass does not match exactly.
    other = tmp_path / "run"
    shutil.copytree(run, other)
    shutil.rmtree(other / "ncu-duration")
    drift = profile_cost.kernel_drift(other, run)
    assert drift is not None and drift["duration_ns"]["median"] != 1.0
    assert profile_cost.kernel_drift(tmp_path / "missing", run) is None
