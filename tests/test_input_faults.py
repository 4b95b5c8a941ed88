"""Every kind of input file nsightwrap reads, damaged every way a file gets damaged: truncated,
zero-filled, a field of the wrong type, NaN and Infinity, nested 100,000 deep, lone surrogates,
control characters, larger than nsightwrap reads. Each case is built from a real fixture in
tmp_path and run through the CLI entry point in this process (a handful also as a real
``python -m nsightwrap`` subprocess): no traceback, exit 2 (or the code of docs/faults.md), one
line naming the file, nothing written outside the run, the damaged file kept as it was."""

from __future__ import annotations

import copy
import gzip
import hashlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from nsightwrap.cli import main
from nsightwrap.core.jsonfile import MAX_JSON_BYTES

ROOT = Path(__file__).resolve().parent.parent
BLOG = ROOT / "fixtures" / "runs" / "h200-blog"
REF = ROOT / "fixtures" / "reference" / "h200-workload"
DEVICE = ROOT / "fixtures" / "device" / "h200.json"
HOSTILE = "mm\x1b[2J\x1b]8;;http://x\x07link\x1b]52;c;ZXZpbA==\x07\u202eevil\x9b"
DEEP = 100_000


def _doc_rows() -> dict[str, tuple[frozenset[int], str]]:
    """docs/faults.md, section "Input files": case id -> (exit codes, message pattern)."""
    text = (ROOT / "docs" / "faults.md").read_text().split("\n## Input files\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in text.splitlines():
        m = re.match(r"\| `([^`]+)`: .* \| ([\d, or]+) \| (.*) \|$", line)
        if m:
            codes = frozenset(int(c) for c in re.findall(r"\d+", m.group(2)))
            msg = re.match(r"^(`+) ?(.*?) ?\1$", m.group(3))
            rows[m.group(1)] = (codes, msg.group(2) if msg else "")
    return rows


DOC_ROWS = _doc_rows()


def check_documented(case_id: str, code: int, err: str, target: Path) -> None:
    """The exit code and message docs/faults.md gives the case (``...`` stands for any text)."""
    if case_id not in DOC_ROWS:
        return
    codes, message = DOC_ROWS[case_id]
    assert code in codes, (case_id, code, err)
    if code and message:
        line = err.strip().replace(str(target), "FILE")
        pattern = ".*".join(re.escape(part) for part in message.split("..."))
        assert re.fullmatch(pattern, line, re.DOTALL), (message, line)


@dataclass(frozen=True)
class Case:
    """One damaged file: which kind, how it was damaged, the exit codes allowed."""

    kind: str
    damage: str
    codes: frozenset[int] = frozenset({2})
    #: JSON kinds: the document changed in place; else None and ``raw`` changes the bytes.
    edit: Callable[[Any], Any] | None = None
    raw: Callable[[bytes], bytes] | None = None
    sparse: bool = False
    marks: tuple[Any, ...] = field(default=())

    @property
    def id(self) -> str:
        return f"{self.kind}-{self.damage}"


# --- what each kind is, where its fixture comes from, and the command that reads it -----------


def _stage(kind: str, d: Path, report_json: Path) -> tuple[Path, list[str]]:
    """Put an undamaged input of ``kind`` under ``d``; (the file to damage, the command line)."""
    run = d / "run"
    d.mkdir(parents=True, exist_ok=True)
    if kind in ("manifest", "sidecar"):
        run.mkdir()
        shutil.copy(BLOG / "manifest.json", run)
        shutil.copytree(BLOG / "plain", run / "plain")
        target = run / "manifest.json" if kind == "manifest" else run / "plain" / "timer-4990-capture.json"
        return target, ["report", str(run), "--format", "md"]
    if kind == "merged":  # only its manifest is read before the damage is found
        run.mkdir()
        shutil.copy(ROOT / "fixtures" / "runs" / "h200-shards" / "manifest.json", run)
        return run / "manifest.json", ["report", str(run), "--format", "md"]
    run.mkdir()
    if kind == "report":
        target = run / "report.json"
        shutil.copy(report_json, target)
        return target, ["compare", str(target), str(target), "--format", "md"]
    if kind == "device":
        target = run / "device.json"
        shutil.copy(DEVICE, target)
        return target, ["device", "--input", str(target), "--format", "md"]
    if kind == "smi":
        target = run / "nvidia-smi-q-x.xml"
        shutil.copy(REF / "nvidia-smi-q-x.xml", target)
        return target, ["inspect", str(target), "--format", "md"]
    if kind == "sqlite":
        target = run / "report.sqlite"
        target.write_bytes(gzip.decompress((BLOG / "nsys" / "report.sqlite.gz").read_bytes()))
        return target, ["inspect", str(target), "--format", "csv"]
    if kind == "ncu":
        target = run / "report.ncu-rep"
        target.write_bytes(gzip.decompress((REF / "workload_duration.ncu-rep.gz").read_bytes()))
        return target, ["inspect", str(target), "--format", "csv"]
    raise AssertionError(kind)


# --- the damage --------------------------------------------------------------------------------


def _truncated(b: bytes) -> bytes:
    return b[: len(b) // 2]


def _zeros(b: bytes) -> bytes:
    return bytes(len(b))


def _set(path: tuple[str | int, ...], value: Any) -> Callable[[Any], Any]:
    def edit(doc: Any) -> Any:
        node = doc
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = value
        return doc

    return edit


def _other_type(v: Any) -> Any:
    """A value of another JSON type than ``v``."""
    if isinstance(v, dict):
        return ["not", "an", "object"]
    if isinstance(v, list):
        return {"not": "a list"}
    if isinstance(v, str):
        return ["not a string"]
    if isinstance(v, bool) or v is None:
        return "not-a-flag"
    return "not a number"


def _nested() -> Any:
    return "DEEP"  # replaced by the text of a list nested DEEP levels (json.dumps would recurse)


def _numbers_to(value: float) -> Callable[[Any], Any]:
    """Every number in the document but its version as NaN or Infinity."""

    def walk(v: Any, key: str = "") -> Any:
        if isinstance(v, dict):
            return {k: walk(x, k) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x, key) for x in v]
        if isinstance(v, (int, float)) and not isinstance(v, bool) and key != "version":
            return value
        return v

    return walk


#: Fields whose wrong type each JSON kind is tried with (top level and inside its first entry).
_FIELDS: dict[str, list[tuple[str | int, ...]]] = {
    "manifest": [("tools",), ("passes",), ("target",), ("gpu",), ("settings",), ("sampler",), ("start",),
                 ("status",), ("passes", 0, "commands"), ("passes", 0, "files"), ("passes", 0, "name"),
                 ("target", "argv"), ("gpu", "gpus")],
    "sidecar": [("benchmarks",), ("device",), ("pid",), ("benchmarks", 0, "name"), ("benchmarks", 0, "samples_ns"),
                ("benchmarks", 0, "params"), ("benchmarks", 0, "sm_clock_hz"), ("benchmarks", 0, "median_ns")],
    "report": [("benchmarks",), ("environment",), ("settings",), ("benchmarks", 0, "name"),
               ("benchmarks", 0, "timer"), ("benchmarks", 0, "verdict"), ("benchmarks", 0, "params"),
               ("benchmarks", 0, "timer", "samples_ns")],
    "device": [("gpu",), ("version",), ("format",)],
}  # fmt: skip
#: Where each JSON kind keeps a name that reaches the output.
_NAME: dict[str, tuple[str | int, ...]] = {
    "manifest": ("target", "argv", 0),
    "sidecar": ("benchmarks", 0, "name"),
    "report": ("benchmarks", 0, "name"),
    "device": ("gpu", "name"),
}


def _json_cases(kind: str) -> list[Case]:
    cases = [
        Case(kind, "truncated", raw=_truncated),
        Case(kind, "zero-filled", raw=_zeros),
        Case(kind, "deep", edit=_set(("deep",), "DEEP")),
        Case(kind, "huge", sparse=True),
        Case(kind, "nan", frozenset({0, 2}), edit=_numbers_to(float("nan"))),
        Case(kind, "infinity", frozenset({0, 2}), edit=_numbers_to(float("inf"))),
        Case(kind, "surrogate", frozenset({0}), edit=_set(_NAME[kind], "a\ud800b")),
        Case(kind, "control", frozenset({0}), edit=_set(_NAME[kind], HOSTILE)),
        Case(kind, "top-list", edit=lambda doc: [doc]),
    ]
    for path in _FIELDS[kind]:
        cases.append(Case(kind, "type-" + "/".join(map(str, path)), frozenset({2}), edit=_retyped(path)))
    return cases


def _retyped(path: tuple[str | int, ...]) -> Callable[[Any], Any]:
    def edit(doc: Any) -> Any:
        node = doc
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = _other_type(node[path[-1]])
        return doc

    return edit


def _sql(statement: str) -> Callable[[Path], None]:
    def edit(p: Path) -> None:
        with sqlite3.connect(p) as db:
            db.execute(statement)
        db.close()

    return edit


_XML_DEEP = b"<a>" * DEEP + b"</a>" * DEEP

CASES: list[Case] = [
    *_json_cases("manifest"),
    *_json_cases("sidecar"),
    *_json_cases("report"),
    *_json_cases("device"),
    Case("merged", "type-shards/0/dir", edit=_set(("shards", 0, "dir"), 3)),
    Case("merged", "type-shards", edit=_set(("shards",), {"0": "shards/0"})),
    Case("merged", "deep", edit=_set(("deep",), "DEEP")),
    Case("smi", "truncated", raw=_truncated),
    Case("smi", "zero-filled", raw=_zeros),
    Case("smi", "deep", raw=lambda b: b.replace(b"<gpu ", _XML_DEEP + b"<gpu ", 1)),
    Case("smi", "huge", sparse=True),
    Case("smi", "control-byte", raw=lambda b: b.replace(b"<product_name>", b"<product_name>\x1b[2J", 1)),
    Case("smi", "control", frozenset({0}),
         raw=lambda b: b.replace(b"<product_name>", "<product_name>\u202eevil&#x9b;".encode(), 1)),
    Case("smi", "surrogate-ref", raw=lambda b: b.replace(b"<product_name>", b"<product_name>&#xD800;", 1)),
    Case("smi", "nan", frozenset({0}), raw=lambda b: b.replace(b" MHz<", b"NaN MHz<").replace(b" W<", b"inf W<")),
    Case("smi", "type", frozenset({0}), raw=lambda b: b.replace(b" MHz<", b"x MHz<")),
    Case("sqlite", "truncated", raw=_truncated),
    Case("sqlite", "zero-filled", raw=_zeros),
    Case("sqlite", "huge", frozenset({0, 2}), sparse=True),  # zeros after the last page: still the database
    Case("ncu", "truncated", frozenset({2, 3, 5}), raw=_truncated),
    Case("ncu", "zero-filled", frozenset({2, 3, 5}), raw=_zeros),
]  # fmt: skip
#: SQLite damage done through SQL (the file stays a database; its content is hostile).
SQL_CASES = {
    "sqlite-type": (frozenset({2}), "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 'x', end = x'00'"),
    "sqlite-reversed": (frozenset({0, 2}), "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = end + 1000"),
    "sqlite-control": (frozenset({0}), f"UPDATE StringIds SET value = value || '{HOSTILE}'"),
    # A capture without kernels has no kernel table: inspect lists what else there is.
    "sqlite-no-table": (frozenset({0, 2}), "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL"),
    # Bytes that are not UTF-8 (an encoded lone surrogate) in a name: refused, naming the file.
    "sqlite-surrogate": (frozenset({2}), "UPDATE StringIds SET value = value || CAST(x'eda080' AS TEXT)"),
}


@pytest.fixture(scope="module")
def report_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "blog.json"
    with pytest.raises(SystemExit) as exc:
        main(["report", str(BLOG), "--format", "json", "-o", str(out)])
    assert exc.value.code in (0, None)
    return out


def _damage(case: Case, target: Path) -> None:
    if case.sparse:
        with open(target, "r+b") as f:
            f.truncate(MAX_JSON_BYTES + 2**20)
        return
    if case.raw is not None:
        target.write_bytes(case.raw(target.read_bytes()))
        return
    assert case.edit is not None
    doc = case.edit(copy.deepcopy(json.loads(target.read_text())))
    text = json.dumps(doc, ensure_ascii=True)
    text = text.replace('"DEEP"', "[" * DEEP + "]" * DEEP)
    target.write_text(text)


def _tree(d: Path) -> dict[str, str]:
    return {
        str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() if p.stat().st_size < 2**24 else "big"
        for p in sorted(d.rglob("*"))
        if p.is_file()
    }


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0) if not isinstance(exc.code, str) else 1
    out, err = capsys.readouterr()
    return code, out, err


