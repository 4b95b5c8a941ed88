"""``nsightwrap inspect`` of a report bigger than a terminal table: the table holds the first
``--limit`` rows (2,000 by default) and ends with a count line naming how to get every row; csv,
json and md carry every row, written a chunk at a time, the same bytes as in one piece.

The big export is the real workload capture with its kernel rows replicated by SQL, each copy
shifted past the capture's end (with correlation ids no runtime call has, so outside any range)."""

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
from test_inspect_cli import cli

from nsightwrap.cli.inspect_cmd import TABLE_ROWS
from nsightwrap.export import frames

ROOT = Path(__file__).resolve().parent.parent
REF = ROOT / "fixtures" / "reference" / "h200-workload"
SQLITE = REF / "workload.sqlite"
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
FIXTURE_OPS = 297  # 234 kernels, 21 copies, 42 memsets
COPIES = 8  # replicated kernel copies: 297 + 8 * 234 = 2,169 ops, past the 2,000-row table


def table_rows(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if ln.startswith("│")]


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dst = tmp_path_factory.mktemp("big") / "big.sqlite"
    shutil.copy(SQLITE, dst)
    with sqlite3.connect(dst) as con:
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({KERNEL})")]
        (t0, t1) = con.execute(f"SELECT MIN(start), MAX(end) FROM {KERNEL}").fetchone()
        (corr,) = con.execute("SELECT MAX(correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME").fetchone()
        shift, step = t1 - t0 + 1_000_000, corr + 1
        exprs = [
            f"o.[{c}] + r.i * {shift}" if c in ("start", "end") else
            f"o.[{c}] + r.i * {step}" if c == "correlationId" else f"o.[{c}]"
            for c in cols
        ]  # fmt: skip
        con.execute("CREATE TEMP TABLE reps (i INTEGER)")
        con.executemany("INSERT INTO reps VALUES (?)", [(i,) for i in range(1, COPIES + 1)])
        con.execute(
            f"INSERT INTO {KERNEL} ({', '.join(cols)}) SELECT {', '.join(exprs)} FROM {KERNEL} o CROSS JOIN reps r"
        )
        (kernels,) = con.execute(f"SELECT COUNT(*) FROM {KERNEL}").fetchone()
    assert kernels == 234 * (COPIES + 1)
    return dst


TOTAL = FIXTURE_OPS + COPIES * 234


def test_default_table_is_the_first_rows_and_a_count_line(big: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    r = subprocess.run([sys.executable, "-m", "nsightwrap", "inspect", str(big)], capture_output=True, text=True,
                       env=env, cwd=ROOT, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = table_rows(r.stdout)
    assert len(rows) == TABLE_ROWS == 2000
    # The first rows in order: op ids 0, 1, 2, ...
    assert [int(ln.split("│")[1].replace(",", "")) for ln in rows[:3]] == [0, 1, 2]
    last = r.stdout.rstrip("\n").splitlines()[-1]
    assert last == f"2,000 of {TOTAL:,} rows shown; every row: --limit 0, or --format csv (or json) for a file"


def test_csv_json_and_md_carry_every_row(big: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, str(big), "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == TOTAL and "rows shown" not in out
    # The replicated kernels were launched by no runtime call the export has: outside any range.
    assert sum(1 for r in rows if r["nvtx_path"]) < FIXTURE_OPS
    code, out, _ = cli(capsys, str(big), "--format", "json")
    assert code == 0
    records = json.loads(out)
    assert len(records) == TOTAL
    assert [r["op_id"] for r in records] == [int(r["op_id"]) for r in rows]
    code, out, _ = cli(capsys, str(big), "--format", "md")
    assert code == 0
    assert len(out.strip().splitlines()) == 2 + TOTAL and "rows shown" not in out


def test_limit_in_every_format(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "300")
    code, out, _ = cli(capsys, str(SQLITE), "--limit", "0")
    assert code == 0 and len(table_rows(out)) == FIXTURE_OPS and "rows shown" not in out
    code, out, _ = cli(capsys, str(SQLITE), "--limit", str(FIXTURE_OPS))
    assert code == 0 and len(table_rows(out)) == FIXTURE_OPS and "rows shown" not in out
    code, out, _ = cli(capsys, str(SQLITE), "--by", "range", "--limit", "3")
    assert code == 0 and len(table_rows(out)) == 3
    assert "3 of 105 rows shown; every row: --limit 0" in out
    code, out, _ = cli(capsys, str(SQLITE), "--format", "md", "--limit", "10")
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == 2 + 10 + 2  # header, rule, 10 rows, a blank line, the count line
    assert lines[-1] == f"_10 of {FIXTURE_OPS} rows shown; every row: --limit 0, or --format csv (or json) for a file_"
    code, out, _ = cli(capsys, str(SQLITE), "--format", "json", "--limit", "5")
    assert code == 0 and [r["op_id"] for r in json.loads(out)] == [0, 1, 2, 3, 4]
    code, out, _ = cli(capsys, str(SQLITE), "--format", "csv", "--limit", "5")
    assert code == 0 and len(list(csv.DictReader(io.StringIO(out)))) == 5 and "rows shown" not in out


def test_a_negative_limit_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, str(SQLITE), "--limit", "-1")
    assert code == 2 and "--limit" in err


@pytest.mark.parametrize("args", [["--by", "kernel"], ["--by", "range"]])
def test_chunked_output_is_the_same_bytes(
    args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = {}
    for fmt in ("csv", "json", "md"):
        code, whole[fmt], _ = cli(capsys, str(SQLITE), *args, "--format", fmt)
        assert code == 0
    monkeypatch.setattr(frames, "CHUNK_ROWS", 7)  # many chunks, the last one short
    for fmt in ("csv", "json", "md"):
        code, out, _ = cli(capsys, str(SQLITE), *args, "--format", fmt)
        assert code == 0 and out == whole[fmt], fmt
    assert len(json.loads(whole["json"])) == len(list(csv.DictReader(io.StringIO(whole["csv"]))))


def test_ncu_paths_and_smi_times_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, str(REF / "smi_samples.csv"), "--format", "json")
    assert code == 0
    samples = json.loads(out)
    assert samples[0]["time"].startswith("2026-11-30T02:07:00")  # ISO 8601 text, not a crash
    code, out, _ = cli(capsys, str(REF / "workload_raw.csv"), "--format", "json")
    assert code == 0 and len(json.loads(out)) == 18


def test_hostile_kernel_names_are_escaped_in_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rep = tmp_path / "hostile.sqlite"
    shutil.copy(SQLITE, rep)
    with sqlite3.connect(rep) as con:
        (sid,) = con.execute(f"SELECT shortName FROM {KERNEL} LIMIT 1").fetchone()
        con.execute("UPDATE StringIds SET value = value || char(27) || '[2J' || char(8238) WHERE id = ?", (sid,))
    code, out, _ = cli(capsys, str(rep), "--limit", "3")
    assert code == 0
    assert "\x1b" not in out and "\u202e" not in out
    assert "\\x1b[2J\\u202e" in out
