"""The verdict of every benchmark of every shipped run (fixtures/runs/* and the causes run), in
the vocabulary ok / explained / flagged / unexplained / no_timer / no_ncu / no_data, and the
causes behind it in their order: error parts first for flagged, physical parts for explained."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from nsightwrap.analysis.gap import ERRORS, PHYSICAL, causes_from_gap, judge
from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import CauseCode, Gap, GapPart, RunResult, Verdict
from nsightwrap.cli.report_cmd import STRICT_PASS
from nsightwrap.export.jsonio import report_from_dict, report_to_dict

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "fixtures" / "runs"
CAUSES = ROOT / "fixtures" / "captures" / "causes" / "run"

#: (verdict, cause codes in order) of every benchmark, by run.
EXPECTED: dict[str, dict[str, tuple[str, list[str]]]] = {
    "h200-blog": {
        # do_bench's event cost on a 16 us GEMM is 20% of the timing.
        "blog_do_bench.py:36 do_bench_cuda #1": ("flagged", ["front_end"]),
        # Outside the tolerance only by do_bench's dirty zero-flush: the script chose it.
        "blog_do_bench.py:36 do_bench_cuda #2": ("explained", ["cache_state"]),
        "blog_do_bench.py:36 do_bench_cuda #3": ("ok", []),
        "blog_do_bench.py:58 do_bench #1": ("flagged", ["launch_overhead", "front_end", "cache_state"]),
        "blog_do_bench.py:58 do_bench #2": ("explained", ["cache_state"]),
        "blog_do_bench.py:58 do_bench #3": ("ok", []),
    },
    "h200-clock-sweep": {"add_4k": ("ok", []), "add_16m": ("ok", []), "mm_square": ("ok", [])},
    "h200-example": {
        "mm_large": ("ok", []),
        "mm_skinny": ("ok", []),
        "mm_small": ("ok", []),
        "add_small": ("flagged", ["front_end"]),
        "copy_1g": ("explained", ["non_kernel_work"]),
        "softmax_mlp": ("ok", []),
        "two_streams": ("ok", []),
    },
    "h200-mixed": {
        # The first timed window of the process (a 159 ms window: module load and handle creation
        # before the GEMM): the one-off cost fills it, and nothing else is over the tolerance.
        "mixed.py:16 cuda_events #1": ("flagged", ["warm_up"]),
        # 80 elementwise launches per window on a warm L2 against ncu's clean, serialized ones: ncu's
        # front end per launch (1.09 us, measured on the run's shortest kernels) is ncu's own where the
        # plain window never held it; the warm L2 saved 1.08 us per 4.2 MB kernel, within the adds'
        # DRAM bytes at the peak bandwidth (0.87 us) plus one DRAM latency (0.34 us) each.
        "mixed.py:39 cuda_events #1": ("explained", ["cache_state", "ncu_front_end"]),
        # Its warm-L2 part is no more than the kernels' DRAM traffic at the DRAM bandwidth plus one DRAM
        # latency per kernel (-22.52 us): under half the tolerance, no cause.
        "mixed.py:55 cuda_events #1": ("flagged", ["launch_overhead", "gaps"]),
        # 1.00x: within the tolerance, a warm L2 offsetting a memset and the gaps between kernels.
        "mixed.py:70 cuda_events #1": ("ok", []),
    },
    "h200-nvtx": {
        "own_nvtx.py:52 do_bench #1": ("explained", ["cache_state"]),
        **{name: ("no_timer", []) for name in (
            "mydomain:myrange", "graph_replay", "step", "step/mm", "step/softmax", "two_streams", "copies", "worker",
        )},  # fmt: skip
    },
    "h200-shards": {
        # A graph replay: ncu serializes its nodes and pays its front end on each.
        "mm[M=16,N=4096]": ("explained", ["ncu_front_end"]),
        "mm[M=64,N=4096]": ("no_ncu", []),
        "mm[M=256,N=4096]": ("ok", []),
        "mm[M=1024,N=4096]": ("no_ncu", []),
        "mm[M=2048,N=4096]": ("ok", []),
        "mm[M=4096,N=4096]": ("no_ncu", []),
    },
    "h200-sweep": {
        "sweep.py:17 do_bench #1": ("ok", []),
        # Launch-bound under do_bench (the queue ran dry): the timing holds the host's launches.
        "sweep.py:17 do_bench #2": ("flagged", ["launch_overhead", "front_end", "cache_state"]),
        # A small GEMM under do_bench: the events' own cost (front end) over the tolerance; its kernels ran
        # at 1.91 GHz in the loop against 1.72 GHz under ncu (the clock part, negative).
        "sweep.py:17 do_bench #3": ("flagged", ["front_end", "clock"]),
        # The sustained GEMMs: throttled clock, 1.15-1.18x raw, about 1.0x at the measured clock.
        "sweep.py:17 do_bench #4": ("ok", []),
        "sweep.py:17 do_bench #5": ("ok", []),
        "sweep.py:21 Timer.blocked_autorange #1": ("ok", []),
    },
    "h200-timer": {
        "linear 64x4096x4096 bf16": ("flagged", ["launch_overhead", "front_end", "cache_state"]),
        "linear 2x19456x2560 bf16": ("ok", []),
        "linear 2048x19456x2560 bf16": ("ok", []),
        "torch_timer.py:41 Timer.timeit #1": ("flagged", ["launch_overhead", "cache_state", "gaps"]),
        "torch_timer.py:42 Timer.adaptive_autorange #1": ("flagged", ["launch_overhead", "cache_state", "gaps"]),
    },
    # The torchrun worker's sustained loop: 1.17x raw, 0.99x at the clock measured in its kernels.
    "h200-worker": {"worker.py:21 timed #1": ("ok", []), "worker.py:21 timed #2": ("ok", [])},
    "run": {
        "gemv_zero_flush": ("explained", ["cache_state"]),
        "gemv_clean": ("ok", []),
        "mm_clean": ("ok", []),
        "mm_warm": ("explained", ["cache_state"]),
        "mm_graph_warm": ("explained", ["cache_state", "ncu_front_end"]),
        "add_launch_bound": ("flagged", ["launch_overhead", "front_end"]),
        "side_stream": ("flagged", ["missed_work", "front_end", "clock", "overlap"]),
    },
}

ALL = sorted({*(p.parent for p in RUNS.glob("*/manifest.json")), CAUSES})


@pytest.fixture(scope="module", params=ALL, ids=lambda p: p.name)
def run(request: pytest.FixtureRequest) -> tuple[str, RunResult]:
    path: Path = request.param
    return path.name, analyze(path)


def test_every_shipped_run_is_listed() -> None:
    assert sorted(EXPECTED) == sorted(p.name for p in ALL)


def test_every_benchmark_verdict_and_causes(run: tuple[str, RunResult]) -> None:
    name, result = run
    got = {b.name: (b.verdict.value, [c.code.value for c in b.causes]) for b in result.benchmarks}
    assert got == EXPECTED[name]


def test_causes_follow_the_verdict(run: tuple[str, RunResult]) -> None:
    _, result = run
    for b in result.benchmarks:
        codes = [c.code.value for c in b.causes]
        if b.verdict is Verdict.OK:
            assert codes == [], b.name
        elif b.verdict is Verdict.EXPLAINED:
            assert codes and set(codes) <= PHYSICAL, b.name
        elif b.verdict is Verdict.FLAGGED:
            # The parts that make the timing wrong come first.
            assert codes and (codes[0] in ERRORS or codes[0] == "extra_or_missing_kernels"), b.name
        elif b.verdict is Verdict.UNEXPLAINED:
            assert codes[0] == "unexplained", b.name
        if b.gap is not None and b.verdict in (Verdict.OK, Verdict.EXPLAINED, Verdict.FLAGGED, Verdict.UNEXPLAINED):
            assert b.gap.measurements["verdict_reason"], b.name
        assert "profiler_overhead" not in codes


def test_ok_and_explained_pass_strict_and_flagged_lists_flagged_only(run: tuple[str, RunResult]) -> None:
    _, result = run
    assert {v.value for v in (Verdict.OK, Verdict.EXPLAINED)} == STRICT_PASS
    assert [b.name for b in result.flagged] == [b.name for b in result.benchmarks if b.verdict is Verdict.FLAGGED]


def _gap(t: float, n: float, *parts: tuple[str, float]) -> Gap:
    ps = tuple(GapPart(cause=c, ns=v, evidence={}, fix="", message="") for c, v in parts)
    return Gap(total_ns=t - n, parts=ps, residual_ns=t - n - sum(v for _, v in parts), timer_ns=t, ncu_ns=n)


def test_judge_words_and_reasons() -> None:
    # Within the tolerance at the measured clock (the clock part carries ncu there).
    v, why = judge(_gap(1000.0, 800.0, ("clock", 150.0), ("cache_state", 50.0)), 0.1)
    assert v is Verdict.OK and "1.05x at the measured clock" in why
    # Outside it, all of it physical: explained, named.
    v, why = judge(_gap(1300.0, 1000.0, ("cache_state", 290.0)), 0.1)
    assert v is Verdict.EXPLAINED and "cache_state" in why
    # Error parts over the tolerance flag it, even where the ratio is within it.
    v, why = judge(_gap(1000.0, 1000.0, ("launch_overhead", 200.0), ("clock", -200.0)), 0.1)
    assert v is Verdict.FLAGGED and "launch_overhead" in why
    # A window with less lead-in than ncu's dispatch is no timing error; missed work always is.
    assert judge(_gap(1000.0, 1000.0, ("front_end", -150.0), ("gaps", 150.0)), 0.1)[0] is Verdict.OK
    assert judge(_gap(900.0, 1000.0, ("missed_work", -100.0)), 0.05)[0] is Verdict.FLAGGED
    # Outside the tolerance with more than 5% unexplained.
    v, why = judge(_gap(1300.0, 1000.0, ("cache_state", 200.0)), 0.1)
    assert v is Verdict.UNEXPLAINED and "residual" in why
    # ncu and nsys disagree about the kernels: flagged whatever the parts say.
    assert judge(_gap(1000.0, 1000.0), 0.1, kernels_agree=False)[0] is Verdict.FLAGGED
    # Within 5% of the timing but over 10% of the gap and over the noise floor (2% of the timing,
    # at least 0.2 us): partly explained, never explained; the residual is among its causes.
    g = _gap(13000.0, 10000.0, ("cache_state", 2600.0))
    v, why = judge(g, 0.1)
    assert v is Verdict.PARTLY_EXPLAINED and "over 10% of the gap" in why
    assert [c.code.value for c in causes_from_gap(g, 0.1, v)] == ["cache_state", "unexplained"]
    # The same share of a gap under the noise floor stays explained.
    assert judge(_gap(5000.0, 3800.0, ("cache_state", 1050.0)), 0.1)[0] is Verdict.EXPLAINED


def test_old_reports_with_profiler_overhead_read_back() -> None:
    """Reports written before the part was removed hold ``profiler_overhead`` as a cause code
    and a gap part: they still read (CauseCode keeps the member; nothing produces it)."""
    result = analyze(CAUSES)
    doc = json.loads(json.dumps(report_to_dict(result)))
    b = next(d for d in doc["benchmarks"] if d["name"] == "add_launch_bound")
    b["causes"].append({"code": "profiler_overhead", "message": "old", "evidence": {"nsys_busy_ns": 1.0}, "fix": "old"})
    b["gap"]["parts"].append({"cause": "profiler_overhead", "ns": -21_000.0, "evidence": {}, "fix": "", "message": ""})
    back = report_from_dict(doc)
    old = next(x for x in back.benchmarks if x.name == "add_launch_bound")
    assert old.causes[-1].code is CauseCode.PROFILER_OVERHEAD
    assert old.gap is not None and old.gap.parts[-1].cause == "profiler_overhead"
    fresh = next(x for x in result.benchmarks if x.name == "add_launch_bound")
    assert replace(old, causes=old.causes[:-1], gap=replace(old.gap, parts=old.gap.parts[:-1])) == fresh
