"""The stored analysis (analysis/store.py): a run is analysed once and read back while nothing it
was computed from changed; a changed input, another setting or another nsightwrap is never read.

Every test stores into its own copy of a shipped H200 run (fixtures/ is never written), with
the store turned on for it and the user's cache in tmp_path."""

from __future__ import annotations

import copy
import gzip
import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from fake_tools.harness import TARGET, profile, use_fakes

from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.store import STORE_ENV, arrays_path, store_paths
from nsightwrap.cli import main
from nsightwrap.core.contract import ENV_NSYS_ITERATIONS
from nsightwrap.core.errors import ReportParseError
from nsightwrap.export.jsonio import write_report_json

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(STORE_ENV, "on")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    dst = tmp_path / "run"
    shutil.copytree(RUNS / "h200-blog", dst)
    return dst


def report(capsys: pytest.CaptureFixture[str], run: Path, *args: str) -> tuple[str, str]:
    """(stdout, the analysis line on stderr) of ``nsightwrap report RUN ARGS``."""
    with pytest.raises(SystemExit) as exc:
        main(["report", str(run), *args])
    assert exc.value.code in (0, None)
    out, err = capsys.readouterr()
    return out, next(ln for ln in err.splitlines() if ln.startswith("analysis: "))


def test_first_report_stores_the_next_reads_it(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out1, line1 = report(capsys, run, "--format", "json", "--detail")
    assert line1.startswith("analysis: computed (no stored analysis); stored in ") and line1.endswith("report.json.gz")
    assert (run / "analysis" / "report.json.gz").is_file()
    out2, line2 = report(capsys, run, "--format", "json", "--detail")
    assert line2.startswith("analysis: stored (") and line2.endswith(", inputs unchanged)")
    assert out2 == out1  # every row, read back exactly
    # ... and the same as a fresh analysis of the run, row for row.
    assert json.loads(out2) == json.loads(write_report_json(analyze(run), detail=True))
    md_fresh, _ = report(capsys, run, "--format", "md", "--reanalyze")
    md_stored, line = report(capsys, run, "--format", "md")
    assert line.startswith("analysis: stored (") and md_stored == md_fresh


def test_another_tolerance_or_clock_is_never_read_from_the_store(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report(capsys, run, "--format", "json")
    out, line = report(capsys, run, "--format", "json", "--tolerance", "1")
    assert line.startswith("analysis: recomputed (--tolerance 1% (stored: 10%))")
    doc = json.loads(out)
    assert doc["settings"]["tolerance"] == 0.01
    assert [b["verdict"] for b in doc["benchmarks"]] == [b.verdict.value for b in analyze(run, tolerance=0.01).benchmarks]
    _, line = report(capsys, run, "--format", "json", "--tolerance", "1")
    assert line.startswith("analysis: stored (")
    out, line = report(capsys, run, "--format", "json", "--tolerance", "1", "--clock-ref", "base")
    assert line.startswith("analysis: recomputed (--clock-ref base (stored: plain))")
    assert json.loads(out)["settings"]["clock_ref"] == "base"


def test_a_changed_input_is_analysed_again(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = report(capsys, run, "--format", "json")
    before = {b["name"]: b["timer"]["median_ns"] for b in json.loads(out)["benchmarks"] if b["timer"]}
    sidecar = next((run / "plain").glob("timer-*.json"))
    doc = json.loads(sidecar.read_text())
    for b in doc["benchmarks"]:  # every timing twice as long
        b["samples_ns"] = [2 * v for v in b["samples_ns"]]
    sidecar.write_text(json.dumps(doc))
    out, line = report(capsys, run, "--format", "json")
    assert line.startswith(f"analysis: recomputed (plain/{sidecar.name} changed)")
    after = {b["name"]: b["timer"]["median_ns"] for b in json.loads(out)["benchmarks"] if b["timer"]}
    assert after and all(after[k] == pytest.approx(2 * before[k]) for k in before)
    # A file added to the run (another process's sidecar) counts too.
    shutil.copy(sidecar, sidecar.with_name("timer-999999.json"))
    _, line = report(capsys, run, "--format", "md")
    assert line.startswith("analysis: recomputed (plain/timer-999999.json added)")


def test_another_nsightwrap_or_a_broken_store_is_analysed_again(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report(capsys, run, "--format", "md")
    path = run / "analysis" / "report.json.gz"
    doc = json.loads(gzip.decompress(path.read_bytes()))
    path.write_bytes(gzip.compress(json.dumps({**doc, "code": "another"}).encode()))
    _, line = report(capsys, run, "--format", "md")
    assert line.startswith("analysis: recomputed (nsightwrap's code changed)")
    path.write_bytes(path.read_bytes()[:100])  # truncated: read as missing, never an error
    _, line = report(capsys, run, "--format", "md")
    assert line.startswith("analysis: computed (no stored analysis)")
    _, line = report(capsys, run, "--format", "md", "--reanalyze")
    assert line.startswith("analysis: recomputed (--reanalyze)")


def test_a_run_directory_it_cannot_write_keeps_its_analysis_in_the_cache(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (run / "analysis").write_text("not a folder")  # the run directory's place cannot be made
    _, line = report(capsys, run, "--format", "md")
    cached = store_paths(run)[1]
    assert line.endswith(f"stored in {cached}") and cached.is_relative_to(tmp_path / "cache")
    _, line = report(capsys, run, "--format", "md")
    assert line.startswith("analysis: stored (")


def test_off_neither_stores_nor_reads(run: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(STORE_ENV, "off")
    _, line = report(capsys, run, "--format", "md")
    assert line == f"analysis: computed (not stored: {STORE_ENV} is off)"
    assert not (run / "analysis").exists()


def test_load_run_and_compare_read_the_stored_analysis(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import nsightwrap as nw

    first = nw.load_run(run)
    assert first.analysis.startswith("analysis: computed")
    second = nw.load_run(run)
    assert second.analysis.startswith("analysis: stored (") and second.result == first.result
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(run), str(run), "--metric", "ncu", "--format", "json", "--no-fail"])
    assert exc.value.code in (0, None)
    out, err = capsys.readouterr()
    assert err.count(f"{run}: analysis: stored (") == 2
    assert json.loads(out)["benchmarks"]
    assert nw.load_run(run, tolerance=0.02).analysis.startswith("analysis: recomputed (--tolerance 2%")


def test_profile_stores_its_analysis_for_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(STORE_ENV, "on")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    use_fakes(monkeypatch, tmp_path)
    r = profile(capsys, "-o", "run", "--passes", "plain,nsys", "--no-checks", str(TARGET))
    assert r.code == 0, r.err
    assert (tmp_path / "run" / "analysis" / "report.json.gz").is_file()
    _, line = report(capsys, tmp_path / "run", "--format", "md")
    assert line.startswith("analysis: stored (") and line.endswith("inputs unchanged)")


def test_the_arrays_file_beside_the_document_holds_the_long_lists(run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The samples and per-iteration rows are kept in report.arrays.npz, not as JSON text; what is
    read back is the fresh analysis, every format byte for byte."""
    fresh = {fmt: report(capsys, run, *args, "--reanalyze")[0] for fmt, args in FORMATS.items()}
    doc = json.loads(gzip.decompress((run / "analysis" / "report.json.gz").read_bytes()))
    lists = doc["arrays"]["lists"]
    assert any(path[-1] == "samples_ns" for path, *_ in lists) and doc["arrays"]["floats"] > 0
    first = lists[0][0]
    at = doc["report"]
    for key in first:
        at = at[key]
    assert at is None  # in the document, only where the list goes
    assert arrays_path(run / "analysis" / "report.json.gz").is_file()
    for fmt, args in FORMATS.items():
        out, line = report(capsys, run, *args)
        assert line.startswith("analysis: stored (") and out == fresh[fmt], fmt


FORMATS = {"table": ("--format", "table"), "md": ("--format", "md"), "json": ("--format", "json"),
           "detail": ("--format", "json", "--detail"), "html": ("--format", "html")}  # fmt: skip


@pytest.mark.parametrize("damage", ["missing", "truncated", "zeroed", "another write's", "fewer numbers"])
def test_a_damaged_or_partial_arrays_file_is_analysed_again(
    run: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    out1, _ = report(capsys, run, "--format", "json", "--detail")
    path = arrays_path(run / "analysis" / "report.json.gz")
    data = path.read_bytes()
    if damage == "missing":
        path.unlink()
    elif damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "zeroed":  # the numbers' bytes overwritten, the zip's layout kept
        mid = len(data) // 2
        path.write_bytes(data[:mid] + bytes(4096) + data[mid + 4096 :])
    else:
        with np.load(path) as z:
            floats, ints, token = z["floats"], z["ints"], str(z["token"])
        if damage == "another write's":
            token = "0" * 32
        else:
            floats = floats[:-1]
        np.savez(path, floats=floats, ints=ints, token=np.array(token))
    out2, line = report(capsys, run, "--format", "json", "--detail")
    assert line.startswith("analysis: recomputed (stored analysis unreadable ("), line
    assert out2 == out1
    _, line = report(capsys, run, "--format", "md")
    assert line.startswith("analysis: stored (")  # the analysis again stored whole


def test_another_nsys_iteration_cap_is_never_read_from_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # h200-example's add_small ran 1,000 nsys iterations: the default cap (256) analyses part of them.
    monkeypatch.setenv(STORE_ENV, "on")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(ENV_NSYS_ITERATIONS, raising=False)
    run = tmp_path / "run"
    shutil.copytree(RUNS / "h200-example", run)

    def capped(doc: dict[str, object]) -> list[str]:
        return [str(b["name"]) for b in doc["benchmarks"]  # type: ignore[attr-defined]
                if any("nsys iterations analysed" in n for n in b["notes"])]  # fmt: skip

    out, line = report(capsys, run, "--format", "json")
    assert line.startswith("analysis: computed")
    assert capped(json.loads(out))
    monkeypatch.setenv(ENV_NSYS_ITERATIONS, "0")
    out, line = report(capsys, run, "--format", "json")
    assert line.startswith("analysis: recomputed (NSIGHTWRAP_NSYS_ITERATIONS=0 (stored: unset))")
    assert capped(json.loads(out)) == []  # every iteration read
    _, line = report(capsys, run, "--format", "json")
    assert line.startswith("analysis: stored (")


def test_json_and_compare_from_the_stored_document_are_those_made_from_the_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``report --format json [--detail]`` and ``compare`` by ncu or nsys write from the stored
    analysis's document (``Analysis.doc``, its rows read back as tuples), not from the result:
    the same bytes as a fresh analysis with the store off makes from the result."""
    from nsightwrap.cli.report_cmd import run_analysis

    monkeypatch.setenv(STORE_ENV, "on")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    run = tmp_path / "run"
    shutil.copytree(RUNS / "h200-blog", run)

    def compare(metric: str) -> tuple[int | str | None, str]:
        with pytest.raises(SystemExit) as exc:
            main(["compare", str(run), str(run), "--metric", metric, "--format", "json", "--no-fail"])
        return exc.value.code, capsys.readouterr().out

    _, line = report(capsys, run, "--format", "md")
    assert line.startswith("analysis: computed")
    had = run_analysis(run)
    assert had.how == "stored" and had.doc is not None and had.doc["detail"] is True
    # The long lists come back as tuples: the path that writes them is the one under test.
    assert any(isinstance(b["timer"]["samples_ns"], tuple) for b in had.doc["benchmarks"] if b.get("timer"))
    for detail in (False, True):
        assert write_report_json(had.result, detail=detail, doc=had.doc) == write_report_json(had.result, detail=detail)
    stored = {fmt: report(capsys, run, *FORMATS[fmt])[0] for fmt in ("json", "detail")}
    compared = {m: compare(m) for m in ("ncu", "nsys")}
    assert any(code in (0, None) and out for code, out in compared.values())
    monkeypatch.setenv(STORE_ENV, "off")
    for fmt, text in stored.items():
        assert report(capsys, run, *FORMATS[fmt])[0] == text, fmt
    for m, (code, out) in compared.items():
        assert compare(m) == (code, out), m


def test_a_report_documents_lists_as_tuples_read_as_lists_and_a_bad_sample_named() -> None:
    """Samples given as a tuple (the stored analysis's document) read as the same list would; a
    bool, NaN, zero or negative sample is still named in the error, as before."""
    from nsightwrap.compare.sides import side_from_report

    doc = json.loads(write_report_json(analyze(RUNS / "h200-blog"), detail=True))
    as_lists = side_from_report(doc, label="a", metric="timer", where="a")
    tupled = copy.deepcopy(doc)
    for b in tupled["benchmarks"]:
        for k in ("samples_ns", "sample_clock_hz"):
            if isinstance(b["timer"].get(k), list):
                b["timer"][k] = tuple(b["timer"][k])
    assert side_from_report(tupled, label="a", metric="timer", where="a") == as_lists
    for bad in (True, math.nan, 0.0, -1.0, "1"):
        broken = copy.deepcopy(doc)
        broken["benchmarks"][0]["timer"]["samples_ns"][3] = bad
        with pytest.raises(ReportParseError, match=rf"'samples_ns' holds {re.escape(repr(bad))}; expected positive numbers"):
            side_from_report(broken, label="a", metric="timer", where="a")
