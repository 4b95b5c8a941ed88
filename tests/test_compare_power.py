"""compare on real H200 captures where the SM clock moved: whose clock change it was (the code's
own power draw at the power cap, or the environment's), the clock elasticity a benchmark's time
is carried by, the compact form a CI log gets, and energy's own words in every format."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lxml import etree

ROOT = Path(__file__).resolve().parent.parent
POWER = ROOT / "fixtures" / "power"
RUN, SCALED = POWER / "h200-run", POWER / "h200-scaled"
#: The clock the built thermal side ran at, against the real run's.
DROP = 0.85


def nw(*args: str | Path, cwd: Path = ROOT, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """nsightwrap in a subprocess; stdout is a pipe, as in a CI job."""
    return subprocess.run(
        [sys.executable, "-m", "nsightwrap", *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env,
        timeout=120,
    )  # fmt: skip


def cli(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str]:
    """The same entry point in this process (a subprocess start costs ~1-2 s a call)."""
    from nsightwrap.cli import main

    with pytest.raises(SystemExit) as exc:
        main([*map(str, args)])
    out, _ = capsys.readouterr()
    return int(exc.value.code or 0), out


def by_name(doc: dict[str, Any], key: str = "benchmarks") -> dict[str, dict[str, Any]]:
    return {b["benchmark"]: b for b in doc[key]}


def test_more_work_at_the_power_cap_is_slower_not_a_clock_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # h200-scaled is h200-run with mm_large's M x1.25. At the H200's power cap (sw_power_cap)
    # the bigger GEMM takes +19.9% energy per call and its clock falls 1.55 -> 1.32 GHz: time
    # +17.3%, cycles +0.3%. The lower clock is the new code's doing: SLOWER, exit 1.
    code, out = cli(capsys, "compare", RUN, SCALED, "--format", "json")
    assert code == 1, out
    doc = json.loads(out)
    mm = by_name(doc)["mm_large"]
    assert (mm["verdict"], mm["reason"], mm["clock_cause"]) == ("SLOWER", "power_capped", "code"), mm["message"]
    assert mm["ratio"]["estimate"] == pytest.approx(1.173, abs=0.005)
    assert mm["cycles_ratio"]["estimate"] == pytest.approx(1.003, abs=0.005)
    assert "SM clock 1.55 GHz -> 1.32 GHz" in mm["message"]
    assert "power cap (sw_power_cap) with energy per call +19.9%" in mm["clock_evidence"]
    assert doc["summary"]["slower"] == ["mm_large"]
    assert by_name(doc, "energy")["mm_large"]["verdict"] == "MORE"
    # JUnit: a failure, with the clock's cause and energy's own word.
    xml = tmp_path / "c.xml"
    assert cli(capsys, "compare", RUN, SCALED, "--format", "junit", "-o", xml)[0] == 1
    suite = etree.parse(str(xml)).find("testsuite")
    assert suite is not None and suite.get("failures") == "1"
    case = next(c for c in suite.iter("testcase") if c.get("name") == "mm_large")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert (props["verdict"], props["reason"], props["clock_cause"]) == ("SLOWER", "power_capped", "code")
    assert props["energy_verdict"] == "MORE"
    assert case.find("failure") is not None
    # The same run against itself re-run (h200-same): no clock change, nothing fails.
    assert cli(capsys, "compare", RUN, POWER / "h200-same", "--format", "json")[0] == 0


def _thermal_report(src: dict[str, Any], names: set[str]) -> dict[str, Any]:
    """``src`` (a report JSON) with ``names`` run at a clock DROP x lower, held down for heat."""
    doc = copy.deepcopy(src)
    for b in doc["benchmarks"]:
        if b["name"] not in names:
            continue
        t = b["timer"]
        # Cycles as measured, at the lower clock: each sample's time grows by 1 / DROP (the
        # default report JSON holds them as a histogram, [value, count] pairs).
        t["sample_runs"] = [[v / DROP, n] for v, n in t["sample_runs"]]
        t["sm_clock_hz"] *= DROP
        # The default report JSON packs the per-sample clocks as [clock, count] runs.
        t["sample_clock_runs"] = [[None if f is None else f * DROP, n] for f, n in t["sample_clock_runs"]]
        b["ref_clock_hz"] *= DROP
        b["power"]["throttle_reasons"] = ["sw_thermal"]
    return doc


def test_a_thermal_clock_drop_excuses_a_compute_bound_benchmark_but_not_a_memory_bound_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No real pair in fixtures/ has the clock dropping without a power rise (every clock drop
    there, h200-run -> h200-scaled, came with +19.9% energy per call at the power cap). So the
    current side is h200-run's own report JSON with only the clock and throttle reasons of two
    benchmarks changed: their SM clock 15% lower, each sample's time carried so its cycles stay
    the measured ones (time x 1/0.85, what a kernel that follows the clock does), the NVML reason
    ``sw_thermal``; power and energy per call as measured. mm_large's ncu counters call it
    compute-bound (e = 1): the clock explains it, SAME ``clock_only``. add_large is memory-bound
    (e = 0): its time does not follow the SM clock, so +17.6% at the lower clock is a
    regression the clock cannot excuse."""
    base = tmp_path / "base.json"
    assert cli(capsys, "report", RUN, "--format", "json", "-o", base)[0] == 0
    cur = tmp_path / "thermal.json"
    cur.write_text(json.dumps(_thermal_report(json.loads(base.read_text()), {"mm_large", "add_large"})))
    code, out = cli(capsys, "compare", base, cur, "--format", "json")
    assert code == 1, out  # add_large
    got = by_name(json.loads(out))
    mm, add = got["mm_large"], got["add_large"]
    assert (mm["verdict"], mm["reason"], mm["clock_cause"]) == ("SAME", "clock_only", "environment"), mm["message"]
    assert mm["ratio"]["estimate"] == pytest.approx(1 / DROP, abs=0.01)
    assert (mm["elasticity"], mm["elasticity_source"]) == (1.0, "heuristic")
    assert "held down for heat (sw_thermal)" in mm["message"]
    assert (add["verdict"], add["reason"]) == ("SLOWER", "regression"), add["message"]
    assert add["elasticity"] == 0.0 and add["carried_ratio"]["estimate"] == pytest.approx(1 / DROP, abs=0.01)
    assert add["cycles_ratio"]["estimate"] == pytest.approx(1.0, abs=0.01)  # what e = 1 would have excused
    assert got["mm_skinny"]["verdict"] == "SAME"


