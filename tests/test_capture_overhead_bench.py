"""benchmarks/capture_overhead.py's verdicts: on the recorded H200 rounds of
fixtures/captures/capture/ and on in-process pairs written here."""

from __future__ import annotations

import itertools
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks" / "capture_overhead.py"
FINAL = ROOT / "fixtures" / "captures" / "capture" / "capture_overhead_final.json"


def _analyze(path: Path) -> dict[tuple[str, str], list[str]]:
    p = subprocess.run([sys.executable, str(BENCH), "--analyze", str(path)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split()[:3] == ["mode", "kernel", "n"]
    return {(ln.split()[0], ln.split()[1]): ln.split() for ln in lines[1:]}


def _bench_over_standins(tmp_path: Path, *args: str, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    """benchmarks/capture_overhead.py in a real subprocess over tests/capture_standins."""
    import os

    from capture_helpers import standins

    env = {k: v for k, v in os.environ.items() if not k.startswith("NSIGHTWRAP_")}
    env["PYTHONPATH"] = str(standins(tmp_path))
    return subprocess.run([sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=tmp_path)  # fmt: skip


def _exact_p(a: list[float], b: list[float]) -> float:
    obs = abs(math.log(statistics.median(b) / statistics.median(a)))
    pool = a + b
    ds = []
    for idx in itertools.combinations(range(len(pool)), len(a)):
        x = [pool[i] for i in idx]
        y = [pool[i] for i in range(len(pool)) if i not in idx]
        ds.append(abs(math.log(statistics.median(y) / statistics.median(x))))
    return sum(d >= obs - 1e-12 for d in ds) / len(ds)


def test_recorded_h200_rounds_cannot_resolve_one_percent_below_20us() -> None:
    doc = json.loads(FINAL.read_text())
    rows = _analyze(FINAL)
    add = rows[("process", "add_4k")]
    a = [r["add_4k"] for r in doc["without"]]
    b = [r["add_4k"] for r in doc["with"]]
    assert add[3] == f"{statistics.median(b) / statistics.median(a) - 1:+.2%}" == "-5.82%"
    assert float(add[6]) == round(_exact_p(a, b), 2) and float(add[6]) > 0.05
    assert add[7] == "unresolved"
    assert rows[("process", "sleep_1ms")][7] == "within" and rows[("process", "copy_1g")][7] == "within"


def test_inprocess_pairs_give_a_paired_verdict(tmp_path: Path) -> None:
    bare = [1000.0 + 7 * (i % 5) for i in range(16)]
    doc = {"inprocess": {"pairs": 16, "rep_ms": 100.0,
                         "without": {"slow": bare, "same": bare, "noisy": bare[:4]},
                         "with": {"slow": [x * 1.02 for x in bare], "same": [x * (1 + (-1) ** i * 1e-4) for i, x in enumerate(bare)],
                                  "noisy": [bare[0] * 0.9, bare[1] * 1.1, bare[2] * 0.95, bare[3] * 1.05]}}}  # fmt: skip
    f = tmp_path / "pairs.json"
    f.write_text(json.dumps(doc))
    rows = _analyze(f)
    slow, same, noisy = rows[("inprocess", "slow")], rows[("inprocess", "same")], rows[("inprocess", "noisy")]
    assert slow[3] == "+2.00%" and slow[7] == "outside" and float(slow[6]) < 0.001  # 16 of 16 slower
    assert same[7] == "within" and float(same[6]) == 1.0
    assert noisy[7] == "unresolved" and "for +-1%" in " ".join(noisy)


def test_inprocess_verdict_sees_a_side_that_lands_in_the_other_mode_more_often(tmp_path: Path) -> None:
    # A bimodal kernel (the 2 us add's do_bench median flips between two values): most pairs
    # tie, so the median of the pairs' ratios is exactly 1, yet the layer's side lands in the
    # low mode 12 times out of 20 and the other side 8: their medians differ by 12.5%.
    lo, hi = 4288.0, 4900.0
    pairs = [(lo, lo)] * 6 + [(hi, hi)] * 6 + [(lo, hi)] * 6 + [(hi, lo)] * 2  # (with, without)
    doc = {"inprocess": {"pairs": 20, "rep_ms": 100.0, "without": {"add": [b for _, b in pairs]},
                         "with": {"add": [w for w, _ in pairs]}}}  # fmt: skip
    f = tmp_path / "bimodal.json"
    f.write_text(json.dumps(doc))
    row = _analyze(f)[("inprocess", "add")]
    assert statistics.median([w / b for w, b in pairs]) == 1.0
    assert row[3] == f"{lo / hi - 1:+.2%}" == "-12.49%"
    assert row[7] != "within"


def test_recorded_h200_runs_of_the_evening_the_gemm_within_and_the_add_not() -> None:
    """The bisect pair (the GEMM with the layer's rewrites spaced and held until exit) and the
    450-pair runs of the add: the numbers docs/capture.md reports."""
    for name in ("gemm_spaced", "gemm_exit"):
        rows = _analyze(SPACED / f"capture_overhead_{name}.json")
        assert {rows[(m, "gemm_64x4096x4096")][7] for m in ("mean", "low-mode", "high-mode", "mode-mix")} == {"within"}
    exit_rows = _analyze(SPACED / "capture_overhead_gemm_exit.json")
    assert exit_rows[("inprocess", "gemm_64x4096x4096")][3] == "-2.27%"
    assert " ".join(exit_rows[("mode-mix", "gemm_64x4096x4096")]).endswith("166 of 300 with the layer, 138 without)")
    add_exit = _analyze(SPACED / "capture_overhead_add_450_exit.json")
    assert add_exit[("inprocess", "add_4k")][3] == "-10.88%" and add_exit[("mean", "add_4k")][7] == "outside"
    doc = json.loads((SPACED / "capture_overhead_add_450_exit.json").read_text())["inprocess"]
    w, b = doc["with"]["add_4k"], doc["without"]["add_4k"]
    assert doc["pairs"] == 150 and not any(v for flags in doc["rewrote"]["with"].values() for v in flags)
    assert sum(v < 3900 for v in w[:150]) == 98 and min(b) > 4150  # a mode only the layer's calls reach
    spaced = json.loads((SPACED / "capture_overhead_add_450.json").read_text())["inprocess"]
    assert sum(v > 5400 for v in spaced["with"]["add_4k"]) == 7 and max(spaced["without"]["add_4k"]) < 5200
    assert _analyze(SPACED / "capture_overhead_add_450.json")[("mean", "add_4k")][7] == "differs"


def test_bimodal_pairs_are_taken_apart_into_modes_and_mix(tmp_path: Path) -> None:
    # Two processes of 20 pairs; in each, the layer's calls land in the low mode (4300) 14 times
    # and the others' 8 times, and the layer's high mode is 0.5% higher (5025 against 5000).
    lo, hi = 4300.0, 5000.0
    bare = ([lo] * 8 + [hi] * 12) * 2
    layer = ([lo] * 14 + [hi * 1.005] * 6) * 2
    normal = [1000.0 + 10 * math.sin(i * 1.7) + 5 * math.cos(i * 0.3) for i in range(40)]  # one mode
    doc = {"inprocess": {"pairs": 20, "processes": 2, "rep_ms": 100.0, "without": {"add": bare, "one": normal},
                         "with": {"add": layer, "one": list(reversed(normal))}}}  # fmt: skip
    f = tmp_path / "modes.json"
    f.write_text(json.dumps(doc))
    rows = _analyze(f)
    assert rows[("mean", "add")][3] == f"{statistics.fmean(layer) / statistics.fmean(bare) - 1:+.2%}"
    assert rows[("mean", "add")][6] == "-"  # the sign test belongs to the medians' row
    assert rows[("low-mode", "add")][3] == "+0.00%" and rows[("low-mode", "add")][7] == "within"
    assert rows[("high-mode", "add")][3] == "+0.50%" and rows[("high-mode", "add")][7] == "within"
    pooled = statistics.median(bare + layer)  # 22 low and 18 high values: the low mode
    assert pooled == lo
    shift = (14 - 8) / 20 * (lo - hi) / pooled  # 30 points more in a mode 16% lower
    assert rows[("mode-mix", "add")][3] == f"{shift:+.2%}" == "-4.88%"
    assert rows[("mode-mix", "add")][7] != "within"
    assert " ".join(rows[("mode-mix", "add")]).endswith("(in the low mode: 28 of 40 with the layer, 16 without)")
    # One mode: the medians and the mean only.
    assert ("mean", "one") in rows and not any(k[1] == "one" and k[0].endswith(("mode", "mix")) for k in rows)


SPACED = ROOT / "fixtures" / "captures" / "capture"


def test_recorded_h200_pairs_before_and_after_the_sidecar_spacing() -> None:
    """The 2 us add's 360 pairs before the layer spaced its sidecar rewrites and after: the mode
    shares moved before (the layer's calls landed low 202 times, the others' 161), not after;
    inside each mode the two sides agree to one event tick either way."""
    before, after = _analyze(SPACED / "capture_overhead_add_pairs.json"), _analyze(SPACED / "capture_overhead_add_spaced.json")
    assert before[("inprocess", "add_4k")][7] == "outside" and before[("mode-mix", "add_4k")][7] == "differs"
    assert after[("mode-mix", "add_4k")][7] != "differs" and after[("mode-mix", "add_4k")][3] == "+0.04%"
    for rows in (before, after):
        assert rows[("low-mode", "add_4k")][7] == rows[("high-mode", "add_4k")][7] == "within"
    assert " ".join(before[("mode-mix", "add_4k")]).endswith("202 of 360 with the layer, 161 without)")
    assert " ".join(after[("mode-mix", "add_4k")]).endswith("175 of 360 with the layer, 176 without)")
    doc = json.loads((SPACED / "capture_overhead_add_spaced.json").read_text())["inprocess"]
    w, b = doc["with"]["add_4k"], doc["without"]["add_4k"]
    assert after[("mean", "add_4k")][3] == f"{statistics.fmean(w) / statistics.fmean(b) - 1:+.2%}" == "-0.69%"
    # The host time before each call is the same on both sides now (no rewrite between calls).
    gaps = doc["gap_s"]
    assert abs(statistics.median(gaps["with"]["add_4k"]) - statistics.median(gaps["without"]["add_4k"])) < 50e-6
    rest = _analyze(SPACED / "capture_overhead_rest_spaced.json")
    for k in ("sleep_10us", "sleep_100us", "sleep_1ms", "gemm_64x4096x4096", "copy_1g"):
        assert rest[("mean", k)][7] == "within", rest[("mean", k)]
    assert rest[("inprocess", "gemm_64x4096x4096")][7] == "differs"  # -2.25% at the medians
    assert rest[("inprocess", "sleep_10us")][7] == "unresolved" and rest[("mode-mix", "sleep_10us")][7] == "within"


def test_both_modes_end_to_end_over_the_simulated_gpu(tmp_path: Path) -> None:
    """The benchmark itself, in real subprocesses with the real layer, over the stand-in torch and
    triton of tests/capture_standins (a simulated GPU: the layer cannot change its timeline)."""
    out = tmp_path / "overhead.json"
    p = _bench_over_standins(
        tmp_path, "--rounds", "2", "--pairs", "3", "--processes", "2", "--rep", "1", "--json", str(out)
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert len(doc["without"]) == len(doc["with"]) == 2 and doc["inprocess"]["processes"] == 2
    assert all(len(v) == 6 for v in doc["inprocess"]["with"].values())  # 3 pairs in each of 2 processes
    gaps = doc["inprocess"]["gap_s"]  # host time before each call, per side
    assert all(len(v) == 6 and min(v) >= 0 for side in gaps.values() for v in side.values())
    rewrote = doc["inprocess"]["rewrote"]  # the layer's sidecar rewrites, inside its own calls only
    assert not any(v for flags in rewrote["without"].values() for v in flags)
    assert any(v for flags in rewrote["with"].values() for v in flags)
    assert "sidecar rewrites inside the layer's calls of add_4k: " in p.stdout
    # The stand-in's sleep spins at 1 GHz: the worker's 10 us at 1.98 GHz is 19.8 us there.
    assert doc["with"][0]["sleep_10us"] == doc["without"][0]["sleep_10us"] == pytest.approx(19_800.0)
    rows = [r for r in doc["summary"]]
    # 6 process rows, 6 in-process rows of the medians and their 6 "mean" rows (no p-value); the
    # simulated GPU gives every call the same value, so no kernel is bimodal.
    assert [r["mode"] for r in rows] == ["process"] * 6 + ["inprocess", "mean"] * 6
    assert {r["verdict"] for r in rows} == {"within"}
    assert [r["p_value"] for r in rows if r["mode"] != "mean"] == [1.0] * 12
    assert {r["p_value"] for r in rows if r["mode"] == "mean"} == {None}


def test_rewrites_at_exit_only_keep_every_value_and_rewrite_nothing_between_calls(tmp_path: Path) -> None:
    out = tmp_path / "exit.json"
    p = _bench_over_standins(tmp_path, "--mode", "inprocess", "--only", "add_4k,sleep_10us", "--pairs", "3",
                             "--processes", "1", "--rep", "1", "--rewrites", "exit", "--json", str(out))  # fmt: skip
    # The benchmark checks that the sidecar written at exit holds every value the worker got.
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())["inprocess"]
    assert doc["rewrites"] == "exit"
    assert [len(v) for v in doc["rewrote"]["with"].values()] == [3, 3]  # 3 pairs: 3 calls a side
    assert not any(v for side in doc["rewrote"].values() for flags in side.values() for v in flags)
    assert "of add_4k: 0 of 3 (rewrites exit)" in p.stdout


def test_only_times_the_kernels_named(tmp_path: Path) -> None:
    out = tmp_path / "only.json"
    p = _bench_over_standins(tmp_path, "--mode", "inprocess", "--only", "add_4k", "--pairs", "2",
                             "--processes", "1", "--rep", "1", "--json", str(out))  # fmt: skip
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert list(doc["inprocess"]["with"]) == list(doc["inprocess"]["without"]) == ["add_4k"]
    assert [(r["mode"], r["kernel"]) for r in doc["summary"]] == [("inprocess", "add_4k"), ("mean", "add_4k")]


def _bench_module():
    from bench_modules import load_benchmark

    return load_benchmark("capture_overhead")


def test_split_modes_finds_two_modes_and_only_two_modes() -> None:
    co = _bench_module()
    normal = [statistics.NormalDist().inv_cdf((i + 0.5) / 60) for i in range(60)]  # evenly spread quantiles
    low, high = [4300 + 20 * z for z in normal[::2]], [5000 + 20 * z for z in normal[1::2]]
    t = co.split_modes(low + high)
    assert t is not None and max(low) < t <= min(high)  # the low mode is what lies below t
    assert co.split_modes([1000.0] * 40) is None  # no spread at all
    assert co.split_modes([1000 + 30 * z for z in normal]) is None  # one mode: a split explains 64%
    lopsided = [4300 + 20 * z for z in normal[:4]] + [5000 + 20 * z for z in normal[4:]]
    assert co.split_modes(lopsided) is None  # 4 of 60 low: too few of them left in the central 95%
    assert co.split_modes((low + high)[::8]) is None  # too few values to tell


def _sides(path: Path) -> dict[tuple[int, str], list[str]]:
    p = subprocess.run([sys.executable, str(BENCH), "--analyze", str(path)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["process", "kernel", "side", "n", "median", "mean", "host", "ms", "fast"]
    return {(int(ln.split()[0]), ln.split()[2]): ln.split() for ln in lines[1:] if ln.split()[0].isdigit()}


def test_recorded_h200_sides_the_fast_mode_comes_with_the_event_hooks() -> None:
    """The two recorded --mode sides runs of docs/capture.md: calls of the add below every call
    made without the layer ("fast") only where triton's loop ran with the layer's Event hooks in."""
    before = _sides(SPACED / "capture_sides_before.json")
    fast = {side: [int(before[(p, side)][-1]) for p in range(5)] for side in ("with", "without", "with-bare-events", "hooks-only")}
    assert fast == {"with": [0, 0, 0, 1, 0], "without": [0] * 5, "with-bare-events": [0] * 5, "hooks-only": [1, 5, 16, 1, 5]}
    assert before[(0, "with")][3:8] == ["90", "4160.0", "4407.6", "113.57", "0"]
    after = _sides(SPACED / "capture_sides_after.json")
    assert [int(after[(p, "with")][-1]) for p in range(4)] == [0, 0, 0, 0]
    assert [int(after[(p, "hooks-only")][-1]) for p in range(4)] == [12, 0, 2, 3]
    # The hooks' host time: every process's hooked calls take over 3 ms longer than triton's own.
    for doc, procs in ((before, 5), (after, 4)):
        for p in range(procs):
            assert float(doc[(p, "hooks-only")][6]) - float(doc[(p, "without")][6]) > 3.0
            assert abs(float(doc[(p, "with")][6]) - float(doc[(p, "without")][6])) < (5.5 if doc is before else 1.0)


def test_recorded_h200_pairs_after_the_change_within_by_every_resolved_part() -> None:
    rows = _analyze(SPACED / "capture_overhead_add_after_900.json")
    assert {rows[(m, "add_4k")][7] for m in ("mean", "low-mode", "high-mode", "mode-mix")} == {"within"}
    assert rows[("mean", "add_4k")][3:6] == ["+0.18%", "[-0.44%,", "+0.81%]"]
    assert rows[("inprocess", "add_4k")][7] == "unresolved"  # the sides' medians sit on the mode jump
    assert " ".join(rows[("mode-mix", "add_4k")]).endswith("439 of 900 with the layer, 448 without)")
    rest = _analyze(SPACED / "capture_overhead_rest_after.json")
    for k in ("sleep_10us", "sleep_100us", "sleep_1ms", "gemm_64x4096x4096", "copy_1g"):
        assert rest[("mean", k)][7] == "within", k
    for k in ("sleep_100us", "sleep_1ms", "copy_1g"):
        assert rest[("inprocess", k)][7] == "within", k
    doc = json.loads((SPACED / "capture_overhead_add_after_900.json").read_text())["inprocess"]
    per = doc["pairs"]
    for p in range(doc["processes"]):  # no call of the layer's below every call without it
        w, b = doc["with"]["add_4k"][p * per : (p + 1) * per], doc["without"]["add_4k"][p * per : (p + 1) * per]
        assert min(w) >= min(b)


def test_williams_rows_balance_every_ordered_pair() -> None:
    from collections import Counter

    mod = _bench_module()
    for k in (2, 3, 4, 5):
        rows = mod.williams_rows(k)
        assert all(sorted(r) == list(range(k)) for r in rows)
        pairs = Counter((r[i], r[i + 1]) for r in rows for i in range(k - 1))
        assert len(pairs) == k * (k - 1) and len(set(pairs.values())) == 1, (k, pairs)


def test_sides_mode_end_to_end_over_the_simulated_gpu(tmp_path: Path) -> None:
    out = tmp_path / "sides.json"
    p = _bench_over_standins(tmp_path, "--mode", "sides", "--only", "add_4k", "--calls", "6",
                             "--processes", "2", "--rep", "1", "--json", str(out))  # fmt: skip
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())["sides"]
    calls = doc["calls"]
    assert len(calls) == 2 * 6 * 4 and {c["process"] for c in calls} == {0, 1}
    assert {s: sum(c["side"] == s for c in calls) for s in doc["sides"]} == dict.fromkeys(doc["sides"], 12)
    # The simulated GPU gives every call the same timeline, whichever way do_bench is called.
    meds = [c["median_ns"] for c in calls]
    assert max(meds) - min(meds) < 1e-6 * max(meds) and all(len(c["quarters_ns"]) == 4 for c in calls)
    # Inside each row of the Williams design every side comes right after every other once.
    first = [c for c in calls if c["process"] == 0][:16]
    assert len({(a["side"], b["side"]) for a, b in zip(first[:-1], first[1:], strict=True) if a["side"] != b["side"]}) == 12
    assert "fast" in p.stdout.splitlines()[2] and "hooks-only" in p.stdout
    bad = _bench_over_standins(tmp_path, "--mode", "sides", "--sides", "with,nope", timeout=60)
    assert bad.returncode == 2 and "unknown side(s) nope" in bad.stderr
