"""JSON files nsightwrap writes and reads: atomic writes, and reads that fail with one clear line.

Standard library only: the timer, inside the user's process, writes its sidecar with it too.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from itertools import accumulate
from pathlib import Path
from typing import Any, TextIO

from nsightwrap.core.errors import BadField, DiskFull, InputNotFound, ReportParseError, is_no_space


@contextmanager
def atomic_text_file(path: str | os.PathLike[str]) -> Iterator[TextIO]:
    """A text file to write, made through a hidden temporary file in the same directory and renamed
    into place when the block ends without an error (removed when it raises), so a reader never
    sees half a file and a glob for the final name never sees the temporary. Written as a stream:
    a large output costs no second copy in memory. A full disk (or quota, or file size limit)
    raises DiskFull naming ``path`` and leaves no half file, no 0-byte file, and an old file at
    ``path`` untouched; any other OSError is raised as it is."""
    path = Path(path)
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    made = False
    try:
        # Mode 0o666 less the umask, as open() gives: the file reads like any other (mkstemp's
        # 0o600 would hide a report from the CI job or colleague it was written for).
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        made = True
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if made:
            tmp.unlink(missing_ok=True)
        if is_no_space(exc):
            raise DiskFull.writing(path, exc if isinstance(exc, OSError) else None) from None
        raise


def write_text_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write ``data`` atomically (``atomic_text_file``; bytes are UTF-8 text)."""
    with atomic_text_file(path) as f:
        f.write(data.decode("utf-8") if isinstance(data, bytes) else data)


def write_json_atomic(
    path: str | os.PathLike[str], data: Mapping[str, Any], *, indent: int = 2, allow_nan: bool = True
) -> None:
    """Write JSON atomically (``atomic_text_file``)."""
    with atomic_text_file(path) as f:
        json.dump(data, f, indent=indent, allow_nan=allow_nan)
        f.write("\n")


#: The largest JSON file nsightwrap reads (bytes): a timer sidecar of a million samples with
#: their clocks and power is ~100 MB; a larger file is refused before it is read.
MAX_JSON_BYTES = 512 * 1024 * 1024
#: The deepest nesting of arrays and objects read (a manifest or report JSON nests ~8 deep);
#: checked on the text before ``json`` parses it, whose parser recurses once per level.
MAX_JSON_DEPTH = 64
#: Integers with more digits are read as floats (Python refuses int() of over 4,300 digits, and
#: nsightwrap's largest integers, nanosecond timestamps, have 19).
_MAX_INT_DIGITS = 24

_NOT_STRUCTURE = re.compile(r'[^\[\]{}"]+')
_QUOTED = re.compile(r'"[^"]*"')
_HUGE_INT = 10**_MAX_INT_DIGITS
_DEPTH = {"[": 1, "{": 1, "]": -1, "}": -1}
# A surrogate can only reach a parsed string through a \uD800-\uDFFF escape (UTF-8 text holds none).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _depth(text: str) -> int:
    """The deepest nesting of ``[`` and ``{`` in JSON text, strings left out."""
    # Escapes first (a pair of backslashes, then an escaped quote: JSON reads a backslash run
    # pairwise from the left, as str.replace does), then all but brackets and quotes: what is
    # left is short (a few characters per object or list) and strings are plain "...".
    bare = _NOT_STRUCTURE.sub("", text.replace("\\\\", "").replace('\\"', ""))
    brackets = _QUOTED.sub("", bare).replace('"', "")  # an unclosed string (truncated text)
    return max(accumulate(map(_DEPTH.__getitem__, brackets)), default=0)


def _huge_numbers(doc: Any) -> bool:
    """Whether ``doc`` holds an infinite float (a literal past float's range) or an integer of
    more than ``_MAX_INT_DIGITS`` digits."""
    stack = [doc]
    while stack:
        v = stack.pop()
        if isinstance(v, list):
            try:  # a list of numbers (samples): its extremes in C
                if v and not -_HUGE_INT < min(v) <= max(v) < _HUGE_INT:
                    return True
            except TypeError:  # other values too: one by one
                stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, (int, float)) and not isinstance(v, bool) and not -_HUGE_INT < v < _HUGE_INT:
            return True
    return False


