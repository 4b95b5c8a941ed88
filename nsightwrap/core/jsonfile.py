"""JSON files nsightwrap writes and reads: atomic writes, and reads that fail with one clear line.

Standard library only: the timer, inside the user's process, writes its sidecar with it too.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nsightwrap.core.errors import DiskFull, InputNotFound, ReportParseError, is_no_space


def write_json_atomic(
    path: str | os.PathLike[str], data: Mapping[str, Any], *, indent: int = 2, allow_nan: bool = True
) -> None:
    """Write JSON through a hidden temporary file in the same directory and rename it into place,
    so a reader never sees half a file (and a glob for the final name never sees the temporary)."""
    text = json.dumps(data, indent=indent, allow_nan=allow_nan) + "\n"
    write_text_atomic(path, text)


def write_text_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write ``data`` through a hidden temporary file beside ``path`` and rename it into place: a
    write that fails (a full disk above all) leaves no half file and no 0-byte file, and an old
    file at ``path`` untouched. A full disk (or quota, or file size limit) raises DiskFull
    naming ``path``; any other OSError is raised as it is."""
    path = Path(path)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if is_no_space(exc):
            raise DiskFull.writing(path, exc if isinstance(exc, OSError) else None) from None
        raise


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
