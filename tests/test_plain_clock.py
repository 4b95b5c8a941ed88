"""The plain pass's own clock: the plain pass under nsys sampling GPU metrics without a CUDA trace
(orchestration, with the fake nsys), and each timing's clock read from the samples inside its
windows placed against an anchor (analysis/plainclock.py, on a real H200 capture's samples)."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest
from fake_tools.harness import TARGET, manifest, passes, profile, use_fakes

from nsightwrap.analysis.plainclock import ANCHOR_LEAD_NS, SOURCE_PLAIN, anchor_times, plain_pass_clocks
from nsightwrap.capture.gpuwindows import MAX_WINDOWS, WindowList
from nsightwrap.parsers.nsys import read_nsys
from nsightwrap.run.nsys_export import keep_clock_only

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SWEEP_SQLITE = FIXTURES / "runs" / "h200-sweep" / "nsys" / "report.sqlite.gz"
T = str(TARGET)


# ----------------------------------------------------------------------------- orchestration


def test_plain_pass_runs_bare_then_its_clock_run_under_nsys(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("FAKE_TOOLS_MODE", "nsys-gpu-metrics")
    r = profile(capsys, "-o", "run", "--no-analyze", "--passes", "plain", T)
    assert r.code == 0, r.err
    run = tmp_path / "run"
    plain = passes(manifest(run))["plain"]
    bare, clock_run, export = plain["commands"]
    # The plain pass's timings come from a bare run: sampling moved host-bound loops.
    assert bare["argv"] == [sys.executable, T] and bare["env"]["NSIGHTWRAP_PASS"] == "plain"
    argv = clock_run["argv"]
    # Then the clock run: nsys first, NVTX and GPU metrics only, no CUDA trace.
    assert argv[1:13] == [
        "profile", "-t", "nvtx", "-s", "none", "--cpuctxsw=none", "--gpu-metrics-devices=all",
        "--gpu-metrics-frequency=20000", "-o", f"{run}/plain-clock/clock", "-f", "true",
    ]  # fmt: skip
    assert argv[13:] == [sys.executable, T]
    assert clock_run["env"]["NSIGHTWRAP_PASS"] == "plain-clock"
    assert export["argv"][1:4] == ["export", "--type", "sqlite"] and export["returncode"] == 0
    # The export is cut down to the clock; the raw capture stays; the record lists both folders.
    assert (run / "plain-clock/clock.sqlite").is_file() and (run / "plain-clock/clock.nsys-rep").is_file()
    assert not (run / "plain-clock/clock.full.sqlite").exists()
    assert "plain-clock/clock.sqlite" in plain["files"] and "plain/stdout.log" in plain["files"]
    assert manifest(run)["settings"]["plain_clock"] is True
    assert "pass=plain" in (run / "plain/stdout.log").read_text()
    assert "pass=plain-clock" in (run / "plain-clock/stdout.log").read_text()


def test_no_plain_clock_runs_the_plain_pass_bare(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("FAKE_TOOLS_MODE", "nsys-gpu-metrics")
    r = profile(capsys, "-o", "run", "--no-analyze", "--passes", "plain", "--no-plain-clock", T)
    assert r.code == 0, r.err
    plain = passes(manifest(tmp_path / "run"))["plain"]
    assert [c["argv"] for c in plain["commands"]] == [[sys.executable, T]]
    assert not (tmp_path / "run" / "plain-clock").exists()


def test_nsys_without_counter_access_costs_the_clock_not_the_plain_pass(tmp_path: Path, monkeypatch, capsys) -> None:
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("FAKE_TOOLS_MODE", "nsys-gpu-metrics,nsys-metrics-fail")
    r = profile(capsys, "-o", "run", "--no-analyze", "--passes", "plain", T)
    assert r.code == 0, r.err
    run = tmp_path / "run"
    plain = passes(manifest(run))["plain"]
    bare, clock_run = plain["commands"]
    assert bare["returncode"] == 0 and clock_run["returncode"] == 1
    assert plain["status"] == "ok"
    assert "the clock run under nsys failed" in r.err and "plain-clock/stderr.log" in r.err
    assert "pass=plain" in (run / "plain/stdout.log").read_text()


# ----------------------------------------------------------------------------- analysis


@pytest.fixture(scope="module")
def capture_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real H200 nsys export (GPC clock samples, NVTX) with one anchor range added at a known
    time, cut down as the plain pass cuts its own (``keep_clock_only``)."""
    d = tmp_path_factory.mktemp("plainclock")
    full = d / "full.sqlite"
    with gzip.open(SWEEP_SQLITE) as src, open(full, "wb") as dst:
        shutil.copyfileobj(src, dst)
    con = sqlite3.connect(full)
    row = con.execute("SELECT * FROM NVTX_EVENTS WHERE eventType = 59 AND end IS NOT NULL LIMIT 1").fetchone()
    cols = [c[1] for c in con.execute("PRAGMA table_info(NVTX_EVENTS)")]
    rec = dict(zip(cols, row, strict=True))
    sid = con.execute("SELECT MAX(id) FROM StringIds").fetchone()[0] + 1
    con.execute("INSERT INTO StringIds (id, value) VALUES (?, ?)", (sid, "nsightwrap-anchor 77.1"))
    rec.update({"start": 2_000_000_000, "end": 2_000_030_000, "text": None, "textId": sid})
    con.execute(f"INSERT INTO NVTX_EVENTS ({','.join(rec)}) VALUES ({','.join('?' * len(rec))})", list(rec.values()))
    con.commit()
    con.close()
    small = d / "clock.sqlite"
    keep_clock_only(full, small)
    return small


