"""Does ``nsightwrap compare`` cry wolf? A/A false alarms and injected slowdowns, measured.

    python -m benchmarks.compare_false_alarm collect FOLDER [--runs 21] [--scaled-runs 3]   (GPU)
    python -m benchmarks.compare_false_alarm evaluate FOLDER [--threshold 5] [--json FILE]  (CPU)

``collect`` runs benchmarks/aa_bench.py as separate processes, each into its own run directory
(only the plain pass's timer sidecar): FOLDER/aa-00 .. aa-20 unchanged, then
FOLDER/scale1.05-00.. and FOLDER/scale1.10-00.. with ``--scale 1.05`` / ``1.10``.

``evaluate`` compares every consecutive A/A pair (aa-i vs aa-i+1) and every A run against every
scaled run, at the given threshold, and prints Markdown: per benchmark the verdict counts, the
false-alarm count (SLOWER or FASTER between identical runs), and the detection rate of the
injected slowdowns (SLOWER on a scaled benchmark). ``--json`` writes the same numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from nsightwrap.compare.sides import load_side
from nsightwrap.compare.stats import PRESETS, Verdict
from nsightwrap.compare.verdicts import Comparison, Side, compare
from nsightwrap.core.contract import ENV_PASS, ENV_RUN_DIR, PASS_PLAIN

HERE = Path(__file__).resolve().parent
#: The benchmarks aa_bench.py's ``--scale`` makes slower; the others are controls.
SCALED = ("gemm_large", "gemm_skinny", "mm_small")
SCALES = ("1.05", "1.10")


# ---------------------------------------------------------------- collect (GPU)


def collect(folder: Path, runs: int, scaled_runs: int, python: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    plan: list[tuple[str, list[str]]] = [(f"aa-{i:02d}", []) for i in range(runs)]
    plan += [(f"scale{s}-{j:02d}", ["--scale", s]) for s in SCALES for j in range(scaled_runs)]
    log = []
    for name, extra in plan:
        run_dir = (folder / name).resolve()
        env = {**os.environ, ENV_RUN_DIR: str(run_dir), ENV_PASS: PASS_PLAIN}
        argv = [python, str(HERE / "aa_bench.py"), *extra]
        t0 = time.monotonic()
        # argv list, no shell: nothing here is parsed by a shell.
        r = subprocess.run(argv, env=env, check=False)
        wall = time.monotonic() - t0
        log.append({"run": name, "argv": argv[1:], "returncode": r.returncode, "wall_s": round(wall, 2)})
        print(f"{name}: exit {r.returncode}, {wall:.1f} s", flush=True)
        if r.returncode != 0:
            sys.exit(f"{name}: aa_bench.py failed with exit code {r.returncode}")
    (folder / "collect.json").write_text(
        json.dumps({"date": time.strftime("%Y-%m-%d %H:%M:%S"), "runs": log}, indent=1) + "\n"
    )


# ---------------------------------------------------------------- evaluate (CPU)


def _runs(folder: Path, prefix: str) -> list[Path]:
    return sorted(p for p in folder.glob(f"{prefix}-*") if p.is_dir())


def evaluate(folder: Path, threshold: float | None, metric: str) -> dict[str, Any]:
    """Verdict counts over consecutive A/A pairs and A-vs-scaled pairs in ``folder``."""
    settings = (
        PRESETS["default"] if threshold is None else replace(PRESETS["default"], threshold=threshold / 100)
    )
    aa = [load_side(p, metric) for p in _runs(folder, "aa")]
    if len(aa) < 2:
        sys.exit(f"{folder}: needs at least 2 aa-* run directories, found {len(aa)}")

    def tally(pairs: list[tuple[Side, Side]]) -> dict[str, dict[str, Any]]:
        """Per benchmark: verdict counts, reason counts and the time ratios seen."""
        per: dict[str, dict[str, Any]] = {}
        for b, c in pairs:
            cmp: Comparison = compare(b, c, metric=metric, settings=settings)
            for v in cmp.verdicts:
                row = per.setdefault(
                    v.key, {**{x.value: 0 for x in Verdict}, "reasons": Counter(), "ratios": []}
                )
                row[v.verdict.value] += 1
                row["reasons"][v.reason.value] += 1
                if v.ratio is not None:
                    row["ratios"].append(v.ratio.estimate)
        for row in per.values():
            ratios = sorted(row.pop("ratios"))
            row["reasons"] = dict(sorted(row["reasons"].items()))
            row["median_ratio"] = ratios[len(ratios) // 2] if ratios else None
            row["max_abs_change_pct"] = max((abs(r - 1) for r in ratios), default=0.0) * 100
        return per

    def total(per: dict[str, dict[str, Any]], *keys: str, scaled: bool | None = None) -> int:
        return sum(
            row[k] for name, row in per.items() for k in keys if scaled is None or (name in SCALED) is scaled
        )

    aa_per = tally(list(zip(aa, aa[1:], strict=False)))
    out: dict[str, Any] = {
        "folder": str(folder),
        "metric": metric,
        "threshold_pct": settings.threshold * 100,
        "aa": {
            "runs": len(aa),
            "pairs": len(aa) - 1,
            "comparisons": total(aa_per, *(v.value for v in Verdict)),
            "false_alarms": total(aa_per, "SLOWER", "FASTER"),
            "slower": total(aa_per, "SLOWER"),
            "per_benchmark": aa_per,
        },
        "scaled": {},
    }
    for scale in SCALES:
        runs = [load_side(p, metric) for p in _runs(folder, f"scale{scale}")]
        if not runs:
            continue
        per = tally([(a, s) for s in runs for a in aa])
        for name, row in per.items():
            row["scaled"] = name in SCALED
        tried = total(per, *(v.value for v in Verdict), scaled=True)
        hit = total(per, "SLOWER", scaled=True)
        out["scaled"][scale] = {
            "runs": len(runs),
            "comparisons": tried,
            "detected": hit,
            "detection_rate": hit / tried if tried else None,
            "control_false_alarms": total(per, "SLOWER", "FASTER", scaled=False),
            "per_benchmark": per,
        }
    return out


def _reasons(row: dict[str, Any]) -> str:
    return ", ".join(f"{k} {n}" for k, n in row["reasons"].items())


def to_markdown(r: dict[str, Any]) -> str:
    """The evaluation as Markdown (for docs/compare.md)."""
    aa = r["aa"]
    lines = [
        f"A/A: {aa['runs']} runs, {aa['pairs']} consecutive pairs, {aa['comparisons']} benchmark comparisons at "
        f"threshold {r['threshold_pct']:g}% (metric {r['metric']}): **{aa['false_alarms']} false alarms** "
        f"({aa['slower']} SLOWER).",
        "",
        "| benchmark | SAME | FASTER | SLOWER | AMBIGUOUS | largest A/A change | reasons |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for k, p in aa["per_benchmark"].items():
        lines.append(
            f"| {k} | {p['SAME']} | {p['FASTER']} | {p['SLOWER']} | {p['AMBIGUOUS']} "
            f"| {p['max_abs_change_pct']:.1f}% | {_reasons(p)} |"
        )
    for scale, s in r["scaled"].items():
        rate = "-" if s["detection_rate"] is None else f"{s['detection_rate']:.0%}"
        lines += [
            "",
            f"Injected slowdown x{scale} ({s['runs']} runs, each against every A run): detected "
            f"{s['detected']} of {s['comparisons']} ({rate}); false alarms on controls: {s['control_false_alarms']}.",
            "",
            "| benchmark | scaled | median ratio | SLOWER | SAME | AMBIGUOUS | FASTER | reasons |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for k, p in s["per_benchmark"].items():
            ratio = "-" if p["median_ratio"] is None else f"{p['median_ratio']:.3f}"
            lines.append(
                f"| {k} | {'yes' if p['scaled'] else 'no'} | {ratio} | {p['SLOWER']} "
                f"| {p['SAME']} | {p['AMBIGUOUS']} | {p['FASTER']} | {_reasons(p)} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("collect", help="run aa_bench.py N + 2M times (needs a GPU)")
    c.add_argument("folder", type=Path)
    c.add_argument("--runs", type=int, default=21)
    c.add_argument("--scaled-runs", type=int, default=3)
    c.add_argument("--python", default=sys.executable)
    e = sub.add_parser("evaluate", help="false alarms and detections over a collected folder (CPU)")
    e.add_argument("folder", type=Path)
    e.add_argument("--threshold", type=float, default=None, help="percent (default: the default preset's 5)")
    e.add_argument("--metric", default="timer", choices=("timer", "ncu", "nsys"))
    e.add_argument("--json", type=Path, default=None, help="also write the numbers as JSON here")
    args = ap.parse_args(argv)
    if args.mode == "collect":
        collect(args.folder, args.runs, args.scaled_runs, args.python)
        return
    result = evaluate(args.folder, args.threshold, args.metric)
    print(to_markdown(result), end="")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
