"""``nsightwrap device``: measure this GPU's ceilings (or show a saved device file)."""

from __future__ import annotations

import io
import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from nsightwrap.cli import GPU_INDEX, OLD_FORMAT_HELP, app, err_console, write_output
from nsightwrap.core.errors import ProfilerFailed, UsageError


class Format(str, Enum):
    table = "table"
    json = "json"
    md = "md"
    html = "html"


HELP = """Measure this GPU's ceilings: memory bandwidth, latency, kernel launch cost and compute peaks.

Bandwidth: HBM read, write and copy (1 GiB, L2 flushed), L2 read, and copy bandwidth against transfer size (4 KiB to 1 GiB). Latency: a one-thread pointer chase through a random cycle, from 4 KiB to 8x the L2 (L1, L2 and HBM plateaus in ns and SM cycles); empty-kernel launch cost, queue held and not. Compute: dense matmul on random data per dtype the GPU has (bf16, fp16, tf32, fp8 via torch._scaled_mm, int8 via torch._int_mm) and fp32 FMA throughput (a Triton kernel).

Every figure is measured with nsightwrap's own timer, at the SM clock measured during it, with the power draw and any throttle reasons seen. The device file is saved per GPU (uuid) in the user's cache (~/.cache/nsightwrap/device/); nsightwrap report and profile use it to place every benchmark on this GPU's measured roofline. Run it on an idle GPU: another process makes every figure low (nsightwrap says so).

Examples:

  nsightwrap device                      # full run (under 3 minutes), tables on the terminal

  nsightwrap device --quick              # under 30 s

  nsightwrap device --gpu 1 --format md -o gpu1.md

  nsightwrap device --only bandwidth,latency

  nsightwrap device --input ~/.cache/nsightwrap/device/UUID.json --format html -o device.html   # a saved file, no GPU
"""