def _finite_or_none(x: float) -> float | None:
    # NaN, Infinity and literals past float's range (1e999) are read as null: missing.
    return x if math.isfinite(x) else None


def _int(s: str) -> int | float | None:
    return int(s) if len(s.lstrip("-")) <= _MAX_INT_DIGITS else _finite_or_none(float(s))


def _no_surrogates(v: Any) -> Any:
    """``v`` with every lone surrogate (``\\ud800`` in the JSON) replaced by U+FFFD: such a
    string cannot be encoded as UTF-8, so it would fail in every output."""
    if isinstance(v, str):
        return _SURROGATE.sub("\ufffd", v)
    if isinstance(v, list):
        return [_no_surrogates(x) for x in v]
    if isinstance(v, dict):
        return {_no_surrogates(k): _no_surrogates(x) for k, x in v.items()}
    return v


def parse_json(text: str, where: str) -> Any:
    """JSON text as data, the way every nsightwrap reader takes it: NaN, Infinity and numbers
    past float's range read as null (missing), lone surrogates as U+FFFD, nesting deeper than
    ``MAX_JSON_DEPTH`` refused before parsing. ``where`` names the file in the one-line error."""
    depth = _depth(text)
    if depth > MAX_JSON_DEPTH:
        raise ReportParseError(
            f"{where} nests arrays and objects {depth} deep (at most {MAX_JSON_DEPTH} are read)",
            hint="the file is not one nsightwrap wrote; give the file nsightwrap made",
        )
    try:
        # json's own number readers first (no Python call per number); read again number by
        # number only where they read one otherwise (past float's range, a very long integer).
        try:
            doc = json.loads(text, parse_constant=lambda _: None)
        except ValueError:  # an integer of over 4,300 digits
            doc = None
        if doc is None or _huge_numbers(doc):
            doc = json.loads(text, parse_constant=lambda _: None, parse_float=lambda s: _finite_or_none(float(s)),
                             parse_int=_int)  # fmt: skip
    except (json.JSONDecodeError, RecursionError, ValueError) as exc:
        raise ReportParseError(f"{where} is not valid JSON ({exc})", hint="the file may be truncated") from exc
    return _no_surrogates(doc) if _SURROGATE_ESCAPE.search(text) else doc


def read_json_object(path: str | os.PathLike[str], what: str) -> dict[str, Any]:
    """A JSON file whose top level is an object; one clear error for a missing, unreadable,
    truncated, oversized or foreign file (``what`` names the kind of file in the message).
    Values are read as ``parse_json`` reads them."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_JSON_BYTES:
            raise ReportParseError(
                f"{what} {path} is {size / 2**20:,.0f} MiB; at most {MAX_JSON_BYTES // 2**20} MiB are read",
                hint="the file is not one nsightwrap wrote; give the file nsightwrap made",
            )
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise InputNotFound(f"{what} {path} does not exist", hint="check the path") from exc
    except OSError as exc:
        raise InputNotFound(f"{what} {path}: cannot read ({exc.strerror})") from exc
    except UnicodeDecodeError as exc:  # a ValueError, not an OSError: bytes that are not UTF-8
        raise ReportParseError(
            f"{what} {path} is not UTF-8 text (byte {exc.start}: {exc.reason})",
            hint="the file may be corrupt or not a JSON file",
        ) from exc
    doc = parse_json(text, f"{what} {path}")
    if not isinstance(doc, dict):
        raise ReportParseError(f"{what} {path}: expected a JSON object at the top level")
    return doc


def finite_number(v: Any) -> float | None:
    """A JSON value as a finite float: None for null, booleans, strings, NaN and infinities."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)


def check_schema(doc: Any, schema: str, where: str) -> None:
    """Refuse ``doc`` where a value it has is of another type than the shipped JSON Schema
    ``schema`` (``manifest``, ``report``, ``sidecar``) gives: one line naming ``where`` and the
    field, before any reader trips over it."""
    from nsightwrap.schemas import problem  # the schemas import nothing: data and their checker

    found = problem(doc, schema)
    if found and found.endswith(", not null") and ("a number" in found or "an integer" in found):
        found += " (NaN, Infinity and numbers past a float's range are read as null)"
    if found:
        raise BadField(
            f"{where}: {found}", hint="the file was changed after nsightwrap wrote it; use the file nsightwrap wrote"
        )
