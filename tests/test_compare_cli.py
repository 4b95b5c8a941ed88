"""``nsightwrap compare`` end to end (subprocess): inputs, output formats, exit codes, bad input;
and benchmarks/compare_false_alarm.py's ``evaluate`` on synthetic A/A run directories."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from lxml import etree

ROOT = Path(__file__).resolve().parent.parent

# name: (median ns, follows the SM clock). Names carry the characters exporters must escape.
BENCHES: dict[str, tuple[float, bool]] = {
    "gemm_large": (285e3, True),
    "gemm_skinny": (29.6e3, True),
    "mm_small": (12.3e3, True),
    "add": (50e3, False),
}


def write_run(
    run_dir: Path,
    *,
    seed: int,
    scale: dict[str, float] | None = None,
    clock_hz: float = 1.9e9,
    gpu: str = "NVIDIA H200",
    n: int = 40,
    benches: dict[str, tuple[float, bool]] | None = None,
    params: dict[str, Any] | None = None,
    throttle_reasons: list[str] | None = None,
) -> Path:
    """A run directory holding only a plain-pass timer sidecar, shaped like the timer's.

    Samples: 0.5% noise, 5% outliers (x1.3), and a run-to-run offset of 0.5%; compute-bound
    benchmarks run slower at a lower clock (time ~ 1/clock), memory-bound ones do not.
    ``throttle_reasons``: a power record with those NVML reasons (no energy samples).
    """
    rng = np.random.default_rng(seed)
    out = []
    offset = 1 + 0.005 * rng.standard_normal()
    for name, (median, follows_clock) in (benches or BENCHES).items():
        t = median * offset * (scale or {}).get(name, 1.0)
        if follows_clock:
            t *= 1.9e9 / clock_hz
        s = t * (1 + 0.005 * rng.standard_normal(n))
        s[rng.random(n) < 0.05] *= 1.3
        clocks = clock_hz * (1 + 0.003 * rng.standard_normal(n))
        out.append(
            {
                "name": name,
                "params": params or {},
                "nvtx_path": f"nsightwrap:{name}",
                "samples_ns": s.tolist(),
                "median_ns": float(np.median(s)),
                "min_ns": float(s.min()),
                "mean_ns": float(s.mean()),
                "stdev_ns": float(s.std()),
                "iqr_ns": float(np.subtract(*np.percentile(s, [75, 25]))),
                "n": n,
                "sm_clock_hz": clock_hz,
                "clock_source": "nvml",
                "sample_clock_hz": [None if i == 0 else float(c) for i, c in enumerate(clocks)],
                "throttled": 0,
                "method": {"flush_l2": True, "hold_queue": True, "cuda_graph": False, "overhead_ns": 1300.0},
                "flops": None,
                "bytes": None,
                **({"power": {"throttle_reasons": throttle_reasons}} if throttle_reasons is not None else {}),
            }
        )
    doc = {
        "format": "nsightwrap-timer",
        "version": 1,
        "pid": 1000 + seed,
        "device": {"name": gpu, "index": 0, "sm_count": 132, "l2_bytes": 62914560},
        "torch_version": "2.11.0+cu130",
        "benchmarks": out,
    }
    (run_dir / "plain").mkdir(parents=True)
    (run_dir / "plain" / f"timer-{1000 + seed}.json").write_text(json.dumps(doc))
    return run_dir


def nw(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nsightwrap", "compare", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )


def cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    """The same entry point in this process (the subprocess start costs ~1 s a call)."""
    from nsightwrap.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["compare", *map(str, args)])
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("runs")
    weird = {"add<bf16>|x,y": (50e3, False), "gemm_large": (285e3, True), "gone": (10e3, False)}
    return {
        "a": write_run(d / "a", seed=1),
        "a2": write_run(d / "a2", seed=2),
        "slow": write_run(d / "slow", seed=3, scale={"gemm_large": 1.10}),
        # A clock 10% lower for heat: the environment's, not the code's.
        "lowclock": write_run(d / "lowclock", seed=4, clock_hz=1.9e9 / 1.1, throttle_reasons=["sw_thermal"]),
        "other_gpu": write_run(d / "other_gpu", seed=5, gpu="NVIDIA A100-SXM4-80GB"),
        "weird_a": write_run(d / "weird_a", seed=6, benches=weird),
        "weird_b": write_run(
            d / "weird_b",
            seed=7,
            benches={**{k: v for k, v in weird.items() if k != "gone"}, "new": (5e3, True)},
        ),
    }


def test_regression_fails_with_exit_1_and_no_fail_exits_0(runs: dict[str, Path]) -> None:
    r = nw(runs["a"], runs["slow"], "--format", "json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["format"], doc["version"]) == ("nsightwrap-compare", 2)
    verdicts = {b["benchmark"]: (b["verdict"], b["reason"]) for b in doc["benchmarks"]}
    assert verdicts == {
        "gemm_large": ("SLOWER", "regression"),
        "gemm_skinny": ("SAME", "within_threshold"),
        "mm_small": ("SAME", "within_threshold"),
        "add": ("SAME", "within_threshold"),
    }
    assert doc["summary"]["slower"] == ["gemm_large"]
    assert doc["summary"]["counts"] == {"SAME": 3, "FASTER": 0, "SLOWER": 1, "AMBIGUOUS": 0}
    ratio = doc["benchmarks"][0]["ratio"]
    assert ratio["low"] < ratio["estimate"] < ratio["high"]
    assert 1.08 < ratio["estimate"] < 1.12
    assert nw(runs["a"], runs["slow"], "--no-fail", "--format", "json").returncode == 0


def test_a_a_is_same_and_exits_0(runs: dict[str, Path]) -> None:
    r = nw(runs["a"], runs["a2"])
    assert r.returncode == 0, r.stderr
    assert "4 compared: 4 SAME, 0 FASTER, 0 SLOWER, 0 AMBIGUOUS" in r.stdout


def test_lower_clock_is_reported_as_clock_only(
    runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(capsys, runs["a"], runs["lowclock"], "--format", "json")
    assert code == 0, out
    doc = json.loads(out)
    by = {b["benchmark"]: b for b in doc["benchmarks"]}
    for name in ("gemm_large", "gemm_skinny", "mm_small"):
        assert (by[name]["verdict"], by[name]["reason"]) == ("SAME", "clock_only"), by[name]["message"]
        assert "1.90 GHz -> 1.73 GHz" in by[name]["message"]
        assert (by[name]["clock_cause"], by[name]["clock_evidence"]) == (
            "environment", "the current run was held down for heat (sw_thermal)")
        assert by[name]["ratio"]["estimate"] > 1.08
        assert abs(by[name]["cycles_ratio"]["estimate"] - 1) < 0.02
    # memory-bound: time did not move, cycles fell with the clock
    assert (by["add"]["verdict"], by["add"]["reason"]) == ("SAME", "cycles_differ")


def test_markdown_escapes_names_and_lists_added_removed(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "cmp.md"
    code, _, err = cli(capsys, runs["weird_a"], runs["weird_b"], "--format", "md", "-o", out)
    assert code == 0, err
    md = out.read_text()
    assert md.startswith("### nsightwrap compare: no regression")
    assert "| add&lt;bf16&gt;\\|x,y | SAME |" in md
    assert "add<bf16>" not in md
    assert "Added (only in current): new" in md
    assert "Removed (only in baseline): gone" in md
    assert "wrote " in err


def test_junit_parses_back_with_failures_and_skips(runs: dict[str, Path], tmp_path: Path) -> None:
    noisy = write_run(tmp_path / "noisy", seed=9, benches={"gemm_large": (285e3, True)}, n=4)
    out = tmp_path / "junit.xml"
    r = nw(runs["a"], runs["slow"], "--format", "junit", "-o", out)
    assert r.returncode == 1
    suite = etree.parse(str(out)).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "1", "0")
    failed = suite.findall("testcase[failure]")
    assert [c.get("name") for c in failed] == ["gemm_large"]
    assert failed[0].find("failure").get("type") == "regression"  # type: ignore[union-attr]

    r = nw(runs["a"], noisy, "--format", "junit")
    assert r.returncode == 0
    suite = etree.fromstring(r.stdout.encode()).find("testsuite")
    assert suite is not None
    skipped = {c.get("name"): c.find("skipped").get("message") for c in suite.findall("testcase[skipped]")}  # type: ignore[union-attr]
    assert str(skipped["gemm_large"]).startswith("too_few_samples: 40 baseline and 4 current samples")
    assert skipped["add"] == "removed: not in the current run"


def test_table_goes_to_a_file(
    runs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "table.txt"
    code, _, _ = cli(capsys, runs["a"], runs["slow"], "-o", out, "--threshold", "15")
    assert code == 0  # +10% is below a 15% threshold
    text = out.read_text()
    assert "gemm_large" in text and "within_threshold" in text and "threshold 15%" in text
    assert "\x1b[" not in text


def test_params_match_in_any_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one = {"mm": (12.3e3, True)}
    a = write_run(tmp_path / "a", seed=1, benches=one, params={"m": 64, "n": 4096})
    b = write_run(tmp_path / "b", seed=2, benches=one, params={"n": 4096, "m": 64})
    doc = json.loads(cli(capsys, a, b, "--format", "json")[1])
    assert [x["benchmark"] for x in doc["benchmarks"]] == ["mm[m=64,n=4096]"]
    assert doc["added"] == [] and doc["removed"] == []



def test_sweep_names_as_the_timer_writes_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The timer names a sweep point `mm[n=4096,m=64]` and records its params too: the key holds
    each parameter once, sorted, whatever order each side's sweep declared."""
    a = write_run(tmp_path / "a", seed=1, benches={"mm[m=64,n=4096]": (12.3e3, True)}, params={"m": 64, "n": 4096})
    b = write_run(tmp_path / "b", seed=2, benches={"mm[n=4096,m=64]": (12.3e3, True)}, params={"n": 4096, "m": 64})
    doc = json.loads(cli(capsys, a, b, "--format", "json")[1])
    assert [x["benchmark"] for x in doc["benchmarks"]] == ["mm[m=64,n=4096]"]
    assert doc["added"] == [] and doc["removed"] == []


