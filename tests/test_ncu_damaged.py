"""Damaged and partial ncu reports never become verdicts: copies of real H200 reports, cut,
zero-filled, shortened at a block boundary, a gzip bomb and a huge sparse file, read by the real
`nsightwrap report` and `nsightwrap inspect` (one line naming the file, exit 2, the raw files
untouched) and by the parser itself (refused in well under a second, nothing left in the cache)."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from nsightwrap.analysis.load import analyze
from nsightwrap.core.errors import ReportParseError
from nsightwrap.core.unpack import unpacked
from nsightwrap.parsers.ncu import read_ncu_rep

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "fixtures" / "runs" / "h200-example"  # 27 kernels in its ncu report
SWEEP = ROOT / "fixtures" / "runs" / "h200-clock-sweep"  # 9 kernels in each of its three ncu reports


def blocks(data: bytes) -> list[tuple[int, int]]:
    """``(offset, kernels in it)`` of every block of a ``.ncu-rep``, walked independently of the
    parser: ``NVR\\0``, a uint32-length file header, then ``[uint32 n][header of n bytes][payload]``
    with the payload length in header field 5 and the kernel count in field 2 (varints)."""

    def fields(header: bytes) -> dict[int, int]:
        out, i = {}, 0
        while i < len(header):
            key, i = varint(header, i)
            if key & 7 == 0:
                out[key >> 3], i = varint(header, i)
            elif key & 7 == 2:
                n, i = varint(header, i)
                i += n
            else:
                i += 8 if key & 7 == 1 else 4
        return out

    def varint(b: bytes, i: int) -> tuple[int, int]:
        v = s = 0
        while True:
            v |= (b[i] & 0x7F) << s
            s += 7
            i += 1
            if b[i - 1] < 0x80:
                return v, i

    (n,) = struct.unpack_from("<I", data, 4)
    i, out = 8 + n, []
    while i < len(data):
        (n,) = struct.unpack_from("<I", data, i)
        f = fields(data[i + 4 : i + 4 + n])
        out.append((i, f.get(2, 0)))
        i += 4 + n + f.get(5, 0)
    assert i == len(data)
    return out


def report_bytes(run: Path = EXAMPLE, name: str = "ncu") -> bytes:
    return gzip.decompress((run / name / "report.ncu-rep.gz").read_bytes())


def boundary_after(data: bytes, kernels: int) -> int:
    """The offset of the first block after the one that holds kernel number ``kernels``."""
    seen = 0
    for off, n in blocks(data):
        if seen >= kernels:
            return off
        seen += n
    raise AssertionError("fewer kernels than asked for")


def run_copy(tmp_path: Path, name: str, report: bytes, src: Path = EXAMPLE, pass_name: str = "ncu") -> Path:
    """A copy of run ``src`` whose ``pass_name`` report is ``report`` (plain, the .gz removed)."""
    run = tmp_path / name
    shutil.copytree(src, run)
    (run / pass_name / "report.ncu-rep.gz").unlink()
    (run / pass_name / "report.ncu-rep").write_bytes(report)
    return run


def digests(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}  # fmt: skip


def nsightwrap(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "nsightwrap", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)  # fmt: skip


def one_line_exit_2(proc: subprocess.Popen[str], *needles: str) -> str:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 2, (out, err)
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


def test_the_walker_of_these_tests_reads_the_fixture() -> None:
    data = report_bytes()
    assert sum(n for _, n in blocks(data)) == 27  # as the manifest's kernels_profiled says
    assert json.loads((EXAMPLE / "manifest.json").read_text())["passes"][1]["kernels_profiled"] == 27


def test_report_refuses_partial_ncu_reports_with_one_line(tmp_path: Path) -> None:
    """Both read as 12 kernels without complaint before, and two `ok` benchmarks came out
    `flagged` with exit 0."""
    data = report_bytes()
    at12 = boundary_after(data, 12)
    cases = {
        # the tail zero-filled from a block boundary: the file keeps its size
        "zerotail": (data[:at12] + bytes(len(data) - at12), ("zero-filled from byte", "12 kernels before it")),
        # cut exactly at a block boundary: a valid shorter report, only the manifest tells
        "boundary": (data[:at12], ("holds 12 of the 27 kernels its ncu pass profiled", "manifest.json")),
    }
    runs = {name: run_copy(tmp_path, name, body) for name, (body, _) in cases.items()}
    before = {name: digests(run) for name, run in runs.items()}
    procs = {name: nsightwrap("report", str(run), "--format", "json", "-o", str(tmp_path / f"{name}.json"))
             for name, run in runs.items()}  # fmt: skip
    for name, proc in procs.items():
        line = one_line_exit_2(proc, str(runs[name] / "ncu" / "report.ncu-rep"), *cases[name][1])
        assert "Nsight Compute report" in line
        assert not (tmp_path / f"{name}.json").exists()  # no report made of a partial one
        assert digests(runs[name]) == before[name]  # raw files untouched


def test_the_reader_refuses_zero_filled_and_cut_reports(tmp_path: Path) -> None:
    data = report_bytes()
    at12 = boundary_after(data, 12)
    cases = {
        "zerotail": (data[:at12] + bytes(len(data) - at12),
                     f"zero-filled from byte {at12:,} of {len(data):,} (at least 1,048,576 zero bytes; 12 kernels"),
        # zeros inside the last kernel's payload: the walk ends where it should, ncu_report reads 27 kernels
        "zerolast": (data[:-300] + bytes(300), "zero-filled at its end (its last 300 bytes are zeros)"),
        "zeroend": (data[:-32] + bytes(32), "zero-filled at its end (its last 32 bytes are zeros)"),
        "midblock": (data[: at12 + 1000], f"truncated: cut at byte {at12 + 1000:,}, inside the block at byte {at12:,}"),
        "header": (data[: at12 + 2], f"truncated: cut at byte {at12 + 2:,}, inside the block header at byte {at12:,}"),
    }  # fmt: skip
    for name, (body, needle) in cases.items():
        path = tmp_path / f"{name}.ncu-rep"
        path.write_bytes(body)
        with pytest.raises(ReportParseError) as err:
            read_ncu_rep(path)
        assert str(err.value).startswith(f"{path}: Nsight Compute report is "), err.value
        assert needle in str(err.value), err.value
        assert path.read_bytes() == body


def test_inspect_checks_a_report_by_the_run_it_sits_in(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from nsightwrap.cli import main

    data = report_bytes()
    at12 = boundary_after(data, 12)
    run = run_copy(tmp_path, "run", data[:at12])
    one_line_exit_2(nsightwrap("inspect", str(run / "ncu" / "report.ncu-rep")),
                    str(run / "ncu" / "report.ncu-rep"), "holds 12 of the 27 kernels its ncu pass profiled")  # fmt: skip
    alone = tmp_path / "alone.ncu-rep"  # the same bytes outside any run directory
    alone.write_bytes(data[:at12])
    with pytest.raises(SystemExit) as done:
        main(["inspect", str(alone), "--format", "csv"])
    # Nothing in the file tells a report cut at a block boundary from a whole one.
    assert done.value.code in (0, None)
    assert len(capsys.readouterr().out.strip().splitlines()) == 1 + 12


def test_a_short_or_damaged_clock_sweep_report_is_left_out_with_a_note(tmp_path: Path) -> None:
    base = report_bytes(SWEEP, "ncu-base")
    short = run_copy(tmp_path, "short", base[: boundary_after(base, 4)], SWEEP, "ncu-base")
    result = analyze(short)
    notes = [n for n in result.notes if n.startswith("clock-sweep report not used")]
    assert len(notes) == 1, result.notes
    assert "holds 4 of the 9 kernels its ncu-base pass profiled" in notes[0]
    assert "clock elasticities are a guess" in notes[0]
    # the elasticities are the heuristic's, not measured on 4 of 9 kernels
    assert not any("clock elasticity measured" in n for n in result.notes)
    whole = analyze(SWEEP)
    assert not any("not used" in n for n in whole.notes)

    light = report_bytes(SWEEP, "ncu-duration")
    zeroed = run_copy(tmp_path, "zeroed", light[:-64] + bytes(64), SWEEP, "ncu-duration")
    notes = [n for n in analyze(zeroed).notes if n.startswith("duration-pass report not used")]
    assert len(notes) == 1 and "zero-filled at its end" in notes[0] and "17 replay passes" in notes[0]


def test_a_huge_zero_filled_report_is_refused_in_well_under_a_second(tmp_path: Path) -> None:
    head = report_bytes()[:10]  # NVR\0 and the file header: the rest of a 1 GiB file is zeros
    huge = tmp_path / "huge.ncu-rep"
    with huge.open("wb") as f:
        f.write(head)
        f.truncate(1 << 30)  # sparse: no disk space taken
    blank = tmp_path / "blank.ncu-rep"
    with blank.open("wb") as f:
        f.truncate(1 << 30)
    for path, needle in ((huge, "zero-filled from byte 10 of 1,073,741,824"), (blank, "zero-filled from its start")):
        t0 = time.perf_counter()
        with pytest.raises(ReportParseError, match=needle):
            read_ncu_rep(path)
        assert time.perf_counter() - t0 < 0.5
    one_line_exit_2(nsightwrap("inspect", str(huge)), str(huge), "zero-filled from byte 10")
    assert huge.stat().st_size == 1 << 30 and blank.stat().st_size == 1 << 30


def _bomb(path: Path, zeros: int, lie: bool = False) -> None:
    """A valid gzip of ``zeros`` zero bytes (a multiple of 1 MiB; about 1000:1 on disk), made in a
    fraction of a second: after a full flush, deflate writes every MiB of zeros as the same bytes.
    ``lie``: its trailer declares 0 bytes."""
    mib = bytes(1 << 20)
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)  # raw deflate: the gzip frame is written here
    first = comp.compress(mib) + comp.flush(zlib.Z_FULL_FLUSH)
    again = comp.compress(mib) + comp.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(zeros >> 20):
        crc = zlib.crc32(mib, crc)
    size = 0 if lie else zeros & 0xFFFFFFFF
    with path.open("wb") as f:
        f.write(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff")
        f.write(first + again * ((zeros >> 20) - 1) + comp.flush())
        f.write(struct.pack("<II", crc, size))


def test_a_gzip_bomb_is_refused_and_leaves_nothing_in_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    bomb = tmp_path / "report.ncu-rep.gz"
    _bomb(bomb, 256 << 20)  # 256 MiB of zeros in about 250 KB
    assert bomb.stat().st_size < 400_000
    t0 = time.perf_counter()
    with pytest.raises(ReportParseError, match=r"refused to unpack: it unpacks to more than 67,108,864 bytes") as err:
        read_ncu_rep(bomb)
    assert "NSIGHTWRAP_UNPACK_MAX_BYTES" in str(err.value) and str(bomb) in str(err.value)
    assert time.perf_counter() - t0 < 5
    assert not [p for p in cache.rglob("*") if p.is_file()]  # the trailer told: nothing was written

    # A trailer that lies: unpacking stops at the limit and the partial copy is removed.
    liar = tmp_path / "liar.ncu-rep.gz"
    _bomb(liar, 8 << 20, lie=True)
    monkeypatch.setenv("NSIGHTWRAP_UNPACK_MAX_BYTES", "1000000")
    with pytest.raises(ReportParseError, match=r"more than 1,000,000 bytes, the limit \(NSIGHTWRAP_UNPACK_MAX_BYTES=1000000\)"):
        read_ncu_rep(liar)
    assert not [p for p in cache.rglob("*") if p.is_file()]
    assert bomb.is_file() and liar.is_file()  # the user's files are kept


def test_the_limit_is_raised_by_its_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    gz = tmp_path / "report.ncu-rep.gz"
    shutil.copy(EXAMPLE / "ncu" / "report.ncu-rep.gz", gz)  # 16 MB unpacked
    monkeypatch.setenv("NSIGHTWRAP_UNPACK_MAX_BYTES", str(1 << 20))
    with pytest.raises(ReportParseError, match="NSIGHTWRAP_UNPACK_MAX_BYTES"):
        unpacked(gz)
    monkeypatch.setenv("NSIGHTWRAP_UNPACK_MAX_BYTES", "not-a-number")
    with pytest.raises(Exception, match="NSIGHTWRAP_UNPACK_MAX_BYTES='not-a-number' is not a byte count"):
        unpacked(gz)
    monkeypatch.setenv("NSIGHTWRAP_UNPACK_MAX_BYTES", str(1 << 30))
    assert unpacked(gz).stat().st_size == len(report_bytes())


def test_an_invalid_unpacked_copy_is_removed_from_the_cache(tmp_path: Path) -> None:
    """A good gzip of a zero-filled report: refused by `nsightwrap report`, and the cache (under
    HOME, as a user's) keeps no copy of it."""
    data = report_bytes()
    at12 = boundary_after(data, 12)
    run = tmp_path / "run"
    shutil.copytree(EXAMPLE, run)
    (run / "ncu" / "report.ncu-rep.gz").write_bytes(gzip.compress(data[:at12] + bytes(len(data) - at12), 1))
    bomb = tmp_path / "bomb.ncu-rep.gz"
    _bomb(bomb, 128 << 20)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "XDG_CACHE_HOME"} | {"HOME": str(home)}
    before = digests(run)
    rep = nsightwrap("report", str(run), "--format", "json", "-o", str(tmp_path / "out.json"), env=env)
    ins = nsightwrap("inspect", str(bomb), env=env)
    one_line_exit_2(rep, str(run / "ncu" / "report.ncu-rep.gz"), "zero-filled from byte")
    one_line_exit_2(ins, str(bomb), "refused to unpack", "NSIGHTWRAP_UNPACK_MAX_BYTES")
    cache = home / ".cache" / "nsightwrap" / "unpacked"
    assert cache.is_dir()  # the report was unpacked there, then removed
    assert not list(cache.rglob("*.ncu-rep*"))
    assert digests(run) == before


