"""Benchmarks of unmodified scripts: timings the capture layer recorded, and the script's own
NVTX ranges (docs/capture.md).

- Captured timings (sidecar entries with ``source``) are benchmarks like ``nsightwrap.bench``
  ones; here they get the SM clock nvidia-smi logged while they ran, method facts read off the
  nsys timeline where the layer cannot know them (what ran between a CUDA-event loop's windows:
  a flush? a queue-holding kernel?), and, after the reconciliation, the number the user's code
  got back (``user_value_ns``) and what the layer could not capture (notes).
- Every NVTX range a script opens (push/pop in any domain, default included, nested; start/end in
  any domain) that launched GPU work becomes a benchmark with kind ``nvtx_range``: one iteration
  per instance of the range in nsys, and in ncu the instances the layer mirrored
  (``nsightwrap_nvtx@<path>/iter<k>/``, capture/nvtxmirror.py). Both are turned into the
  standard ``<path>/iter<k>`` iteration paths, so the usual statistics apply unchanged.
"""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from nsightwrap.analysis.model import BenchmarkResult
from nsightwrap.analysis.reconcile import BenchmarkSpec
from nsightwrap.core.contract import ITER_PREFIX, MIRROR_DOMAIN, NVTX_DOMAIN, SOURCE_KINDS, mirror_range_name

#: Capture kinds (``source.kind``) the layer records in the user's process.
CAPTURED_KINDS = tuple(k for k in SOURCE_KINDS if k not in ("nsightwrap_bench", "nvtx_range"))
#: Most user ranges made benchmarks (a script annotating every op would otherwise flood the report).
MAX_RANGES = 40
#: A kernel whose name says it fills or zeroes memory (torch's fill kernels, memset kernels).
_FILL = re.compile(r"fill|zero|memset", re.IGNORECASE)


def is_captured(spec: BenchmarkSpec) -> bool:
    return bool(spec.source) and str((spec.source or {}).get("kind")) in CAPTURED_KINDS


# ----------------------------------------------------------------------------- captured timings


#: Fewest nvidia-smi samples (one per 50 ms) inside a timing's window for their median to stand
#: for its SM clock: a short window's few samples are mostly of the idle moments around it, and a
#: clock read from the host misses the drop under load (docs/capture.md).
MIN_WINDOW_SAMPLES = 10


def with_window_clocks(specs: Sequence[BenchmarkSpec], sidecars: Sequence[tuple[Any, Mapping[str, Any]]],
                       samples: pd.DataFrame | None, plain_start: float | None) -> list[BenchmarkSpec]:  # fmt: skip
    """The SM clock of captured timings, which measure none: the median nvidia-smi clock logged
    during the timing's host-time window (``window_s`` in the sidecar) when at least
    ``MIN_WINDOW_SAMPLES`` fall in it; else none, and the reference clock is the plain pass's
    sampled clock, as for any timing without a clock of its own. ``plain_start``: epoch seconds
    the plain pass started (the manifest), which places nvidia-smi's local-time stamps."""
    windows: dict[str, tuple[float, float]] = {}
    for _, doc in sidecars:
        for e in doc.get("benchmarks") or ():
            w = e.get("window_s") if isinstance(e, Mapping) else None
            if isinstance(w, list) and len(w) == 2 and all(isinstance(x, (int, float)) for x in w):
                windows.setdefault(str(e.get("nvtx_path") or f"{NVTX_DOMAIN}:{e.get('name')}"), (float(w[0]), float(w[1])))
    t = _sample_times(samples, plain_start)
    hz = (pd.to_numeric(samples["sm_clock_hz"], errors="coerce").to_numpy(dtype=float)
          if t is not None and samples is not None else None)  # fmt: skip
    out: list[BenchmarkSpec] = []
    for s in specs:
        win = windows.get(s.nvtx_path)
        if s.timer is None or s.timer.sm_clock_hz is not None or not is_captured(s):
            out.append(s)
            continue
        if win is not None and t is not None and hz is not None:
            sel = (t >= win[0]) & (t <= win[1]) & np.isfinite(hz)
            if int(sel.sum()) >= MIN_WINDOW_SAMPLES:
                med = float(np.median(hz[sel]))
                out.append(replace(s, timer=replace(s.timer, sm_clock_hz=med, clock_source="nvidia-smi (during the timing)")))
                continue
        out.append(s)
    return out


