"""``nsightwrap compare BASELINE CURRENT``: regression verdicts for CI."""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import replace
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from nsightwrap.cli import OLD_FORMAT_HELP, app, err_console, stdout_piped, write_output
from nsightwrap.core.errors import EXIT_FINDINGS, NoCommonBenchmarks, UsageError
from nsightwrap.export.escape import terminal_safe

if TYPE_CHECKING:
    from nsightwrap.compare.verdicts import Comparison

# The comparison and its exporters are imported where used: every nsightwrap command imports
# this module to register ``compare``, and the Markdown and terminal exporters alone pull in
# pandas (about half a second of every ``report``'s start).


class Metric(str, Enum):
    timer = "timer"
    ncu = "ncu"
    nsys = "nsys"


class Format(str, Enum):
    table = "table"
    md = "md"
    json = "json"
    junit = "junit"


class Preset(str, Enum):
    tight = "tight"
    default = "default"
    loose = "loose"


@app.command("compare")
def compare_command(
    baseline: Annotated[Path, typer.Argument(metavar="BASELINE", help="Baseline: a run directory or a report JSON.")],
    current: Annotated[
        Path | None, typer.Argument(metavar="CURRENT", help="Current: a run directory or a report JSON (none with --gpu-vs-gpu).")
    ] = None,
    tolerance: Annotated[
        float | None,
        typer.Option(
            "--tolerance", metavar="PCT",
            help="Smallest change that counts, in percent (default 5; overrides --preset).",
        ),
    ] = None,
    threshold: Annotated[
        float | None, typer.Option("--threshold", hidden=True, help="Old name of --tolerance.")
    ] = None,
    preset: Annotated[
        Preset, typer.Option("--preset", metavar="tight|default|loose", help="tight (2%), default (5%), loose (10%, alpha 0.001).")
    ] = Preset.default,
    metric: Annotated[
        Metric,
        typer.Option(
            "--metric", metavar="timer|ncu|nsys",
            help="Which of the runs' timings to judge: timer (the script's own timing), ncu or nsys (their "
                 "kernel durations). Not profile --metrics, the ncu counters a profile collects.",
        ),
    ] = Metric.timer,
    fmt: Annotated[
        Format, typer.Option("--format", metavar="table|md|json|junit", help="Output: table, md, json or junit.")
    ] = Format.table,
    fmt_f: Annotated[Format | None, typer.Option("-f", hidden=True, help=OLD_FORMAT_HELP)] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write to FILE instead of stdout.")
    ] = None,
    no_fail: Annotated[
        bool,
        typer.Option("--no-fail", help="Exit 0 even when a benchmark is SLOWER. Without it compare exits 1 on a "
                     "regression (report, by contrast, exits 1 only with --strict)."),
    ] = False,
    allow_different_gpu: Annotated[
        bool, typer.Option("--allow-different-gpu", help="Compare runs made on different GPUs.")
    ] = False,
    gpu_vs_gpu: Annotated[
        bool,
        typer.Option("--gpu-vs-gpu", help="BASELINE is a --gpus --replicate run: compare each GPU with one of them."),
    ] = False,
    reference_gpu: Annotated[
        int | None, typer.Option("--reference-gpu", metavar="SHARD", help="With --gpu-vs-gpu: the GPU (shard) to compare against.")
    ] = None,
    fail_on_energy: Annotated[
        bool, typer.Option("--fail-on-energy", help="Exit 1 also when a benchmark takes more energy per call.")
    ] = False,
    require_all: Annotated[
        bool,
        typer.Option("--require-all", help="Exit 7 when a baseline benchmark is missing from CURRENT (renamed or dropped)."),
    ] = False,
) -> None:
    """Compare two runs benchmark by benchmark: SAME, FASTER, SLOWER or AMBIGUOUS.

    SLOWER needs a significant change (Mann-Whitney U) and a bootstrap interval of the median
    ratio past the tolerance. The verdict follows time: a change the SM clock accounts for
    (cycles, by each benchmark's clock elasticity) is SAME only where the clock change was the
    environment's (heat, another tenant, another GPU), never where the new code's own power
    draw at the power cap lowered its clock. Energy per call, where both runs recorded it
    (NVML), gets its own verdict beside the time verdict: MORE, LESS, SAME or AMBIGUOUS, by the
    same statistics.

    compare fails by default: exit 1 when any benchmark is SLOWER (--no-fail turns that off;
    --fail-on-energy makes MORE energy fail too). report, by contrast, exits 1 only with --strict.

    Examples:

      nsightwrap compare baseline.json RUN --format junit -o compare.xml   # in CI

      nsightwrap compare baseline.json RUN --format md -o compare.md   # for a pull-request comment

      nsightwrap compare baseline.json RUN --tolerance 2   # count changes from 2%

      nsightwrap compare A B --metric ncu   # judge ncu's durations (profile with --ncu-iters 10)

      nsightwrap compare RUN --gpu-vs-gpu   # GPU against GPU (RUN from profile --gpus all --replicate)

      nsightwrap compare baseline.json RUN --require-all   # a CI gate no rename can pass

    Exit codes: 0 ok, 1 a benchmark SLOWER, 2 bad input, 7 no benchmark in common (or, with
    --require-all, a baseline benchmark missing).
    """
    from nsightwrap.compare.energy import Energy
    from nsightwrap.compare.sides import load_side
    from nsightwrap.compare.stats import PRESETS
    from nsightwrap.compare.verdicts import compare

    settings = PRESETS[preset.value]
    fmt = fmt_f or fmt
    tolerance = tolerance if tolerance is not None else threshold
    if tolerance is not None:
        if not 0 < tolerance < 100:
            raise UsageError(f"--tolerance {tolerance:g} is out of range", hint="give a percentage, e.g. --tolerance 5")
        settings = replace(settings, threshold=tolerance / 100.0)
    if gpu_vs_gpu:
        from nsightwrap.cli.gpu_compare import gpu_vs_gpu as by_gpu

        if current is not None:
            raise UsageError("--gpu-vs-gpu compares the GPUs of one run", hint="give one run directory")
        found = by_gpu(baseline, reference=reference_gpu, metric=metric.value, settings=settings, fmt=fmt.value,
                       output=output, report_of=report_of)  # fmt: skip
        if any(c.slower for _, _, c in found) and not no_fail:
            raise typer.Exit(EXIT_FINDINGS)
        return
    if current is None:
        raise UsageError("compare needs BASELINE and CURRENT", hint="nsightwrap compare BASELINE CURRENT (or RUN --gpu-vs-gpu)")
    base = load_side(baseline, metric.value, report_of)
    cur = load_side(current, metric.value, report_of)
    if base.gpu and cur.gpu and base.gpu != cur.gpu and not allow_different_gpu:
        raise UsageError(
            f"baseline ran on {base.gpu!r} but current on {cur.gpu!r}",
            hint="timings on different GPUs are not comparable; pass --allow-different-gpu to compare anyway",
        )
    result = compare(base, cur, metric=metric.value, settings=settings)
    _emit(result, fmt, output)
    _check_common(result, require_all=require_all)
    more_energy = fail_on_energy and any(v.verdict is Energy.MORE for v in result.energy)
    if (result.slower or more_energy) and not no_fail:
        raise typer.Exit(EXIT_FINDINGS)


