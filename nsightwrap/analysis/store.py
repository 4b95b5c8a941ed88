"""The stored analysis of a run directory: analyse once, read it back while nothing it depends on changed.

``nsightwrap profile`` (and the first ``report`` of a run made without it) keeps the analysis in
``RUN_DIR/analysis/report.json.gz``: the full report document (the report JSON with every row,
``--detail``), gzipped, with what it was computed from; its long lists of numbers (timer samples
and their clocks, per-iteration rows) are kept apart in ``RUN_DIR/analysis/report.arrays.npz``
(numpy's format: two arrays, every float and every integer of those lists, in the order the
document names them), which reads in a fraction of the time the same numbers take as JSON text:

- the settings that change the result (``--tolerance``, ``--clock-ref``, ``--device-file``,
  ``NSIGHTWRAP_NSYS_ITERATIONS``);
- the nsightwrap version, the report JSON version and a fingerprint of nsightwrap's own code
  (size and modification time of its modules), so that another nsightwrap never reads it;
- every input file's size and modification time (ns): every file under the run directory but
  ``analysis/`` (manifest, sidecars, ncu reports, nsys exports, the plain pass's clock capture,
  clock samples, ``env/``, shards of a merged run), the ``--device-file`` given, and the device
  files in the user's cache (a run without ``env/device.json`` takes its roofs from there).

``report``, ``compare`` (a run directory by ncu or nsys) and ``load_run`` read it and analyse
again only when one of these differs; each says which happened in one line
(``analysis: stored (2026-12-07 14:02, inputs unchanged)``, ``analysis: recomputed
(ncu/report.ncu-rep.gz changed)``). A run directory nsightwrap cannot write to keeps its
analysis in the user's cache (``~/.cache/nsightwrap/analysis/<hash of the run directory's
path>.json.gz``). ``NSIGHTWRAP_ANALYSIS_STORE=off`` turns storing and reading off.

This module sits in ``analysis/`` below ``export/``, so the document's codec (the report JSON's
``report_to_dict`` / ``report_from_dict``) is passed in by the caller, as ``compare.sides``
takes its ``report_of``.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import hashlib
import io
import json
import os
import tempfile
import uuid
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nsightwrap import __version__
from nsightwrap.analysis.model import FORMAT_VERSION, RunResult
from nsightwrap.core.contract import ENV_NSYS_ITERATIONS
from nsightwrap.core.unpack import cache_root

#: The stored document's ``format`` and its version (the report inside has its own).
STORE_FORMAT = "nsightwrap-analysis"
STORE_VERSION = 2
#: Where the analysis is kept, relative to the run directory.
STORE_DIR = "analysis"
STORE_NAME = "report.json.gz"
#: The lists of numbers of the stored document, beside it (``ARRAYS_SUFFIX`` in place of ``.json.gz``).
ARRAYS_SUFFIX = ".arrays.npz"
#: A list of at least this many numbers, all floats or all integers, is kept in the arrays file.
ARRAY_MIN = 32
#: Environment variable: ``off`` (or ``0``, ``no``) never stores nor reads a stored analysis.
STORE_ENV = "NSIGHTWRAP_ANALYSIS_STORE"

#: The report document of a result, and the result of a document (``export.jsonio``'s pair).
ToDoc = Callable[[RunResult], Mapping[str, Any]]
FromDoc = Callable[[Mapping[str, Any]], RunResult]
#: Analyses the run directory (``analysis.load.analyze`` with the settings bound).
Analyze = Callable[[], RunResult]


@dataclass(frozen=True)
class StoreKey:
    """What a stored analysis must match to be used: the settings that change the result."""

    tolerance: float
    clock_ref: str
    device_file: str | None  # resolved path, or None
    #: ``NSIGHTWRAP_NSYS_ITERATIONS`` as the environment gives it ("": unset, the default cap): how
    #: many nsys iterations of each loop the analysis read. Compared as written, so another
    #: spelling of one cap analyses again rather than ever reusing another cap's analysis.
    nsys_iterations: str = ""

    @classmethod
    def of(cls, tolerance: float, clock_ref: str, device_file: Path | None) -> StoreKey:
        """The key of these ``analyze`` settings (the device file by its resolved path) and of the
        environment's nsys iteration cap."""
        return cls(float(tolerance), str(clock_ref), str(Path(device_file).resolve()) if device_file else None,
                   os.environ.get(ENV_NSYS_ITERATIONS, "").strip())  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {"tolerance": self.tolerance, "clock_ref": self.clock_ref, "device_file": self.device_file,
                "nsys_iterations": self.nsys_iterations}  # fmt: skip


