"""What a profiled pass spends before the script's first kernel, and whether a pass can start
while another profiles (the question behind starting each ncu pass early, docs/profile.md).

    python3 -m studies.startup_study --rounds 2 --json startup-study.json

A child script stamps the wall clock (``time.time()``) at its first statement, after ``import
torch``, after ``import triton.testing``, after CUDA's first call (a tensor on the GPU and a
synchronize), after 20 small kernels and at its end. It runs plain, under ncu (nothing profiled;
20 kernels profiled with two metrics) and under nsys (with and without GPU metrics, at 20 and
10 kHz), ``--rounds`` times each, interleaved. Then, for the early start: ncu A profiles 200
kernels one by one while ncu B (same options, another ``TMPDIR`` or the same) and nsys with GPU
metrics start 1.5 s into A; their stamps say whether B's interpreter and its first CUDA call wait
for A, and each tool's exit status whether the two can share the GPU's counters. Needs a GPU,
ncu and nsys (``NCU``, ``NSYS`` or PATH).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

CHILD = r"""
import json, sys, time
t = {"start": time.time()}
import os
import torch
t["torch"] = time.time()
import triton.testing  # noqa: F401
t["triton"] = time.time()
go = os.environ.get("STUDY_GO")
while go and not os.path.exists(go):  # held as nsightwrap's capture layer holds an early pass
    time.sleep(0.005)
t["go"] = time.time()
x = torch.ones(1 << 20, device="cuda")
torch.cuda.synchronize()
t["cuda"] = time.time()
n = int(sys.argv[2])
for _ in range(n):
    x.mul_(1.0001)
torch.cuda.synchronize()
t["kernels"] = time.time()
t["end"] = time.time()
with open(sys.argv[1], "w") as f:
    json.dump(t, f)
