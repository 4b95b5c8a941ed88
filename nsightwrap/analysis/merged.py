"""Analysis of a run merged from shards (``nsightwrap merge``, ``profile --gpus``).

Each shard is a complete run directory under ``shards/<i>/``: it is analysed on its own (its
plain, ncu and nsys passes ran on one GPU, so its clocks and reports belong together; ``analyze``
in analysis/load.py does that and hands the results here), and its benchmarks join the merged report with the UUID of that GPU and the shard's index, in the order
the script reached them. A shard that failed is reported with its reason; its benchmarks are
missing, and the report says which. A replicated run (``--replicate``) also gets the spread of
every benchmark across the GPUs (nsightwrap.analysis.gpu_variance).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from nsightwrap.analysis.gpu_variance import gpu_variance
from nsightwrap.analysis.model import BenchmarkResult, Environment, RunResult, Settings, ShardSummary
from nsightwrap.core.contract import PASS_PLAIN, SIDECAR_GLOB, uuid_key
from nsightwrap.core.errors import NsightwrapError
from nsightwrap.core.rundir import MANIFEST_NAME, MODE_REPLICATE, RunLayout, read_merged


def run_sidecars(run_dir: Path) -> list[Path]:
    """The timer sidecars of a run directory, or of every shard of a merged one."""
    run_dir = Path(run_dir)
    doc = read_merged(run_dir)
    if doc is None:
        return sorted((run_dir / PASS_PLAIN).glob(SIDECAR_GLOB))
    return [
        p
        for s in doc.get("shards") or []
        if isinstance(s, Mapping) and s.get("dir")
        for p in sorted((run_dir / str(s["dir"]) / PASS_PLAIN).glob(SIDECAR_GLOB))
    ]


def shard_runs(run_dir: Path) -> list[tuple[int, Path, str | None, str]]:
    """(index, directory, GPU UUID, status) of every shard of a merged run that left a run
    directory; empty for a run that is not merged."""
    doc = read_merged(Path(run_dir)) or {}
    out = []
    for s in doc.get("shards") or []:
        if isinstance(s, Mapping) and s.get("dir") and (Path(run_dir) / str(s["dir"]) / "manifest.json").is_file():
            gpu = s["gpu"] if isinstance(s.get("gpu"), Mapping) else {}
            out.append((int(s["index"]), Path(run_dir) / str(s["dir"]), gpu.get("uuid"), str(s.get("status"))))
    return out


def merged_mode(run_dir: Path) -> str | None:
    """``shard`` or ``replicate`` for a merged run, None otherwise."""
    doc = read_merged(Path(run_dir))
    return None if doc is None else str(doc.get("mode") or "shard")


def _gpu_seen(shard_dir: Path, uuid: str | None) -> tuple[float | None, float | None]:
    """(hottest sampled temperature C, power limit W) of GPU ``uuid`` in a shard's run directory."""
    layout = RunLayout(shard_dir)
    temp = limit = None
    if layout.smi_samples.is_file():
        from nsightwrap.parsers.smi import read_smi_samples

        try:
            rows = read_smi_samples(layout.smi_samples)
            if uuid and "gpu_uuid" in rows:
                rows = rows[rows["gpu_uuid"].map(uuid_key) == uuid_key(uuid)]
            t = rows["temperature_c"].dropna()
            temp = float(t.max()) if len(t) else None
        except NsightwrapError:
            pass
    if layout.smi_xml.is_file():
        from nsightwrap.parsers.smi import read_smi_xml_all

        try:
            gpus = read_smi_xml_all(layout.smi_xml)
        except NsightwrapError:
            gpus = []
        match = [g for g in gpus if uuid and g.uuid and uuid_key(g.uuid) == uuid_key(uuid)]
        g = match[0] if match else (gpus[0] if len(gpus) == 1 else None)
        limit = g.power_limit_w if g else None
    return temp, limit


def _median_clock(benchmarks: Sequence[BenchmarkResult]) -> float | None:
    clocks = [b.timer.sm_clock_hz for b in benchmarks if b.timer and b.timer.sm_clock_hz]
    return float(statistics.median(clocks)) if clocks else None


def shard_keys(b: BenchmarkResult) -> set[str]:
    """The keys a benchmark may have been dealt by: its name, ``name[k=v]``, and the site and
    call number of a captured timing (``bench.py:42#3``)."""
    keys = {b.name}
    if b.params and "[" not in b.name:
        keys.add(f"{b.name}[{','.join(f'{k}={v}' for k, v in b.params.items())}]")
    site, call = b.source.get("site"), b.source.get("call")
    if site is not None and call is not None:
        keys.add(f"{site}#{call}")
    return keys


def _owned(b: BenchmarkResult, shard: int, owner: Mapping[str, int]) -> bool:
    # A shard reports the benchmarks dealt to it. One dealt under no key known here is kept when
    # it is a captured timing (its key is the capture layer's), and dropped when it comes from the
    # target's own NVTX ranges or an untimed name, which every shard may see, unless nothing at
    # all was dealt.
    if not owner:
        return True
    owners = {owner[k] for k in shard_keys(b) if k in owner}
    if owners:
        return shard in owners
    return str(b.source.get("kind") or "nsightwrap_bench") not in ("nsightwrap_bench", "nvtx_range")