@dataclass(frozen=True)
class Analysis:
    """An analysis and how it was had: ``how`` is ``stored``, ``computed`` or ``recomputed``;
    ``line`` says so for stderr; ``path`` is where it is stored (None: not stored); ``doc`` is
    ``result``'s report document (``to_doc(result)``: the report JSON with every row) where one
    was read or made on the way, else None. Its lists of rows may be tuples; it is shared, not a
    copy: read it, never change it."""

    result: RunResult
    how: str
    line: str
    path: Path | None = None
    doc: Mapping[str, Any] | None = None


def store_enabled() -> bool:
    """False where ``NSIGHTWRAP_ANALYSIS_STORE`` says off."""
    return os.environ.get(STORE_ENV, "").strip().lower() not in ("off", "0", "no", "false")


def store_paths(run_dir: Path) -> tuple[Path, Path]:
    """(in the run directory, in the user's cache): where the stored analysis may be."""
    key = hashlib.sha256(str(Path(run_dir).resolve()).encode()).hexdigest()[:20]
    return Path(run_dir) / STORE_DIR / STORE_NAME, cache_root() / "analysis" / f"{key}.json.gz"


def arrays_path(path: Path) -> Path:
    """The arrays file beside the stored document at ``path``."""
    name = path.name.removesuffix(".json.gz")
    return path.with_name(name + ARRAYS_SUFFIX)


# ----------------------------------------------------------------------------- the arrays file

#: A list kept in the arrays file is null in the document; the document's ``arrays.lists`` says
#: where each goes: ``[path, kind, start, count]``, ``path`` the keys and list positions down to
#: it, ``kind`` ``f`` (its numbers are floats) or ``i`` (integers), ``start`` where they begin in
#: that array. Read back by walking those paths alone, not the whole document.
_INT64 = (-(2**63), 2**63 - 1)
_TUPLE_BLOCKS = ("timer", "ncu", "nsys")
Ref = tuple[list[str | int], str, int, int]


def split_arrays(doc: Any) -> tuple[Any, list[Ref], list[float], list[int]]:
    """``doc`` with every list of ``ARRAY_MIN`` or more numbers, all floats or all integers (not
    bools), replaced by null; where each was; and their numbers in order (floats, integers). A
    list with a null, a bool or both kinds of number stays in the document, so what is read back
    is the same JSON, number for number."""
    floats: list[float] = []
    ints: list[int] = []
    refs: list[Ref] = []

    def walk(v: Any, path: list[str | int]) -> Any:
        if isinstance(v, dict):
            return {k: walk(x, [*path, k]) for k, x in v.items()}
        if isinstance(v, list):
            if len(v) >= ARRAY_MIN:
                kinds = set(map(type, v))
                if kinds == {float}:
                    refs.append((path, "f", len(floats), len(v)))
                    floats.extend(v)
                    return None
                if kinds == {int} and _INT64[0] <= min(v) and max(v) <= _INT64[1]:
                    refs.append((path, "i", len(ints), len(v)))
                    ints.extend(v)
                    return None
            return [walk(x, [*path, i]) for i, x in enumerate(v)]
        return v

    return walk(doc, []), refs, floats, ints


