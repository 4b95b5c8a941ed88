"""JSON files nsightwrap writes and reads: atomic writes, and reads that fail with one clear line.

Standard library only: the timer, inside the user's process, writes its sidecar with it too.
"""

from __future__ import annotations

import json
import math
import os
import secrets
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

from nsightwrap.core.errors import DiskFull, InputNotFound, ReportParseError, is_no_space


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


def read_json_object(path: str | os.PathLike[str], what: str) -> dict[str, Any]:
    """A JSON file whose top level is an object; one clear error for a missing, unreadable,
    truncated or foreign file (``what`` names the kind of file in the message)."""
    path = Path(path)
    try:
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
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ReportParseError(
            f"{what} {path} is not valid JSON ({exc})", hint="the file may be truncated"
        ) from exc
    if not isinstance(doc, dict):
        raise ReportParseError(f"{what} {path}: expected a JSON object at the top level")
    return doc


def finite_number(v: Any) -> float | None:
    """A JSON value as a finite float: None for null, booleans, strings, NaN and infinities."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    return float(v)