def test_the_shortfall_says_when_the_pass_itself_ended_early(tmp_path: Path) -> None:
    from nsightwrap.analysis.ncucount import check_whole, shortfall

    report = tmp_path / "ncu" / "report.ncu-rep"
    ok = {"name": "ncu", "status": "ok", "kernels_profiled": 27}
    assert shortfall(report, 27, ok, tmp_path) is None
    assert shortfall(report, 30, ok, tmp_path) is None
    assert shortfall(report, 3, {"name": "ncu", "status": "ok", "kernels_profiled": None}, tmp_path) is None
    assert shortfall(report, 3, None, tmp_path) is None
    assert shortfall(report, 26, ok, tmp_path) == (
        f"{report}: Nsight Compute report holds 26 of the 27 kernels its ncu pass profiled "
        f"({tmp_path / 'manifest.json'}): the report was cut short (a copy stopped early, a full disk)"
    )
    timed_out = {**ok, "status": "timeout", "message": "ncu pass ran past --timeout 60 s"}
    why = shortfall(report, 26, timed_out, tmp_path)
    assert why is not None and why.endswith("the report is partial (the pass timed out: ncu pass ran past --timeout 60 s)")
    with pytest.raises(ReportParseError, match="take the run again with nsightwrap profile"):
        check_whole(report, 26, ok, tmp_path)