def join_arrays(doc: Any, refs: Any, floats: list[float], ints: list[int]) -> Any:
    """The inverse of ``split_arrays`` (``doc`` filled in place); ValueError (or KeyError,
    IndexError, TypeError) where a reference does not fit the document or the arrays."""
    if not isinstance(refs, list):
        raise ValueError("no list of the stored arrays")
    for path, kind, start, count in refs:
        src = floats if kind == "f" else ints if kind == "i" else None
        if src is None or type(start) is not int or type(count) is not int or start < 0 or start + count > len(src):
            raise ValueError(f"a reference past the stored arrays: {path!r}")
        if not path:
            raise ValueError("a stored array in place of the document")
        at = doc
        for key in path[:-1]:
            at = at[key]
        if at[path[-1]] is not None:
            raise ValueError(f"a stored array in place of a value: {path!r}")
        # A list right in a benchmark's timer, ncu or nsys block is a tuple field of the result
        # (samples, clocks, per-iteration rows): made one here, the reader takes it as it is
        # and does not look at every number again. Any other list stays a list.
        row = len(path) == 4 and path[0] == "benchmarks" and path[2] in _TUPLE_BLOCKS
        at[path[-1]] = tuple(src[start : start + count]) if row else src[start : start + count]
    return doc


def _arrays_bytes(floats: list[float], ints: list[int], token: str) -> bytes:
    """The arrays file: ``floats`` (float64), ``ints`` (int64) and the ``token`` its document names."""
    buf = io.BytesIO()
    np.savez(buf, floats=np.array(floats, dtype=np.float64), ints=np.array(ints, dtype=np.int64),
             token=np.array(token))  # fmt: skip
    return buf.getvalue()


def read_arrays(path: Path, token: str, counts: tuple[int, int]) -> tuple[list[float], list[int]]:
    """(floats, integers) of the arrays file at ``path``, if it is the one its document names
    (``token``) and holds ``counts`` numbers; ValueError (or OSError) otherwise: a damaged,
    partial or other write's file."""
    with np.load(path, allow_pickle=False) as z:
        if str(z["token"]) != token:
            raise ValueError("the arrays file is another write's")
        f, i = z["floats"], z["ints"]
        if f.dtype != np.float64 or i.dtype != np.int64 or (f.size, i.size) != counts:
            raise ValueError("the arrays file does not hold what its document names")
        return f.tolist(), i.tolist()


# ----------------------------------------------------------------------------- fingerprints


def _stat(p: Path) -> list[int] | None:
    try:
        st = p.stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def run_inputs(run_dir: Path) -> dict[str, list[int]]:
    """Every file under ``run_dir`` but the stored analysis: relative path -> [size, mtime_ns]."""
    root = Path(run_dir)
    out: dict[str, list[int]] = {}
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            rel = os.path.relpath(e.path, root).replace(os.sep, "/")
            if e.is_dir(follow_symlinks=True):
                if rel != STORE_DIR:
                    stack.append(Path(e.path))
            elif e.is_file(follow_symlinks=True):
                st = e.stat(follow_symlinks=True)
                out[rel] = [st.st_size, st.st_mtime_ns]
    return dict(sorted(out.items()))


def outside_inputs(key: StoreKey) -> dict[str, list[int] | None]:
    """Input files outside the run directory: the ``--device-file`` and the cached device files."""
    from nsightwrap.device.store import cache_dir

    out: dict[str, list[int] | None] = {}
    if key.device_file:
        out[key.device_file] = _stat(Path(key.device_file))
    cache = cache_dir()
    if cache.is_dir():
        for p in sorted(cache.glob("*.json")):
            out[str(p)] = _stat(p)
    return out


_CODE: str | None = None


