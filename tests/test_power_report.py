"""Energy and power in every report and in compare, from real H200 runs.

fixtures/power/h200-run: `nsightwrap profile --passes plain,ncu examples/power_example.py`
(2026-12-01, NVIDIA H200): mm_large (bf16 2048x19456x2560, flops and bytes given), mm_skinny (the
same GEMM with M=2), add_large (64 Mi fp32 add, bytes given), each with a 1 s energy window and
the thermal guard at 20 C. fixtures/power/h200-same: the plain pass again; h200-scaled: again with
mm_large's M x1.25 (25% more work per call).
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import RunResult
from nsightwrap.compare.energy import Energy, energy_samples, judge_energy
from nsightwrap.compare.sides import load_side
from nsightwrap.compare.stats import Reason, Verdict
from nsightwrap.compare.verdicts import compare

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "fixtures" / "power" / "h200-run"
SAME = ROOT / "fixtures" / "power" / "h200-same"
SCALED = ROOT / "fixtures" / "power" / "h200-scaled"


@pytest.fixture(scope="module")
def result() -> RunResult:
    return analyze(RUN)


def _sidecar(run: Path) -> dict:
    return json.loads(next((run / "plain").glob("timer-*.json")).read_text())


def test_every_benchmark_has_energy_power_and_temperature(result: RunResult) -> None:
    by = {b.name: b.power for b in result.benchmarks}
    assert set(by) == {"mm_large", "mm_skinny", "add_large"} and all(by.values())
    for p in by.values():
        assert p is not None and p.method == "steady" and p.power_kind == "instant"
        assert 300 < p.mean_w < 800 and p.peak_w >= p.mean_w * 0.7
        assert 30 < p.peak_temp_c < 89 and p.thermal_wait_s == 0.0 and not p.thermal_timed_out
        # energy per call = mean power x time per call in the same window, and each counter
        # step gives one sample of it
        assert p.energy_per_call_j == pytest.approx(p.mean_w * p.ns_per_call * 1e-9, rel=1e-9)
        assert len(p.energy_samples_j) >= 7
        assert p.counter_update_s == pytest.approx(0.1, abs=0.01)
    mm = by["mm_large"]
    assert mm is not None
    # 2 x 2048 x 19456 x 2560 FLOP per call: about 1.1 pJ/FLOP at the H200's 700 W power cap.
    assert mm.pj_per_flop == pytest.approx(1.114, abs=0.01) and mm.throttle_reasons == ("sw_power_cap",)
    assert mm.energy_per_call_j == pytest.approx(0.2273, abs=1e-4)
    add = by["add_large"]
    assert add is not None and add.pj_per_flop is None and add.pj_per_byte == pytest.approx(153.3, abs=0.1)


def test_the_benchmarks_sit_where_their_power_is_on_the_timeline(result: RunResult) -> None:
    """nvidia-smi's samples of the plain pass, at each benchmark's span: the GPU is loaded there
    (idle, it draws ~84 W)."""
    trace = result.clock_trace
    assert all(c.power_w is not None and c.temperature_c is not None for c in trace)
    idle = [c.power_w for c in trace if c.t_s < 3 and c.power_w is not None]
    assert 50 < sum(idle) / len(idle) < 130
    for b in result.benchmarks:
        p = b.power
        assert p is not None and p.t_start_s is not None and p.t_end_s is not None
        inside = [c.power_w for c in trace if p.t_start_s <= c.t_s <= p.t_end_s and c.power_w is not None]
        assert len(inside) >= 15 and max(inside) > 450, b.name


def test_terminal_markdown_html_and_json_show_it(result: RunResult) -> None:
    from rich.console import Console

    from nsightwrap.export.html import render_html
    from nsightwrap.export.jsonio import report_from_dict, report_to_dict
    from nsightwrap.export.markdown import render_markdown
    from nsightwrap.export.terminal import print_report

    console = Console(record=True, width=200, file=open("/dev/null", "w"))  # noqa: SIM115
    print_report(result, console)
    text = console.export_text()
    assert "energy and power (NVML)" in text
    row = next(ln for ln in text.splitlines() if ln.startswith("│ mm_large") and "mJ" in ln)
    assert "227.3 mJ" in row and "1.11" in row and "692" in row and "sw_power_cap" in row and "328.61 us" in row
    assert "back to back a call took 328.61 us, 19% over the timed median 277.02 us: the GPU ran at its power cap" in text
    md = render_markdown(result)
    assert "## Energy and power" in md
    assert "| mm\\_large | 227.3 mJ | 1.11 | 1,198 | 692 | 758 | 52 | 328.61 us | sw\\_power\\_cap | 0.0 s |" in md
    assert "| add\\_large | 123.4 mJ | - | 153 | 660 |" in md
    page = render_html(result)
    section = page[page.index("<h2>Energy and power</h2>") :]
    assert "<td>227.3 mJ</td>" in section and "Plain pass: SM clock, power and temperature" in section
    svg = section[section.index("<svg") : section.index("</svg>")]
    assert "power (W)" in svg and "GPU temp (C)" in svg and "mm_large" in svg and "add_large" in svg
    back = report_from_dict(json.loads(json.dumps(report_to_dict(result))))
    assert [b.power for b in back.benchmarks] == [b.power for b in result.benchmarks]
    assert back.clock_trace == result.clock_trace


def test_names_are_escaped_in_the_power_section(result: RunResult) -> None:
    from dataclasses import replace

    from nsightwrap.export.html import render_html
    from nsightwrap.export.markdown import render_markdown

    nasty = replace(result, benchmarks=tuple(replace(b, name="mm<a|b>") if b.name == "mm_large" else b
                                             for b in result.benchmarks))  # fmt: skip
    page = render_html(nasty)
    assert "mm&lt;a|b&gt;" in page[page.index("<h2>Energy and power</h2>") :] and "mm<a|b>" not in page
    md = render_markdown(nasty)
    assert "| mm&lt;a\\|b&gt; | 227.3 mJ |" in md


def test_no_power_no_section() -> None:
    from nsightwrap.export.markdown import render_markdown

    r = analyze(ROOT / "fixtures" / "runs" / "h200-example")  # taken before the timer measured power
    assert all(b.power is None for b in r.benchmarks)
    assert "## Energy and power" not in render_markdown(r)


# ------------------------------------------------------------------------ compare


def test_energy_beside_time_on_a_rerun_and_on_a_known_change() -> None:
    base = load_side(RUN)
    same = compare(base, load_side(SAME))
    scaled = compare(base, load_side(SCALED))
    e_same = {v.key: v for v in same.energy}
    e_scaled = {v.key: v for v in scaled.energy}
    assert set(e_same) == set(e_scaled) == {"mm_large", "mm_skinny", "add_large"}
    # A rerun: never MORE or LESS. mm_large sits at the power cap, whose swings make it noisy.
    assert all(v.verdict in (Energy.SAME, Energy.AMBIGUOUS) for v in e_same.values())
    assert e_same["mm_skinny"].verdict is Energy.SAME and e_same["add_large"].verdict is Energy.SAME
    assert e_same["mm_large"].reason is Reason.NOISY
    # 25% more work in mm_large: 17% more time, its SM clock fell as far (the bigger GEMM sits
    # deeper in the power cap): the same in cycles, but the lower clock is the code's own, so
    # the time verdict is SLOWER. Energy per call does not scale out with the clock: MORE.
    t = {v.key: v for v in scaled.verdicts}["mm_large"]
    assert t.ratio is not None and t.ratio.estimate > 1.1 and t.reason is Reason.POWER_CAPPED
    assert t.verdict is Verdict.SLOWER
    mm = e_scaled["mm_large"]
    assert mm.verdict is Energy.MORE and mm.reason is Reason.REGRESSION
    assert mm.ratio is not None and 1.1 < mm.ratio.estimate < 1.3
    assert mm.message.startswith("more energy per call: energy/call +")
    assert e_scaled["mm_skinny"].verdict is Energy.SAME and e_scaled["add_large"].verdict is Energy.SAME


def test_energy_samples_from_both_shapes_and_too_few() -> None:
    entry = _sidecar(RUN)["benchmarks"][0]
    from_sidecar = energy_samples(entry["power"])
    assert from_sidecar and len(from_sidecar) == len(entry["power"]["steady"]["energy_samples_j"])
    assert energy_samples({"energy_samples_j": list(from_sidecar)}) == from_sidecar  # a report's block
    assert energy_samples(None) is None and energy_samples({"steady": {}}) is None
    v = judge_energy("x", from_sidecar[:3], from_sidecar[:3])
    assert v.verdict is Energy.AMBIGUOUS and v.reason is Reason.TOO_FEW_SAMPLES


def _nsightwrap(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "nsightwrap", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_compare_cli_energy_in_every_format_and_fail_on_energy(tmp_path: Path) -> None:
    # Same timings, 20% more energy per call in every block: time SAME, energy MORE.
    more = tmp_path / "more"
    shutil.copytree(SAME, more)
    side = next((more / "plain").glob("timer-*.json"))
    doc = _sidecar(more)
    hot = copy.deepcopy(doc)
    for b in hot["benchmarks"]:
        st = b["power"]["steady"]
        st["energy_samples_j"] = [v * 1.2 for v in st["energy_samples_j"]]
    side.write_text(json.dumps(hot))
    out = _nsightwrap("compare", str(SAME), str(more), "--format", "json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr  # energy alone does not fail without --fail-on-energy
    got = json.loads(out.stdout)
    assert {b["verdict"] for b in got["benchmarks"]} <= {"SAME", "AMBIGUOUS"}
    energy = {e["benchmark"]: e for e in got["energy"]}
    assert energy["add_large"]["verdict"] == "MORE" and energy["add_large"]["ratio"]["estimate"] == pytest.approx(1.2)
    assert set(energy["add_large"]["baseline"]) == {"median_j", "min_j", "q3_j", "n"}
    assert _nsightwrap("compare", str(SAME), str(more), "--fail-on-energy", "-f", "json", cwd=tmp_path).returncode == 1
    table = _nsightwrap("compare", str(SAME), str(more), cwd=tmp_path).stdout
    assert "energy per call (NVML energy counter" in table and "MORE" in table
    md = _nsightwrap("compare", str(SAME), str(more), "-f", "md", cwd=tmp_path).stdout
    assert "#### Energy per call" in md and "| add\\_large | **MORE** |" in md
    junit = _nsightwrap("compare", str(SAME), str(more), "-f", "junit", cwd=tmp_path).stdout
    assert 'name="energy_verdict" value="MORE"' in junit


def test_a_report_json_carries_energy_into_compare(tmp_path: Path) -> None:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    for src, dst in ((RUN, a), (SCALED, b)):
        out = _nsightwrap("report", str(src), "-f", "json", "-o", str(dst), cwd=tmp_path)
        assert out.returncode == 0, out.stderr
    c = compare(load_side(a), load_side(b))
    assert {v.key: v.verdict for v in c.energy}["mm_large"] is Energy.MORE