def _check_common(result: Comparison, *, require_all: bool) -> None:
    """A comparison of nothing must not pass a CI gate: no benchmark in common is an error."""
    if not result.verdicts and (result.added or result.removed):
        raise NoCommonBenchmarks(
            f"baseline and current have no benchmark in common ({len(result.removed)} only in the baseline, "
            f"{len(result.added)} only in current)",
            hint="compare runs of the same benchmarks; a renamed benchmark is a new one",
        )
    if require_all and result.removed:
        shown = ", ".join(terminal_safe(k) for k in result.removed[:5])
        more = f" and {len(result.removed) - 5} more" if len(result.removed) > 5 else ""
        raise NoCommonBenchmarks(
            f"--require-all: {len(result.removed)} baseline benchmarks missing from current: {shown}{more}",
            hint="run them again, or drop --require-all",
        )


def _emit(result: Comparison, fmt: Format, output: Path | None) -> None:
    from nsightwrap.export.compare_text import summary

    if fmt is Format.table:
        from nsightwrap.export.terminal import compare_lines as render_lines
        from nsightwrap.export.terminal import compare_table as render_table

        if output is None:
            if stdout_piped():
                # stdout is not a terminal and COLUMNS is unset (a CI log): one line per benchmark,
                # as long as it needs, not a table folded to 80 columns.
                print(render_lines(result), end="")
            else:
                Console(highlight=False).print(render_table(result))
            return
        buf = io.StringIO()
        Console(file=buf, width=200, no_color=True, highlight=False).print(render_table(result))
        write_output(output, buf.getvalue())
    else:
        text: str | bytes
        if fmt is Format.md:
            from nsightwrap.export.markdown import compare_markdown as to_markdown

            text = to_markdown(result)
        elif fmt is Format.json:
            from nsightwrap.export.jsonio import compare_json as to_json

            text = to_json(result)
        else:
            from nsightwrap.export.junit import compare_junit as to_junit

            text = to_junit(result)
        if output is None:
            print(text.decode("utf-8") if isinstance(text, bytes) else text, end="")
            return
        write_output(output, text.decode("utf-8") if isinstance(text, bytes) else text)
    err_console.print(f"wrote {output}: {summary(result)}", markup=False)


def report_of(path: Path) -> Mapping[str, Any]:
    """The report document of a run directory: its stored analysis (or the analysis, then
    stored), in the report JSON's form; one line on stderr says which."""
    from nsightwrap.cli.report_cmd import run_analysis
    from nsightwrap.export.jsonio import report_to_dict

    had = run_analysis(path)
    err_console.print(f"{path}: {had.line}", highlight=False, markup=False)
    # The stored analysis's document is this one, read back: not made again from the result.
    return had.doc if had.doc is not None else report_to_dict(had.result, detail=True)