def _sample_times(samples: pd.DataFrame | None, plain_start: float | None) -> np.ndarray | None:
    """Epoch seconds of nvidia-smi's log rows. Its stamps are the GPU machine's local time, with
    no zone: the sampler starts with the plain pass, so the offset to the pass's epoch start,
    rounded to a quarter hour (every time zone is a multiple of one), is the zone."""
    if samples is None or samples.empty or "time" not in samples or "sm_clock_hz" not in samples:
        return None
    t = pd.to_datetime(samples["time"], errors="coerce")
    if t.isna().all() or plain_start is None:
        return None
    naive = (t.dt.tz_localize(None) if t.dt.tz is not None else t).astype("datetime64[ns]").astype("int64").to_numpy() / 1e9
    first = float(np.nanmin(naive))
    zone = round((plain_start - first) / 900.0) * 900.0
    return naive + zone


def with_event_method(specs: Sequence[BenchmarkSpec], nsys: Any) -> list[BenchmarkSpec]:
    """Method facts of CUDA-event loops, read off the nsys timeline: what the thread launched
    between one timed window and the next (``between_ops``), whether that was an L2 flush
    (``flush``: ``zero`` for a fill/zero kernel or memset, else ``none``) and whether a kernel
    queued before the window still ran when the window's work was queued (``hold_queue``)."""
    if nsys is None or nsys.ranges.empty:
        return list(specs)
    ranges = nsys.ranges
    ops = nsys.ops
    have_launch = "launch_start_ns" in ops and "launch_tid" in ops
    out = []
    for s in specs:
        if s.timer is None or (s.source or {}).get("kind") != "cuda_events" or not have_launch:
            out.append(s)
            continue
        head = f"{s.nvtx_path}/{s.iter_prefix}"
        paths = ranges["path"].astype(str)
        its = ranges[paths.str.startswith(head) & paths.str[len(head) :].str.isdigit()].sort_values("start_ns")
        facts = _between_windows(its, ops)
        known = dict(s.timer.method)
        # Only what the layer could not know: a method the sidecar states is kept as it is.
        new = {k: v for k, v in facts.items() if known.get(k) in (None, "unknown")}
        if new.get("flush") is None:
            new.pop("flush_l2", None)
        if new:
            s = replace(s, timer=replace(s.timer, method={**known, **new}))
        out.append(s)
    return out


def _between_windows(its: pd.DataFrame, ops: pd.DataFrame) -> dict[str, Any]:
    if len(its) < 1:
        return {}
    starts = its["start_ns"].to_numpy(dtype=float)
    ends = its["end_ns"].to_numpy(dtype=float)
    tids = its["global_tid"].to_numpy()
    launch = pd.to_numeric(ops["launch_start_ns"], errors="coerce").to_numpy(dtype=float)
    gpu_end = pd.to_numeric(ops["end_ns"], errors="coerce").to_numpy(dtype=float)
    names = (ops["short_name"].where(ops["short_name"].notna(), ops["name"]) if "short_name" in ops else ops["name"]).astype(str).to_numpy()
    full = ops["name"].astype(str).to_numpy()  # FillFunctor is in the demangled name, not the short one
    kinds = ops["kind"].astype(str).to_numpy()
    optid = ops["launch_tid"].to_numpy()
    patterns: list[tuple[str, ...]] = []
    flushes: list[bool] = []
    held: list[bool] = []
    for i in range(len(its)):
        lo = ends[i - 1] if i > 0 else -math.inf
        sel = (launch > lo) & (launch < starts[i]) & (optid == tids[i])
        if i == 0:
            # Before the first window only the last few ops belong to this sample.
            idx = np.flatnonzero(sel)[-3:]
            sel = np.zeros_like(sel)
            sel[idx] = True
        pat = tuple(str(n) for n in names[sel])
        patterns.append(pat)
        flushes.append(any(k == "memset" or (k == "kernel" and _FILL.search(n)) for k, n in zip(kinds[sel], full[sel], strict=True)))
        # The window's work was queued while an earlier op still ran: launch latency is hidden.
        held.append(bool(sel.any()) and float(np.nanmax(gpu_end[sel])) > starts[i])
    if not patterns:
        return {}
    common = max(set(patterns), key=patterns.count)
    return {
        "between_ops": list(common),
        "flush": "zero" if statistics.median([float(f) for f in flushes]) >= 0.5 else "none",
        "flush_l2": statistics.median([float(f) for f in flushes]) >= 0.5,
        "hold_queue": statistics.median([float(h) for h in held]) >= 0.5,
        "method_from": "nsys timeline (ops the thread launched between timed windows)",
    }


