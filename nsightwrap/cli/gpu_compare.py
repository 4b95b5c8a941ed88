"""``nsightwrap compare RUN --gpu-vs-gpu``: every GPU of a replicated run against one of them.

Each shard of a merged run (``profile --gpus all --replicate``) ran the same benchmarks on its
own GPU; each is one side, read like any run directory, and the usual verdicts (significance,
the change in SM cycles as well as in time) say which GPU is slower at what. Two shard
directories can also be compared directly: ``nsightwrap compare RUN/shards/0 RUN/shards/3``.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from nsightwrap.analysis.merged import merged_mode, shard_runs
from nsightwrap.cli import err_console, write_output
from nsightwrap.compare.sides import load_side
from nsightwrap.compare.verdicts import Comparison, Settings, compare
from nsightwrap.core.errors import UsageError
from nsightwrap.export.compare_text import summary
from nsightwrap.export.escape import md_cell
from nsightwrap.export.jsonio import compare_json as to_json
from nsightwrap.export.markdown import compare_markdown as to_markdown
from nsightwrap.export.terminal import compare_table as render_table

GPU_COMPARE_FORMAT = "nsightwrap-gpu-compare"


def gpu_vs_gpu(
    run: Path,
    *,
    reference: int | None,
    metric: str,
    settings: Settings,
    fmt: str,
    output: Path | None,
    report_of: Callable[[Path], Mapping[str, Any]],
) -> list[tuple[int, str | None, Comparison]]:
    """Compare every GPU of merged run ``run`` with the reference shard's GPU; write the output
    in ``fmt`` (table, md or json); the comparisons (shard, GPU UUID, result)."""
    mode = merged_mode(run)
    if mode is None:
        raise UsageError(
            f"{run} is not a run merged from several GPUs",
            hint="profile with --gpus all --replicate, or compare two run directories",
        )
    shards = [s for s in shard_runs(run) if s[3] == "complete"]
    if len(shards) < 2:
        raise UsageError(f"{run} has {len(shards)} complete shard(s): nothing to compare", hint="compare needs two GPUs")
    if fmt == "junit":
        raise UsageError("--gpu-vs-gpu writes table, md or json", hint="use --format table, md or json")
    ref_i = shards[0][0] if reference is None else reference
    ref = next((s for s in shards if s[0] == ref_i), None)
    if ref is None:
        have = ", ".join(str(s[0]) for s in shards)
        raise UsageError(f"--reference-gpu {ref_i}: no complete shard {ref_i} (have {have})", hint="name one of those")
    base = load_side(ref[1], metric, report_of)
    results = []
    for i, d, uuid, _ in shards:
        if i == ref_i:
            continue
        cur = load_side(d, metric, report_of)
        results.append((i, uuid, compare(base, cur, metric=metric, settings=settings)))
    if not any(c.verdicts for _, _, c in results):
        raise UsageError(
            f"the GPUs of {run} ran no benchmark in common ({mode} run: each shard timed its own share)",
            hint="profile with --gpus all --replicate to time every benchmark on every GPU",
        )
    title = {i: f"GPU {uuid or '?'} (shard {i}) against GPU {ref[2] or '?'} (shard {ref_i})" for i, uuid, _ in results}
    if fmt == "json":
        doc = {
            "format": GPU_COMPARE_FORMAT, "version": 1, "run": str(run), "metric": metric,
            "reference": {"shard": ref_i, "gpu": ref[2]},
            "gpus": [{"shard": i, "gpu": uuid, "comparison": json.loads(to_json(c))} for i, uuid, c in results],
        }  # fmt: skip
        text = json.dumps(doc, indent=1) + "\n"
    elif fmt == "md":
        parts = [f"# GPU against GPU: {md_cell(run)}", ""]
        for i, _, c in results:
            parts += [f"## {md_cell(title[i])}", "", to_markdown(c), ""]
        text = "\n".join(parts)
    else:
        buf = io.StringIO()
        con = Console(file=buf, width=200 if output else None, no_color=output is not None, highlight=False)
        for i, _, c in results:
            con.print(Text(f"{title[i]}: {summary(c)}", style="bold"))
            con.print(render_table(c))
        text = buf.getvalue()
    if output is None:
        print(text, end="")
    else:
        write_output(output, text)
        err_console.print(f"wrote {output}: {len(results)} GPU(s) against shard {ref_i}", markup=False)
    return results
