"""Can the plain pass's own SM clock be measured without moving its timings?

Question: run the script under ``nsys profile -t nvtx`` with GPU-metrics sampling and no CUDA
trace. (1) Does that move ``do_bench`` timings of launch-bound loops, against a plain-vs-plain
control? (2) Can each timed window be placed on nsys's timeline without a CUDA trace: an anchor
event recorded on an idle queue inside an NVTX range, and every window's start and end events
read against it (``anchor.elapsed_time(event)``)? A run under ``-t cuda,nvtx`` checks the
placement against the kernels' own CUPTI intervals, and the GPC clock inside the placed windows
against the clock inside the kernels.

    python3 -m studies.plain_clock_study --rounds 3 --json plain-clock.json > plain-clock.md   # GPU, nsys on PATH
    python3 -m studies.plain_clock_study --tables-from studies/results/plain-clock-study.json.gz
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NSYS_METRICS = ["--gpu-metrics-devices=all", "--gpu-metrics-frequency=20000"]
#: Where the anchor event is taken to have run in its NVTX range: the run of 2026-12-07 13:36 UTC
#: (H100) placed it at the middle and found every window 11-20 us early against the kernels'
#: CUPTI intervals; "end" places it at the range's end.
PLACE = os.environ.get("STUDY_PLACE", "end")


# ---------------------------------------------------------------- the workload (child process)
def _workload(out: Path) -> None:
    import nvtx
    import torch
    import triton.testing

    dom = nvtx.get_domain("nsightwrap_study")
    dev = torch.device("cuda")
    torch.manual_seed(0)
    a1k = torch.randn(1024, device=dev)
    b1k = torch.randn(1024, device=dev)
    x1m = torch.randn(1 << 20, device=dev)
    x16m = torch.randn(1 << 24, device=dev)
    g_a = torch.randn(1024, 4096, device=dev, dtype=torch.bfloat16)
    g_b = torch.randn(4096, 8192, device=dev, dtype=torch.bfloat16)
    s_a = torch.randn(64, 4096, device=dev, dtype=torch.bfloat16)
    s_w = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    big = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    sm = torch.randn(4096, 4096, device=dev)
    benches: list[tuple[str, Any, str]] = [
        ("add_1k", lambda: a1k + b1k, "do_bench"),
        ("relu_1m", lambda: torch.relu(x1m), "do_bench"),
        ("add_16m", lambda: x16m + x16m, "do_bench"),
        ("mm_64x4096x4096", lambda: torch.nn.functional.linear(s_a, s_w), "do_bench"),
        ("mm_1024x8192x4096", lambda: g_a @ g_b, "do_bench"),
        ("softmax_4096", lambda: torch.softmax(sm, dim=-1), "do_bench"),
        ("add_1k_events", lambda: a1k + b1k, "events"),
        ("mm_8192_events", lambda: big @ big, "events_long"),
    ]
    created: list[Any] = []
    real_event = torch.cuda.Event

    def collecting(*a: Any, **k: Any) -> Any:
        e = real_event(*a, **k)
        created.append(e)
        return e

    results: dict[str, Any] = {}
    for k, (name, fn, how) in enumerate(benches):
        fn()
        torch.cuda.synchronize()
        anchor = real_event(enable_timing=True)
        rid = dom.push_range(message=f"anchor {os.getpid()} {k}")
        anchor.record()
        torch.cuda.synchronize()
        dom.pop_range()
        created.clear()
        if how == "do_bench":
            torch.cuda.Event = collecting  # type: ignore[misc]
            try:
                times = triton.testing.do_bench(fn, return_mode="all")
            finally:
                torch.cuda.Event = real_event  # type: ignore[misc]
            ev = list(created)
            # do_bench: estimate start/end, then n start events, then n end events
            n = len(times)  # the timed repeats' events are the last 2n made: n starts, then n ends
            starts, ends = ev[-2 * n : -n], ev[-n:]
        else:
            n = 1000 if how == "events" else 300
            starts = [real_event(enable_timing=True) for _ in range(n)]
            ends = [real_event(enable_timing=True) for _ in range(n)]
            for i in range(n):
                starts[i].record()
                fn()
                ends[i].record()
            torch.cuda.synchronize()
            times = [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]
        windows = [[anchor.elapsed_time(s) * 1e6, anchor.elapsed_time(e) * 1e6] for s, e in zip(starts, ends, strict=True)]
        results[name] = {"median_ms": statistics.median(times), "n": len(times), "anchor": k, "windows_ns": windows}
        _ = rid
    out.write_text(json.dumps({"pid": os.getpid(), "benches": results}))


# ---------------------------------------------------------------- the driver (GPU machine)
def _run(mode: str, work: Path, tag: str, nsys: str) -> dict[str, Any]:
    out = work / f"{tag}.json"
    env = dict(os.environ, STUDY_CHILD=str(out), PYTHONUNBUFFERED="1")
    child = [sys.executable, "-m", "studies.plain_clock_study"]
    if mode == "plain":
        argv = child
    else:
        trace = "nvtx" if mode == "nsys_nvtx" else "cuda,nvtx"
        argv = [nsys, "profile", "-t", trace, "-s", "none", "--cpuctxsw=none", *NSYS_METRICS,
                "-o", str(work / tag), "-f", "true", *child]  # fmt: skip
    t0 = time.monotonic()
    p = subprocess.run(argv, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    rec: dict[str, Any] = {"mode": mode, "tag": tag, "rc": p.returncode, "wall_s": wall}
    if p.returncode != 0 or not out.exists():
        rec["stderr"] = p.stderr[-2000:]
        return rec
    rec.update(json.loads(out.read_text()))
    if mode != "plain":
        rep = work / f"{tag}.nsys-rep"
        sq = work / f"{tag}.sqlite"
        e = subprocess.run([nsys, "export", "--type", "sqlite", "-o", str(sq), "-f", "true", str(rep)],
                           capture_output=True, text=True)  # fmt: skip
        rec["export_rc"] = e.returncode
        if sq.exists():
            rec["placed"] = _place(sq, rec["benches"], kernels=(mode == "nsys_cuda"))
    return rec


def _place(sq: Path, benches: dict[str, Any], kernels: bool) -> dict[str, Any]:
    """Each bench's windows on nsys's timeline, the GPC clock inside them, and (with a CUDA
    trace) the kernels inside each window and the clock inside those kernels."""
    import numpy as np

    con = sqlite3.connect(sq)
    strings = dict(con.execute("SELECT id, value FROM StringIds"))
    anchors: dict[int, float] = {}
    spans: dict[int, float] = {}
    for start, end, text, tid in con.execute("SELECT start, end, text, textId FROM NVTX_EVENTS WHERE end IS NOT NULL"):
        t = text if text is not None else strings.get(tid, "")
        if t and t.startswith("anchor "):
            k = int(t.split()[2])
            # PLACE: "mid" takes the range's middle, "end" its end less 2 us (the synchronize
            # returns just after the anchor event ran).
            anchors[k] = (start + end) / 2.0 if PLACE == "mid" else end - 2000.0
            spans[k] = float(end - start)
    mid = [r[0] for r in con.execute("SELECT metricId FROM TARGET_INFO_GPU_METRICS WHERE metricName LIKE 'GPC Clock%'")]
    clk = np.array(con.execute(f"SELECT timestamp, value FROM GPU_METRICS WHERE metricId IN ({','.join(map(str, mid)) or -1}) ORDER BY timestamp").fetchall(), dtype=float)
    out: dict[str, Any] = {"samples": int(len(clk))}
    kt = None
    if kernels:
        q = ("SELECT k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON k.shortName = s.id ORDER BY k.start")
        kt = con.execute(q).fetchall()
    ts, hz = (clk[:, 0], clk[:, 1]) if len(clk) else (np.array([]), np.array([]))

    def mean_in(lo: np.ndarray, hi: np.ndarray) -> tuple[float | None, int]:
        a = np.searchsorted(ts, lo, "left")
        b = np.searchsorted(ts, hi, "right")
        tot = 0.0
        cnt = 0
        for i, j in zip(a, b, strict=True):
            if j > i:
                tot += float(hz[i:j].sum())
                cnt += int(j - i)
        return (tot / cnt if cnt else None), cnt

    for name, b in benches.items():
        k = b["anchor"]
        if k not in anchors:
            out[name] = {"error": "no anchor range"}
            continue
        w = np.array(b["windows_ns"], dtype=float) + anchors[k]
        f, n = mean_in(w[:, 0], w[:, 1])
        row: dict[str, Any] = {"clock_in_windows_hz": f, "samples": n, "anchor_range_us": spans[k] / 1e3}
        if kt is not None and len(w):
            ks = np.array([r[0] for r in kt], dtype=float)
            ke = np.array([r[1] for r in kt], dtype=float)
            kn = [r[2] for r in kt]
            inside, lead, tail = 0, [], []
            klo, khi = [], []
            for s, e in w:
                i = int(np.searchsorted(ks, s, "left"))
                j = int(np.searchsorted(ks, e, "left"))
                sel = [x for x in range(i, j) if not any(t in kn[x].lower() for t in ("fill", "zero", "memset"))]
                if sel:
                    inside += 1
                    lead.append(ks[sel[0]] - s)
                    tail.append(e - ke[sel[-1]])
                    klo.extend(ks[sel])
                    khi.extend(ke[sel])
            fk, nk = mean_in(np.array(klo), np.array(khi))
            near = int(np.searchsorted(ks, w[0, 0] - 5e6, "left"))
            row.update({
                "windows": int(len(w)), "windows_with_kernel": inside,
                "lead_us_median": float(np.median(lead)) / 1e3 if lead else None,
                "tail_us_median": float(np.median(tail)) / 1e3 if tail else None,
                "lead_us_min": float(np.min(lead)) / 1e3 if lead else None,
                "clock_in_kernels_hz": fk, "kernel_samples": nk, "first_kernel_index": near,
            })  # fmt: skip
        out[name] = row
    con.close()
    return out


def _us(v: Any) -> str:
    return f"{v:.1f}" if isinstance(v, (int, float)) else "-"


def _tables(data: dict[str, Any]) -> str:
    runs = data["runs"]
    lines = [f"# plain-clock study ({data.get('gpu', '?')}, {data.get('date', '?')}; anchor at the range's "
             f"{data.get('place', 'mid')})", ""]
    plain = [r for r in runs if r["mode"] == "plain" and "benches" in r]
    nvtx = [r for r in runs if r["mode"] == "nsys_nvtx" and "benches" in r]
    cuda = [r for r in runs if r["mode"] == "nsys_cuda" and "benches" in r]
    lines.append("| run | mode | rc | wall s |")
    lines.append("| --- | --- | ---: | ---: |")
    for r in runs:
        lines.append(f"| {r['tag']} | {r['mode']} | {r['rc']} | {r['wall_s']:.1f} |")
    lines.append("")
    if plain:
        names = list(plain[0]["benches"])
        lines.append("## Timings (median us per run); ratio against the first plain run")
        lines.append("| bench | " + " | ".join(r["tag"] for r in plain + nvtx + cuda) + " |")
        lines.append("| --- |" + " ---: |" * len(plain + nvtx + cuda))
        for n in names:
            ref = plain[0]["benches"][n]["median_ms"]
            cells = []
            for r in plain + nvtx + cuda:
                v = r["benches"].get(n, {}).get("median_ms")
                cells.append(f"{v * 1e3:.2f} ({v / ref:.3f})" if v else "-")
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        lines.append("")
        # Plain-vs-plain spread against nsys-vs-plain, per bench: median of each run's ratio to the plain median.
        lines.append("## Each mode's median against the median of the plain runs")
        lines.append("| bench | plain runs: min..max ratio | nsys -t nvtx: min..max | nsys -t cuda,nvtx |")
        lines.append("| --- | --- | --- | --- |")
        for n in names:
            pm = statistics.median(r["benches"][n]["median_ms"] for r in plain)
            pr = [r["benches"][n]["median_ms"] / pm for r in plain]
            nr = [r["benches"][n]["median_ms"] / pm for r in nvtx if n in r["benches"]]
            cr = [r["benches"][n]["median_ms"] / pm for r in cuda if n in r["benches"]]
            fmt = lambda xs: f"{min(xs):.3f}..{max(xs):.3f}" if xs else "-"  # noqa: E731
            lines.append(f"| {n} | {fmt(pr)} | {fmt(nr)} | {fmt(cr)} |")
        lines.append("")
    for r in nvtx + cuda:
        pl = r.get("placed") or {}
        lines.append(f"## Placement, {r['tag']} ({r['mode']}, {pl.get('samples', 0)} GPC samples)")
        lines.append("| bench | clock in windows GHz (samples) | clock in kernels GHz (samples) | windows with a kernel | lead us (median, min) | tail us | anchor range us |")
        lines.append("| --- | --- | --- | --- | --- | --- | --- |")
        for n, row in pl.items():
            if not isinstance(row, dict):
                continue
            f = row.get("clock_in_windows_hz")
            fk = row.get("clock_in_kernels_hz")
            lines.append(
                f"| {n} | {f / 1e9 if f else float('nan'):.3f} ({row.get('samples')}) | "
                f"{fk / 1e9 if fk else float('nan'):.3f} ({row.get('kernel_samples', '-')}) | "
                f"{row.get('windows_with_kernel', '-')}/{row.get('windows', '-')} | "
                f"{_us(row.get('lead_us_median'))}, {_us(row.get('lead_us_min'))} | {_us(row.get('tail_us_median'))} | "
                f"{_us(row.get('anchor_range_us'))} |"
            )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--nsys", default="nsys")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--tables-from", type=Path)
    a = ap.parse_args(argv)
    if a.tables_from:
        op = gzip.open if a.tables_from.suffix == ".gz" else open
        with op(a.tables_from, "rt") as f:
            print(_tables(json.load(f)))
        return 0
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,uuid", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    runs = []
    with tempfile.TemporaryDirectory() as td:
        work = Path(td)
        for i in range(a.rounds):
            for mode in ("plain", "nsys_nvtx"):
                r = _run(mode, work, f"{mode}{i}", a.nsys)
                print(f"{r['tag']} rc={r['rc']} wall={r['wall_s']:.1f}s", file=sys.stderr, flush=True)
                runs.append(r)
        r = _run("nsys_cuda", work, "nsys_cuda0", a.nsys)
        print(f"{r['tag']} rc={r['rc']} wall={r['wall_s']:.1f}s", file=sys.stderr, flush=True)
        runs.append(r)
    for r in runs:
        for b in (r.get("benches") or {}).values():
            b.pop("windows_ns", None)
    data = {"gpu": gpu, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "rounds": a.rounds, "runs": runs,
            "place": PLACE}
    if a.json:
        a.json.write_text(json.dumps(data))
    print(_tables(data))
    return 0


if __name__ == "__main__":
    child = os.environ.get("STUDY_CHILD")
    if child:
        _workload(Path(child))
    else:
        raise SystemExit(main())
