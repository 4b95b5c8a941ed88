"""``nsightwrap merge RUN_DIR... -o RUN_DIR``: shard runs made anywhere -> one merged run."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from nsightwrap.cli import app
from nsightwrap.core.errors import EXIT_OK
from nsightwrap.run.merge import merge_runs


@app.command("merge")
def merge_command(
    runs: Annotated[
        list[Path], typer.Argument(metavar="RUN_DIR", help="Run directories of the shards (or merged runs).")
    ],
    output: Annotated[Path, typer.Option("-o", "--output", metavar="DIR", help="The merged run directory (must not exist).")],
    allow_mixed: Annotated[
        bool,
        typer.Option("--allow-mixed", help="Merge shards run on different GPU models or nsightwrap versions."),
    ] = False,
    allow_failed_shards: Annotated[
        bool, typer.Option("--allow-failed-shards", help="Exit 0 even when a shard failed (it is still reported).")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only errors and the final line.")] = False,
) -> None:
    """Merge the run directories of profile --shard I/N into one run directory.

    Every shard 0..N-1 must be there once, the benchmarks dealt to them must neither overlap nor
    leave a gap, and the shards must have run on one GPU model with one nsightwrap version
    (--allow-mixed to merge anyway). Each refusal is one line and exit 2. The shards are copied
    (hard-linked where the file system allows) under RUN_DIR/shards/<i>/, every raw file kept;
    nsightwrap report and compare read the merged run as one. Exit 3 when a shard had failed
    (unless --allow-failed-shards), 4 when one timed out.

    Examples:

      nsightwrap merge runs/shard-* -o runs/merged   # after a Slurm job array

      nsightwrap merge nodeA/run-0 nodeB/run-1 -o merged   # shards from two machines
    """
    err = Console(stderr=True, highlight=False, soft_wrap=True)
    out = Console(highlight=False, soft_wrap=True)
    doc = merge_runs(runs, output, allow_mixed=allow_mixed)
    bad = [s for s in doc["shards"] if s["status"] != "complete"]
    for s in bad:
        err.print(escape(f"error: shard {s['index']}/{doc['count']} {s['status']}: {s.get('message')}"), highlight=False)
    if doc["lost"]:
        err.print(escape(f"warning: {len(doc['lost'])} benchmark(s) of failed shards were never timed"), highlight=False)
    if not quiet:
        for s in doc["shards"]:
            gpu = (s.get("gpu") or {}).get("uuid") or "GPU ?"
            err.print(
                escape(f"shard {s['index']}: {s['status']}, {len(s['benchmarks'])} benchmarks, {gpu} on {s.get('host')}"),
                highlight=False,
            )
    what = f"{doc['count']} shards" if doc["mode"] == "shard" else f"{doc['count']} replicas"
    out.print(
        escape(
            f"merged {what}, {doc['benchmarks']} benchmarks: {output} ({doc['status']}); "
            f"reports: nsightwrap report {shlex.quote(str(output))}"
        ),
        highlight=False,
    )
    code = int(doc["exit_code"])
    raise typer.Exit(EXIT_OK if allow_failed_shards and bad and len(bad) < len(doc["shards"]) else code)
