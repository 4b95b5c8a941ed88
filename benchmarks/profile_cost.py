"""What a whole ``nsightwrap profile`` costs against the script's plain run and against the same
tools run by hand, side by side in one run (the target: a whole profile in <= 3x the plain run).

    python benchmarks/profile_cost.py [--json OUT.json] [--work DIR] [--profile-args "..."] SCRIPT [ARGS...]

Measured, one after the other, each a fresh process:

- ``plain``: the script as the user runs it (no capture layer, no nsightwrap variable);
- ``nsightwrap profile``: all passes and the analysis (``-o DIR``, nothing else unless
  ``--profile-args``), its total wall time and, from its manifest, each pass's wall time and
  kernels profiled;
- by hand, ``ncu --clock-control none --nvtx <the same NVTX include filter> --metrics <the same>``
  with the capture layer loaded under the ncu pass's variables (without it an unmodified script
  opens no range for the filter to match), and ``nsys profile -t cuda,nvtx`` of the plain script
  (no capture layer);
- by hand, ncu without the capture layer, profiling the first K kernels (``--launch-count K``, K the
  kernels nsightwrap's ncu pass profiled): what a user without nsightwrap would run.

Prints a table (seconds and the ratio to the plain run) and writes JSON (``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from nsightwrap.core.contract import ENV_NCU_ITERS, PASS_NCU, ncu_default_filter
from nsightwrap.run.launch import capture_layer_env, ncu_argv, pass_env, target_argv
from nsightwrap.run.profiling import kernel_cap_args

REPO = Path(__file__).resolve().parent.parent


def _timed(argv: list[str], env: dict[str, str] | None, log: Path, timeout: float | None) -> dict[str, Any]:
    """Run ``argv`` once, its output (stdout and stderr) into ``log`` with each line stamped with
    the seconds since the launch, so a run's log says where its time went (``-v`` profiles show
    every pass's output as it comes)."""
    t0, epoch0 = time.perf_counter(), time.time()
    kernels = 0
    proc = subprocess.Popen(argv, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)  # fmt: skip
    fired = threading.Event()

    def stop() -> None:
        fired.set()
        proc.kill()

    killer = threading.Timer(timeout, stop) if timeout else None
    if killer is not None:
        killer.start()
    assert proc.stdout is not None
    with open(log, "wb") as fh, proc.stdout:
        for line in proc.stdout:
            fh.write(f"{time.perf_counter() - t0:9.3f} ".encode() + line)
            kernels += line.startswith(b"==PROF== Profiling")
    rc: int | None = proc.wait()
    if killer is not None:
        killer.cancel()
    if fired.is_set():
        rc = None  # stopped at the timeout
    wall = time.perf_counter() - t0
    return {"argv": argv, "rc": rc, "wall_s": round(wall, 3), "kernels": kernels, "log": str(log),
            "start_epoch": epoch0}  # fmt: skip


def _clean_env() -> dict[str, str]:
    # The plain and by-hand runs see no nsightwrap variable of ours.
    return {k: "" for k in os.environ if k.startswith("NSIGHTWRAP_")}


def _pythonpath() -> str:
    """This checkout first, then what the caller had (where nvtx or ncu_report may be installed)."""
    return os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)


