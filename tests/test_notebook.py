"""The notebook API on the shipped H200 run (fixtures/runs/h200-example).

Every figure of ``load_run(...).to_frame()`` is checked against an independent read of the same
files: the timer sidecar's samples with ``statistics.median``, ncu's kernel rows summed per NVTX
iteration with plain pandas, nsys's ops attributed to their ranges by a search written here, and
the report JSON that ``nsightwrap report`` writes. The columns are the ones docs/notebook.md lists.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import nsightwrap as nw
from nsightwrap.analysis.frames import BENCHMARK_COLUMNS, KERNEL_COLUMNS
from nsightwrap.core.errors import InputNotFound, NsightwrapError, ReportParseError, ToolNotFound
from nsightwrap.run.tools import known_locations

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "fixtures" / "runs" / "h200-example"
NCU_REP = RUN / "ncu" / "report.ncu-rep.gz"
NSYS_SQLITE = RUN / "nsys" / "report.sqlite.gz"
#: A raw capture kept beside its SQLite export (a run of the causes scenarios).
NSYS_REP = Path(__file__).resolve().parent.parent / "fixtures" / "captures" / "causes" / "run" / "nsys" / "report.nsys-rep"
DOC = ROOT / "docs" / "notebook.md"


@pytest.fixture(scope="module")
def run() -> nw.Run:
    return nw.load_run(RUN)


@pytest.fixture(scope="module")
def frame(run: nw.Run) -> pd.DataFrame:
    return run.to_frame().set_index("name")


@pytest.fixture(scope="module")
def sidecar() -> dict[str, Any]:
    (path,) = (RUN / "plain").glob("timer-*.json")
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def ncu() -> pd.DataFrame:
    return nw.read_ncu(NCU_REP)


@pytest.fixture(scope="module")
def nsys() -> Any:
    return nw.read_nsys(NSYS_SQLITE)


def doc_columns(heading: str) -> list[str]:
    """The column names of the first table under the docs/notebook.md heading holding ``heading``."""
    lines = DOC.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("#") and heading in ln)
    rows = []
    for ln in lines[start + 1 :]:
        if ln.startswith("#"):
            break
        if ln.startswith("| `"):
            rows.append(ln)
        elif rows and not ln.startswith("|"):
            break  # the end of the first table
    return [name for row in rows for name in re.findall(r"`([^`]+)`", row.split("|")[1])]


# -- run.to_frame(): against the files themselves ------------------------------------------------


def test_frame_has_one_row_per_benchmark_of_the_sidecar(run: nw.Run, sidecar: dict[str, Any]) -> None:
    df = run.to_frame()
    assert list(df["name"]) == [b["name"] for b in sidecar["benchmarks"]]
    assert list(df.columns) == list(BENCHMARK_COLUMNS)
    for b in sidecar["benchmarks"]:
        row = df.set_index("name").loc[b["name"]]
        assert row["timer_median_ns"] == pytest.approx(statistics.median(b["samples_ns"]), rel=1e-12)
        assert row["timer_min_ns"] == pytest.approx(min(b["samples_ns"]), rel=1e-12)
        assert row["timer_n"] == len(b["samples_ns"])
        assert row["timer_clock_source"] == b["clock_source"]
        assert row["timer_sm_clock_hz"] == pytest.approx(b["sm_clock_hz"])
        assert row["source"] == "nsightwrap_bench"


def test_ncu_columns_are_the_kernels_of_each_iteration(frame: pd.DataFrame, ncu: pd.DataFrame, run: nw.Run) -> None:
    # Plain pandas on read_ncu's rows: a kernel of iteration i of benchmark b ran inside the
    # range nsightwrap:b/iter<i>; per iteration, the durations add up.
    it = ncu["nvtx_path"].str.extract(r"^nsightwrap:(?P<bench>[^/]+)/iter(?P<iter>\d+)$")
    rows = ncu.assign(bench=it["bench"], iteration=it["iter"].astype(float)).dropna(subset=["bench"])
    assert len(rows) == len(ncu) == 27  # the 27 `==PROF== Profiling` lines of ncu/stdout.log
    per_iter = rows.groupby(["bench", "iteration"])["duration_ns"].sum()
    kernels = run.kernels()
    for name, row in frame.iterrows():
        mine = rows[rows["bench"] == name]
        if mine.empty:  # copy_1g: a memcpy, which ncu does not see
            assert np.isnan(row["ncu_median_ns"]) and np.isnan(row["ncu_sm_clock_hz"])
            continue
        assert row["ncu_median_ns"] == pytest.approx(float(per_iter.loc[name].median()))
        # The clock over the benchmark's kernels: total cycles / total time.
        cycles = (mine["duration_ns"] * mine["sm_clock_hz"]).sum()
        assert row["ncu_sm_clock_hz"] == pytest.approx(cycles / mine["duration_ns"].sum(), rel=1e-9)
        k = kernels[kernels["benchmark"] == name]
        assert list(k["duration_ns"]) == list(mine["duration_ns"])
        assert list(k["kernel_short"]) == list(mine["kernel_short"])
    assert set(kernels["clock_model"]) <= {"compute", "memory", "compute_assumed"}
    assert list(kernels.columns) == list(KERNEL_COLUMNS)


def _busy(starts: np.ndarray, ends: np.ndarray) -> float:
    """Length of the union of [start, end) intervals, by a sweep written here."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(zip(starts.tolist(), ends.tolist(), strict=True)):
        if cur_e is None or s > cur_e:
            total += 0.0 if cur_e is None else cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (0.0 if cur_e is None else cur_e - cur_s)