def report_json(path: Path, seed: int, scale: float, iters: int, version: int = 1) -> Path:
    rng = np.random.default_rng(seed)
    t = 285e3 * scale * (1 + 0.003 * rng.standard_normal(iters))
    doc = {
        "format": "nsightwrap-report",
        "version": version,
        "environment": {"gpu_name": "NVIDIA H200", "driver": "580.159"},
        "settings": {"tolerance": 0.1, "clock_ref": "timer"},
        "benchmarks": [
            {
                "name": "gemm_large",
                "params": {},
                "timer": {
                    "samples_ns": t.tolist(),
                    "median_ns": float(np.median(t)),
                    "sm_clock_hz": 1.6e9,
                    "sample_clock_hz": None,
                },
                "ncu": {
                    "iterations_ns": t.tolist(),
                    "iterations_cycles": (t * 1.58).tolist(),
                    "normalized_ns": None,
                },
                "nsys": {"iterations_ns": t.tolist(), "busy_ns": t.tolist(), "span_ns": t.tolist()},
                "ratio": 1.0,
                "verdict": "ok",
                "causes": [],
            },
            {
                "name": "ncu_only",
                "params": {},
                "timer": None,
                "ncu": None,
                "nsys": None,
                "ratio": None,
                "verdict": "no_data",
                "causes": [],
            },
        ],
    }
    path.write_text(json.dumps(doc))
    return path