def code_fingerprint() -> str:
    """A hash of nsightwrap's own modules (path, size, mtime): an edited nsightwrap of the same
    version (a development checkout) does not read an analysis an earlier one stored."""
    global _CODE
    if _CODE is None:
        pkg = Path(__file__).resolve().parent.parent
        h = hashlib.sha256()
        for p in sorted(pkg.rglob("*.py")):
            st = p.stat()
            h.update(f"{p.relative_to(pkg)}|{st.st_size}|{st.st_mtime_ns}\n".encode())
        _CODE = h.hexdigest()[:20]
    return _CODE


# ----------------------------------------------------------------------------- read, check, write


def stale_reason(doc: Mapping[str, Any], run_dir: Path, key: StoreKey) -> str | None:
    """Why the stored ``doc`` may not be used for ``run_dir`` with ``key`` (None: it may)."""
    if doc.get("format") != STORE_FORMAT or doc.get("version") != STORE_VERSION:
        return "stored by another nsightwrap"
    if doc.get("nsightwrap_version") != __version__ or doc.get("report_version") != FORMAT_VERSION:
        return f"stored by nsightwrap {doc.get('nsightwrap_version')}"
    if doc.get("code") != code_fingerprint():
        return "nsightwrap's code changed"
    settings = doc.get("settings")
    was: Mapping[str, Any] = settings if isinstance(settings, Mapping) else {}
    now = key.as_dict()
    for name, flag in (("tolerance", "--tolerance"), ("clock_ref", "--clock-ref"), ("device_file", "--device-file"),
                       ("nsys_iterations", ENV_NSYS_ITERATIONS)):  # fmt: skip
        if was.get(name) != now[name]:
            sep = "=" if name == "nsys_iterations" else " "
            return f"{flag}{sep}{_setting(name, now[name])} (stored: {_setting(name, was.get(name))})"
    changed = _diff(doc.get("inputs"), run_inputs(run_dir))
    if changed:
        return changed
    return _diff(doc.get("outside"), outside_inputs(key))


def _setting(name: str, v: Any) -> str:
    if v is None:
        return "none"
    if name == "nsys_iterations" and v == "":
        return "unset"
    if name == "tolerance" and isinstance(v, (int, float)):
        return f"{100 * v:g}%"
    return str(v)


def _diff(was: Any, now: Mapping[str, Any]) -> str | None:
    """One phrase naming the first input that differs (and how many more), or None."""
    if not isinstance(was, Mapping):
        return "no record of its inputs"
    words = []
    for path in sorted(set(was) | set(now)):
        if path not in now:
            words.append(f"{path} removed")
        elif path not in was:
            words.append(f"{path} added")
        elif list(was[path] or []) != list(now[path] or []):
            words.append(f"{path} changed")
    if not words:
        return None
    return words[0] + (f" and {len(words) - 1} more" if len(words) > 1 else "")