def _verdicts(run_dir: Path, timeout: float | None) -> dict[str, dict[str, Any]] | None:
    """{benchmark: {verdict, causes, ratio, ref_clock_hz, ref_clock_source}} of a run directory,
    from its JSON report; None when it cannot be read."""
    try:
        cp = subprocess.run([sys.executable, "-m", "nsightwrap", "report", str(run_dir), "--format", "json"],
                            capture_output=True, text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": _pythonpath()})  # fmt: skip
        doc = json.loads(cp.stdout)
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
        return None
    return {
        str(b["name"]): {
            "verdict": str(b["verdict"]), "causes": sorted(str(c.get("code")) for c in b.get("causes") or ()),
            "ratio": b.get("ratio"), "ref_clock_hz": b.get("ref_clock_hz"), "ref_clock_source": b.get("ref_clock_source"),
        }
        for b in doc.get("benchmarks", [])
    }  # fmt: skip


def compare_runs(got: dict[str, dict[str, Any]] | None, base: dict[str, dict[str, Any]] | None) -> dict[str, Any]:
    """The defaults' run against the baseline's: the same benchmarks with the same verdicts
    (``same``), and per benchmark where the verdict, the causes, the ratio or the clock moved."""
    got, base = got or {}, base or {}
    names = sorted(set(got) | set(base))
    differ = [k for k in names if (got.get(k) or {}).get("verdict") != (base.get(k) or {}).get("verdict")]
    causes = [k for k in names if k not in differ and (got.get(k) or {}).get("causes") != (base.get(k) or {}).get("causes")]
    rows = []
    for k in names:
        a, b = got.get(k) or {}, base.get(k) or {}
        rows.append({"name": k, "defaults": a, "baseline": b})
    return {"defaults": got, "baseline": base, "same": bool(got) and not differ, "differ": differ,
            "causes_differ": causes, "rows": rows}  # fmt: skip


#: The per-kernel figures of two runs set side by side (``kernel_drift``): each ncu pass's own.
DRIFT_COLUMNS = {"duration_ns": "duration pass", "base_duration_ns": "base pass",
                 "counters_duration_ns": "counters pass", "sm_clock_hz": "SM clock (duration pass)"}  # fmt: skip


def kernel_drift(run_a: Path, run_b: Path) -> dict[str, Any] | None:
    """How far apart two runs' ncu readings of the same kernels are: per column of
    ``DRIFT_COLUMNS``, the ratios a/b of each kernel instance both runs profiled (same benchmark,
    iteration, kernel and place in it), as count, median and 10th/90th percentiles. What the
    options that differ between the runs (``--early-start``, say) do to ncu's own figures, beside
    the verdicts; None when a run cannot be read."""
    import nsightwrap as nw

    try:
        a, b = (nw.load_run(r).kernels() for r in (run_a, run_b))
    except Exception:  # noqa: BLE001 - a run that cannot be read has no drift to show
        return None
    keys = ["benchmark", "iteration", "kernel", "nth"]
    for k in (a, b):
        k["nth"] = k.groupby(["benchmark", "iteration", "kernel"]).cumcount()
    both = a.merge(b, on=keys, suffixes=("_a", "_b"))
    out: dict[str, Any] = {"instances": len(both)}
    for col, label in DRIFT_COLUMNS.items():
        if f"{col}_a" not in both:
            continue
        r = (both[f"{col}_a"] / both[f"{col}_b"]).dropna()
        if len(r):
            out[col] = {"label": label, "n": len(r), "median": round(float(r.median()), 4),
                        "p10": round(float(r.quantile(0.1)), 4), "p90": round(float(r.quantile(0.9)), 4)}  # fmt: skip
    return out


def _busy(manifest: dict[str, Any]) -> tuple[float, float]:
    """Seconds some pass command was running (the union of their start-end spans), and the
    seconds two ran at once."""
    spans = sorted(
        (float(c["start"]), float(c["end"])) for p in manifest.get("passes", []) for c in p.get("commands", [])
        if isinstance(c.get("start"), (int, float)) and isinstance(c.get("end"), (int, float))
    )  # fmt: skip
    union, cur_a, cur_b = 0.0, None, None
    for a, b in spans:
        if cur_b is None or a > cur_b:
            if cur_a is not None and cur_b is not None:
                union += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_a is not None and cur_b is not None:
        union += cur_b - cur_a
    return union, sum(b - a for a, b in spans) - union


def outside_split(manifest: dict[str, Any], start: float, wall: float) -> dict[str, float] | None:
    """Where the time outside the passes went, in seconds: ``before`` the first pass command
    (nsightwrap's start, the tools' probes, doctor's quick checks), ``between`` pass commands (the
    clock sweep's checks) and ``after`` the last (the analysis and the report); ``start``: the
    profile process's start (epoch s), ``wall``: its wall time. None without pass times."""
    spans = sorted(
        (float(c["start"]), float(c["end"])) for p in manifest.get("passes", []) for c in p.get("commands", [])
        if isinstance(c.get("start"), (int, float)) and isinstance(c.get("end"), (int, float))
    )  # fmt: skip
    if not spans:
        return None
    first, last = spans[0][0], max(b for _, b in spans)
    busy, _ = _busy(manifest)
    return {
        "before_s": round(first - start, 3),
        "between_s": round((last - first) - busy, 3),
        "after_s": round(start + wall - last, 3),
    }


def _profile(name: str, target: list[str], work: Path, args: list[str], timeout: float | None) -> tuple[dict[str, Any], dict[str, Any]]:
    run_dir = work / name
    shutil.rmtree(run_dir, ignore_errors=True)
    prof_argv = [sys.executable, "-m", "nsightwrap", "profile", "-o", str(run_dir), *args, *target]
    row = _timed(prof_argv, {"PYTHONPATH": _pythonpath()}, work / f"{name}.log", timeout)
    passes: list[dict[str, Any]] = []
    manifest: dict[str, Any] = {}
    mpath = run_dir / "manifest.json"
    if mpath.is_file():
        manifest = json.loads(mpath.read_text())
        for p in manifest.get("passes", []):
            wall = sum(float(c.get("wall_s") or 0) for c in p.get("commands", []))
            # A pass started early (--early-start) counts from its turn; early_s: how long before it.
            early = sum(float(c.get("early_s") or 0) for c in p.get("commands", []))
            passes.append({"name": p["name"], "status": p["status"], "wall_s": round(wall, 3),
                           "kernels_profiled": p.get("kernels_profiled"), "message": p.get("message"),
                           "early_s": round(early, 3) if early else None})  # fmt: skip
    row["passes"] = passes
    busy, overlap = _busy(manifest)
    # The nsys export runs beside the duration pass: the passes' sum counts that time twice.
    row["overlapped_s"] = round(overlap, 3)
    row["outside_passes_s"] = round(row["wall_s"] - busy, 3)
    row["outside_split_s"] = outside_split(manifest, row["start_epoch"], row["wall_s"])
    row["plan"] = manifest.get("plan")
    row["run_dir"] = str(run_dir)
    return row, manifest


def measure(target: list[str], work: Path, *, profile_args: list[str], timeout: float | None,
            ncu: str, nsys: str, baseline_args: list[str] | None = None, by_hand: bool = True) -> dict[str, Any]:  # fmt: skip
    work.mkdir(parents=True, exist_ok=True)
    argv = target_argv(target)
    rows: dict[str, Any] = {}
    rows["plain"] = _timed(argv, _clean_env(), work / "plain.log", timeout)

    rows["nsightwrap profile"], manifest = _profile("profile-run", target, work, profile_args, timeout)
    passes = rows["nsightwrap profile"]["passes"]
    verdicts: dict[str, Any] = {}
    if baseline_args is not None:
        # The same script profiled with other options (e.g. every kernel instance: --ncu-kernel-cap 0):
        # what the defaults save, and whether they lose a benchmark or change a verdict.
        rows["nsightwrap profile (baseline: " + shlex.join(baseline_args) + ")"], _ = _profile(
            "profile-baseline", target, work, baseline_args, timeout
        )
        verdicts = compare_runs(_verdicts(work / "profile-run", timeout), _verdicts(work / "profile-baseline", timeout))
        verdicts["kernels"] = kernel_drift(work / "profile-run", work / "profile-baseline")
    iters = str(manifest.get("settings", {}).get("ncu_iters") or 3)
    if not by_hand:
        return _result(target, rows, manifest, verdicts)
    ncu_env = {**_clean_env(), **pass_env(work / "byhand", PASS_NCU, {**capture_layer_env(), ENV_NCU_ITERS: iters})}
    (work / "byhand" / "plain").mkdir(parents=True, exist_ok=True)
    # The same filter and the same per-launch-config cap as the profile's ncu pass.
    cap = kernel_cap_args(int(manifest.get("settings", {}).get("ncu_kernel_cap") or 0))
    hand_ncu = ncu_argv(ncu, argv, work / "byhand" / "ncu", nvtx_filter=[*ncu_default_filter(), *cap], extra=())
    rows["ncu by hand (same filter)"] = _timed(hand_ncu, ncu_env, work / "ncu-byhand.log", timeout)
    hand_nsys = [nsys, "profile", "-t", "cuda,nvtx", "-o", str(work / "byhand" / "nsys"), "-f", "true", *argv]
    rows["nsys by hand"] = _timed(hand_nsys, _clean_env(), work / "nsys-byhand.log", timeout)
    k = next((p["kernels_profiled"] for p in passes if p["name"] == "ncu" and p["kernels_profiled"]), None)
    if k:
        plain_ncu = [ncu, "--clock-control", "none", "--launch-count", str(k), "-o", str(work / "byhand" / "ncu-k"), "-f", *argv]
        rows[f"ncu by hand (first {k} kernels, no layer)"] = _timed(plain_ncu, _clean_env(), work / "ncu-k.log", timeout)
    return _result(target, rows, manifest, verdicts)


def _result(target: list[str], rows: dict[str, Any], manifest: dict[str, Any], verdicts: dict[str, Any]) -> dict[str, Any]:
    plain = rows["plain"]["wall_s"] or float("nan")
    for r in rows.values():
        r["x_plain"] = round(r["wall_s"] / plain, 2) if plain == plain and plain > 0 else None
    return {"target": target, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "gpu": _gpu_name(),
            "python": sys.version.split()[0], "rows": rows, "manifest_status": manifest.get("status"),
            "verdicts": verdicts}  # fmt: skip


def _gpu_name() -> str | None:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=name", "--format=csv,noheader"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip().splitlines()[0] if out.stdout.strip() else None


def table(res: dict[str, Any]) -> str:
    lines = [f"profile cost: {shlex.join(res['target'])} ({res['gpu']}, {res['date']})", "",
             f"{'run':<44} {'wall s':>9} {'x plain':>8} {'kernels':>8}  rc"]  # fmt: skip
    for name, r in res["rows"].items():
        xp = "" if r.get("x_plain") is None else f"{r['x_plain']:.2f}"
        lines.append(f"{name:<44} {r['wall_s']:>9.2f} {xp:>8} {r['kernels'] or '':>8}  {r['rc']}")
        for p in r.get("passes", []):
            xpp = p["wall_s"] / res["rows"]["plain"]["wall_s"] if res["rows"]["plain"]["wall_s"] else 0
            kp = p["kernels_profiled"] if p["kernels_profiled"] is not None else ""
            early = f"  started {p['early_s']:.2f} s early" if p.get("early_s") else ""
            lines.append(f"  pass {p['name'] + ' (' + p['status'] + ')':<40} {p['wall_s']:>9.2f} {xpp:>8.2f} {kp:>8}{early}")
        if r.get("overlapped_s"):
            lines.append(f"  {'of which two passes at once (nsys export)':<42} {r['overlapped_s']:>9.2f}")
        if "outside_passes_s" in r:
            lines.append(f"  {'outside the passes (probes, analysis)':<42} {r['outside_passes_s']:>9.2f}")
            for part, label in (("before_s", "before the first pass"), ("between_s", "between passes (the sweep's checks)"),
                                ("after_s", "after the last pass (analysis, report)")):  # fmt: skip
                if (r.get("outside_split_s") or {}).get(part) is not None:
                    lines.append(f"    {label:<40} {r['outside_split_s'][part]:>9.2f}")
    v = res.get("verdicts") or {}
    if v:
        n = len(v.get("defaults") or {})
        lines.append("")
        lines.append(
            f"verdicts: the same {n} benchmark(s) and verdicts as the baseline" if v.get("same")
            else f"verdicts differ from the baseline on: {', '.join(v.get('differ') or []) or '(a report could not be read)'}"
        )
        if v.get("causes_differ"):
            lines.append(f"causes differ (same verdict) on: {', '.join(v['causes_differ'])}")
        for d in (v.get("kernels") or {}).values():
            if isinstance(d, dict):
                lines.append(f"ncu {d['label']}, run / baseline per kernel instance: median {d['median']:.4f} "
                             f"(10-90%: {d['p10']:.4f}-{d['p90']:.4f}, {d['n']} instances)")  # fmt: skip
        lines += ["", f"{'benchmark':<40} {'verdict (defaults / baseline)':<30} {'ratio':>13} {'clock GHz':>11}"]
        for row in v.get("rows") or []:
            a, b = row["defaults"], row["baseline"]

            def num(x: Any, scale: float = 1.0) -> str:
                return "-" if not isinstance(x, (int, float)) else f"{x / scale:.2f}"

            lines.append(
                f"{row['name'][:40]:<40} {str(a.get('verdict')) + ' / ' + str(b.get('verdict')):<30} "
                f"{num(a.get('ratio')) + '/' + num(b.get('ratio')):>13} "
                f"{num(a.get('ref_clock_hz'), 1e9) + '/' + num(b.get('ref_clock_hz'), 1e9):>11}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--work", type=Path, help="keep the runs here (default: a temporary folder)")
    ap.add_argument("--profile-args", default="", help="extra nsightwrap profile options, one string")
    ap.add_argument("--timeout", type=float, default=None, help="seconds per run at most")
    ap.add_argument("--baseline-args", default=None,
                    help="profile again with these options (e.g. '--ncu-kernel-cap 0') and compare the verdicts")
    ap.add_argument("--no-by-hand", action="store_true", help="skip the tools run by hand")
    ap.add_argument("--ncu", default=os.environ.get("NSIGHTWRAP_NCU") or shutil.which("ncu") or "ncu")
    ap.add_argument("--nsys", default=os.environ.get("NSIGHTWRAP_NSYS") or shutil.which("nsys") or "nsys")
    ap.add_argument("target", nargs=argparse.REMAINDER)
    a = ap.parse_args(argv)
    if not a.target:
        ap.error("give the script to measure")
    work = a.work or Path(tempfile.mkdtemp(prefix="profile-cost-"))
    base = shlex.split(a.baseline_args) if a.baseline_args is not None else None
    res = measure(list(a.target), work, profile_args=shlex.split(a.profile_args), timeout=a.timeout,
                  ncu=a.ncu, nsys=a.nsys, baseline_args=base, by_hand=not a.no_by_hand)  # fmt: skip
    print(table(res))
    if a.json:
        a.json.parent.mkdir(parents=True, exist_ok=True)
        a.json.write_text(json.dumps(res, indent=2) + "\n")
    ok = all(r["rc"] == 0 for r in res["rows"].values()) and (not res.get("verdicts") or res["verdicts"]["same"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
