"""The notebook API: a run, an ncu report or an nsys export as pandas DataFrames in one call.

    import nsightwrap as nw
    run = nw.load_run("nsightwrap-runs/20261201-120000-bench")
    run.to_frame()          # one row per benchmark: timer, ncu, nsys, ratio, verdict
    run.kernels()           # one row per kernel ncu profiled, with its clock model
    run                     # in Jupyter: counts and the worst benchmarks (every one behind a click)
    run.full()              # in Jupyter: the full HTML report, as `nsightwrap report --format html`
    nw.read_ncu("report.ncu-rep")      # one row per profiled kernel, every metric
    nw.read_nsys("report.sqlite").ops  # GPU ops; .ranges (NVTX), .attribution (op -> range)

Columns and units: docs/notebook.md. Times are in ns, clocks in Hz, sizes in bytes. Bad input
raises an ``NsightwrapError`` (``nsightwrap.core.errors``) whose message names the file and the
fix, as the command line prints it.

Like the CLI, this module sits above every stage and composes them; nothing imports it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from nsightwrap.analysis.frames import benchmarks_frame, gaps_frame, kernels_frame
from nsightwrap.analysis.model import BenchmarkResult, RunResult
from nsightwrap.core.errors import InputNotFound, ReportParseError
from nsightwrap.parsers.kind import ReportKind, detect
from nsightwrap.parsers.nsys import NsysReport

#: The function that reads each kind of file, for the error when a file reaches the wrong one.
_READER = {
    ReportKind.NCU_REP: "read_ncu",
    ReportKind.NCU_CSV: "read_ncu",
    ReportKind.NSYS_SQLITE: "read_nsys",
    ReportKind.NSYS_REP: "read_nsys",
}


@dataclass(frozen=True)
class Run:
    """An analysed run directory: ``result`` (the ``RunResult`` every exporter reads), its tidy
    frames, and its HTML report as the notebook's view."""

    result: RunResult
    #: How the analysis was had: ``analysis: stored (...)``, ``analysis: computed (...)`` or
    #: ``analysis: recomputed (<the input or setting that changed>)`` (docs/analysis-speed.md).
    analysis: str = ""

    @property
    def path(self) -> Path:
        """The run directory."""
        return Path(self.result.run_dir)

    @property
    def benchmarks(self) -> tuple[BenchmarkResult, ...]:
        """Every benchmark, with its timer, ncu and nsys numbers, verdict and causes."""
        return self.result.benchmarks

    @property
    def flagged(self) -> tuple[BenchmarkResult, ...]:
        """The benchmarks whose timing disagrees with the profilers."""
        return self.result.flagged

    def benchmark(self, name: str) -> BenchmarkResult:
        """One benchmark by name (``mm[M=64]`` for a sweep point); KeyError naming the others."""
        for b in self.result.benchmarks:
            if b.name == name:
                return b
        known = ", ".join(b.name for b in self.result.benchmarks) or "none"
        raise KeyError(f"no benchmark {name!r} in {self.result.run_dir} (benchmarks: {known})")

    def to_frame(self) -> pd.DataFrame:
        """One row per benchmark, in the run's order (columns: docs/notebook.md,
        ``analysis.frames.BENCHMARK_COLUMNS``)."""
        return benchmarks_frame(self.result)

    def kernels(self) -> pd.DataFrame:
        """One row per kernel ncu profiled in a measured iteration (columns: docs/notebook.md,
        ``analysis.frames.KERNEL_COLUMNS``)."""
        return kernels_frame(self.result)

    def gaps(self) -> pd.DataFrame:
        """One row per part of each benchmark's gap (timer - ncu), residual included (columns:
        docs/notebook.md, ``analysis.frames.GAP_COLUMNS``)."""
        return gaps_frame(self.result)

    def _repr_html_(self) -> str:
        # A compact view (counts, the worst few, every benchmark behind a click) whose CSS is
        # scoped to its own root: the full report's page-wide CSS would restyle the notebook.
        from nsightwrap.export.notebook_html import summary_html

        return summary_html(self.result, f"nsightwrap-{uuid.uuid4().hex[:12]}")

    def full_html(self) -> str:
        """The full report as one HTML document, the same as ``nsightwrap report --format html``."""
        from nsightwrap.export.html import render_html

        return render_html(self.result)

    def full(self) -> FullReport:
        """The full report for a notebook cell: shown in a sandboxed iframe, so that its CSS stays
        inside it."""
        return FullReport(self.full_html())

    def __repr__(self) -> str:
        flagged = len(self.flagged)
        return f"<nsightwrap run {self.result.run_dir}: {len(self.benchmarks)} benchmarks, {flagged} flagged>"


@dataclass(frozen=True, repr=False)
class FullReport:
    """A run's full HTML report (``document``) as a notebook shows it: inside an iframe."""

    document: str

    def _repr_html_(self) -> str:
        from nsightwrap.export.notebook_html import iframe

        return iframe(self.document)

    def __repr__(self) -> str:
        return f"<nsightwrap full report: {len(self.document):,} characters of HTML>"


