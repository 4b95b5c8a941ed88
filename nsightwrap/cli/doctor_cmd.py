"""``nsightwrap doctor``: check the tools, the Python packages and the GPU before a run."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.text import Text

from nsightwrap.cli import GPU_INDEX, OLD_FORMAT_HELP, app, write_output
from nsightwrap.core.errors import UsageError

_STYLE = {"ok": "green", "warn": "yellow", "fail": "bold red"}


class Format(str, Enum):
    table = "table"
    json = "json"


def check_line(c: object, width: int = 22) -> Text:
    """``fail  gpu counters          no permission ...; fix: ...``: one check on one line."""
    from nsightwrap.run.doctor import Check

    assert isinstance(c, Check)
    line = Text(f"{c.status.value:<4}", style=_STYLE[c.status.value])
    line.append(f"  {c.name:<{width}}  {c.message}")
    if c.fix and c.status.value != "ok":
        line.append(f"; fix: {c.fix}", style="bold")
    return line


def preflight(warn: Callable[[str], None]) -> None:
    """Run doctor's quick checks and hand every one that is not ok to ``warn`` (``profile``)."""
    from nsightwrap.run.doctor import preflight as checks

    for c in checks():
        warn(f"doctor: {c.status.value} {c.name}: {c.message}" + (f" (fix: {c.fix})" if c.fix else ""))


def smi_index(gpu: int | None) -> int | None:
    """``--gpu I`` as nvidia-smi numbers it: with CUDA_VISIBLE_DEVICES set, I is a position in
    that list (as in CUDA, ``device --gpu`` and ``profile --gpus``), else nvidia-smi's index."""
    visible = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    if gpu is None or not visible:
        return gpu
    if gpu >= len(visible):
        raise UsageError(
            f"--gpu {gpu}: CUDA_VISIBLE_DEVICES={','.join(visible)} holds {len(visible)} GPU(s)",
            hint=f"choose 0..{len(visible) - 1}, or unset CUDA_VISIBLE_DEVICES to use nvidia-smi's numbers",
        )
    entry = visible[gpu]
    if entry.isdigit():
        return int(entry)
    from nsightwrap.run.shards import resolve_gpus
    from nsightwrap.run.tools import find_optional

    smi = find_optional("nvidia-smi")
    slot = resolve_gpus(entry, smi.path if smi else None)[0]  # a UUID: its nvidia-smi index
    if slot.index is None:
        raise UsageError(f"--gpu {gpu}: {entry} (CUDA_VISIBLE_DEVICES) is not a GPU nvidia-smi lists", hint="see nvidia-smi -L")
    return slot.index


@app.command("doctor")
def doctor_command(
    fmt: Annotated[Format, typer.Option("--format", metavar="table|json", help="table (one line per check) or json.")] = Format.table,
    fmt_f: Annotated[Format | None, typer.Option("-f", hidden=True, help=OLD_FORMAT_HELP)] = None,
    gpu: Annotated[
        int | None, typer.Option("--gpu", min=0, metavar="INDEX", help=f"GPU to check: {GPU_INDEX} (default: the first CUDA sees).")
    ] = None,
    quick: Annotated[bool, typer.Option("--quick", help="Skip the checks that run ncu and import torch (seconds).")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="More output: the evidence of every check.")] = False,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write to FILE instead of stdout: what --format gives, "
                     "the file replaced whole once it is complete (the exit code is the same)."),
    ] = None,
) -> None:
    """Find what would make the numbers wrong before a run: each check ok, warn or fail, with its fix.

    Every check comes with its evidence (-v shows it) and, where it is not ok, its fix. Exit 0
    when all are ok, 1 with warnings, 2 with failures.

    Checks ncu and nsys (where, which version), nsys's importer (libdw), GPU performance counters
    (ncu on a tiny kernel: ERR_NVGPUCTRPERM), whether ncu can lock clocks, the Python packages
    (nvtx, which ncu_report module is imported and from where, nvidia-ml-py, torch's CUDA build,
    triton), and the GPU: persistence mode, application and locked clocks, throttle reasons,
    temperature, MIG, ECC, other processes on the GPU, CUDA_VISIBLE_DEVICES, power limit.

    Examples:

      nsightwrap doctor   # before a benchmark session

      nsightwrap doctor --format json -o doctor.json   # in CI, keep the evidence

      nsightwrap doctor --gpu 1 -v   # the second GPU, with the evidence of every check
    """
    from nsightwrap.run.doctor import run_checks

    fmt = fmt_f or fmt
    gpu = smi_index(gpu)

    err = Console(stderr=True, highlight=False, soft_wrap=True)
    show = fmt is Format.table and err.is_terminal
    report = run_checks(gpu, fast=quick, progress=(lambda text: err.print(f"[dim]{text}[/]")) if show else None)
    buf = io.StringIO() if output is not None else None
    if fmt is Format.json:
        text = json.dumps(report.to_dict(), indent=2, default=str)
        if buf is None:
            typer.echo(text)
        else:
            buf.write(text + "\n")
    else:
        # Into a file: plain text, every check on one line (a Console on a StringIO has no colour).
        out = Console(file=buf, highlight=False, soft_wrap=True)
        width = max(len(c.name) for c in report.checks)
        for c in report.checks:
            out.print(check_line(c, width))
            if verbose and c.evidence:
                out.print(Text("      " + json.dumps(dict(c.evidence), default=str), style="dim"))
        counts = {s: sum(c.status.value == s for c in report.checks) for s in ("ok", "warn", "fail")}
        target = f" (GPU {report.gpu})" if report.gpu is not None else ""
        out.print(Text(f"{counts['ok']} ok, {counts['warn']} warn, {counts['fail']} fail{target}"))
    if output is not None and buf is not None:
        write_output(output, buf.getvalue())
        err.print(f"written to {output}", markup=False)
    raise typer.Exit(report.exit_code)