def test_report_json_by_each_metric(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = report_json(tmp_path / "base.json", 1, 1.0, 8)
    cur = report_json(tmp_path / "cur.json", 2, 1.2, 8)
    for metric, reason in (
        ("timer", "regression"),
        ("ncu", "regression"),
        ("nsys", "regression_clock_unknown"),
    ):
        code, out, err = cli(capsys, base, cur, "--metric", metric, "--format", "json")
        assert code == 1, (metric, err)
        (b,) = json.loads(out)["benchmarks"]
        assert (b["verdict"], b["reason"]) == ("SLOWER", reason), metric
    few = report_json(tmp_path / "few.json", 3, 1.2, 3)  # ncu's default 3 iterations
    doc = json.loads(cli(capsys, base, few, "--metric", "ncu", "--format", "json")[1])
    assert doc["benchmarks"][0]["reason"] == "too_few_samples"


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda d: d / "missing", "no such file or directory"),
        (lambda d: _write(d / "bad.json", "{not json"), "not valid JSON"),
        (
            lambda d: _write(d / "v9.json", json.dumps({"format": "nsightwrap-report", "version": 9})),
            "version 9",
        ),
        (lambda d: _write(d / "other.json", json.dumps({"format": "something"})), "not an nsightwrap report"),
        (lambda d: (d / "empty").mkdir() or d / "empty", "no timer sidecar"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    runs: dict[str, Path], tmp_path: Path, make: Any, needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, runs["a"], make(tmp_path))
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1