def finish_results(results: Sequence[BenchmarkResult], specs: Sequence[BenchmarkSpec],
                   sidecars: Sequence[tuple[Any, Mapping[str, Any]]], tolerance: float,
                   ncu: pd.DataFrame | None = None, ncu_cache_control: str = "all") -> list[BenchmarkResult]:  # fmt: skip
    """Captured timings' ``user_value_ns``, and a note where the script's own number is not the
    median of its samples (a mean pulled by outliers); the ncu view of the script's own ranges,
    one range at a time (a kernel of ``step/mm`` is in ``step`` too, and the run's ncu statistics
    give each kernel to one benchmark)."""
    results = _range_results(results, specs, ncu, tolerance, ncu_cache_control)
    users: dict[str, tuple[float | None, str]] = {}
    for _, doc in sidecars:
        for e in doc.get("benchmarks") or ():
            if isinstance(e, Mapping) and isinstance(e.get("source"), Mapping):
                v = e.get("user_value_ns")
                det: Mapping[str, Any] = e["details"] if isinstance(e.get("details"), Mapping) else {}
                users.setdefault(
                    str(e.get("nvtx_path") or f"{NVTX_DOMAIN}:{e.get('name')}"),
                    (float(v) if isinstance(v, (int, float)) and math.isfinite(v) else None, str(det.get("value") or "")),
                )
    out = []
    for r in results:
        got = users.get(r.nvtx_path)
        if got is None:
            out.append(r)
            continue
        v, what = got
        notes = [describe(r, v, what), *r.notes]
        med = r.timer.median_ns if r.timer else None
        if v is not None and med and abs(v / med - 1) > tolerance / 2:
            notes.append(
                f"the script's own number ({what or 'its value'}) is {v / 1e3:.2f} us, {v / med - 1:+.0%} from "
                f"the median of its {r.timer.n if r.timer else 0} samples ({med / 1e3:.2f} us), which the verdict uses"
            )
        out.append(replace(r, user_value_ns=v, notes=tuple(notes)))
    return out


def _range_results(results: Sequence[BenchmarkResult], specs: Sequence[BenchmarkSpec], ncu: pd.DataFrame | None,
                   tolerance: float, ncu_cache_control: str) -> list[BenchmarkResult]:  # fmt: skip
    from nsightwrap.analysis.iterations import ncu_stats_all
    from nsightwrap.analysis.reconcile import reconcile

    by_path = {s.nvtx_path: s for s in specs}
    out = []
    for r in results:
        spec = by_path.get(r.nvtx_path)
        if spec is None or (spec.source or {}).get("kind") != "nvtx_range":
            out.append(r)
            continue
        n = None
        if ncu is not None and not ncu.empty and not (spec.source or {}).get("ncu"):
            head = f"{spec.nvtx_path}/{spec.iter_prefix}"
            kept = [tuple(p for p in ps if str(p).startswith(head)) for ps in ncu["nvtx_ranges"]]
            mine = ncu.copy()
            mine["nvtx_ranges"] = pd.Series(kept, index=ncu.index, dtype=object)
            (n,) = ncu_stats_all(mine, [spec], [r.ref_clock_hz])
        new = reconcile(spec, n, r.nsys, ref_clock_hz=r.ref_clock_hz, ref_clock_source=r.ref_clock_source,
                        tolerance=tolerance, ncu_cache_control=ncu_cache_control)  # fmt: skip
        out.append(replace(new, roofline=r.roofline, power=r.power))
    return out


