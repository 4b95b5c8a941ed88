"""Gzipped reports (``report.ncu-rep.gz``, ``report.sqlite.gz``) read as if they were plain.

ncu_report and SQLite need a file on disk, so a ``.gz`` is unpacked once into the user's cache
(``$XDG_CACHE_HOME/nsightwrap/unpacked``, else ``~/.cache/...``, else the temp folder), keyed by
the file's path, size and mtime; the original is never touched. Run directories and fixtures
can then ship their largest reports compressed (an ncu report packs about 8:1).

The cache is bounded: after each unpack the least recently used copies (by their folder's mtime,
touched on every hit) are removed until it holds at most ``NSIGHTWRAP_UNPACK_CACHE_BYTES`` (default 2 GiB);
the copy just made is always kept.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import shutil
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nsightwrap.core.errors import DiskFull, NsightwrapError, ReportParseError, is_no_space

#: Env var: the unpack cache's size cap in bytes (0 keeps only the newest copy).
CACHE_CAP_ENV = "NSIGHTWRAP_UNPACK_CACHE_BYTES"
DEFAULT_CACHE_CAP = 2 << 30


def cache_cap() -> int:
    """The unpack cache's cap in bytes: ``$NSIGHTWRAP_UNPACK_CACHE_BYTES``, else 2 GiB."""
    raw = os.environ.get(CACHE_CAP_ENV, "").strip()
    try:
        return max(0, int(raw)) if raw else DEFAULT_CACHE_CAP
    except ValueError:
        return DEFAULT_CACHE_CAP  # a typo in an env var must not stop a report


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
    try:
        with gzip.open(p, "rb") as src, tmp.open("wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    except (OSError, EOFError, zlib.error) as exc:
        tmp.unlink(missing_ok=True)
        if is_no_space(exc):  # the cache's disk is full, the report itself may be fine
            raise DiskFull.writing(
                out, exc if isinstance(exc, OSError) else None,
                hint=f"free space in {out.parent}, nsightwrap's unpack cache (XDG_CACHE_HOME moves it)",
            ) from None  # fmt: skip
        raise ReportParseError(f"{p}: cannot unpack ({exc})",
                               hint="the .gz file is truncated or corrupt: copy it again") from None  # fmt: skip
    os.replace(tmp, out)  # atomic: a reader in another process sees all of it or nothing
    prune(out.parent.parent, out.parent, cache_cap())
    return out


@contextmanager
def named_as(original: str | os.PathLike[str], copy: Path) -> Iterator[None]:
    """Errors raised while reading ``copy`` (the unpacked cache file of ``original``) name the
    user's file: the cache path means nothing to them."""
    try:
        yield
    except NsightwrapError as exc:
        if Path(original) == copy:
            raise
        a, b = str(copy), f"{original} (unpacked to {copy})"
        exc.message = exc.message.replace(a, b)
        exc.args = (f"{exc.message}; {exc.hint}" if exc.hint else exc.message,)
        raise