def test_a_thermal_clock_drop_in_a_run_directory_without_elasticity(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same thermal side as a run directory (h200-run's sidecar with mm_large's clock 15%
    lower, its times carried so its cycles stay as measured, and ``sw_thermal``). A run
    directory compared by the timer records no elasticity: e = 1 is taken and said."""
    run = tmp_path / "thermal"
    shutil.copytree(RUN / "plain", run / "plain")
    side = next((run / "plain").glob("timer-*.json"))
    doc = json.loads(side.read_text())
    for b in doc["benchmarks"]:
        if b["name"] == "mm_large":
            b["samples_ns"] = [v / DROP for v in b["samples_ns"]]
            b["sm_clock_hz"] *= DROP
            b["sample_clock_hz"] = [None if f is None else f * DROP for f in b["sample_clock_hz"]]
            b["power"]["throttle_reasons"] = ["sw_thermal"]
    side.write_text(json.dumps(doc))
    code, out = cli(capsys, "compare", RUN, run, "--format", "json")
    assert code == 0, out
    mm = by_name(json.loads(out))["mm_large"]
    assert (mm["verdict"], mm["reason"]) == ("SAME", "clock_only"), mm["message"]
    assert mm["elasticity_source"] == "assumed" and "no clock elasticity recorded, e = 1 taken" in mm["message"]


def test_piped_table_is_one_line_per_benchmark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    r = nw("compare", RUN, SCALED, env=env)
    assert r.returncode == 1, r.stderr
    lines = r.stdout.splitlines()
    assert lines[1].split()[:3] == ["verdict", "benchmark", "time"]
    rows = lines[2:5]
    assert [ln.split()[:2] for ln in rows] == [["SLOWER", "mm_large"], ["SAME", "mm_skinny"], ["SAME", "add_large"]]
    assert any(ln.split()[-1] == "power_capped" for ln in rows)
    assert "within_threshold" in r.stdout and "within_t" not in r.stdout.replace("within_threshold", "")
    assert not any(ch in r.stdout for ch in "│┃━")  # no table folded into a CI log
    assert len(lines) < 20
    energy = [ln for ln in lines if ln.startswith("MORE    mm_large")]
    assert len(energy) == 1 and "SLOWER" not in energy[0]
    # -o still writes the full table; COLUMNS asks for a table at that width.
    out = tmp_path / "t.txt"
    assert cli(capsys, "compare", RUN, SCALED, "-o", out)[0] == 1
    assert "┃ benchmark" in out.read_text()
    monkeypatch.setenv("COLUMNS", "200")
    wide = cli(capsys, "compare", RUN, SCALED)[1]
    assert "┃ benchmark" in wide and "power_capped" in wide


def test_energy_is_more_less_same_or_ambiguous_in_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    words = {"MORE", "LESS", "SAME", "AMBIGUOUS"}
    doc = json.loads(cli(capsys, "compare", RUN, SCALED, "--format", "json")[1])
    assert {e["verdict"] for e in doc["energy"]} <= words and doc["version"] == 2
    md = cli(capsys, "compare", RUN, SCALED, "--format", "md")[1]
    assert "| mm\\_large | **MORE** |" in md
    xml = cli(capsys, "compare", RUN, SCALED, "--format", "junit")[1]
    got = set(etree.fromstring(xml.encode()).xpath("//property[@name='energy_verdict']/@value"))
    assert got == {"MORE", "SAME"}