def test_nsys_columns_are_the_ops_launched_in_each_iteration(frame: pd.DataFrame, nsys: Any) -> None:
    ops = nsys.ops.sort_values("launch_start_ns").reset_index(drop=True)
    launch = ops["launch_start_ns"].to_numpy(dtype=float, na_value=np.nan)
    for name, row in frame.iterrows():
        iters = nsys.ranges[nsys.ranges["path"].str.fullmatch(rf"nsightwrap:{re.escape(str(name))}/iter\d+")]
        assert len(iters) > 0
        kern, busy, span = [], [], []
        for r in iters.itertuples():
            # An op belongs to the iteration when its launch call started inside the range, on
            # the range's thread (push/pop ranges are per thread).
            lo, hi = np.searchsorted(launch, [r.start_ns, r.end_ns], side="left")
            mine = ops.iloc[lo:hi]
            mine = mine[mine["launch_tid"] == r.global_tid]
            kern.append(float(mine.loc[mine["kind"] == "kernel", "duration_ns"].sum()))
            busy.append(_busy(mine["start_ns"].to_numpy(), mine["end_ns"].to_numpy()))
            span.append(float(mine["end_ns"].max() - mine["start_ns"].min()) if len(mine) else 0.0)
        assert row["nsys_kernel_ns"] == pytest.approx(statistics.median(kern)), name
        assert row["nsys_busy_ns"] == pytest.approx(statistics.median(busy)), name
        assert row["nsys_span_ns"] == pytest.approx(statistics.median(span)), name
    # copy_1g launches no kernel: its GPU time is all the copy's.
    assert frame.loc["copy_1g", "nsys_kernel_ns"] == 0.0 and frame.loc["copy_1g", "nsys_busy_ns"] > 400_000