def read_stored(path: Path) -> dict[str, Any] | None:
    """The stored document at ``path``, or None where it is missing or unreadable (a truncated
    or foreign file is analysed again, never an error)."""
    try:
        with gzip.open(path, "rb") as f:
            doc = json.loads(f.read())
    except (OSError, EOFError, zlib.error, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def write_stored(run_dir: Path, key: StoreKey, inputs: Mapping[str, Any], report: Mapping[str, Any]) -> Path | None:
    """Store ``report`` with what it was computed from: in the run directory, else (not writable)
    in the user's cache. Returns where, or None where neither could be written."""
    small, refs, floats, ints = split_arrays(report)
    token = uuid.uuid4().hex
    doc = {
        "format": STORE_FORMAT,
        "version": STORE_VERSION,
        "created": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "nsightwrap_version": __version__,
        "report_version": FORMAT_VERSION,
        "code": code_fingerprint(),
        "settings": key.as_dict(),
        "inputs": dict(inputs),
        "outside": outside_inputs(key),
        "arrays": {"token": token, "floats": len(floats), "ints": len(ints), "lists": refs},
        "report": small,
    }
    # Level 1: the document is mostly numbers; a higher level costs seconds on a large run and
    # saves little.
    data = gzip.compress(json.dumps(doc, separators=(",", ":"), allow_nan=False).encode("utf-8"), compresslevel=1)
    arrays = _arrays_bytes(floats, ints, token)
    for path in store_paths(run_dir):
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # The arrays first: a reader between the two replaces finds the document before
            # naming another token, and analyses again.
            _replace(arrays_path(path), arrays)
            _replace(path, data)
            return path
        except OSError:
            continue
    return None


def _replace(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file beside it (never a partial file)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _with_arrays(doc: Mapping[str, Any], path: Path) -> Any:
    """The stored report document with its lists read back from the arrays file beside ``path``."""
    meta = doc.get("arrays")
    if not isinstance(meta, Mapping):
        raise ValueError("no record of the arrays file")
    n_floats, n_ints = meta.get("floats"), meta.get("ints")
    if not isinstance(n_floats, int) or not isinstance(n_ints, int):
        raise ValueError("no count of the stored arrays")
    floats, ints = read_arrays(arrays_path(path), str(meta.get("token")), (n_floats, n_ints))
    return join_arrays(doc["report"], meta.get("lists"), floats, ints)


def _when(doc: Mapping[str, Any]) -> str:
    try:
        return _dt.datetime.fromisoformat(str(doc.get("created"))).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return "at an unknown time"


def stored_analysis(
    run_dir: Path,
    analyze: Analyze,
    *,
    key: StoreKey,
    to_doc: ToDoc,
    from_doc: FromDoc,
    reanalyze: bool = False,
) -> Analysis:
    """The analysis of ``run_dir`` with the settings ``key``: the stored one where nothing it was
    computed from changed, else ``analyze()``, then stored. ``reanalyze`` never reads the stored
    one. Inputs are fingerprinted before the analysis, so a file changed meanwhile makes the
    next reader analyse again."""
    run_dir = Path(run_dir)
    if not store_enabled():
        return Analysis(analyze(), "computed", f"analysis: computed (not stored: {STORE_ENV} is off)")
    why = "--reanalyze" if reanalyze else None
    # The run directory's copy first, then the cache's (a run directory that was not writable).
    for path in () if reanalyze else store_paths(run_dir):
        doc = read_stored(path) if path.is_file() else None
        if doc is None:
            continue
        stale = stale_reason(doc, run_dir, key)
        if stale is None:
            try:
                report = _with_arrays(doc, path)
                result = from_doc(report)
            except Exception as exc:  # noqa: BLE001 - any document this reader cannot rebuild: analyse again
                stale = f"stored analysis unreadable ({type(exc).__name__})"
            else:
                # The document read is ``to_doc(result)`` (stored so, and read back number for
                # number): handed on, a report JSON or ``compare`` need not make it again.
                return Analysis(result, "stored", f"analysis: stored ({_when(doc)}, inputs unchanged)", path, report)
        why = why or stale
    inputs = run_inputs(run_dir)
    result = analyze()
    report = to_doc(result)
    where = write_stored(run_dir, key, inputs, report)
    how = "computed" if why is None else "recomputed"
    reason = why or "no stored analysis"
    if where is None:
        return Analysis(result, how, f"analysis: {how} ({reason}; not stored: the run directory and the cache are not writable)",
                        None, report)  # fmt: skip
    return Analysis(result, how, f"analysis: {how} ({reason}); stored in {where}", where, report)


def store_result(run_dir: Path, result: RunResult, *, key: StoreKey, to_doc: ToDoc,
                 inputs: Mapping[str, Any] | None = None) -> Path | None:  # fmt: skip
    """Store an analysis made elsewhere (``nsightwrap profile``'s). ``inputs``: the run's files
    as they were when the analysis began (default: now). None where off or not writable."""
    if not store_enabled():
        return None
    return write_stored(run_dir, key, run_inputs(run_dir) if inputs is None else inputs, to_doc(result))