def describe(r: BenchmarkResult, value_ns: float | None, what: str) -> str:
    """One line: where a captured timing came from and what the user's method did."""
    src = r.source
    m = r.timer.method if r.timer else {}
    where = f"{src.get('api') or src.get('kind')} at {src.get('site')} (call {src.get('call')})"
    got = f"the script got {value_ns / 1e3:.2f} us" + (f" ({what})" if what else "") if value_ns is not None else "no value"
    how: list[str] = []
    n = r.timer.n if r.timer else 0
    kind = src.get("kind")
    if kind == "do_bench":
        how.append(f"{n} repeats queued before one synchronize" if m.get("queued_before_sync") else f"{n} repeats")
        if m.get("flush") == "zero":
            mb = m.get("flush_bytes")
            how.append(f"each after zeroing a {int(mb) >> 20} MB buffer (dirty L2)" if mb else "each after zeroing a buffer (dirty L2)")
    elif kind == "do_bench_cudagraph":
        how.append(f"{n} replays of a CUDA graph of {m.get('n_repeat')} calls, no flush (warm L2)")
    elif kind == "torch_benchmark":
        how.append(f"{n} block(s) of {m.get('number_per_run')} runs, each block between two synchronizing host-clock reads")
    elif kind == "cuda_events":
        how.append(f"{n} event windows, up to {m.get('queued_before_sync')} queued before a synchronize")
        if m.get("between_ops"):
            how.append("between windows: " + ", ".join(str(x) for x in m["between_ops"])
                       + f" (flush {m.get('flush')}, queue {'held' if m.get('hold_queue') else 'not held'})")
    return f"captured: {where}: {got}; " + "; ".join(how) if how else f"captured: {where}: {got}"


def capture_notes(sidecars: Sequence[tuple[Any, Mapping[str, Any]]]) -> list[str]:
    """What the layer did not capture, and its own failures, one line each."""
    notes: list[str] = []
    for path, doc in sidecars:
        for n in doc.get("not_captured") or ():
            if isinstance(n, Mapping):
                notes.append(f"not captured: {n.get('site') or '?'}: {n.get('reason')}")
        for e in doc.get("capture_errors") or ():
            if isinstance(e, Mapping):
                notes.append(f"capture layer error ({e.get('where')}): {e.get('error')} (in {path})")
    return notes


# ----------------------------------------------------------------------------- user NVTX ranges


def _own(domain: Any) -> bool:
    return isinstance(domain, str) and domain in (NVTX_DOMAIN, MIRROR_DOMAIN)


#: NVTX domains and range-name prefixes that libraries open inside the calls a script makes
#: (CCCL/CUB inside ``torch.sort``, NCCL, cuDNN, cuBLAS, torch's own domains): their ranges time
#: no benchmark of the user's, so they are not benchmarks (listed in the notes).
LIBRARY_RANGES = re.compile(r"^(?:CCCL|CUB|cub::|NCCL|nccl|cuDNN|cudnn|cuBLAS|cublas|cuFFT|cufft|cuSPARSE|"
                            r"NVSHMEM|torch\.|aten::|c10d|PyTorch)")  # fmt: skip


def is_library_range(path: str, domain: Any) -> bool:
    """Whether an NVTX range is a library's own (``LIBRARY_RANGES``), by its domain or its name."""
    name = path.split(":", 1)[1] if isinstance(domain, str) and path.startswith(f"{domain}:") else path
    return bool(LIBRARY_RANGES.match(str(domain or "")) or LIBRARY_RANGES.match(name))