def test_verdicts_are_the_report_json_of_the_cli(tmp_path: Path) -> None:
    for options, kwargs in (([], {}), (["--tolerance", "60", "--clock-ref", "1.5e9"], {"tolerance": 0.6, "clock_ref": "1.5e9"})):
        cp = subprocess.run(
            [sys.executable, "-m", "nsightwrap", "report", str(RUN), "-f", "json", *options],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert cp.returncode == 0, cp.stderr
        doc = json.loads(cp.stdout)
        df = nw.load_run(RUN, **kwargs).to_frame().set_index("name")
        assert list(df.index) == [b["name"] for b in doc["benchmarks"]]
        for b in doc["benchmarks"]:
            row = df.loc[b["name"]]
            assert row["verdict"] == b["verdict"]
            assert row["causes"] == ",".join(c["code"] for c in b["causes"])
            for col, key in (("ratio", "ratio"), ("ref_clock_hz", "ref_clock_hz")):
                if b[key] is None:
                    assert np.isnan(row[col])
                else:
                    assert row[col] == pytest.approx(b[key], rel=1e-12)
        verdicts = dict(zip(df.index, df["verdict"], strict=True))
        if not options:
            assert [n for n, v in verdicts.items() if v == "flagged"] == ["add_small"]
            assert verdicts["copy_1g"] == "explained"  # a copy, which ncu cannot see, measured by nsys
        else:
            assert verdicts["add_small"] == "ok"  # 1.49x is within 60%


def test_full_html_is_the_html_report(run: nw.Run, tmp_path: Path, monkeypatch, capsys) -> None:
    import matplotlib

    from nsightwrap.cli import main

    # matplotlib's SVG ids and date are random by default: pin them so two renders compare.
    monkeypatch.setitem(matplotlib.rcParams, "svg.hashsalt", "nsightwrap-test")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    out = tmp_path / "report.html"
    with pytest.raises(SystemExit) as exc:
        main(["report", str(RUN), "--format", "html", "-o", str(out)])
    assert exc.value.code in (0, None), capsys.readouterr().err
    html = run.full_html()
    assert html == out.read_text(encoding="utf-8")
    from nsightwrap.export.html import roofline_html

    # a bar chart per benchmark, the clock trace, a waterfall per flagged benchmark, the roofline
    svgs = len(run.benchmarks) + 1 + len(run.flagged) + "".join(roofline_html(run.result)).count("<svg")
    assert html.startswith("<!DOCTYPE html>") and html.count("<svg") >= svgs
    assert html.count("class='chart waterfall'") == len(run.flagged)
    assert repr(run) == f"<nsightwrap run {RUN}: 7 benchmarks, 1 flagged>"


def _style_selectors(fragment: str) -> list[str]:
    css = "".join(re.findall(r"<style>(.*?)</style>", fragment, re.S))
    return [sel.strip() for rule in css.split("}") if "{" in rule for sel in rule.split("{")[0].split(",")]


def test_notebook_display_is_scoped_compact_and_small(run: nw.Run) -> None:
    from lxml import html as lhtml

    shown = run._repr_html_()
    assert len(shown.encode()) < 30_000  # the full report is ~260 KB; the display is a few KB
    root = lhtml.fragment_fromstring(shown)  # one element: everything inside the report's root
    rid = root.get("id")
    assert root.tag == "div" and rid and rid.startswith("nsightwrap-")
    assert len(re.findall("<style", shown)) == 1 and root.find("style") is not None
    sels = _style_selectors(shown)
    assert len(sels) >= 10
    # Every rule under the root's id: nothing global such as body, table or h1 reaches the page.
    assert all(sel == f"#{rid}" or sel.startswith(f"#{rid} ") for sel in sels), sels
    assert not re.search(r"<(html|head|body|script|svg|h1)\b", shown)
    assert rid != nw.load_run(RUN)._repr_html_().split("id='")[1].split("'")[0]  # unique per display
    # Counts first, then the worst few (the two flagged ones first), all seven behind a click.
    text = root.text_content()
    assert "7 benchmarks: 5 ok, 1 explained, 1 flagged" in text  # the report's count line
    open_table, all_table = root.findall(".//table")
    names = [td.text_content() for td in open_table.findall(".//td[@class='name']")]
    assert len(names) == 5 and names[:2] == ["add_small", "copy_1g"]
    details = root.find(".//details")
    assert details is not None and details.find(".//table") is all_table
    assert sorted(td.text_content() for td in all_table.findall(".//td[@class='name']")) == sorted(
        b.name for b in run.benchmarks
    )
    assert "run.full()" in text and "--format html" in text


def test_notebook_display_stays_small_at_1000_benchmarks(run: nw.Run) -> None:
    from dataclasses import replace

    from lxml import html as lhtml

    from nsightwrap.export.notebook_html import MAX_ALL, WORST

    many = tuple(replace(b, name=f"{b.name}_{i}") for i in range(143) for b in run.benchmarks)[:1000]
    shown = nw.Run(replace(run.result, benchmarks=many))._repr_html_()
    assert len(shown.encode()) < 60_000
    root = lhtml.fragment_fromstring(shown)
    open_table, all_table = root.findall(".//table")
    assert len(open_table.findall(".//tbody/tr")) == WORST and len(all_table.findall(".//tbody/tr")) == MAX_ALL
    assert f"{1000 - MAX_ALL} more in run.to_frame()" in root.find(".//summary").text_content()


def test_names_in_the_display_are_data(run: nw.Run) -> None:
    from dataclasses import replace

    b = replace(run.benchmarks[0], name="<script>alert(1)</script>\x1b[2J", params={})
    shown = nw.Run(replace(run.result, benchmarks=(b,)))._repr_html_()
    assert "<script>" not in shown and "\x1b" not in shown
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[2J" in shown


def test_full_report_is_shown_in_a_sandboxed_iframe(run: nw.Run) -> None:
    import html as stdhtml

    full = run.full()
    shown = full._repr_html_()
    assert shown.startswith("<iframe srcdoc=\"") and "sandbox=" in shown
    srcdoc = shown[len('<iframe srcdoc="') : shown.index('" sandbox=')]
    assert "<style>" not in srcdoc and '"' not in srcdoc  # the page's CSS is inside the frame only
    assert stdhtml.unescape(srcdoc) == full.document and full.document.startswith("<!DOCTYPE html>")
    assert repr(full) == f"<nsightwrap full report: {len(full.document):,} characters of HTML>"


def test_reprs_are_one_short_line(run: nw.Run, nsys: Any) -> None:
    res = run.result
    b = run.benchmark("mm_large")
    assert b.timer and b.ncu and b.nsys and b.gap and b.roofline
    objs = [res, b, b.timer, b.ncu, b.nsys, b.gap, b.gap.parts[0], b.roofline, b.ncu.kernels[0], nsys, run]
    for o in objs:
        r = repr(o)
        assert "\n" not in r and len(r) < 200, (type(o).__name__, len(r))
    assert repr(res) == f"RunResult({str(RUN)!r}: 7 benchmarks: 5 ok, 1 flagged, 1 explained)"
    assert repr(b).startswith("BenchmarkResult('mm_large', ok, ratio 1.005, timer 281.09 us, ncu 279.81 us")
    assert repr(b.timer) == f"TimerStats(median 281.09 us, n={b.timer.n}, clock 1.611 GHz)"
    assert f"{len(b.ncu.kernels)} kernels" in repr(b.ncu) and f"{len(b.nsys.iterations_ns)} iterations" in repr(b.nsys)
    assert repr(b.gap).startswith("Gap(total -2.40 us = clock -3.68 us") and "residual" in repr(b.gap)
    assert repr(b.ncu.kernels[0]).startswith(f"KernelTiming({b.ncu.kernels[0].kernel_short!r}, iteration 0")


def test_benchmark_by_name(run: nw.Run) -> None:
    b = run.benchmark("add_small")
    assert b.verdict.value == "flagged" and [c.code.value for c in b.causes] == ["front_end"]
    assert [x.name for x in run.flagged] == ["add_small"]
    assert run.path == RUN
    with pytest.raises(KeyError, match="no benchmark 'nope'.*mm_large"):
        run.benchmark("nope")


# -- the documented columns ------------------------------------------------------------------------


def test_frames_have_the_documented_columns(run: nw.Run) -> None:
    assert doc_columns("Run.to_frame()") == list(BENCHMARK_COLUMNS)
    assert doc_columns("Run.kernels()") == list(KERNEL_COLUMNS)
    df = run.to_frame()
    for col in df.columns:  # a column's name ends in its unit, and holds numbers
        if col.endswith(("_ns", "_hz", "_pct")) or col in ("ratio", "ratio_raw"):
            assert df[col].dtype == np.float64, col
    assert df["timer_n"].dtype == "Int64"


def test_read_ncu_has_the_documented_columns(ncu: pd.DataFrame) -> None:
    documented = doc_columns("read_ncu(path)")
    assert list(ncu.columns[: len(documented)]) == documented
    assert "gpu__time_duration.sum" in ncu.columns  # then every metric under its ncu name
    assert (ncu["duration_ns"] == ncu["gpu__time_duration.sum"]).all()  # base unit: ns
    assert ncu["sm_clock_hz"].between(1e8, 3e9).all()  # Hz, not MHz or GHz
    assert ncu["kernel_short"].iloc[0] == "nvjet_sm90_tst_320x128_64x3_1x2_h_bz_coopB_TNT"


def test_read_nsys_has_the_documented_columns(nsys: Any, tmp_path: Path) -> None:
    # Every column documented, none undocumented (the docs group related ones in one row).
    assert sorted(nsys.ops.columns) == sorted(doc_columns("read_nsys(path"))
    assert sorted(nsys.ranges.columns) == sorted(_ranges_doc_columns())
    assert list(nsys.attribution.columns) == ["op_id", "range_id"]
    assert nsys.has_nvtx and nsys.meta["EXPORT_PRODUCT_NAME"] == "NVIDIA Nsight Systems"
    # The kernels are those of the export's own kernel table (read here with sqlite3).
    db = tmp_path / "report.sqlite"
    db.write_bytes(gzip.decompress(NSYS_SQLITE.read_bytes()))
    with sqlite3.connect(db) as con:
        n, total = con.execute('SELECT count(*), sum("end" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL').fetchone()
    kernels = nsys.ops[nsys.ops["kind"] == "kernel"]
    assert (len(kernels), int(kernels["duration_ns"].sum())) == (n, total)


def _ranges_doc_columns() -> list[str]:
    text = DOC.read_text()
    block = text[text.index("`.ranges`, one row per NVTX range") :].split("\n\n")[1]
    return [name for row in block.splitlines() if row.startswith("| `") for name in re.findall(r"`([^`]+)`", row.split("|")[1])]


def test_the_documented_examples_run(monkeypatch) -> None:
    # The code blocks of docs/notebook.md and the README's notebook section, as written.
    monkeypatch.chdir(ROOT)
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    readme = (ROOT / "README.md").read_text()
    blocks += [b for b in re.findall(r"```python\n(.*?)```", readme, re.S) if "load_run" in b]
    assert len(blocks) >= 2
    for code in blocks:
        ns: dict[str, Any] = {}
        exec(compile(code, "<doc>", "exec"), ns)  # noqa: S102 - the repository's own docs
        assert isinstance(ns["run"], nw.Run)


# -- bad input: one clear line ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "path", "error", "says"),
    [
        (nw.load_run, "no/such/run", InputNotFound, "not found; give the run directory"),
        (nw.load_run, "fixtures/runs/h200-example/manifest.json", InputNotFound, "is a file, not a run directory"),
        (nw.read_ncu, "no/such.ncu-rep", InputNotFound, "not found; give the path of an Nsight Compute report"),
        (nw.read_ncu, "fixtures/runs/h200-example", InputNotFound, "is a directory; give the path of an Nsight Compute report"),
        (nw.read_ncu, "fixtures/runs/h200-example/nsys/report.sqlite.gz", ReportParseError, "read it with read_nsys"),
        (nw.read_nsys, "no/such.sqlite", InputNotFound, "not found; give the path of an Nsight Systems export"),
        (nw.read_nsys, "fixtures/runs/h200-example/ncu/report.ncu-rep.gz", ReportParseError, "read it with read_ncu"),
        (nw.read_nsys, "fixtures/runs/h200-example/plain/smi_samples.csv", ReportParseError, "load the run directory"),
    ],
)  # fmt: skip
def test_bad_input_is_one_clear_line(call: Any, path: str, error: type, says: str, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    with pytest.raises(error) as exc:
        call(path)
    msg = str(exc.value)
    assert says in msg and path in msg and "\n" not in msg
    assert exc.value.exit_code == 2


def test_empty_report_names_the_file(tmp_path: Path) -> None:
    empty = tmp_path / "report.ncu-rep"
    empty.write_bytes(b"")
    with pytest.raises(ReportParseError, match=rf"{re.escape(str(empty))} is empty"):
        nw.read_ncu(empty)


# -- a .nsys-rep without nsys ----------------------------------------------------------------------


needs_no_nsys = pytest.mark.skipif(bool(known_locations("nsys")), reason="nsys is installed where nsightwrap looks")


@needs_no_nsys
def test_nsys_rep_reads_the_export_beside_it(nsys: Any, monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("NSIGHTWRAP_NSYS", raising=False)
    rep = nw.read_nsys(NSYS_REP)  # the run keeps report.sqlite.gz beside it: no nsys needed
    pd.testing.assert_frame_equal(rep.ops, nw.read_nsys(NSYS_REP.with_name("report.sqlite.gz")).ops)
    alone = tmp_path / "report.nsys-rep"
    shutil.copy(NSYS_REP, alone)
    with pytest.raises(ToolNotFound) as exc:
        nw.read_nsys(alone)
    assert "needs nsys to export it" in str(exc.value)
    assert isinstance(exc.value, NsightwrapError) and exc.value.exit_code == 3
