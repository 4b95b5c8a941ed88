"""The notebook API: a run, a ``.ncu-rep`` or an nsys export as pandas DataFrames in one call.

    import nsightwrap as nw
    run = nw.load_run("nsightwrap-runs/2026-12-01-bench")
    run.to_frame()          # one row per benchmark
    run                     # in Jupyter: the HTML report
    nw.read_ncu("report.ncu-rep")      # one row per profiled kernel
    nw.read_nsys("report.sqlite").ops  # GPU ops; .ranges, .attribution

Like the CLI, this module sits above every stage and composes them; nothing imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from nsightwrap.analysis.frames import benchmarks_frame, kernels_frame
from nsightwrap.analysis.model import BenchmarkResult, RunResult
from nsightwrap.parsers.nsys import NsysReport


@dataclass(frozen=True)
class Run:
    """An analysed run directory: ``result`` (the ``RunResult``), frames, and an HTML view."""

    result: RunResult

    @property
    def benchmarks(self) -> tuple[BenchmarkResult, ...]:
        """Every benchmark, with its timer, ncu and nsys numbers, verdict and causes."""
        return self.result.benchmarks

    @property
    def flagged(self) -> tuple[BenchmarkResult, ...]:
        """The benchmarks whose timing disagrees with the profilers."""
        return self.result.flagged

    def to_frame(self) -> pd.DataFrame:
        """One row per benchmark (columns: ``analysis.frames.BENCHMARK_COLUMNS``)."""
        return benchmarks_frame(self.result)

    def kernels(self) -> pd.DataFrame:
        """One row per profiled kernel (columns: ``analysis.frames.KERNEL_COLUMNS``)."""
        return kernels_frame(self.result)

    def _repr_html_(self) -> str:
        # Jupyter shows the same self-contained page as `nsightwrap report --format html`.
        from nsightwrap.export.html import render_html

        return render_html(self.result)

    def __repr__(self) -> str:
        flagged = len(self.flagged)
        return f"<nsightwrap run {self.result.run_dir}: {len(self.benchmarks)} benchmarks, {flagged} flagged>"


def load_run(path: str | Path, *, tolerance: float = 0.1, clock_ref: str = "plain") -> Run:
    """Analyse a run directory (as ``nsightwrap report`` does) and return it as a ``Run``."""
    from nsightwrap.analysis.load import analyze

    return Run(analyze(Path(path), tolerance=tolerance, clock_ref=clock_ref))


def read_ncu(path: str | Path) -> pd.DataFrame:
    """A ``.ncu-rep`` or ncu raw CSV as one row per profiled kernel (docs/ncu-parsing.md)."""
    from nsightwrap.parsers.ncu import read_ncu as _read

    return _read(path)


def read_nsys(path: str | Path) -> NsysReport:
    """An nsys SQLite export (or a ``.nsys-rep``, exported on the fly with ``nsys export``) as
    ``.ops``, ``.ranges`` and ``.attribution`` frames (docs/nsys-parsing.md)."""
    from nsightwrap.parsers.nsys import read_nsys as _read

    p = Path(path)
    if p.suffix == ".nsys-rep":
        from nsightwrap.run.nsys_export import export_nsys_sqlite

        p = export_nsys_sqlite(p)
    return _read(p)