def range_benchmarks(specs: Sequence[BenchmarkSpec], ncu: pd.DataFrame | None, nsys: Any,
                     notes: list[str]) -> tuple[list[BenchmarkSpec], pd.DataFrame | None, Any]:  # fmt: skip
    """Add a benchmark for every NVTX range of the script's own that launched GPU work (nsys),
    with iteration paths ``<path>/iter<k>`` added to the nsys ranges (one per instance) and to
    the ncu kernels of the mirrored instances. Returns the specs and the frames to analyse."""
    if nsys is None or nsys.ranges.empty:
        return list(specs), ncu, nsys
    R = nsys.ranges
    mine = R[~R["domain"].map(_own)]
    if mine.empty:
        return list(specs), ncu, nsys
    covered = [s.nvtx_path for s in specs]
    with_ops = set(nsys.attribution["range_id"].unique())
    rows = []
    new_specs: list[BenchmarkSpec] = []
    skipped_empty: list[str] = []
    libraries: list[str] = []
    next_id = int(pd.to_numeric(R["range_id"], errors="coerce").max()) + 1
    att_new = []
    groups = mine.sort_values("start_ns", kind="stable").groupby("path", sort=False)
    for path, grp in groups:
        path = str(path)
        if any(path == c or path.startswith(c + "/") for c in covered):
            continue  # a range that is (inside) a benchmark already: its iterations are counted there
        ids = grp["range_id"].tolist()
        if is_library_range(path, grp.iloc[0]["domain"]):
            libraries.append(path)
            continue
        if not any(i in with_ops for i in ids):
            skipped_empty.append(path)
            continue
        if len(new_specs) >= MAX_RANGES:
            notes.append(f"only the first {MAX_RANGES} NVTX ranges that launched GPU work are benchmarks")
            break
        for k, rid in enumerate(ids):
            rows.append({"range_id": next_id, "path": f"{path}/{ITER_PREFIX}{k}", "_orig": rid})
            next_id += 1
        first = grp.iloc[0]
        dom = first["domain"] if isinstance(first["domain"], str) else None
        new_specs.append(BenchmarkSpec(
            name=path, nvtx_path=path, iter_prefix=ITER_PREFIX,
            source={"kind": "nvtx_range", "site": None, "call": None, "label": path, "domain": dom,
                    "range_kind": str(first["kind"]), "instances": len(ids)},
        ))  # fmt: skip
    if libraries:
        shown = ", ".join(libraries[:4]) + (f" and {len(libraries) - 4} more" if len(libraries) > 4 else "")
        notes.append(f"NVTX ranges of libraries (not benchmarks of the script's own): {shown}")
    if skipped_empty:
        shown = ", ".join(skipped_empty[:6]) + (f" and {len(skipped_empty) - 6} more" if len(skipped_empty) > 6 else "")
        notes.append(f"NVTX ranges that launched no GPU work are not benchmarks: {shown}")
    if not new_specs:
        return list(specs), ncu, nsys
    extra = pd.DataFrame(rows)
    orig = R.set_index("range_id")
    add = orig.loc[extra["_orig"].to_numpy()].reset_index(drop=True)
    add["range_id"] = extra["range_id"].to_numpy()
    add["path"] = extra["path"].to_numpy()
    add["name"] = add["path"].str.rsplit("/", n=1).str[-1]
    add["depth"] = pd.to_numeric(add["depth"], errors="coerce").fillna(0).astype(int) + 1 if "depth" in add else 1
    ranges = pd.concat([R, add[R.columns]], ignore_index=True)
    for new, old in zip(extra["range_id"], extra["_orig"], strict=True):
        att_new.append(nsys.attribution.loc[nsys.attribution["range_id"] == old].assign(range_id=new))
    attribution = pd.concat([nsys.attribution, *att_new], ignore_index=True)
    nsys = replace(nsys, ranges=ranges, attribution=attribution)
    if ncu is not None and not ncu.empty:
        ncu, dropped = _mirror_iterations(ncu, new_specs, notes)
        new_specs = [
            replace(sp, source={**dict(sp.source or {}), "ncu": "not compared: holds a captured timing"})
            if sp.nvtx_path in dropped else sp
            for sp in new_specs
        ]
    return [*specs, *new_specs], ncu, nsys


def _mirror_iterations(
    ncu: pd.DataFrame, specs: Sequence[BenchmarkSpec], notes: list[str]
) -> tuple[pd.DataFrame, set[str]]:
    """Add ``<path>/iter<k>`` to the NVTX paths of kernels the ncu pass ran in mirror instance
    ``k`` of a user range ``path``; a range that holds a captured timing is left without ncu
    figures (the ncu pass shortens the captured call, so its kernels are not the same)."""
    by_mirror = {mirror_range_name(s.nvtx_path): s.nvtx_path for s in specs}
    pat = re.compile(rf"^{re.escape(MIRROR_DOMAIN)}:(?:.*/)?(.+?)/{ITER_PREFIX}(\d+)$")
    holds_capture: set[str] = set()
    new_paths = []
    for cell in ncu["nvtx_ranges"]:
        ps = tuple(cell) if not isinstance(cell, str) else (cell,)
        add: list[str] = []
        captured = any(str(p).startswith(f"{NVTX_DOMAIN}:") for p in ps)
        for p in ps:
            m = pat.match(str(p))
            if m and m.group(1) in by_mirror:
                user = by_mirror[m.group(1)]
                if captured:
                    holds_capture.add(user)
                add.append(f"{user}/{ITER_PREFIX}{m.group(2)}")
        new_paths.append((ps, tuple(add)))
    paths: list[tuple[str, ...]] = []
    for ps, more in new_paths:
        paths.append(ps + tuple(a for a in more if a.rsplit("/", 1)[0] not in holds_capture))
    for user in sorted(holds_capture):
        notes.append(
            f"{user}: no ncu figures: the range holds a captured timing, which the ncu pass runs for "
            "only a few iterations (compare the captured timing's own ncu figures)"
        )
    out = ncu.copy()
    out["nvtx_ranges"] = pd.Series(paths, index=ncu.index, dtype=object)
    return out, holds_capture