def load_run(
    path: str | Path, *, tolerance: float = 0.1, clock_ref: str = "plain", reanalyze: bool = False
) -> Run:
    """Analyse a run directory of ``nsightwrap profile`` (as ``nsightwrap report`` does).

    ``tolerance`` is the fraction timer and ncu may differ by (0.1: 10%); ``clock_ref`` the
    reference SM clock (``plain``, ``boost``, ``base`` or a clock such as ``1.98e9``/``1980MHz``),
    as ``report --tolerance/--clock-ref`` take them. The run's stored analysis is read where its
    inputs and these settings are unchanged (``Run.analysis`` says which happened; ``reanalyze``
    analyses again), as ``nsightwrap report`` does.
    """
    from nsightwrap.analysis.load import analyze
    from nsightwrap.analysis.store import StoreKey, stored_analysis
    from nsightwrap.export.jsonio import report_from_dict, report_to_dict
    from nsightwrap.run.ncu_isolated import read_ncu_rep_isolated

    p = Path(path)
    if not p.exists():
        raise InputNotFound(f"{p} not found", hint="give the run directory `nsightwrap profile` wrote")
    if not p.is_dir():
        raise InputNotFound(
            f"{p} is a file, not a run directory",
            hint="give the folder `nsightwrap profile` wrote; read a single report with read_ncu or read_nsys",
        )
    def fresh() -> RunResult:
        # The native ncu reader in a child process: its crash raises one error, not a dead kernel.
        return analyze(p, tolerance=tolerance, clock_ref=clock_ref, read_ncu=read_ncu_rep_isolated)

    had = stored_analysis(p, fresh, key=StoreKey.of(tolerance, clock_ref, None), to_doc=report_to_dict,
                          from_doc=report_from_dict, reanalyze=reanalyze)  # fmt: skip
    return Run(had.result, had.line)


def _kind(path: Path, wanted: str) -> ReportKind:
    """The report kind of ``path`` (read from its content, not its name); one clear error for a
    missing path, a directory, or a file that belongs to another reader."""
    if not path.exists():
        raise InputNotFound(f"{path} not found", hint=f"give the path of {wanted}")
    if path.is_dir():
        raise InputNotFound(
            f"{path} is a directory", hint=f"give the path of {wanted}; load a run directory with load_run"
        )
    kind = detect(path)  # an empty, corrupt or unknown file: one line naming it
    if kind not in _READER:
        run_file = kind in (ReportKind.TIMER_JSON, ReportKind.SMI_XML, ReportKind.SMI_CSV, ReportKind.REPORT_JSON)
        raise ReportParseError(
            f"{path} is a {kind.value} file, not {wanted}",
            hint="load the run directory it belongs to with load_run" if run_file else f"give {wanted}",
        )
    return kind


def read_ncu(path: str | Path) -> pd.DataFrame:
    """One row per kernel of an ncu report: a ``.ncu-rep`` (or ``.ncu-rep.gz``) or an ncu raw-page
    CSV. Columns (docs/notebook.md, docs/ncu-parsing.md): ``launch_id``, ``kernel``,
    ``kernel_short``, ``grid``, ``block``, ``device``, ``context``, ``stream``, ``duration_ns``,
    ``sm_clock_hz``, ``dram_bytes_read``, ``dram_bytes_write``, ``dram_bytes``,
    ``sm_throughput_pct``, ``memory_throughput_pct``, ``dram_throughput_pct``, ``nvtx_path``,
    ``nvtx_ranges``, then every metric collected, under its ncu name, in base units (ns, Hz,
    bytes). Needs no GPU and no ncu.
    """
    # The native ncu_report runs in a child process: its crash raises one error, not a dead kernel.
    from nsightwrap.run.ncu_isolated import read_ncu_isolated as _read

    p = Path(path)
    kind = _kind(p, "an Nsight Compute report (.ncu-rep, or ncu's raw CSV)")
    if _READER[kind] != "read_ncu":
        raise ReportParseError(f"{p} is an Nsight Systems report", hint="read it with read_nsys")
    return _read(p)


def read_nsys(path: str | Path, *, detail: bool = True) -> NsysReport:
    """An nsys capture as three frames: ``.ops`` (GPU kernels, copies, memsets, graphs), ``.ranges``
    (NVTX ranges) and ``.attribution`` (``op_id`` -> ``range_id``); columns in docs/notebook.md.

    Takes the SQLite export (``.sqlite`` or ``.sqlite.gz``) or a ``.nsys-rep``: for that, an
    export beside it is used (``.sqlite`` or ``.sqlite.gz``), else it is exported with
    ``nsys export`` (which needs nsys). ``detail=False`` skips names, shapes and streams (faster).
    """
    from nsightwrap.parsers.nsys import read_nsys as _read

    p = Path(path)
    kind = _kind(p, "an Nsight Systems export (.sqlite) or report (.nsys-rep)")
    if _READER[kind] != "read_nsys":
        raise ReportParseError(f"{p} is an Nsight Compute report", hint="read it with read_ncu")
    if kind is ReportKind.NSYS_REP:
        from nsightwrap.run.nsys_export import export_nsys_sqlite, sqlite_path_for

        export = sqlite_path_for(p)
        gz = export.with_name(export.name + ".gz")
        # A shipped run directory keeps its export gzipped beside the report: no nsys needed.
        p = gz if not export.is_file() and gz.is_file() else export_nsys_sqlite(p)
    return _read(p, detail=detail)
