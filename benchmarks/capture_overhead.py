"""Does the capture layer change the numbers a script computes? The user's own
``triton.testing.do_bench`` medians with and without the layer, on kernels from ~2 us to ~1 ms.

    python -m benchmarks.capture_overhead [--mode process|inprocess|both] [--rounds N] [--pairs N]
                                          [--processes N] [--rep MS] [--only K,...]
                                          [--rewrites spaced|exit] [--json FILE]
    python -m benchmarks.capture_overhead --analyze FILE   # the verdicts of a recorded run

Two ways to compare, both with the layer loaded as ``nsightwrap profile`` loads it in the plain
pass (``PYTHONPATH`` boot folder, ``NSIGHTWRAP_CAPTURE=1``, ``NSIGHTWRAP_PASS=plain``):

``process``
    Each round runs the worker twice, in a fresh process each time: as it is, and with the layer,
    alternating which goes first. This holds everything the layer does to a process (imports,
    hooks), but on the H200 a process's short-kernel medians move by several percent from one
    process to the next, so many rounds are needed to see a 1% difference.
``inprocess``
    A process with the layer loaded times each kernel ``--pairs`` times with the layer's
    ``do_bench`` and as many times inside ``nsightwrap.uncaptured()`` (triton's own code, no hook
    of the layer anywhere), in ABBA order. Both sides of a pair share the process, its
    allocations and the GPU's state, so the pairs isolate what the layer does around and inside
    each call; ``--processes`` fresh processes do this and their pairs are pooled. The worker
    records the host time before each call (``gap_s``) and which of the layer's calls rewrote its
    sidecar (``rewrote``); ``--rewrites exit`` holds every rewrite until the process exits.

Printed per kernel: the ratio of the medians (with layer / without) - 1, its 95% confidence
interval (percentile bootstrap, fixed seed; inprocess resamples whole pairs), a p-value (process:
permutation test of the medians; inprocess: sign test of the paired ratios) and a verdict against the target (+-1%): ``within`` (the interval
lies inside +-1%), ``outside`` (the interval lies beyond it), ``differs`` (the interval excludes 0
but reaches into +-1%) or ``unresolved`` (the interval holds 0 and reaches past +-1%; the line says
about how many rounds or pairs would make it +-1% wide). The layer's run also writes its sidecar,
which is checked to hold the numbers the worker got back.

In-process pairs get more rows, because on the H200 the ``do_bench`` median of a short kernel is
bimodal from call to call (the 2 us add lands near 4.3 us or near 5.0 us), and the median of a
side jumps from one mode to the other as the share of either crosses one half: ``mean`` (the
ratio of the two sides' means, pairs resampled whole; it moves in proportion to the modes'
shares) and, for a kernel bimodal in every process (``split_modes``), ``low-mode`` and
``high-mode`` (does the layer move a mode?) and ``mode-mix`` (does it change how often a call
lands in each, and by how much does that move the mean?).

Kernels: an elementwise add of 4 Ki floats (~2 us, launch-bound), GPU sleeps of ~10 us, ~100 us
and ~1 ms (``torch.cuda._sleep``), a 64x4096x4096 bf16 GEMM and a 1 GiB copy.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from nsightwrap.analysis.gpu_variance import sign_test_p
from nsightwrap.compare.stats import bootstrap_median_ratio
from nsightwrap.core.contract import capture_boot_dir

TARGET = 0.01  # the layer may move the user's medians by under 1%
MODE_SPLIT = 0.8  # share of the variance a split into two modes must explain (split_modes)
CASES = r'''
import json, statistics, sys, torch, triton.testing
rep = float(sys.argv[1])
a = torch.randn(4096, device="cuda"); b = torch.randn(4096, device="cuda")
x = torch.randn(64, 4096, device="cuda", dtype=torch.bfloat16); w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
src = torch.randn(256 * 1024 * 1024, device="cuda"); dst = torch.empty_like(src)
cycles_per_us = 1980  # torch.cuda._sleep spins SM cycles; at ~1.98 GHz
cases = {
    "add_4k": lambda: a + b,
    "sleep_10us": lambda: torch.cuda._sleep(10 * cycles_per_us),
    "sleep_100us": lambda: torch.cuda._sleep(100 * cycles_per_us),
    "sleep_1ms": lambda: torch.cuda._sleep(1000 * cycles_per_us),
    "gemm_64x4096x4096": lambda: torch.nn.functional.linear(x, w),
    "copy_1g": lambda: dst.copy_(src),
}
only = [n for a in sys.argv[1:] if a.startswith("only=") for n in a[5:].split(",") if n]
cases = {k: f for k, f in cases.items() if not only or k in only}
'''
PROCESS_WORKER = CASES + r'''
out = {}
for name, f in cases.items():
    out[name] = triton.testing.do_bench(f, rep=rep, return_mode="median") * 1e6  # ns
print("RESULT " + json.dumps(out))
'''
INPROCESS_WORKER = CASES + r'''
import nsightwrap as nw
from nsightwrap.capture.state import layer
pairs = int(sys.argv[2])
L = layer()
if "rewrites=exit" in sys.argv[1:]:
    L.spacing.min_s = float("inf")  # the sidecar is written once, at exit: no rewrite between calls
import time
out = {"with": {k: [] for k in cases}, "without": {k: [] for k in cases}}
# Host seconds from the end of the call before to the start of each call, and whether the layer
# rewrote its sidecar inside the call (at its end, the GPU idle until the next call starts).
out["gap_s"] = {"with": {k: [] for k in cases}, "without": {k: [] for k in cases}}
out["rewrote"] = {"with": {k: [] for k in cases}, "without": {k: [] for k in cases}}
for name, f in cases.items():
    with nw.uncaptured():
        triton.testing.do_bench(f, rep=10, return_mode="median")  # compile and warm up
    t_end = time.perf_counter()
    for k in range(2 * pairs):
        side = "without" if k % 4 in (1, 2) else "with"  # ABBA: with, without, without, with, ...
        t0 = time.perf_counter()
        last = L.spacing.last_end
        if side == "without":
            with nw.uncaptured():
                v = triton.testing.do_bench(f, rep=rep, return_mode="median")
        else:
            v = triton.testing.do_bench(f, rep=rep, return_mode="median")
        out[side][name].append(v * 1e6)
        out["gap_s"][side][name].append(t0 - t_end)
        out["rewrote"][side][name].append(L.spacing.last_end != last)
        t_end = time.perf_counter()
print("RESULT " + json.dumps(out))
'''
# --mode sides: several ways of calling do_bench in one process, in the rows of a Williams design
# (williams_rows), to find which part of the layer a difference comes from.
SIDES_WORKER = CASES + r'''
import time
import nsightwrap as nw
import triton.testing as tt
from nsightwrap.capture import state
calls, order = int(sys.argv[2]), sys.argv[3].split(",")
L = state.layer()
L.spacing.min_s = float("inf")  # the sidecar is written once, at exit: no rewrite between calls
def call(side, f):
    if side == "with":  # the layer's do_bench
        return tt.do_bench(f, rep=rep, return_mode="all")
    if side == "without":  # triton's own, no hook of the layer anywhere
        with nw.uncaptured():
            return tt.do_bench(f, rep=rep, return_mode="all")
    if side == "with-bare-events":  # the layer's do_bench, torch's own Event inside it (the
        # layer's own plain-pass do_bench now does this itself: then the same call as "with")
        with state.unpatched(torch.cuda.Event):
            return tt.do_bench(f, rep=rep, return_mode="all")
    if side == "hooks-only":  # triton's own do_bench, the layer's Event hooks inside it
        return tt.do_bench.__nsightwrap_original__(f, rep=rep, return_mode="all")
    raise SystemExit(f"unknown side {side}")

rows = [[int(i) for i in row.split(",")] for row in sys.argv[4].split(";")]
out = {"calls": []}
for name, f in cases.items():
    with nw.uncaptured():
        tt.do_bench(f, rep=10, return_mode="median")  # compile and warm up
    t_end, prev = time.perf_counter(), None
    for c in range(calls):
        for i in rows[c % len(rows)]:
            side = order[i]
            t0 = time.perf_counter()
            times = call(side, f)
            t1 = time.perf_counter()
            q = len(times) // 4
            out["calls"].append({
                "kernel": name, "side": side, "prev": prev, "median_ns": statistics.median(times) * 1e6,
                "repeats": len(times), "gap_s": t0 - t_end, "dur_s": t1 - t0,
                "quarters_ns": [statistics.median(times[j * q:(j + 1) * q]) * 1e6 for j in range(4)] if q else [],
            })
            prev, t_end = side, time.perf_counter()
print("RESULT " + json.dumps(out))
'''
SIDES = ("with", "without", "with-bare-events", "hooks-only")


def _env(run_dir: Path, layer: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NSIGHTWRAP_")}
    if layer:
        (run_dir / "plain").mkdir(parents=True, exist_ok=True)
        root = str(Path(__file__).resolve().parent.parent)  # the worker imports nsightwrap
        env.update({
            "NSIGHTWRAP_CAPTURE": "1", "NSIGHTWRAP_PASS": "plain", "NSIGHTWRAP_RUN_DIR": str(run_dir),
            "PYTHONPATH": os.pathsep.join(p for p in (capture_boot_dir(), root, env.get("PYTHONPATH")) if p),
        })  # fmt: skip
    return env


def _sidecar_values(run_dir: Path) -> list[float]:
    (doc,) = [json.loads(f.read_text()) for f in (run_dir / "plain").glob("timer-*-capture.json")]
    return [b["user_value_ns"] for b in doc["benchmarks"]]


def _worker(worker: Path, args: Sequence[str], env: dict[str, str]) -> Any:
    p = subprocess.run([sys.executable, str(worker), *args], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"capture_overhead: the worker failed (exit {p.returncode}): {p.stderr.strip()[-2000:]}")
    return json.loads(p.stdout.split("RESULT ", 1)[1])


def run_process(tmp: Path, rounds: int, rep: float, only: str = "") -> dict[str, Any]:
    worker = tmp / "worker_process.py"
    worker.write_text(PROCESS_WORKER)
    bare: list[dict[str, float]] = []
    layer: list[dict[str, float]] = []
    for i in range(rounds):
        for with_layer in (False, True) if i % 2 == 0 else (True, False):
            run_dir = tmp / f"run{i}"
            got = _worker(worker, [str(rep), f"only={only}"], _env(run_dir, with_layer))
            if with_layer:  # the layer kept what the script got
                assert _sidecar_values(run_dir) == list(got.values()), (_sidecar_values(run_dir), got)
            (layer if with_layer else bare).append(got)
        print(f"process round {i + 1}/{rounds} done", flush=True)
    return {"rounds": rounds, "rep_ms": rep, "without": bare, "with": layer}


def run_inprocess(
    tmp: Path, pairs: int, rep: float, processes: int, only: str = "", rewrites: str = "spaced"
) -> dict[str, Any]:
    """``pairs`` paired calls per kernel in each of ``processes`` fresh processes (the pairs stay
    within a process; several processes keep one process's state from deciding the verdict).
    ``rewrites="exit"`` keeps the layer from rewriting its sidecar until the process exits."""
    worker = tmp / "worker_inprocess.py"
    worker.write_text(INPROCESS_WORKER)
    out: dict[str, Any] = {"pairs": pairs, "processes": processes, "rep_ms": rep, "rewrites": rewrites,
                           "with": {}, "without": {}}  # fmt: skip
    for i in range(processes):
        run_dir = tmp / f"inprocess{i}"
        got = _worker(worker, [str(rep), str(pairs), f"only={only}", f"rewrites={rewrites}"], _env(run_dir, True))
        # The layer captured exactly the calls made with it (none of those made inside uncaptured()).
        want = [v for name in got["with"] for v in got["with"][name]]
        assert _sidecar_values(run_dir) == want, (_sidecar_values(run_dir), got)
        for side in ("with", "without"):
            for name, vals in got[side].items():
                out[side].setdefault(name, []).extend(vals)
            for key in ("gap_s", "rewrote"):
                for name, vals in got[key][side].items():
                    out.setdefault(key, {}).setdefault(side, {}).setdefault(name, []).extend(vals)
        print(f"in-process {i + 1}/{processes}: {pairs} pairs per kernel done", flush=True)
    return out


def williams_rows(k: int) -> list[list[int]]:
    """The rows of a Williams design for ``k`` sides: inside the rows, every side comes right
    after every other side equally often (k rows for an even k, 2k for an odd one)."""
    first = [(j // 2 if j % 2 == 0 else k - 1 - j // 2) for j in range(k)]
    rows = [[(r + i) % k for r in first] for i in range(k)]
    return rows if k % 2 == 0 else rows + [row[::-1] for row in rows]


def run_sides(tmp: Path, calls: int, rep: float, processes: int, sides: Sequence[str], only: str = "") -> dict[str, Any]:
    """``calls`` calls of every side per kernel in each of ``processes`` fresh processes with the
    layer loaded (``SIDES_WORKER``; rewrites held until exit), the rows of ``williams_rows`` one
    after another. Every call is kept with its side, the side before it, its median, its repeats'
    quarter medians and its host time."""
    worker = tmp / "worker_sides.py"
    worker.write_text(SIDES_WORKER)
    out: dict[str, Any] = {"calls_per_side": calls, "processes": processes, "rep_ms": rep, "sides": list(sides),
                           "order": "williams", "calls": []}  # fmt: skip
    for i in range(processes):
        rows = ";".join(",".join(map(str, r)) for r in williams_rows(len(sides)))
        got = _worker(worker, [str(rep), str(calls), ",".join(sides), rows, f"only={only}"],
                      _env(tmp / f"sides{i}", True))  # fmt: skip
        out["calls"] += [{**c, "process": i} for c in got["calls"]]
        print(f"sides {i + 1}/{processes}: {calls} calls per side and kernel done", flush=True)
    return out


def sides_lines(doc: dict[str, Any]) -> list[str]:
    """Per process and kernel, each side's median and mean call median, its median host time per
    call, and how many of its calls read below every call made without the layer (``fast``);
    then each side's mean by the side called before it, pooled over the processes."""
    calls = doc["calls"]
    lines = [f"{'process':>7} {'kernel':<18} {'side':<17} {'n':>4} {'median':>9} {'mean':>9} {'host ms':>8} fast"]
    keys = sorted({(c["process"], c["kernel"]) for c in calls})
    for proc, kernel in keys:
        mine = [c for c in calls if c["process"] == proc and c["kernel"] == kernel]
        bare = [c["median_ns"] for c in mine if c["side"] == "without"]
        floor = min(bare) if bare else -math.inf
        for side in doc["sides"]:
            v = [c["median_ns"] for c in mine if c["side"] == side]
            if not v:
                continue
            host = statistics.median(c["dur_s"] for c in mine if c["side"] == side) * 1e3
            fast = sum(x < floor for x in v)
            lines.append(f"{proc:>7} {kernel:<18} {side:<17} {len(v):>4} {statistics.median(v):>9.1f} "
                         f"{statistics.fmean(v):>9.1f} {host:>8.2f} {fast}")  # fmt: skip
    lines.append("mean call median (ns) by the side called before (rows: side; columns: before)")
    sides = doc["sides"]
    for kernel in sorted({c["kernel"] for c in calls}):
        lines.append(f"  {kernel}: " + " | ".join(f"{s}" for s in sides))
        for side in sides:
            cells = []
            for before in sides:
                v = [c["median_ns"] for c in calls if c["kernel"] == kernel and c["side"] == side and c["prev"] == before]
                cells.append(f"{statistics.fmean(v):.1f} ({len(v)})" if v else "-")
            lines.append(f"  {side:<17} " + " | ".join(cells))
    return lines


def permutation_p(a: Sequence[float], b: Sequence[float], *, limit: int = 50_000, seed: int = 0) -> float:
    """Two-sided permutation p-value of the ratio of medians b/a (exact when there are at most
    ``limit`` splits, else ``limit`` random ones with a fixed seed)."""
    pool = np.asarray([*a, *b], dtype=float)
    n = len(a)
    obs = abs(math.log(statistics.median(b) / statistics.median(a)))
    if math.comb(len(pool), n) <= limit:
        splits: Any = (list(c) for c in itertools.combinations(range(len(pool)), n))
    else:
        rng = np.random.default_rng(seed)
        splits = (rng.permutation(len(pool))[:n] for _ in range(limit))
    hits = total = 0
    for idx in splits:
        mask = np.zeros(len(pool), dtype=bool)
        mask[idx] = True
        d = abs(math.log(float(np.median(pool[~mask])) / float(np.median(pool[mask]))))
        hits += d >= obs - 1e-12
        total += 1
    return hits / total


def paired_ci(
    without: Sequence[float], with_: Sequence[float], *, stat: Any = np.median, resamples: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """95% percentile-bootstrap interval of stat(with) / stat(without), resampling whole pairs
    (fixed seed). ``np.median``: the ratio of the two sides' medians, not the median of the pairs'
    ratios: where a kernel's do_bench median is bimodal (the 2 us add flips between two values
    from call to call), most pairs tie and the median ratio sits on the ties, blind to a side that
    lands in the other mode more often. ``np.mean``: the mean of a mixture of two modes moves in
    proportion to their weights, where the median jumps from one mode to the other as a weight
    crosses one half."""
    a, b = np.asarray(without, dtype=float), np.asarray(with_, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(a), size=(resamples, len(a)))
    ratios = stat(b[idx], axis=1) / stat(a[idx], axis=1)
    low, high = np.percentile(ratios, [2.5, 97.5])
    return float(low), float(high)


def verdict(low: float, high: float, target: float = TARGET) -> str:
    """``within``, ``outside``, ``differs`` or ``unresolved`` for a ratio interval [low, high]."""
    if 1 - target <= low and high <= 1 + target:
        return "within"
    if low > 1 + target or high < 1 - target:
        return "outside"
    if low > 1 or high < 1:
        return "differs"
    return "unresolved"


def split_modes(values: Sequence[float] | np.ndarray) -> float | None:
    """The value between the two modes of ``values`` (Otsu's split of their central 95%), or None
    where they are not bimodal: the split must explain at least MODE_SPLIT of the variance (one
    normal distribution split in two: 64%) and leave at least 10% of the values on each side."""
    v = np.sort(np.asarray(values, dtype=float))
    lo, hi = np.percentile(v, [2.5, 97.5])
    c = v[(v >= lo) & (v <= hi)]
    if len(c) < 10 or float(c.var()) == 0.0:
        return None
    cuts = np.unique(c)[1:]
    within = [len(c[c < t]) * c[c < t].var() + len(c[c >= t]) * c[c >= t].var() for t in cuts]
    k = int(np.argmin(within))
    t = float(cuts[k])
    share = float(np.mean(c < t))
    if 1 - within[k] / (len(c) * c.var()) < MODE_SPLIT or not 0.1 <= share <= 0.9:
        return None
    return t


def by_mode(bare: Sequence[float], layer: Sequence[float], per_process: int, *,
            resamples: int = 2000, seed: int = 0) -> tuple[list[tuple[str, float, float, float]], int, int] | None:  # fmt: skip
    """For a kernel whose ``do_bench`` medians are bimodal in every process: (part, estimate,
    low, high) of the ratios with / without of ``low-mode`` and ``high-mode`` (each process's own
    split; the two sides' medians inside the mode, the processes' log ratios weighted by their
    smaller count) and ``mode-mix`` (what the change in how often the layer's calls land in the
    low mode does to the mean: the difference of the low mode's shares, pairs resampled whole,
    times the distance between the modes' medians over the pooled median). None where a process
    is not bimodal. Together the parts say whether the layer moves the modes or the mix. Also
    returned: how many calls of each side (without, with) landed in the low mode."""
    a, b = np.asarray(bare, dtype=float), np.asarray(layer, dtype=float)
    n = len(a)
    per = per_process if per_process and n % per_process == 0 else n
    low_a, low_b = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
    for s in range(0, n, per):
        t = split_modes(np.concatenate([a[s : s + per], b[s : s + per]]))
        if t is None:
            return None
        low_a[s : s + per], low_b[s : s + per] = a[s : s + per] < t, b[s : s + per] < t
    rng = np.random.default_rng(seed)
    parts: list[tuple[str, float, float, float]] = []
    for part, ma, mb in (("low-mode", low_a, low_b), ("high-mode", ~low_a, ~low_b)):
        est, boot, weights = 0.0, np.zeros(resamples), 0.0
        for s in range(0, n, per):
            x, y = a[s : s + per][ma[s : s + per]], b[s : s + per][mb[s : s + per]]
            if min(len(x), len(y)) < 3:
                continue
            w = float(min(len(x), len(y)))
            est += w * math.log(float(np.median(y)) / float(np.median(x)))
            bx = np.median(x[rng.integers(0, len(x), size=(resamples, len(x)))], axis=1)
            by = np.median(y[rng.integers(0, len(y), size=(resamples, len(y)))], axis=1)
            boot += w * np.log(by / bx)
            weights += w
        if weights:
            low, high = np.percentile(np.exp(boot / weights), [2.5, 97.5])
            parts.append((part, math.exp(est / weights), float(low), float(high)))
    pooled = np.concatenate([a, b])
    lows, highs = pooled[np.concatenate([low_a, low_b])], pooled[~np.concatenate([low_a, low_b])]
    gap = (float(np.median(lows)) - float(np.median(highs))) / float(np.median(pooled))
    idx = rng.integers(0, n, size=(resamples, n))
    shift = (low_b[idx].mean(axis=1) - low_a[idx].mean(axis=1)) * gap
    low, high = np.percentile(shift, [2.5, 97.5])
    parts.append(("mode-mix", 1 + (low_b.mean() - low_a.mean()) * gap, 1 + float(low), 1 + float(high)))
    return parts, int(low_a.sum()), int(low_b.sum())


def analyze(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per kernel and mode: estimate, interval, p-value, verdict, and for an unresolved
    one about how many rounds (pairs) would make the interval +-1% wide. In-process pairs also
    get a ``mean`` row (the ratio of the sides' means) and, for a kernel bimodal in every
    process, its ``low-mode``, ``high-mode`` and ``mode-mix`` rows (``by_mode``)."""
    rows = []
    if doc.get("without"):  # process rounds
        n = len(doc["without"])
        for name in doc["without"][0]:
            a = [r[name] for r in doc["without"]]
            b = [r[name] for r in doc["with"]]
            iv = bootstrap_median_ratio(a, b)
            rows.append(_row("process", name, n, iv.estimate, iv.low, iv.high, permutation_p(a, b)))
    inproc = doc.get("inprocess")
    if inproc:
        for name, bare in inproc["without"].items():
            layer = inproc["with"][name]
            ratios = [w / b for w, b in zip(layer, bare, strict=True)]
            lo, hi = paired_ci(bare, layer)
            wins, losses = sum(r > 1 for r in ratios), sum(r < 1 for r in ratios)  # ties carry no sign
            p = min(1.0, 2 * sign_test_p(max(wins, losses), wins + losses)) if wins + losses else 1.0
            est = statistics.median(layer) / statistics.median(bare)
            rows.append(_row("inprocess", name, len(ratios), est, lo, hi, p))
            lo, hi = paired_ci(bare, layer, stat=np.mean)
            mean = statistics.fmean(layer) / statistics.fmean(bare)
            rows.append(_row("mean", name, len(ratios), mean, lo, hi, None))
            modes = by_mode(bare, layer, int(inproc.get("pairs") or 0))
            if modes is not None:
                parts, low_bare, low_layer = modes
                rows += [_row(part, name, len(ratios), est, lo, hi, None) for part, est, lo, hi in parts]
                rows[-1].update(low_without=low_bare, low_with=low_layer)  # the mode-mix row
    return rows


def _row(mode: str, name: str, n: int, est: float, lo: float, hi: float, p: float | None) -> dict[str, Any]:
    v = verdict(lo, hi)
    half = (hi - lo) / 2
    need = math.ceil(n * (half / TARGET) ** 2) if v == "unresolved" else None
    return {"mode": mode, "kernel": name, "n": n, "rel_diff": est - 1, "ci_low": lo - 1, "ci_high": hi - 1,
            "p_value": p, "verdict": v, "n_for_1pct": need}  # fmt: skip


def print_rows(rows: Sequence[dict[str, Any]]) -> None:
    print(f"{'mode':<10} {'kernel':<18} {'n':>3} {'difference':>10} {'95% interval':>19} {'p':>5}  verdict")
    for r in rows:
        iv = f"[{r['ci_low']:+.2%}, {r['ci_high']:+.2%}]"
        more = f" (about {r['n_for_1pct']} for +-1%)" if r["n_for_1pct"] else ""
        if "low_with" in r:
            more += f" (in the low mode: {r['low_with']} of {r['n']} with the layer, {r['low_without']} without)"
        p = "-" if r["p_value"] is None else f"{r['p_value']:.2f}"  # a p-value only for the medians
        print(f"{r['mode']:<10} {r['kernel']:<18} {r['n']:>3} {r['rel_diff']:>+10.2%} {iv:>19} "
              f"{p:>5}  {r['verdict']}{more}")  # fmt: skip


def rewrite_lines(doc: dict[str, Any]) -> list[str]:
    """How many of the layer's calls rewrote the sidecar, per kernel (the rewrite ends the call,
    so the GPU idles before whichever call follows; ``rewrote`` in the JSON says which)."""
    inproc = doc.get("inprocess") or {}
    rewrote = (inproc.get("rewrote") or {}).get("with") or {}
    lines = []
    for name, flags in rewrote.items():
        lines.append(f"sidecar rewrites inside the layer's calls of {name}: {sum(flags)} of {len(flags)}"
                     f" (rewrites {inproc.get('rewrites', 'spaced')})")  # fmt: skip
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=("process", "inprocess", "both", "sides"), default="both",
                    help="sides: the calls of --sides in one process, to find which part of the layer moves a number")  # fmt: skip
    ap.add_argument("--rounds", type=int, default=8, help="process rounds (two fresh processes each)")
    ap.add_argument("--pairs", type=int, default=16, help="in-process pairs per kernel and process")
    ap.add_argument("--processes", type=int, default=2, help="fresh processes of in-process pairs")
    ap.add_argument("--rep", type=float, default=100.0, help="do_bench's rep in ms (its default: 100)")
    ap.add_argument("--only", default="", help="comma-separated kernels (default all of them)")
    ap.add_argument("--rewrites", choices=("spaced", "exit"), default="spaced",
                    help="inprocess: the layer's sidecar rewrites as the layer spaces them, or only at exit")  # fmt: skip
    ap.add_argument("--sides", default=",".join(SIDES), help=f"--mode sides: which calls ({', '.join(SIDES)})")
    ap.add_argument("--calls", type=int, default=40, help="--mode sides: calls per side, kernel and process")
    ap.add_argument("--json", type=Path, help="write every number here")
    ap.add_argument("--analyze", type=Path, metavar="FILE", help="print the verdicts of a recorded --json file")
    a = ap.parse_args()
    if a.analyze:
        recorded = json.loads(a.analyze.read_text())
        if "sides" in recorded:
            print("\n".join(sides_lines(recorded["sides"])))
            return
        print_rows(analyze(recorded))
        for line in rewrite_lines(recorded):
            print(line)
        return
    doc: dict[str, Any] = {}
    if a.mode == "sides":
        sides = [x for x in a.sides.split(",") if x]
        if unknown := [x for x in sides if x not in SIDES]:
            ap.error(f"unknown side(s) {', '.join(unknown)}; choose from {', '.join(SIDES)}")
        with tempfile.TemporaryDirectory(prefix="nsightwrap-capture-sides-") as tmp:
            doc["sides"] = run_sides(Path(tmp), a.calls, a.rep, a.processes, sides, a.only)
        print("\n".join(sides_lines(doc["sides"])))
        if a.json:
            a.json.write_text(json.dumps(doc, indent=1))
        return
    with tempfile.TemporaryDirectory(prefix="nsightwrap-capture-overhead-") as tmp:
        if a.mode in ("process", "both"):
            doc.update(run_process(Path(tmp), a.rounds, a.rep, a.only))
        if a.mode in ("inprocess", "both"):
            doc["inprocess"] = run_inprocess(Path(tmp), a.pairs, a.rep, a.processes, a.only, a.rewrites)
    rows = analyze(doc)
    doc["summary"] = rows
    print_rows(rows)
    for line in rewrite_lines(doc):
        print(line)
    if a.json:
        a.json.write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