"""

STAMPS = ("start", "torch", "triton", "cuda", "kernels", "end")


def _tool(env: str, name: str) -> str | None:
    return os.environ.get(env) or shutil.which(name)


def _launch(argv: list[str], log: Path, env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    out = log.open("wb")
    return subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL)


def _child_argv(work: Path, tag: str, kernels: int) -> tuple[list[str], Path]:
    script = work / "child.py"
    if not script.exists():
        script.write_text(CHILD)
    stamps = work / f"{tag}.json"
    return [sys.executable, str(script), str(stamps), str(kernels)], stamps


def _configs(ncu: str | None, nsys: str | None, work: Path) -> dict[str, list[str]]:
    m = "gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second"
    c: dict[str, list[str]] = {"plain": []}
    if ncu:
        c["ncu, none profiled"] = [ncu, "--clock-control", "none", "--nvtx", "--nvtx-include", "nothing/",
                                   "--metrics", m, "-o", str(work / "r0"), "-f"]  # fmt: skip
        c["ncu, 20 profiled"] = [ncu, "--clock-control", "none", "--metrics", m, "-o", str(work / "r1"), "-f"]
    if nsys:
        base = [nsys, "profile", "-t", "cuda,nvtx", "-s", "none", "--cpuctxsw=none", "--cuda-graph-trace=node"]
        c["nsys, no GPU metrics"] = [*base, "-o", str(work / "n0"), "-f", "true"]
        for hz in (20000, 10000):
            c[f"nsys, GPU metrics {hz // 1000} kHz"] = [
                *base, "--gpu-metrics-devices=all", f"--gpu-metrics-frequency={hz}", "-o", str(work / f"n{hz}"), "-f", "true",
            ]  # fmt: skip
    return c


def _one(prefix: list[str], work: Path, tag: str, kernels: int = 20) -> dict[str, Any]:
    argv, stamps = _child_argv(work, tag, kernels)
    t0 = time.time()
    proc = _launch([*prefix, *argv], work / f"{tag}.log")
    rc = proc.wait()
    t1 = time.time()
    row: dict[str, Any] = {"rc": rc, "wall_s": t1 - t0}
    if stamps.is_file():
        s = json.loads(stamps.read_text())
        row.update({k: s[k] - t0 for k in STAMPS})
        row["after_end_s"] = t1 - s["end"]
    return row


def _export_s(nsys: str, rep: Path) -> float | None:
    if not rep.is_file():
        return None
    t0 = time.time()
    subprocess.run([nsys, "export", "--type", "sqlite", "-o", str(rep.with_suffix(".sqlite")), "-f", "true", str(rep)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)  # fmt: skip
    return time.time() - t0


def _overlap(ncu: str, nsys: str | None, work: Path, second: str) -> dict[str, Any]:
    """ncu A profiles 200 kernels; 1.5 s in, ``second`` starts: ``ncu-same-tmp``,
    ``ncu-other-tmp`` or ``nsys-gpu-metrics``."""
    m = "gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second"
    a_argv, a_stamps = _child_argv(work, f"A-{second}", 200)
    t0 = time.time()
    a = _launch([ncu, "--clock-control", "none", "--metrics", m, "-o", str(work / "A"), "-f", *a_argv], work / f"A-{second}.log")
    time.sleep(1.5)
    b_argv, b_stamps = _child_argv(work, f"B-{second}", 5)
    env = dict(os.environ)
    if second == "nsys-gpu-metrics" and nsys:
        prefix = [nsys, "profile", "-t", "cuda,nvtx", "-s", "none", "--cpuctxsw=none", "--gpu-metrics-devices=all",
                  "--gpu-metrics-frequency=20000", "-o", str(work / "B"), "-f", "true"]  # fmt: skip
    else:
        prefix = [ncu, "--clock-control", "none", "--metrics", m, "-o", str(work / "B"), "-f"]
        if second == "ncu-other-tmp":
            tmp = work / "tmp-b"
            tmp.mkdir(exist_ok=True)
            env["TMPDIR"] = str(tmp)
    tb = time.time()
    b = _launch([*prefix, *b_argv], work / f"B-{second}.log", env)
    rb = b.wait()
    tb1 = time.time()
    ra = a.wait()
    ta1 = time.time()
    out: dict[str, Any] = {"a_rc": ra, "a_exit": ta1 - t0, "b_rc": rb, "b_launch": tb - t0, "b_exit": tb1 - t0}
    for tag, p in (("a", a_stamps), ("b", b_stamps)):
        if p.is_file():
            s = json.loads(p.read_text())
            out.update({f"{tag}_{k}": s[k] - t0 for k in STAMPS})
    for tag in ("A", "B"):
        log = work / f"{tag}-{second}.log"
        text = log.read_text(errors="replace") if log.is_file() else ""
        out[f"{tag.lower()}_profiled"] = text.count('==PROF== Profiling "')
        out[f"{tag.lower()}_errors"] = [ln.strip() for ln in text.splitlines() if "ERR" in ln or "rror" in ln][:5]
    return out


def _held_during_nsys(ncu: str, nsys: str, work: Path) -> dict[str, Any]:
    """nsys with GPU metrics traces 300000 kernels; 1 s in, ncu starts a child that imports torch
    and waits (``STUDY_GO``) until nsys has exited, then profiles 5 kernels."""
    import sqlite3

    m = "gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second"
    a_argv, a_stamps = _child_argv(work, "A-held", 300000)
    rep = work / "A-held"
    t0 = time.time()
    a = _launch([nsys, "profile", "-t", "cuda,nvtx", "-s", "none", "--cpuctxsw=none", "--gpu-metrics-devices=all",
                 "--gpu-metrics-frequency=20000", "-o", str(rep), "-f", "true", *a_argv], work / "A-held.log")  # fmt: skip
    time.sleep(1.0)
    go = work / "held.go"
    b_argv, b_stamps = _child_argv(work, "B-held", 5)
    b = _launch([ncu, "--clock-control", "none", "--metrics", m, "-o", str(work / "B-held"), "-f", *b_argv],
                work / "B-held.log", {**os.environ, "STUDY_GO": str(go)})  # fmt: skip
    ra = a.wait()
    ta = time.time()
    go.touch()
    rb = b.wait()
    tb = time.time()
    out: dict[str, Any] = {"a_rc": ra, "a_exit": ta - t0, "b_rc": rb, "b_exit": tb - t0, "b_launch": 1.0}
    for tag, p in (("a", a_stamps), ("b", b_stamps)):
        if p.is_file():
            s = json.loads(p.read_text())
            out.update({f"{tag}_{k}": s[k] - t0 for k in (*STAMPS, "go")})
    _export_s(nsys, rep.with_suffix(".nsys-rep"))
    try:
        con = sqlite3.connect(rep.with_suffix(".sqlite"))
        out["a_gpu_metrics_rows"] = con.execute("SELECT COUNT(*) FROM GPU_METRICS").fetchone()[0]
        out["a_kernels_traced"] = con.execute("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    except sqlite3.Error as exc:
        out["a_sqlite_error"] = str(exc)
    text = (work / "B-held.log").read_text(errors="replace")
    out["b_profiled"] = text.count('==PROF== Profiling "')
    out["b_errors"] = [ln.strip() for ln in text.splitlines() if "ERR" in ln or "rror" in ln][:5]
    out["a_errors"] = [ln.strip() for ln in (work / "A-held.log").read_text(errors="replace").splitlines()
                       if "ERR" in ln or "rror" in ln][:5]  # fmt: skip
    return out


def _held_alone(ncu: str | None, work: Path, tag: str, hold_s: float = 6.0) -> dict[str, Any]:
    """A child held ``hold_s`` s (under ncu, or plain when ``ncu`` is None) with nothing else
    running: how long after the go file it sees it, and its CUDA start after that."""
    m = "gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second"
    go = work / f"{tag}.go"
    argv, stamps = _child_argv(work, tag, 5)
    prefix = [ncu, "--clock-control", "none", "--metrics", m, "-o", str(work / tag), "-f"] if ncu else []
    t0 = time.time()
    b = _launch([*prefix, *argv], work / f"{tag}.log", {**os.environ, "STUDY_GO": str(go)})
    time.sleep(hold_s)
    t_go = time.time()
    go.touch()
    rb = b.wait()
    out: dict[str, Any] = {"rc": rb, "go": t_go - t0, "end": time.time() - t0}
    if stamps.is_file():
        st = json.loads(stamps.read_text())
        out.update({k: st[k] - t0 for k in (*STAMPS, "go")})
        out["seen_after_go_s"] = st["go"] - t_go
    return out


def tables(res: dict[str, Any]) -> str:
    lines = [f"start-up study: {res.get('gpu')}, {res.get('date')}, {res.get('rounds')} rounds", ""]
    lines.append("seconds from the launch (medians over the rounds)")
    head = f"{'config':<28}" + "".join(f"{k:>9}" for k in (*STAMPS, "exit", "export"))
    lines.append(head)
    for name, rows in res["configs"].items():
        ok = [r for r in rows if "start" in r]
        if not ok:
            lines.append(f"{name:<28} no stamps (rc {[r['rc'] for r in rows]})")
            continue
        cells = [statistics.median(r[k] for r in ok) for k in STAMPS]
        cells.append(statistics.median(r["wall_s"] for r in ok))
        ex = [r["export_s"] for r in ok if r.get("export_s") is not None]
        lines.append(f"{name:<28}" + "".join(f"{c:>9.2f}" for c in cells) + (f"{statistics.median(ex):>9.2f}" if ex else f"{'-':>9}"))
    for tag, o in res.get("held", {}).items():
        lines.append(f"{tag:<20} " + " ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in o.items()))
    lines.append("")
    lines.append("a second tool started 1.5 s into ncu A (200 kernels profiled); seconds from A's launch")
    for name, o in res.get("overlap", {}).items():
        # Process exits are a_exit/b_exit; a_end/b_end are the child's own end stamps. Results
        # recorded before 2026-12-07 kept only the child's end under a_end (the exit was lost).
        nan = float("nan")
        if name == "ncu-held-during-nsys":
            lines.append(
                f"{name:<20} A (nsys, GPU metrics): target end {o.get('a_end', nan):.2f} exit "
                f"{o.get('a_exit', nan):.2f} rc {o['a_rc']} kernels traced {o.get('a_kernels_traced')} GPU-metrics rows "
                f"{o.get('a_gpu_metrics_rows')}; B (ncu, held until A exits): start {o.get('b_start', nan):.2f} torch "
                f"{o.get('b_torch', nan):.2f} go {o.get('b_go', nan):.2f} exit {o.get('b_exit', o.get('b_end', nan)):.2f} "
                f"rc {o['b_rc']} profiled {o['b_profiled']}"
            )  # fmt: skip
            if "a_exit" in o:
                lines.append(f"  B saw its go file (made as A exited) {o.get('b_go', nan) - o['a_exit']:.3f} s after it was made")
            else:
                lines.append(
                    f"  B saw its go file {o.get('b_go', nan) - o['a_end']:.2f} s after A's target ended (the go file was "
                    "made as nsys exited; this record kept no exit time)"
                )
        else:
            lines.append(
                f"{name:<20} A: kernels {o.get('a_cuda', nan):.2f}-{o.get('a_kernels', nan):.2f} exit "
                f"{o.get('a_exit', o.get('a_end', nan)):.2f} rc {o['a_rc']} profiled {o['a_profiled']}; B: launch "
                f"{o['b_launch']:.2f} start {o.get('b_start', nan):.2f} torch {o.get('b_torch', nan):.2f} cuda "
                f"{o.get('b_cuda', nan):.2f} exit {o.get('b_exit', o.get('b_end', nan)):.2f} rc {o['b_rc']} profiled "
                f"{o['b_profiled']}"
            )  # fmt: skip
        for tag in ("a", "b"):
            if o.get(f"{tag}_errors"):
                lines.append(f"  {tag.upper()} says: " + " | ".join(o[f"{tag}_errors"]))
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--tables-from", type=Path, help="print the tables of a recorded result (no GPU)")
    ap.add_argument("--only-held", action="store_true", help="only the ncu pass held during nsys")
    args = ap.parse_args(argv)
    if args.tables_from:
        import gzip

        opener = gzip.open if args.tables_from.suffix == ".gz" else open
        with opener(args.tables_from, "rt") as f:
            sys.stdout.write(tables(json.load(f)))
        return
    ncu, nsys = _tool("NCU", "ncu"), _tool("NSYS", "nsys")
    work = Path(tempfile.mkdtemp(prefix="startup-study-"))
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    res: dict[str, Any] = {"gpu": gpu, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rounds": args.rounds,
                           "ncu": ncu, "nsys": nsys, "configs": {}, "overlap": {}}  # fmt: skip
    configs = {} if args.only_held else _configs(ncu, nsys, work)
    for tag, tool in (("held-plain", None), ("held-ncu", ncu)):
        res.setdefault("held", {})[tag] = _held_alone(tool, work, tag)
        print(f"{tag}: {json.dumps(res['held'][tag])}", file=sys.stderr, flush=True)
    if ncu and nsys:
        res["overlap"]["ncu-held-during-nsys"] = _held_during_nsys(ncu, nsys, work)
        print(f"held: {json.dumps(res['overlap']['ncu-held-during-nsys'])}", file=sys.stderr, flush=True)
    for r in range(args.rounds):
        for i, (name, prefix) in enumerate(configs.items()):
            tag = f"c{i}-r{r}"
            row = _one(prefix, work, tag)
            if prefix and prefix[0] == nsys:
                rep = Path(prefix[prefix.index("-o") + 1] + ".nsys-rep")
                row["export_s"] = _export_s(nsys, rep)
            res["configs"].setdefault(name, []).append(row)
            print(f"{name} round {r}: {json.dumps(row)}", file=sys.stderr, flush=True)
    if ncu and not args.only_held:
        for second in ("ncu-same-tmp", "ncu-other-tmp", "nsys-gpu-metrics"):
            if second.startswith("nsys") and not nsys:
                continue
            res["overlap"][second] = _overlap(ncu, nsys, work, second)
            print(f"overlap {second}: {json.dumps(res['overlap'][second])}", file=sys.stderr, flush=True)
    if args.json:
        args.json.write_text(json.dumps(res, indent=1) + "\n")
    sys.stdout.write(tables(res))


if __name__ == "__main__":
    main()
