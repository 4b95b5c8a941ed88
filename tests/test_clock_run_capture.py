"""The plain pass's clock run on a real H100 capture (fixtures/captures/clockrun: an autotuned
Triton matmul against cuBLAS, `perf_report` over 8 sizes, profiled unmodified on 2026-12-07; its
README says how it was made small): which loops keep the clock measured there, and a verdict
that changes between two clocks measured for its loop is marked, not given with confidence.

The pace of each loop is read here from the two sidecars directly (the plain pass's and the
clock run's samples), apart from the analysis that checks it."""

from __future__ import annotations

import json
import re
import statistics
import tarfile
from pathlib import Path

import pytest
from kernel_tables import read_kernels, stand_in_reports

from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import BenchmarkResult, RunResult, Verdict
from nsightwrap.analysis.plainclock import MAX_MOVE, SOURCE_PLAIN
from nsightwrap.export import reportfmt

ARCHIVE = Path(__file__).resolve().parent.parent / "fixtures" / "captures" / "clockrun" / "matmul-autotune.tar.xz"


def _name(provider: str, m: int) -> str:
    return f"matmul-performance-fp16[provider={provider},M={m},N={m},K={m}]"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("clockrun")
    with tarfile.open(ARCHIVE) as tar:
        if hasattr(tarfile, "data_filter"):  # Python 3.10.12+, 3.11.4+
            tar.extractall(root, filter="data")
        else:
            tar.extractall(root)  # noqa: S202 - the repository's own archive
    run = root / "matmul-autotune"
    stand_in_reports(run)
    return run


@pytest.fixture(scope="module")
def result(run: Path) -> RunResult:
    return analyze(run, read_ncu=read_kernels)


def _bench(result: RunResult, name: str) -> BenchmarkResult:
    return next(b for b in result.benchmarks if b.name == name)


def _pace(run: Path) -> dict[str, float]:
    """Each loop's median in the clock run over its median in the plain pass, by name."""

    def medians(pass_dir: str) -> dict[str, float]:
        (path,) = (run / pass_dir).glob("timer-*-capture.json")
        doc = json.loads(path.read_text())
        return {b["name"]: statistics.median(b["samples_ns"]) for b in doc["benchmarks"] if b.get("samples_ns")}

    plain, clock = medians("plain"), medians("plain-clock")
    return {name: clock[name] / plain[name] for name in plain}


def test_a_loop_keeps_the_clock_run_s_clock_only_where_it_kept_its_pace(run: Path, result: RunResult) -> None:
    pace = _pace(run)
    assert len(pace) == 16
    for name, move in pace.items():
        b = _bench(result, name)
        if abs(move - 1) <= MAX_MOVE:
            assert b.ref_clock_source == SOURCE_PLAIN, (name, move, b.ref_clock_source)
        else:
            assert b.ref_clock_source != SOURCE_PLAIN, (name, move)
            (why,) = [n for n in b.notes if n.startswith("plain pass's clock not measured")]
            assert f"({move:.2f}x, more than 5%)" in why, (why, move)
    # The small Triton matmuls were the ones the clock run slowed most (host-bound launches).
    assert pace[_name("triton", 512)] > 2.5 and pace[_name("triton", 1024)] > 1.5


def test_a_verdict_that_turns_between_two_measured_clocks_is_marked(run: Path, result: RunResult) -> None:
    b = _bench(result, _name("triton", 1536))
    # The verdict used ncu's own clocks (nsys slowed this loop; the clock run moved it 1.19x) and
    # reads ok; at the clock the clock run measured for it, ncu is shorter and the timing is not.
    assert b.verdict is Verdict.OK and b.ratio is not None and abs(b.ratio - 1) <= 0.10
    assert b.ratio_clock_hz is None and b.ref_clock_source.startswith("ncu's own clock")
    (note,) = [n for n in b.notes if n.startswith("the loop's clock in the plain pass is not known")]
    m = re.search(r"at that clock \((\d\.\d{3}) GHz, plain pass GPU metrics.*reads (\d\.\d\d)x", note)
    assert m is not None, note
    ghz, alt = float(m.group(1)), float(m.group(2))
    # ncu carried to that clock by each kernel's elasticity: faster than at ncu's own ~1.6-1.8 GHz.
    assert 1.9 < ghz < 2.1 and b.ncu is not None and b.ncu.sm_clock_hz < ghz * 1e9
    assert b.clock_unresolved_ratio == pytest.approx(alt, abs=0.005) and alt > 1.10
    assert reportfmt.verdict_cell(b) == f"ok (clock unresolved: {b.clock_unresolved_ratio:.2f}x at another measured clock)"


def test_a_verdict_that_holds_at_every_measured_clock_is_not_marked(run: Path, result: RunResult) -> None:
    pace = _pace(run)
    # Loops that lost the clock run's clock, flagged well over the tolerance at every clock.
    for name in (_name("triton", 512), _name("triton", 1024)):
        b = _bench(result, name)
        assert abs(pace[name] - 1) > MAX_MOVE and b.verdict is Verdict.FLAGGED and b.ratio is not None and b.ratio > 1.2
        assert b.clock_unresolved_ratio is None
        assert not [n for n in b.notes if n.startswith("the loop's clock in the plain pass is not known")]
    # Loops that kept it: the verdict used that clock, nothing to set it against.
    kept = [b for b in result.benchmarks if b.ref_clock_source == SOURCE_PLAIN]
    assert len(kept) >= 8
    assert not [b.name for b in kept if any(n.startswith("the loop's clock in the plain pass is not known") for n in b.notes)]
