"""Gzipped reports (``report.ncu-rep.gz``, ``report.sqlite.gz``) read as if they were plain.

ncu_report and SQLite need a file on disk, so a ``.gz`` is unpacked once into the user's cache
(``$XDG_CACHE_HOME/nsightwrap/unpacked``, else ``~/.cache/...``, else the temp folder), keyed by
the file's path, size and mtime; the original is never touched. Run directories and fixtures
can then ship their largest reports compressed (an ncu report packs about 8:1).

The cache is bounded: after each unpack the least recently used copies (by their folder's mtime,
touched on every hit) are removed until it holds at most ``NSIGHTWRAP_UNPACK_CACHE_BYTES`` (default 2 GiB);
the copy just made is always kept.

Unpacking is bounded too, so that a small ``.gz`` cannot fill the disk (a gzip of zeros packs
about 1000:1): a file may unpack to at most ``UNPACK_RATIO`` times its packed size, and never
less than ``UNPACK_FLOOR`` bytes, unless ``NSIGHTWRAP_UNPACK_MAX_BYTES`` sets the limit. The
size the gzip trailer declares is checked before anything is written, the bytes written while
they are written. A partial copy (a limit reached, a damaged archive, Ctrl-C) is removed, and a
copy that its reader found to be no valid report is removed by ``named_as``.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from nsightwrap.core.errors import DiskFull, NsightwrapError, ReportParseError, UsageError, is_no_space

#: Env var: the unpack cache's size cap in bytes (0 keeps only the newest copy).
CACHE_CAP_ENV = "NSIGHTWRAP_UNPACK_CACHE_BYTES"
DEFAULT_CACHE_CAP = 2 << 30
#: Env var: the most bytes one ``.gz`` may unpack to (default: ``unpack_limit``'s rule).
MAX_BYTES_ENV = "NSIGHTWRAP_UNPACK_MAX_BYTES"
#: Real reports pack 8-12:1 (ncu reports and nsys SQLite exports in fixtures/); a gzip of zeros
#: about 1000:1. Beyond this ratio a ``.gz`` is refused unless ``NSIGHTWRAP_UNPACK_MAX_BYTES`` allows it.
UNPACK_RATIO = 100
#: Small archives may always unpack to this many bytes, whatever their ratio.
UNPACK_FLOOR = 64 << 20


def cache_cap() -> int:
    """The unpack cache's cap in bytes: ``$NSIGHTWRAP_UNPACK_CACHE_BYTES``, else 2 GiB."""
    raw = os.environ.get(CACHE_CAP_ENV, "").strip()
    try:
        return max(0, int(raw)) if raw else DEFAULT_CACHE_CAP
    except ValueError:
        return DEFAULT_CACHE_CAP  # a typo in an env var must not stop a report


def unpack_limit(packed_bytes: int) -> tuple[int, bool]:
    """``(limit, from_env)``: the most bytes a ``.gz`` of ``packed_bytes`` may unpack to, and
    whether ``NSIGHTWRAP_UNPACK_MAX_BYTES`` set it (else ``UNPACK_RATIO`` times its size, at
    least ``UNPACK_FLOOR``)."""
    raw = os.environ.get(MAX_BYTES_ENV, "").strip()
    if raw:
        try:
            return max(0, int(raw)), True
        except ValueError:
            raise UsageError(f"{MAX_BYTES_ENV}={raw!r} is not a byte count",
                             hint=f"set it to a whole number of bytes, e.g. {MAX_BYTES_ENV}={16 << 30}") from None  # fmt: skip
    return max(UNPACK_FLOOR, UNPACK_RATIO * packed_bytes), False


def _too_big(p: Path, packed: int, limit: int, from_env: bool) -> ReportParseError:
    if from_env:
        why = f"{MAX_BYTES_ENV}={limit}"
    else:
        why = (f"{UNPACK_RATIO}x its {packed:,} bytes, while real reports pack about 10:1 "
               "(a gzip bomb, or a file of zeros?)")  # fmt: skip
    return ReportParseError(f"{p}: refused to unpack: it unpacks to more than {limit:,} bytes, the limit "
                            f"({why})", hint=f"to read it anyway, set {MAX_BYTES_ENV} to a larger byte "
                            "count; nothing of it was left in the cache")  # fmt: skip


def _declared_size(p: Path, packed: int) -> int:
    """The unpacked size the gzip trailer declares (of the last member, modulo 4 GiB): a hint only,
    since a damaged archive's last bytes are anything."""
    if packed < 18:  # shorter than an empty gzip member
        return 0
    with p.open("rb") as f:
        f.seek(packed - 4)
        return int.from_bytes(f.read(4), "little")


def _inflate(p: Path, limit: int, write: Callable[[bytes], object] | None) -> bool:
    """Unpack ``p`` into ``write`` (None: count only); False as soon as it passes ``limit`` bytes."""
    done = 0
    with gzip.open(p, "rb") as src:
        while chunk := src.read(1 << 20):
            done += len(chunk)
            if done > limit:  # tested before the chunk is written: at most the limit is on disk
                return False
            if write is not None:
                write(chunk)
    return True


