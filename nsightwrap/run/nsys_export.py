"""Turn a ``.nsys-rep`` into the SQLite export that ``parsers.nsys`` reads.

nsys keeps its reports in a private format; only ``nsys export --type sqlite`` reads them. The
process itself starts in ``nsightwrap.run.launch`` (the one module that starts processes); this
module decides where the export goes, reuses a fresh one, and turns failures into one line.
"""

from __future__ import annotations

import os
from pathlib import Path

from nsightwrap.core.errors import InputNotFound, ProfilerFailed, ToolNotFound
from nsightwrap.run import launch
from nsightwrap.run.tools import find_tool

#: nsys export of a large report takes a while; beyond this something is wrong.
EXPORT_TIMEOUT_S = 600.0


def find_nsys(tool_path: str | None = None) -> str:
    """The nsys to export with (``--nsys``, NSIGHTWRAP_NSYS, PATH, install places); ToolNotFound otherwise."""
    try:
        return find_tool("nsys", tool_path).path
    except ToolNotFound as exc:
        raise ToolNotFound(
            f"reading a .nsys-rep needs nsys to export it: {exc.message}",
            hint=(exc.hint or "") + "; or run `nsys export --type sqlite REPORT.nsys-rep` elsewhere "
            "and inspect the .sqlite",
        ) from exc


def sqlite_path_for(rep: Path) -> Path:
    """Where the export of ``rep`` goes: beside it, same stem, ``.sqlite``."""
    return rep.with_suffix(".sqlite")


def export_nsys_sqlite(rep: str | Path, tool_path: str | None = None) -> Path:
    """Export ``rep`` to SQLite beside it (reusing an export newer than the report); its path."""
    rep = Path(rep)
    if not rep.is_file():
        raise InputNotFound(f"{rep} does not exist; give the path of an nsys .nsys-rep report")
    out = sqlite_path_for(rep)
    if out.is_file() and out.stat().st_mtime >= rep.stat().st_mtime and out.stat().st_size > 0:
        return out
    nsys = find_nsys(tool_path)
    if not os.access(out.parent, os.W_OK):
        raise ProfilerFailed(
            f"cannot write {out} beside the report; copy {rep.name} to a writable folder, "
            f"or run `nsys export --type sqlite -o OUT.sqlite {rep}` and inspect OUT.sqlite"
        )
    argv = launch.nsys_export_argv(nsys, rep, out)
    result = launch.probe(argv, timeout_s=EXPORT_TIMEOUT_S)
    if not result.ok or not out.is_file():
        why = (
            result.error
            or _last_line(result.stderr)
            or _last_line(result.stdout)
            or f"exit {result.returncode}"
        )
        raise ProfilerFailed(f"`nsys export --type sqlite` of {rep} failed: {why}")
    return out


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def keep_clock_only(full: Path, out: Path) -> None:
    """Copy an NVTX + GPU-metrics export into ``out`` with only the GPC clock kept of its GPU
    metrics: at 20 kHz nsys stores some twenty metrics per sample, a few hundred MB for a minute
    of sampling, of which the analysis reads the clock alone. The ``.nsys-rep`` it came from
    keeps everything."""
    import sqlite3

    tmp = out.with_name(out.name + ".part")
    tmp.unlink(missing_ok=True)
    con = sqlite3.connect(full)
    try:
        con.execute("ATTACH DATABASE ? AS small", (str(tmp),))
        tables = [r[0] for r in con.execute("SELECT name FROM main.sqlite_master WHERE type='table'")]
        for name in tables:
            if name.startswith("sqlite_"):
                continue
            q = '"' + name.replace('"', '""') + '"'
            if name == "GPU_METRICS" and "TARGET_INFO_GPU_METRICS" in tables:
                con.execute(
                    f"CREATE TABLE small.{q} AS SELECT * FROM main.{q} WHERE metricId IN "
                    "(SELECT metricId FROM main.TARGET_INFO_GPU_METRICS WHERE metricName LIKE 'GPC Clock%')"
                )
            else:
                con.execute(f"CREATE TABLE small.{q} AS SELECT * FROM main.{q}")
        con.commit()
        con.execute("DETACH DATABASE small")
    finally:
        con.close()
    os.replace(tmp, out)