def test_sidecar_missing_field_names_it(
    tmp_path: Path, runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_run(tmp_path / "r", seed=1)
    (sidecar,) = (run / "plain").glob("timer-*.json")
    doc = json.loads(sidecar.read_text())
    del doc["benchmarks"][1]["samples_ns"]
    sidecar.write_text(json.dumps(doc))
    code, _, err = cli(capsys, runs["a"], run)
    assert code == 2
    assert "benchmark 1 ('gemm_skinny'): missing field 'samples_ns'" in err


def test_different_gpus_are_refused_unless_allowed(runs: dict[str, Path]) -> None:
    r = nw(runs["a"], runs["other_gpu"])
    assert r.returncode == 2
    assert "'NVIDIA H200'" in r.stderr and "--allow-different-gpu" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert nw(runs["a"], runs["other_gpu"], "--allow-different-gpu").returncode == 0


def _write(p: Path, text: str) -> Path:
    p.write_text(text)
    return p


# ---------------------------------------------------------------- false-alarm evaluation


def test_false_alarm_evaluate_on_synthetic_runs(tmp_path: Path) -> None:
    # Six A runs (one at a 10% lower clock) and two runs per injected slowdown.
    clocks = [1.9e9, 1.88e9, 1.92e9, 1.9e9 * 0.9, 1.9e9, 1.89e9]
    for i, clk in enumerate(clocks):
        # The slow-clock run was held down for heat: the clock change is the environment's.
        write_run(tmp_path / f"aa-{i:02d}", seed=10 + i, clock_hz=clk, throttle_reasons=["sw_thermal"] if i == 3 else [])
    for s in ("1.05", "1.10"):
        for j in range(2):
            scale = {k: float(s) for k in ("gemm_large", "gemm_skinny", "mm_small")}
            write_run(tmp_path / f"scale{s}-{j:02d}", seed=20 + j + (5 if s == "1.10" else 0), scale=scale)
    out = tmp_path / "eval.json"
    r = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "compare_false_alarm.py"),
            "evaluate",
            str(tmp_path),
            "--json",
            str(out),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    res = json.loads(out.read_text())
    assert res["aa"]["pairs"] == 5
    assert res["aa"]["comparisons"] == 20
    assert res["aa"]["false_alarms"] == 0
    assert (
        res["aa"]["per_benchmark"]["gemm_large"]["reasons"]["clock_only"] == 2
    )  # into and out of the slow-clock run
    ten = res["scaled"]["1.10"]
    # 3 scaled benchmarks x 2 runs x 6 A runs; against the slow-clock A run (aa-03) the +10% of
    # cycles is hidden by the 10% clock difference: time is unchanged, reported as cycles_differ.
    assert (ten["comparisons"], ten["detected"], ten["control_false_alarms"]) == (36, 30, 0)
    assert ten["per_benchmark"]["gemm_large"]["reasons"] == {"cycles_differ": 2, "regression": 10}
    assert ten["per_benchmark"]["add"]["SAME"] == 12
    assert "**0 false alarms**" in r.stdout
    assert "Injected slowdown x1.10" in r.stdout