def _progress(console: Console) -> tuple[Any, Any]:
    """A progress callback for ``measure`` and the context that shows it."""
    from nsightwrap.export import device_text as t

    def detail(item: Any) -> str:
        from nsightwrap.device.result import BandwidthPoint, LatencyPoint

        if item is None:
            return ""
        if isinstance(item, BandwidthPoint):
            text = t.rate(item.bytes_per_s, "B/s")
        elif isinstance(item, LatencyPoint):
            text = t.ns(item.ns) + (f" ({item.cycles:.0f} cycles)" if item.cycles else "")
        else:
            text = t.value(item)
        return text if item.status == "ok" else f"{text} [{item.status}]"

    if console.is_terminal:
        bar = Progress(TextColumn("[bold]measuring"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                       TimeElapsedColumn(), TextColumn("{task.description}"), console=console, transient=True)  # fmt: skip
        task = bar.add_task("", total=None)

        def update(done: int, total: int, label: str, item: Any) -> None:
            bar.update(task, completed=done, total=total, description=f"{label}: {detail(item)}")

        return update, bar

    class _Lines:
        def __enter__(self) -> None:
            return None

        def __exit__(self, *exc: object) -> None:
            return None

    def line(done: int, total: int, label: str, item: Any) -> None:
        # Logs (CI, a job without a terminal) get one plain line per step.
        console.print(f"[{done}/{total}] {label}: {detail(item)}", markup=False, highlight=False)

    return line, _Lines()


def _render(dev: Any, fmt: Format, output: Path | None) -> str | None:
    if fmt is Format.table:
        from nsightwrap.export.terminal import print_device

        if output is None:
            print_device(dev, Console(highlight=False, width=None if sys.stdout.isatty() else 140))
            return None
        console = Console(record=True, width=140, file=io.StringIO(), highlight=False)
        print_device(dev, console)
        return console.export_text()
    if fmt is Format.json:
        from nsightwrap.export.jsonio import render_device_json

        return render_device_json(dev)
    if fmt is Format.md:
        from nsightwrap.export.markdown import render_device_markdown

        return render_device_markdown(dev)
    from nsightwrap.export.html import render_device_html

    return render_device_html(dev)


@app.command("device", help=HELP)
def device_command(
    gpu: Annotated[int | None, typer.Option("--gpu", min=0, metavar="INDEX", help=f"GPU to measure: {GPU_INDEX} (default: the first CUDA sees).")] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Fewer sizes and samples: under 30 s.")] = False,
    only: Annotated[
        str | None, typer.Option("--only", metavar="GROUPS", help="Groups to measure, of bandwidth,latency,launch,compute (default: all).")
    ] = None,
    fmt: Annotated[Format, typer.Option("--format", metavar="table|json|md|html", help="Output: table, json, md or html.")] = Format.table,
    fmt_f: Annotated[Format | None, typer.Option("-f", hidden=True, help=OLD_FORMAT_HELP)] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="FILE", help="Write to FILE instead of stdout.")] = None,
    input_file: Annotated[
        Path | None, typer.Option("--input", "-i", metavar="FILE", help="Show a saved device file instead of measuring (no GPU needed).")
    ] = None,
    no_save: Annotated[bool, typer.Option("--no-save", help="Do not write the result to the user's cache.")] = False,
) -> None:
    from nsightwrap.device.store import read_device_file, save_to_cache

    fmt = fmt_f or fmt
    if fmt is Format.html:  # before minutes of measuring, not after
        from nsightwrap.core.extras import require_html

        require_html("the HTML device page")
    # CUDA numbers GPUs fastest first unless told otherwise; nvidia-smi (and doctor --gpu,
    # profile --gpus) by PCI bus: one order, so that --gpu I is the same GPU in every command.
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")

    if input_file is not None:
        if gpu is not None or quick or only:
            raise UsageError("--input shows a saved file: it takes no --gpu, --quick or --only", hint="drop them")
        dev = read_device_file(input_file)
    else:
        from nsightwrap.device.measure import CONTEXT_LOST, Settings, measure, parse_groups
        from nsightwrap.device.result import MEASURED

        settings = Settings(quick=quick, groups=parse_groups(only), gpu_index=gpu)
        update, shown = _progress(err_console)
        with shown:
            dev = measure(settings, update)
        for w in dev.warnings:
            err_console.print(f"warning: {w}", style="yellow", markup=False, highlight=False)
        if not any(m.status in MEASURED for m in dev.measurements):
            raise ProfilerFailed(
                "nsightwrap device measured nothing: " + "; ".join(sorted({m.message for m in dev.measurements})[:3]),
                hint="see the statuses above",
            )
        lost = next((w for w in dev.warnings if w.startswith(CONTEXT_LOST)), None)
        if lost is not None:
            # What was measured is shown, but a partial file never replaces the cached one.
            text = _render(dev, fmt, output)
            if text is not None:
                (typer.echo(text, nl=not text.endswith("\n")) if output is None else write_output(output, text))
            raise ProfilerFailed(f"nsightwrap device stopped: {lost}", hint="the device file was not cached; "
                                 "run it again, and report the failing step if it repeats")  # fmt: skip
        if not no_save:
            path = save_to_cache(dev)
            where = f"device file saved to {path}" if path else "the GPU has no uuid: the device file was not cached"
            err_console.print(f"{where} ({dev.wall_s:.0f} s)", markup=False, highlight=False)
    text = _render(dev, fmt, output)
    if text is not None:
        if output is None:
            typer.echo(text, nl=not text.endswith("\n"))
        else:
            write_output(output, text)
            err_console.print(f"written to {output}", markup=False, highlight=False)


def place_device_file(run_dir: Path, explicit: Path | None, console: Console, *, quiet: bool = False) -> Path | None:
    """After ``profile``'s passes: copy ``explicit`` or the GPU's cached device file into
    ``RUN_DIR/env/device.json`` (the report then holds the run against it); None when there is none."""
    from nsightwrap.analysis.roofline import copy_device_file
    from nsightwrap.core.errors import NsightwrapError
    from nsightwrap.core.jsonfile import read_json_object

    uuids: list[str | None] = []
    for side in sorted((run_dir / "plain").glob("timer-*.json")):  # the GPU the timer ran on first
        try:  # read as every sidecar is: a damaged one (a list, nested 100,000 deep) is skipped
            dev = read_json_object(side, "timer sidecar").get("device") or {}
        except NsightwrapError:
            continue
        uuids.append(dev.get("uuid") if isinstance(dev, dict) else None)
    xml = run_dir / "env" / "nvidia-smi-q-x.xml"
    if xml.is_file():
        from nsightwrap.parsers.smi import read_smi_xml_all

        try:
            uuids += [g.uuid for g in read_smi_xml_all(xml)]
        except NsightwrapError:
            pass
    try:
        dst = copy_device_file(run_dir, uuids, explicit)
    except OSError as exc:
        console.print(f"warning: device file not copied into the run: {exc}", markup=False, highlight=False)
        return None
    if dst is not None and not quiet:
        console.print(f"roofs: {explicit or 'cached device file'} -> {dst}", markup=False, highlight=False)
    return dst