def check(code: int, out: str, err: str, target: Path, allowed: frozenset[int]) -> None:
    """The contract every damaged input keeps."""
    assert "Traceback" not in err and "Traceback" not in out
    assert code in allowed, (code, err)
    if code:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), err
        assert target.name in lines[0], lines[0]
        assert "unexpected error" not in lines[0], lines[0]
    for text in (out, err):
        assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text and "\x9b" not in text
        text.encode("utf-8")  # a lone surrogate would fail here, as it does writing to a terminal


@pytest.fixture()
def no_temp_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh temporary directory for nsightwrap: a saved traceback would land here."""
    d = tmp_path / "tmpdir"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id, marks=c.marks) for c in CASES])
def test_a_damaged_input_is_one_line_and_its_exit_code(
    case: Case, tmp_path: Path, report_json: Path, no_temp_files: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    target, argv = _stage(case.kind, tmp_path / "case", report_json)
    _damage(case, target)
    before = _tree(tmp_path)
    code, out, err = _run(argv, capsys)
    check(code, out, err, target, case.codes)
    check_documented(case.id, code, err, target)
    assert _tree(tmp_path) == before  # nothing written, the damaged file kept as it was
    if case.damage in ("control", "surrogate") and case.kind != "smi":
        assert ("\\x1b" in out or "\\u202e" in out) if case.damage == "control" else "\ufffd" in out


@pytest.mark.parametrize("name", sorted(SQL_CASES))
def test_a_hostile_nsys_export_is_one_line_or_a_clean_table(
    name: str, tmp_path: Path, report_json: Path, no_temp_files: Path, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    codes, statement = SQL_CASES[name]
    target, argv = _stage("sqlite", tmp_path / "case", report_json)
    _sql(statement)(target)
    before = _tree(tmp_path)
    code, out, err = _run(argv, capsys)
    check(code, out, err, target, codes)
    check_documented(name, code, err, target)
    assert _tree(tmp_path) == before


# A handful through the real command: the interpreter's own exit path, the stream encodings.
SUBPROCESS = ["manifest-type-tools", "manifest-deep", "sidecar-infinity", "sidecar-surrogate", "report-surrogate",
              "smi-deep"]  # fmt: skip


@pytest.mark.parametrize("case", [c for c in CASES if c.id in SUBPROCESS], ids=lambda c: c.id)
def test_through_the_real_command(case: Case, tmp_path: Path, report_json: Path) -> None:
    target, argv = _stage(case.kind, tmp_path / "case", report_json)
    _damage(case, target)
    temp = tmp_path / "tmpdir"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "PYTHONPATH": str(ROOT)}
    env.pop("PYTHONIOENCODING", None)
    before = _tree(tmp_path)
    r = subprocess.run([sys.executable, "-m", "nsightwrap", *argv], capture_output=True, text=True,
                       encoding="utf-8", errors="strict", env=env, cwd=tmp_path, timeout=120)  # fmt: skip
    check(r.returncode, r.stdout, r.stderr, target, case.codes)
    assert _tree(tmp_path) == before
    assert not any(temp.iterdir())


def test_every_documented_case_is_one_this_file_runs() -> None:
    assert len(DOC_ROWS) >= 20
    known = {c.id for c in CASES} | set(SQL_CASES) | {"unexpected"}
    assert set(DOC_ROWS) <= known, set(DOC_ROWS) - known


def test_an_unexpected_error_is_exit_3_with_its_traceback_saved(no_temp_files: Path) -> None:
    """An exception nsightwrap does not expect inside a command (here an EOFError, which Typer
    itself would print as "Aborted!" and exit 1, the code of findings) becomes one line, exit 3,
    and its traceback is in the file the line names."""
    from nsightwrap.cli import UnexpectedError, _guarded

    def command(path: str) -> None:
        with open(path, "rb") as f:
            f.read()
        raise EOFError("Compressed file ended before the end-of-stream marker was reached")

    with pytest.raises(UnexpectedError) as exc:
        _guarded(command)(str(BLOG / "manifest.json"))
    assert exc.value.exit_code == 3
    line = str(exc.value)
    assert "\n" not in line and "unexpected error in nsightwrap (EOFError: Compressed file ended" in line
    saved = list(no_temp_files.iterdir())
    assert len(saved) == 1 and str(saved[0]) in line
    assert "Traceback" in saved[0].read_text() and "EOFError" in saved[0].read_text()
    codes, message = DOC_ROWS["unexpected"]
    assert codes == {3}
    pattern = ".*".join(re.escape(part) for part in message.removeprefix("error: ").split("..."))
    assert re.fullmatch(pattern, line), (message, line)
    with pytest.raises(SystemExit):  # exits and our own errors pass through untouched
        _guarded(lambda: sys.exit(0))()