def test_report_json_written_by_the_report_exporter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Reports made by analyze + write_report_json compare like their run directories."""
    import time

    from nsightwrap.analysis.load import analyze
    from nsightwrap.export.jsonio import write_report_json
    from nsightwrap.run.rundir import Manifest, RunLayout, write_manifest

    paths = []
    for name, seed, scale in (("a", 1, 1.0), ("b", 2, 1.1)):
        run = write_run(tmp_path / name, seed=seed, scale={"gemm_large": scale})
        now = time.time()
        manifest = Manifest(
            status="ok", target={"argv": ["aa_bench.py"]}, passes=(), tools={}, gpu={"name": "NVIDIA H200"},
            git=None, settings={}, sampler=None, start=now, end=now, nsightwrap_version="0.1.0", exit_code=0,
        )  # fmt: skip
        write_manifest(RunLayout(run), manifest)
        paths.append(tmp_path / f"{name}.json")
        write_report_json(analyze(run), paths[-1])
    code, out, _ = cli(capsys, *paths, "--format", "json")
    assert code == 1
    doc = json.loads(out)
    assert doc["baseline"]["gpu"] == "NVIDIA H200"
    assert {b["benchmark"]: b["verdict"] for b in doc["benchmarks"]} == {
        "gemm_large": "SLOWER", "gemm_skinny": "SAME", "mm_small": "SAME", "add": "SAME",
    }  # fmt: skip
    from_dirs = json.loads(cli(capsys, tmp_path / "a", tmp_path / "b", "--format", "json")[1])
    # The report JSON holds the samples to 0.1 ns (docs/report-json.md, version 4): a bound of
    # an interval may move by a sample's rounding (these samples are a few us: 1e-5 of one).
    assert [b["verdict"] for b in from_dirs["benchmarks"]] == [b["verdict"] for b in doc["benchmarks"]]
    for d, r in zip(from_dirs["benchmarks"], doc["benchmarks"], strict=True):
        assert d["ratio"] == pytest.approx(r["ratio"], rel=1e-4)
    code, _, err = cli(capsys, tmp_path / "a", tmp_path / "b", "--metric", "ncu")
    assert code == 2 and "no benchmark has ncu timings" in err


def test_reference_report_json_compares_by_ncu_and_nsys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A real report (H200 reference captures): copy_1g has no kernels (a memcpy) and
    softmax_mlp no ncu kernels; those are left out of the metric that has nothing, not errors."""
    from refrun import build_run_dir

    from nsightwrap.analysis.load import analyze
    from nsightwrap.export.jsonio import write_report_json

    result = analyze(build_run_dir(tmp_path / "run"))
    report, summary = tmp_path / "ref.json", tmp_path / "summary.json"
    write_report_json(result, report, detail=True)
    write_report_json(result, summary)  # the default: no per-iteration or per-kernel rows
    for metric, expected in (
        ("ncu", {"mm_small", "mm_skinny", "mm_large"}),
        ("nsys", {"mm_small", "mm_skinny", "mm_large", "softmax_mlp"}),
        ("timer", {"mm_small", "mm_skinny", "mm_large", "copy_1g", "softmax_mlp"}),
    ):
        code, out, err = cli(capsys, report, report, "--metric", metric, "--format", "json", "--no-fail")
        assert code == 0, err
        doc = json.loads(out)
        assert {b["benchmark"] for b in doc["benchmarks"]} == expected, metric
        # the same report against itself: nothing may be called slower
        assert all(b["verdict"] != "SLOWER" for b in doc["benchmarks"])
        if metric == "nsys":  # the summary has no nsys iterations: one line naming --detail
            code, _, err = cli(capsys, summary, report, "--metric", metric, "--no-fail")
            assert code == 2 and "without --detail" in err and "--detail" in err.split("(", 1)[-1]
            continue
        # The default report JSON against the detailed one: the same verdicts, reasons and
        # elasticities (the summary keeps the samples compare reads, the timer's to 0.1 ns, and
        # the kernels' elasticity); by ncu, the same figures to the last digit.
        code, out2, err = cli(capsys, summary, report, "--metric", metric, "--format", "json", "--no-fail")
        assert code == 0, err
        same = json.loads(out2)
        if metric == "ncu":
            assert same["benchmarks"] == doc["benchmarks"] and same["energy"] == doc["energy"], metric
        keys = ("benchmark", "verdict", "reason", "elasticity", "elasticity_source")
        assert [[b.get(k) for k in keys] for b in same["benchmarks"]] == [[b.get(k) for k in keys] for b in doc["benchmarks"]]
        for s, d in zip(same["benchmarks"], doc["benchmarks"], strict=True):
            assert (s["ratio"] is None) == (d["ratio"] is None), metric
            if d["ratio"] is not None:
                assert s["ratio"]["estimate"] == pytest.approx(d["ratio"]["estimate"], rel=1e-6), metric
        assert [e["verdict"] for e in same["energy"]] == [e["verdict"] for e in doc["energy"]]


def test_probe_clock_anchors_the_per_sample_clocks(tmp_path: Path) -> None:
    """NVML's per-sample readings (1.98 GHz) miss the throttling that the on-GPU probe measured
    (1.6 GHz, as for a GEMM on the H200): cycles are counted at the probe's level."""
    import json as _json

    from nsightwrap.compare.sides import load_side

    run = write_run(tmp_path / "r", seed=3, clock_hz=1.98e9, benches={"gemm_large": (285e3, True)})
    sidecar = next((run / "plain").glob("timer-*.json"))
    doc = _json.loads(sidecar.read_text())
    entry = doc["benchmarks"][0]
    nvml = [c for c in entry["sample_clock_hz"] if c is not None]
    entry["sm_clock_hz"], entry["clock_source"] = 1.6e9, "probe"
    sidecar.write_text(_json.dumps(doc))
    (bench,) = load_side(run).benchmarks
    assert bench.clock_hz is not None and abs(bench.clock_hz / 1.6e9 - 1) < 1e-3
    assert bench.cycles is not None
    clocks = [c / v * 1e9 for c, v in zip(bench.cycles, bench.values_ns, strict=True)]
    # NVML's relative spread is kept: the per-sample clocks are NVML's scaled by 1.6 / median(NVML)
    spread = (max(clocks) - min(clocks)) / 1.6e9
    assert abs(spread - (max(nvml) - min(nvml)) / 1.98e9) < 2e-3
    # and without the probe the same samples stay at NVML's level
    entry["clock_source"] = "nvml"
    sidecar.write_text(_json.dumps(doc))
    (bench,) = load_side(run).benchmarks
    assert bench.clock_hz is not None and abs(bench.clock_hz / 1.98e9 - 1) < 5e-3