def _copy_bounded(p: Path, dst: BinaryIO, packed: int) -> None:
    """Unpack ``p`` into ``dst``; ReportParseError past ``unpack_limit``. Where the trailer declares
    more than the limit, the archive is first inflated without writing: a gzip bomb puts no byte on
    disk, and a damaged archive is still told as damaged."""
    limit, from_env = unpack_limit(packed)
    if _declared_size(p, packed) > limit and not _inflate(p, limit, None):
        raise _too_big(p, packed, limit, from_env)
    if not _inflate(p, limit, dst.write):
        raise _too_big(p, packed, limit, from_env)


def prune(folder: Path, keep: Path, cap: int) -> None:
    """Remove the least recently used copies under ``folder`` (one per subfolder) until what is
    left fits ``cap``; ``keep`` (the copy in use) stays. Races with other processes are harmless."""
    entries = []
    for d in folder.iterdir() if folder.is_dir() else ():
        try:
            files = [f for f in d.iterdir() if f.is_file()]
            size = sum(f.stat().st_size for f in files)
            mtime = d.stat().st_mtime
        except OSError:
            continue
        entries.append((mtime, size, d))
    total = sum(size for _, size, _ in entries)
    for _, size, d in sorted(entries):  # oldest first
        if total <= cap:
            break
        if d == keep:
            continue
        shutil.rmtree(d, ignore_errors=True)
        total -= size


def cache_root() -> Path:
    """nsightwrap's cache folder (not created here)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nsightwrap"


def _writable_dir(path: Path) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
        if os.access(path, os.W_OK):
            return path
    except OSError:
        pass
    fallback = Path(tempfile.gettempdir()) / f"nsightwrap-{os.getuid()}" / "unpacked"
    fallback.mkdir(parents=True, exist_ok=True)
    return fallback


def unpacked(path: str | os.PathLike[str]) -> Path:
    """``path`` itself, or for ``*.gz`` the path of its unpacked copy (made on first use)."""
    p = Path(path)
    if p.suffix != ".gz" or not p.is_file():
        return p
    st = p.stat()
    key = hashlib.sha1(f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:16]
    out = _writable_dir(cache_root() / "unpacked" / key) / p.name[: -len(".gz")]
    if out.is_file():
        try:
            # A hit: its folder, not the copy, is marked used (readers key caches on the copy's mtime).
            os.utime(out.parent)
        except OSError:
            pass
        return out
    tmp = out.with_name(out.name + f".part-{os.getpid()}")
    done = False
    try:
        with tmp.open("wb") as dst:
            _copy_bounded(p, dst, st.st_size)
        os.replace(tmp, out)  # atomic: a reader in another process sees all of it or nothing
        done = True
    except (OSError, EOFError, zlib.error) as exc:
        tmp.unlink(missing_ok=True)
        if is_no_space(exc):  # the cache's disk is full, the report itself may be fine
            raise DiskFull.writing(
                out, exc if isinstance(exc, OSError) else None,
                hint=f"free space in {out.parent}, nsightwrap's unpack cache (XDG_CACHE_HOME moves it)",
            ) from None  # fmt: skip
        raise ReportParseError(f"{p}: cannot unpack ({exc})",
                               hint="the .gz file is truncated or corrupt: copy it again") from None  # fmt: skip
    finally:
        if not done:  # a limit, a damaged archive, a full disk or Ctrl-C: no partial copy is left
            tmp.unlink(missing_ok=True)
            _remove_if_empty(out.parent)
    prune(out.parent.parent, out.parent, cache_cap())
    return out


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # not empty (another process's copy) or already gone


def discard(original: str | os.PathLike[str], copy: Path) -> None:
    """Remove ``copy``, the unpacked cache file of ``original``, once its reader has found it to be
    no valid report: the cache keeps no copy that can only fail again. A plain file (``copy`` is
    ``original``) is never touched."""
    if Path(original) == copy:
        return
    copy.unlink(missing_ok=True)
    _remove_if_empty(copy.parent)


@contextmanager
def named_as(original: str | os.PathLike[str], copy: Path) -> Iterator[None]:
    """Errors raised while reading ``copy`` (the unpacked cache file of ``original``) name the
    user's file: the cache path means nothing to them. A copy its reader refused as no valid
    report (ReportParseError) is removed from the cache."""
    try:
        yield
    except NsightwrapError as exc:
        if Path(original) == copy:
            raise
        if isinstance(exc, ReportParseError):
            discard(original, copy)
        a, b = str(copy), f"{original} (unpacked to {copy})"
        exc.message = exc.message.replace(a, b)
        exc.args = (f"{exc.message}; {exc.hint}" if exc.hint else exc.message,)
        raise