def shard_entries(doc: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The shard entries of a merged manifest, by index."""
    return sorted((s for s in doc.get("shards") or [] if isinstance(s, Mapping)), key=lambda s: int(s["index"]))


def shard_run_dir(run_dir: Path, entry: Mapping[str, Any]) -> Path | None:
    """The run directory shard ``entry`` left under the merged run, or None (none was written)."""
    d = Path(run_dir) / str(entry["dir"]) if entry.get("dir") else None
    return d if d is not None and (d / MANIFEST_NAME).is_file() else None


def join_shards(
    run_dir: Path,
    doc: Mapping[str, Any],
    analysed: Mapping[int, RunResult | NsightwrapError],
    *,
    tolerance: float = 0.1,
    clock_ref: str = "plain",
) -> RunResult:
    """The merged run's result from each shard's own (``analysed``: by shard index, the shard's
    ``RunResult`` or the error that stopped its analysis; see the module docs)."""
    run_dir = Path(run_dir)
    mode = str(doc.get("mode") or "shard")
    entries = shard_entries(doc)
    owner = {k: int(s["index"]) for s in entries for k in s.get("benchmarks") or []} if mode != MODE_REPLICATE else {}
    order = {k: i for i, k in enumerate(doc.get("order") or [])}
    first: RunResult | None = None
    benchmarks: list[BenchmarkResult] = []
    summaries: list[ShardSummary] = []
    notes: dict[str, list[int]] = {}
    crashes: list[str] = []
    for e in entries:
        i = int(e["index"])
        gpu: Mapping[str, Any] = e["gpu"] if isinstance(e.get("gpu"), Mapping) else {}
        uuid = gpu.get("uuid")
        shard_dir = run_dir / str(e["dir"]) if e.get("dir") else None
        message = e.get("message")
        got = analysed.get(i)
        r = got if isinstance(got, RunResult) else None
        if isinstance(got, NsightwrapError):
            message = f"{message + '; ' if message else ''}not analysed: {got}"
        kept: list[BenchmarkResult] = []
        if r is not None:
            first = first or r
            # A benchmark another shard owns (the target's own NVTX ranges seen by every shard)
            # is that shard's to report.
            kept = [replace(b, gpu_uuid=uuid, shard=i) for b in r.benchmarks if _owned(b, i, owner)]
            for n in r.notes:
                notes.setdefault(n, []).append(i)
            crashes += [f"shard {i}: {c}" for c in r.reader_crashes]
        benchmarks += kept
        temp, limit = _gpu_seen(shard_dir, uuid) if shard_dir is not None else (None, None)
        summaries.append(
            ShardSummary(
                index=i, status=str(e.get("status") or "failed"), gpu_name=gpu.get("name"), gpu_uuid=uuid,
                host=e.get("host"), benchmarks=len(kept), message=message, dir=e.get("dir"),
                sm_clock_hz=_median_clock(kept), temperature_c=temp, power_limit_w=limit, wall_s=e.get("wall_s"),
            )  # fmt: skip
        )
    benchmarks.sort(key=lambda b: (order.get(b.name, len(order)), b.shard or 0))
    run_notes = [
        (f"shard {ss[0]}: {n}" if len(ss) == 1 else f"shards {', '.join(map(str, ss))}: {n}")
        if len(ss) < len(entries) else n
        for n, ss in notes.items()
    ]  # fmt: skip
    for s in summaries:
        if s.status != "complete":
            have = f"{s.benchmarks} of its benchmarks are in this report" if s.benchmarks else "none of its benchmarks is in this report"
            run_notes.insert(0, f"shard {s.index} (GPU {s.gpu_uuid or '?'}) {s.status}: {s.message or 'no reason recorded'}; {have}")
    lost = doc.get("lost") or []
    if lost:
        run_notes.insert(0, f"{len(lost)} benchmark(s) were dealt to failed shards and never timed: {', '.join(lost[:8])}"
                         + (" ..." if len(lost) > 8 else ""))  # fmt: skip
    if doc.get("merge_error"):
        run_notes.insert(0, f"the shards could not be checked against each other: {doc['merge_error']}")
    variance = gpu_variance(benchmarks, summaries) if mode == MODE_REPLICATE else None
    base = first or RunResult(
        run_dir=str(run_dir), environment=Environment(), settings=Settings(tolerance, clock_ref),
        benchmarks=(), timer_found=False,
    )  # fmt: skip
    merged_env = {"mode": mode, "shards": len(entries), "gpus": [s.gpu_uuid for s in summaries],
                  "gpu_names": doc.get("gpu_names") or []}  # fmt: skip
    env = replace(base.environment, extra={**dict(base.environment.extra), "merged": merged_env})
    if doc.get("command"):
        env = replace(env, command=tuple(str(a) for a in doc["command"]))
    return replace(
        base,
        run_dir=str(run_dir),
        environment=env,
        settings=Settings(tolerance=tolerance, clock_ref=clock_ref),
        benchmarks=tuple(benchmarks),
        timer_found=any(b.timer is not None for b in benchmarks) or base.timer_found,
        notes=tuple(run_notes),
        reader_crashes=tuple(crashes),
        shards=tuple(summaries),
        gpu_variance=variance,
    )
