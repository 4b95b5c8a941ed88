"""The analysis of a run of an unmodified script (``nsightwrap profile`` with the fake ncu / nsys
over the stand-in torch and triton): captured timings as benchmarks with their source and the
user's number, the report JSON round trip, and ``compare`` of two such runs by site and call."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from capture_helpers import line
from fake_tools.harness import profile
from test_capture_profile import SCRIPT, SWEEP, _setup


def test_analysis_report_json_and_compare_of_unmodified_runs(tmp_path: Path, monkeypatch, capsys) -> None:
    script = _setup(tmp_path, monkeypatch)
    for run in ("a", "b"):
        r = profile(capsys, "-o", run, "--no-analyze", *SWEEP, str(script))
        assert r.code == 0, r.err
    from nsightwrap.analysis.load import analyze
    from nsightwrap.export.jsonio import report_from_dict, report_to_dict

    res = analyze(tmp_path / "a")
    by = {b.name: b for b in res.benchmarks}
    ev = by[f"bench_mm.py:{line(SCRIPT, 's[i].record()')} do_bench_cuda #1"]
    db = by[f"bench_mm.py:{line(SCRIPT, 'do_bench(kernel')} do_bench #1"]
    assert ev.source["kind"] == "cuda_events" and ev.source["call"] == 1 and ev.user_value_ns == 10000.0
    assert db.source["kind"] == "do_bench" and db.source["api"] == "triton.testing.do_bench"
    assert db.user_value_ns == 10000.0 and db.timer is not None and db.timer.median_ns == 10000.0
    assert db.timer.method["flush"] == "zero" and db.timer.method["queued_before_sync"] == db.timer.n
    assert any(n.startswith("captured: triton.testing.do_bench at bench_mm.py:") for n in db.notes)
    doc = report_to_dict(res)
    back = report_from_dict(json.loads(json.dumps(doc)))
    got = {b.name: b for b in back.benchmarks}
    assert got[db.name].source == db.source and got[db.name].user_value_ns == 10000.0
    # compare matches the runs' captured timings by name: samples where there are some, and a
    # clear AMBIGUOUS where a timing is one number per side (Timer.timeit: one block).
    p = subprocess.run([sys.executable, "-m", "nsightwrap", "compare", str(tmp_path / "a"), str(tmp_path / "b"),
                        "--format", "json"], capture_output=True, text=True, cwd=tmp_path)  # fmt: skip
    assert p.returncode == 0, p.stderr
    cmp = {b["benchmark"]: b for b in json.loads(p.stdout)["benchmarks"]}
    assert cmp[db.name]["verdict"] == "SAME", cmp[db.name]
    assert cmp[ev.name]["verdict"] in ("SAME", "AMBIGUOUS")
    t = cmp[f"bench_mm.py:{line(SCRIPT, 'Timer(')} Timer.timeit #1"]
    assert t["verdict"] == "AMBIGUOUS" and t["message"].startswith("one number per side")