def test_cut_down_export_keeps_only_the_gpc_clock(capture_db: Path) -> None:
    con = sqlite3.connect(capture_db)
    names = {r[0] for r in con.execute("SELECT DISTINCT m.metricName FROM GPU_METRICS g JOIN TARGET_INFO_GPU_METRICS m USING (metricId)")}
    assert names == {"GPC Clock Frequency [MHz]"}
    assert con.execute("SELECT COUNT(*) FROM NVTX_EVENTS").fetchone()[0] > 1000


def test_windows_against_the_anchor_read_the_samples_inside_them(capture_db: Path) -> None:
    rep = read_nsys(capture_db, detail=False)
    at = anchor_times(rep.ranges)
    assert at == {"77.1": 2_000_030_000 - ANCHOR_LEAD_NS}
    clock = rep.gpu_clock.sort_values("t_ns")
    t = clock["t_ns"].to_numpy(dtype=float)
    hz = clock["gpc_clock_hz"].to_numpy(dtype=float)
    # Two windows after the anchor, each holding a few known samples.
    picks = [len(t) // 3, 2 * len(t) // 3]
    rel = [[t[i] - at["77.1"] - 10.0, t[i + 2] - at["77.1"] + 10.0] for i in picks]
    expect = np.concatenate([hz[i : i + 3] for i in picks]).mean()
    doc = {"benchmarks": [{"nvtx_path": "nsightwrap:bench", "clock_windows": {"anchor": "77.1", "timebase": "gpu", "rel_ns": rel}}]}
    got = plain_pass_clocks([("nsightwrap:bench", "iter"), ("nsightwrap:other", "iter")], [("sidecar", doc)], rep)
    assert got[1] is None
    c = got[0]
    assert c is not None and c.source == SOURCE_PLAIN and c.samples == 6 and c.windows == 2
    assert c.mean_hz == pytest.approx(expect)
    # Fewer than three samples inside the windows: no clock.
    doc1 = {"benchmarks": [{"nvtx_path": "nsightwrap:bench", "clock_windows": {"anchor": "77.1", "rel_ns": [rel[0][:1] * 2]}}]}
    assert plain_pass_clocks([("nsightwrap:bench", "iter")], [("s", doc1)], rep) == [None]
    # A window list that is no list of pairs, or an anchor the capture lacks: no clock, no error.
    for bad in ({"anchor": "77.1", "rel_ns": [[1.0]]}, {"anchor": "9.9", "rel_ns": rel}, {"anchor": "77.1", "rel_ns": "x"}):
        d = {"benchmarks": [{"nvtx_path": "nsightwrap:bench", "clock_windows": bad}]}
        assert plain_pass_clocks([("nsightwrap:bench", "iter")], [("s", d)], rep) == [None]


def test_script_ranges_are_their_own_windows(capture_db: Path) -> None:
    """A benchmark made of the script's own NVTX ranges reads the samples inside its iteration
    ranges as the plain pass's capture has them."""
    rep = read_nsys(capture_db, detail=False)
    paths = rep.ranges["path"].astype(str)
    it = rep.ranges[paths.str.contains(r"/iter\d+$")]
    head = it["path"].astype(str).iloc[0].rsplit("/iter", 1)[0]
    got = plain_pass_clocks([(head, "iter")], [], rep)
    # Long iterations of a GEMM sweep: the ranges hold many samples.
    assert got[0] is not None and got[0].samples >= 3 and 1.0e9 < got[0].mean_hz < 2.1e9


def test_window_list_thins_evenly() -> None:
    class _A:
        id = "1.1"

        def gpu_ns(self, ev: float) -> float:
            return ev

    wl = WindowList(_A(), cap=4)  # type: ignore[arg-type]
    for i in range(100):
        wl.add_pair(float(i * 10), float(i * 10 + 5))
    d = wl.doc()
    assert d is not None and d["windows"] == 100
    starts = [w[0] for w in d["rel_ns"]]
    assert 4 <= len(starts) < 8 and starts[0] == 0.0 and starts[-1] >= 600.0
    assert len({round(b - a) for a, b in zip(starts, starts[1:], strict=False)}) == 1  # evenly spread
    assert MAX_WINDOWS >= 1000


def test_sidecar_entry_keeps_clock_windows(tmp_path: Path) -> None:
    from nsightwrap.capture.state import Capture, Site

    cap = Capture(name="n", kind="do_bench", site=Site("/x.py", 3, "f"), call=1, label=None, api="do_bench")
    assert "clock_windows" not in cap.to_entry()
    cap.clock_windows = {"anchor": "1.1", "timebase": "gpu", "windows": 2, "rel_ns": [[1.0, 2.0]]}
    assert json.loads(json.dumps(cap.to_entry()))["clock_windows"]["rel_ns"] == [[1.0, 2.0]]


def test_a_loop_keeps_the_clock_runs_clock_only_at_the_plain_pass_pace() -> None:
    """The clock run's clock counts for a loop only where that run timed it within MAX_MOVE of the
    plain pass (a sampled Timer.timeit of small GEMMs ran 2.7-3.9x slower on an H100)."""
    from nsightwrap.analysis.model import MeasuredClock
    from nsightwrap.analysis.plainclock import MAX_MOVE, same_pace

    c = MeasuredClock(mean_hz=1.98e9, min_hz=1.97e9, max_hz=1.99e9, windows=10, samples=40, source=SOURCE_PLAIN)
    paths = ["gemm", "timer", "unseen", "ranges", "none"]
    plain_ns = [20_000.0, 15_480.0, 5_000.0, None, 1_000.0]
    clock_run = {"gemm": 20_000.0 * (1 + MAX_MOVE * 0.9), "timer": 50_800.0}
    got, notes = same_pace([c, c, c, c, None], paths, plain_ns, clock_run)
    assert got == [c, None, None, c, None]
    assert notes[0] == () and notes[3] == () and notes[4] == ()
    assert "50.80 us against 15.48 us in the plain pass (3.28x" in notes[1][0] and "1.980 GHz" in notes[1][0]
    assert "no timing of this loop" in notes[2][0]
