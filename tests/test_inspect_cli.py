"""``nsightwrap inspect`` end to end: formats in-process through the CLI entry point, bad input
and the .nsys-rep export through the real command in a subprocess (one red line, exit code)."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from nsightwrap.cli import main
from nsightwrap.core.errors import InputNotFound, ReportParseError
from nsightwrap.export.escape import html, md_cell
from nsightwrap.parsers.kind import ReportKind, detect
from nsightwrap.parsers.nsys import read_nsys
from nsightwrap.run.tools import known_locations

ROOT = Path(__file__).resolve().parent.parent
REF = ROOT / "fixtures" / "reference" / "h200-workload"
SQLITE = REF / "workload.sqlite"
SCEN = ROOT / "fixtures" / "captures" / "scenarios"
FAKE_NSYS = Path(__file__).resolve().parent / "fake_nsys.py"


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        main(["inspect", *args])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(r: subprocess.CompletedProcess[str], code: int, *needles: str) -> None:
    assert r.returncode == code, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in r.stderr
    for n in needles:
        assert n in lines[0]


# --- formats --------------------------------------------------------------------------------


def test_table_into_a_pipe_keeps_every_row_on_one_line() -> None:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    r = subprocess.run([sys.executable, "-m", "nsightwrap", "inspect", str(SQLITE)], capture_output=True, text=True,
                       env=env, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith("│")]
    ops = read_nsys(SQLITE).ops
    assert len(rows) == len(ops)  # one line per op: no cell folded onto a second line
    longest = max(ops["short_name"].dropna(), key=len)
    assert len(longest) > 40 and any(longest in ln for ln in rows)


def test_by_range_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, str(SQLITE), "--by", "range", "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert len(rows) == 105
    keys = {"range", "ops", "kernels", "memcpy", "memset", "gpu_time_ns", "busy_ns", "span_ns"}
    assert all(keys <= set(r) for r in rows)
    by = {r["range"]: r for r in rows}
    assert by["mm_small"]["gpu_time_ns"] == 1050780
    assert by["mm_small"]["span_ns"] == 1621689
    assert by["copy_1g/copy_1g/iter7"]["memcpy"] == 1
    assert by["copy_1g/copy_1g/iter7"]["kernels"] == 0
    assert [r["range"] for r in rows][:2] == ["mm_small", "mm_small/mm_small/iter0"]


def test_by_kernel_csv_has_every_op_and_its_range(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, str(SQLITE), "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 297
    mm = [r for r in rows if r["short_name"] == "nvjet_sm90_tst_64x32_64x16_1x2_h_bz_TNT"]
    # 20 measured calls in their iteration ranges, plus the warm-up call outside any range.
    assert sorted(r["nvtx_path"] for r in mm if r["nvtx_path"]) == sorted(
        f"mm_small/mm_small/iter{i}" for i in range(20)
    )
    assert sum(1 for r in mm if not r["nvtx_path"]) == 1
    fills = [r for r in rows if "FillFunctor" in r["name"]]
    assert {r["nvtx_path"] for r in fills} == {"mm_small", "mm_skinny", "mm_large", "copy_1g", "softmax_mlp"}


def test_markdown_escapes_kernel_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, str(SQLITE), "--format", "md")
    assert code == 0
    lines = out.strip().splitlines()
    assert len(lines) == 2 + 297
    header_cells = lines[0].count(" | ")
    for line in lines:
        assert line.startswith("| ") and line.endswith(" |")
        # No raw "<" or ">" and no unescaped "|" inside a cell: each row has the header's cells.
        assert "<" not in line and ">" not in line
        assert line.replace("\\|", "").count(" | ") == header_cells
    assert any("FillFunctor&lt;unsigned char&gt;" in line for line in lines)


def test_table_and_help(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = cli(capsys, str(SQLITE), "--by", "range")
    assert code == 0
    assert "mm_small/mm_small/iter0" in out and "1,050,780" in out and "1,621,689" in out
    code, out, _ = cli(capsys, "--help")
    assert code == 0
    assert "Examples" in out and "--by range" in out


def test_ncu_report_by_range(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, str(REF / "workload.ncu-rep.gz"), "--by", "range", "--format", "json")
    assert code == 0
    by = {r["range"]: r for r in json.loads(out)}
    # ncu matched the mm_* ranges only, 3 iterations: fill kernel + matmul per iteration.
    assert by["mm_small"]["kernels"] == 6
    assert by["mm_small/mm_small/iter0"]["kernels"] == 1
    assert by["mm_small/mm_small/iter0"]["gpu_time_ns"] == 13024
    assert by["mm_small"]["busy_ns"] is None and by["mm_small"]["span_ns"] is None
    assert not any(r.startswith("copy_1g") for r in by)


def test_nvidia_smi_files(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, str(REF / "nvidia-smi-q-x.xml"), "--format", "json")
    assert code == 0
    info = {r["field"]: r["value"] for r in json.loads(out)}
    assert info["name"] == "NVIDIA H200" and info["clocks.sm_hz"] == 1.98e9
    assert info["clock_event_reasons"] == ["gpu_idle"]
    code, out, _ = cli(capsys, str(REF / "smi_samples.csv"), "--format", "csv")
    assert code == 0
    lines = (REF / "smi_samples.csv").read_text().strip().splitlines()
    assert len(out.strip().splitlines()) == len(lines)  # header + one row per sample


def test_timer_sidecar(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    side = tmp_path / "timer-1.json"
    bench = {"name": "mm_small", "n": 20, "median_ns": 17312, "min_ns": 16640, "mean_ns": 30000,
             "stdev_ns": 50000, "sm_clock_hz": None, "clock_source": "none", "nvtx_path": "nsightwrap:mm_small"}  # fmt: skip
    side.write_text(json.dumps({"format": "nsightwrap-timer", "version": 1, "benchmarks": [bench]}))
    code, out, _ = cli(capsys, str(side), "--format", "json")
    assert code == 0
    assert json.loads(out)[0]["median_ns"] == 17312
    side.write_text(json.dumps({"format": "nsightwrap-timer", "version": 9, "benchmarks": []}))
    code, _, err = cli(capsys, str(side))
    assert code == 2 and "version 9" in err


# --- report kinds -------------------------------------------------------------------------


def test_detect_by_content(tmp_path: Path) -> None:
    assert detect(SQLITE) is ReportKind.NSYS_SQLITE
    assert detect(REF / "workload.ncu-rep.gz") is ReportKind.NCU_REP
    assert detect(REF / "workload_raw.csv") is ReportKind.NCU_CSV
    assert detect(REF / "workload_raw_base.csv") is ReportKind.NCU_CSV
    assert detect(REF / "nvidia-smi-q-x.xml") is ReportKind.SMI_XML
    assert detect(REF / "smi_samples.csv") is ReportKind.SMI_CSV
    renamed = tmp_path / "capture.txt"
    shutil.copy(SQLITE, renamed)
    assert detect(renamed) is ReportKind.NSYS_SQLITE  # content, not extension
    real_rep = tmp_path / "capture.bin"
    shutil.copy(SCEN / "scenarios.nsys-rep", real_rep)
    assert detect(real_rep) is ReportKind.NSYS_REP  # by its banner
    (tmp_path / "r.nsys-rep").write_bytes(b"\x00\x01binary")
    assert detect(tmp_path / "r.nsys-rep") is ReportKind.NSYS_REP
    (tmp_path / "r.qdstrm").write_bytes(b"\x00\x01binary")
    assert detect(tmp_path / "r.qdstrm") is ReportKind.QDSTRM
    with pytest.raises(ReportParseError, match="not a report nsightwrap knows"):
        detect(REF / "events.json")  # the workload's own JSON is no nsightwrap format
    (tmp_path / "empty.sqlite").write_bytes(b"")
    with pytest.raises(ReportParseError, match="is empty"):
        detect(tmp_path / "empty.sqlite")
    with pytest.raises(InputNotFound, match="is a directory"):
        detect(tmp_path)


def test_escaping() -> None:
    name = "void f<int, |x|>(T *, a_b)"
    assert md_cell(name) == "void f&lt;int, \\|x\\|&gt;(T \\*, a\\_b)"
    assert md_cell("a\nb") == "a b"
    assert html('k<"&">') == "k&lt;&quot;&amp;&quot;&gt;"


# --- bad input through the real command -------------------------------------------------------


def test_bad_inputs_are_one_line_exit_2(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("just some notes\n")
    cut = tmp_path / "cut.sqlite"
    cut.write_bytes(SQLITE.read_bytes()[:4096])
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as con:
        con.execute("CREATE TABLE people (name TEXT)")
    bare = tmp_path / "bare.sqlite"
    shutil.copy(SQLITE, bare)
    with sqlite3.connect(bare) as con:
        con.execute("DELETE FROM NVTX_EVENTS")
    cases = [
        ([str(tmp_path / "missing.sqlite")], ("missing.sqlite", "does not exist")),
        ([str(text)], ("notes.txt", "not a report nsightwrap knows")),
        ([str(cut)], ("cut.sqlite", "truncated or corrupt", "nsys export --type sqlite")),
        ([str(other), "--by", "range"], ("other.sqlite", "not an nsys export")),
        ([str(bare), "--by", "range"], ("bare.sqlite", "no NVTX ranges", "--by kernel")),
    ]
    # Started together: each pays the interpreter's start-up, not one after another.
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "nsightwrap", "inspect", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )  # fmt: skip
        for args, _ in cases
    ]
    for (args, needles), proc in zip(cases, procs, strict=True):
        out, err = proc.communicate(timeout=120)
        assert_one_line_error(subprocess.CompletedProcess(args, proc.returncode, out, err), 2, *needles)


def test_report_without_nvtx_lists_its_ops(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bare = tmp_path / "bare.sqlite"
    shutil.copy(SQLITE, bare)
    with sqlite3.connect(bare) as con:
        con.execute("DELETE FROM NVTX_EVENTS")
    code, out, _ = cli(capsys, str(bare), "--by", "kernel", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 297 and not any(r["nvtx_path"] for r in rows)


# --- .nsys-rep: exported with nsys (a fake one on PATH) --------------------------------------


@pytest.fixture
def fake_nsys_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "nsys"
    exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_NSYS}" "$@"\n')
    exe.chmod(0o755)
    monkeypatch.delenv("NSIGHTWRAP_NSYS", raising=False)
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.setenv("FAKE_NSYS_SOURCE", str(SQLITE))
    return bindir


def test_nsys_rep_is_exported_beside_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fake_nsys_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rep = tmp_path / "run" / "report.nsys-rep"
    rep.parent.mkdir()
    rep.write_bytes(b"\x00not really an nsys report")
    code, out, err = cli(capsys, str(rep), "--by", "range", "--format", "json")
    assert code == 0, err
    assert len(json.loads(out)) == 105
    exported = rep.with_suffix(".sqlite")
    assert exported.read_bytes() == SQLITE.read_bytes()
    argv = Path(str(exported) + ".argv").read_text().split("\n")
    assert argv[:3] == ["export", "--type", "sqlite"] and argv[-1] == str(rep)
    assert argv[argv.index("-o") + 1] == str(exported)
    # A second inspect reuses the fresh export: the (now failing) nsys is not called.
    monkeypatch.setenv("FAKE_NSYS_FAIL", "1")
    code, out, err = cli(capsys, str(rep), "--by", "range", "--format", "json")
    assert code == 0, err


def test_nsys_rep_export_failure_is_exit_3(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fake_nsys_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rep = tmp_path / "report.nsys-rep"
    rep.write_bytes(b"\x00broken")
    monkeypatch.setenv("FAKE_NSYS_FAIL", "1")
    code, _, err = cli(capsys, str(rep))
    assert code == 3
    assert "report.nsys-rep" in err and "Failed to open the report file" in err


def test_nsys_rep_without_nsys(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rep = tmp_path / "report.nsys-rep"
    rep.write_bytes(b"\x00binary")
    monkeypatch.delenv("NSIGHTWRAP_NSYS", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    code, _, err = cli(capsys, str(rep), "--nsys", str(tmp_path / "no-such-nsys"))
    assert code == 3 and "needs nsys" in err and "no-such-nsys" in err
    assert len(err.strip().splitlines()) == 1
    if known_locations("nsys"):
        return  # an nsys installed at its usual place would be found: the PATH case is moot here
    code, _, err = cli(capsys, str(rep))
    assert code == 3 and "nsys not found" in err and "--nsys" in err


@pytest.mark.gpu
def test_real_nsys_exports_the_scenario_report(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """With a working nsys (the H200 machine: see DEVICE notes for libdw), the real export of
    scenarios.nsys-rep reads like the shipped scenarios.sqlite."""
    from nsightwrap.run.tools import find_tool

    try:
        find_tool("nsys")
    except Exception:
        pytest.skip("nsys not installed")
    rep = tmp_path / "scenarios.nsys-rep"
    shutil.copy(SCEN / "scenarios.nsys-rep", rep)
    code, out, err = cli(capsys, str(rep), "--by", "range", "--format", "json")
    assert code == 0, err
    got = {r["range"]: (r["ops"], r["span_ns"]) for r in json.loads(out)}
    code, out, _ = cli(capsys, str(SCEN / "scenarios.sqlite"), "--by", "range", "--format", "json")
    assert got == {r["range"]: (r["ops"], r["span_ns"]) for r in json.loads(out)}
    assert rep.with_suffix(".sqlite").is_file()


def test_ncu_csv_with_the_profilers_own_lines_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`ncu --csv ... > file` also captures ncu's ==PROF== lines above the CSV header."""
    csv = tmp_path / "captured.csv"
    raw = (REF / "workload_raw.csv").read_text()
    csv.write_text("==PROF== Connected to process 480 (/usr/bin/python3.12)\n" + raw)
    code, out, err = cli(capsys, str(csv), "--format", "json")
    assert code == 0, err
    assert len(json.loads(out)) == 18


