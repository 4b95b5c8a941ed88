"""Gzipped reports read as plain ones: once unpacked into the cache, damaged archives one clear error."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from nsightwrap.core.errors import ReportParseError
from nsightwrap.core.unpack import unpacked
from nsightwrap.parsers.kind import ReportKind, detect
from nsightwrap.parsers.nsys import read_nsys

REF = Path(__file__).resolve().parent.parent / "fixtures" / "reference" / "h200-workload"


def test_gz_report_reads_like_the_plain_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    gz = tmp_path / "workload.sqlite.gz"
    gz.write_bytes(gzip.compress((REF / "workload.sqlite").read_bytes()))
    assert detect(gz) is ReportKind.NSYS_SQLITE
    plain, packed = read_nsys(REF / "workload.sqlite"), read_nsys(gz)
    assert len(packed.ops) == len(plain.ops) > 0
    assert packed.ops["duration_ns"].sum() == plain.ops["duration_ns"].sum()
    first = unpacked(gz)
    assert first.parent.parent == tmp_path / "cache" / "nsightwrap" / "unpacked"
    assert unpacked(gz) == first and first.read_bytes() == (REF / "workload.sqlite").read_bytes()
    assert unpacked(REF / "workload.sqlite") == REF / "workload.sqlite"  # plain files pass through


def test_truncated_gz_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    gz = tmp_path / "report.sqlite.gz"
    gz.write_bytes(gzip.compress((REF / "workload.sqlite").read_bytes())[:5000])
    with pytest.raises(ReportParseError, match="cannot unpack"):
        unpacked(gz)
    assert gz.is_file() and not list((tmp_path / "cache").rglob("*.part-*"))  # original kept, no debris


def test_damaged_report_inside_a_good_gz_names_the_users_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nsightwrap.parsers.ncu import read_ncu_rep

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    sq = tmp_path / "capture.sqlite.gz"
    sq.write_bytes(gzip.compress((REF / "workload.sqlite").read_bytes()[:4096]))  # a truncated export
    with pytest.raises(ReportParseError) as err:
        read_nsys(sq)
    assert str(err.value).startswith(f"{sq} (unpacked to {unpacked(sq)}) is not a readable SQLite database")
    rep = tmp_path / "report.ncu-rep.gz"
    rep.write_bytes(gzip.compress(b"not an ncu report at all" * 10))
    with pytest.raises(ReportParseError) as err:
        read_ncu_rep(rep)
    assert str(err.value).startswith(f"{rep} (unpacked to ") and str(unpacked(rep)) in str(err.value)
    junk = tmp_path / "junk.sqlite.gz"  # a good gzip of something that is no report at all
    junk.write_bytes(gzip.compress(b"garbage"))
    with pytest.raises(ReportParseError) as err:
        detect(junk)
    assert str(err.value).startswith(f"{junk} (unpacked to {unpacked(junk)}) is not an SQLite database")
    assert sq.is_file() and rep.is_file() and junk.is_file()  # the user's files are kept


def test_cache_is_bounded_least_recently_used_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gzip
    import os

    from nsightwrap.core.unpack import unpacked

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("NSIGHTWRAP_UNPACK_CACHE_BYTES", "2500")
    copies = []
    for i in range(4):
        gz = tmp_path / f"r{i}.sqlite.gz"
        gz.write_bytes(gzip.compress(bytes(1000)))
        copies.append(unpacked(gz))
        os.utime(copies[-1].parent, (1000.0 + i, 1000.0 + i))  # a strict order of use
    alive = [c.is_file() for c in copies]
    assert alive[-1] and sum(alive) <= 2  # the newest kept, the oldest removed, <= 2500 bytes
    assert not alive[0]
