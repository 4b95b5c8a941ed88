"""The plain pass's nvidia-smi log covers every GPU of the host: the analysis keeps the timer's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from nsightwrap.analysis.load import analyze

RUN = Path(__file__).resolve().parent.parent / "fixtures" / "runs" / "h200-example"
MINE, OTHER = "GPU-6f1c0000-aaaa-bbbb-cccc-000000000001", "GPU-6f1c0000-aaaa-bbbb-cccc-000000000002"


def two_gpu_run(tmp_path: Path, *, timer_uuid: str | None) -> Path:
    """The real H200 run with its sample log doubled: each row once for the timer's GPU (as
    measured) and once for an idle neighbour at 345 MHz; the sidecar names ``timer_uuid``."""
    run = tmp_path / "run"
    shutil.copytree(RUN, run, ignore=shutil.ignore_patterns("*.ncu-rep", "*.nsys-rep"))
    log = run / "plain" / "smi_samples.csv"
    header, *rows = log.read_text().splitlines()
    cols = header.split(", ")
    out = [", ".join([cols[0], "uuid", *cols[1:]])]
    for row in rows:
        f = row.split(", ")
        out.append(", ".join([f[0], MINE, *f[1:]]))
        out.append(", ".join([f[0], OTHER, "345 MHz", *f[2:]]))
    log.write_text("\n".join(out) + "\n")
    for sidecar in (run / "plain").glob("timer-*.json"):
        doc = json.loads(sidecar.read_text())
        doc["device"]["uuid"] = timer_uuid  # torch spells it without the GPU- prefix
        sidecar.write_text(json.dumps(doc))
    return run


@pytest.fixture
def measured() -> list[float]:
    return [s.sm_clock_hz for s in analyze(RUN).clock_trace]


def test_the_timers_gpu_is_kept(tmp_path: Path, measured: list[float]) -> None:
    result = analyze(two_gpu_run(tmp_path, timer_uuid=MINE.removeprefix("GPU-")))
    assert [s.sm_clock_hz for s in result.clock_trace] == measured


def test_unknown_gpu_drops_the_samples_with_a_note(tmp_path: Path) -> None:
    result = analyze(two_gpu_run(tmp_path, timer_uuid=None))
    assert result.clock_trace == ()
    assert any("cover 2 GPUs" in n for n in result.notes)


def test_samples_of_one_benchmark_from_two_processes_are_pooled(tmp_path: Path) -> None:
    """Two processes timed the same benchmarks (two sidecars): the report pools their samples, as
    compare does, with the timer's own statistics."""
    import numpy as np

    run = tmp_path / "run"
    shutil.copytree(RUN, run, ignore=shutil.ignore_patterns("*.ncu-rep", "*.nsys-rep"))
    (first,) = list((run / "plain").glob("timer-*.json"))
    doc = json.loads(first.read_text())
    (run / "plain" / "timer-999999.json").write_text(json.dumps(doc))
    bench = {b.name: b for b in analyze(run).benchmarks}["mm_large"]
    raw = next(b for b in doc["benchmarks"] if b["name"] == "mm_large")["samples_ns"]
    assert bench.timer is not None and bench.timer.n == 2 * len(raw)
    assert bench.timer.median_ns == pytest.approx(float(np.median(raw)))
    q1, q3 = np.percentile(raw + raw, [25, 75])
    assert bench.timer.iqr_ns == pytest.approx(q3 - q1)