def test_output_file_holds_what_each_format_prints(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    sidecar = ROOT / "fixtures" / "runs" / "h200-example" / "plain" / "timer-833.json"  # quick to read
    for fmt in ("csv", "json", "md", "table"):
        code, out, _ = cli(capsys, str(sidecar), "--format", fmt)
        dest = tmp_path / f"timings.{fmt}"
        code_o, out_o, err_o = cli(capsys, str(sidecar), "--format", fmt, "-o", str(dest))
        assert (code, code_o, out_o) == (0, 0, "") and f"written to {dest}" in err_o
        assert dest.read_text() == out, fmt  # the same text, whole (a pipe, like a file, gets no colour)
    assert [r["name"] for r in json.loads((tmp_path / "timings.json").read_text())][:2] == ["mm_large", "mm_skinny"]
    # Written through a temporary that is renamed into place, with the mode any new file gets.
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"timings.{f}" for f in ("csv", "json", "md", "table")]
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "timings.csv").stat().st_mode & 0o777 == 0o666 & ~umask


def test_output_is_not_written_when_the_report_is_bad(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"not a database")
    dest = tmp_path / "ops.csv"
    code, out, err = cli(capsys, str(bad), "--format", "csv", "-o", str(dest))
    assert code == 2 and out == "" and err.startswith("error: ") and not dest.exists()
    code, _, err = cli(capsys, str(SQLITE), "--format", "csv", "-o", str(tmp_path))  # a folder, not a file
    assert code == 2 and f"cannot write {tmp_path}" in err and "choose another -o path" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.sqlite"]
