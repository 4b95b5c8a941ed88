"""What the clock sweep's two passes change in the answers: analyse a run directory as it is and
with each of ``ncu-duration`` and ``ncu-base`` hidden (a temporary copy without its folder), and
print per benchmark the verdict, causes and ratio, and what the base pass's check says.

    PYTHONPATH=. python benchmarks/clock_sweep_value.py fixtures/runs/h200-sweep [RUN_DIR ...]

docs/profile.md ("What the clock sweep buys") records its output on the shipped runs.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from nsightwrap.analysis.basepass import base_pass_unneeded, clock_gaps
from nsightwrap.analysis.load import analyze

HIDDEN = (("ncu-duration",), ("ncu-base",), ("ncu-duration", "ncu-base"))


def answers(run: Path, hide: tuple[str, ...]) -> dict[str, tuple[str, str, float | None]]:
    """Per benchmark (verdict, causes, ratio) with the pass folders ``hide`` removed from a copy."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / run.name
        shutil.copytree(run, copy)
        for name in hide:
            shutil.rmtree(copy / name, ignore_errors=True)
        res = analyze(copy)
    return {b.name: (b.verdict.value, ",".join(c.code.value for c in b.causes), b.ratio) for b in res.benchmarks}


def compare(run: Path) -> dict[str, Any]:
    full = answers(run, ())
    res = analyze(run)
    out: dict[str, Any] = {"run": str(run), "benchmarks": len(full), "gaps": clock_gaps(res),
                           "base_pass": base_pass_unneeded(res) or "needed", "without": {}}  # fmt: skip
    for hide in HIDDEN:
        other = answers(run, hide)
        changed = [b for b in full if full[b][:2] != other[b][:2]]
        moves = [abs(other[b][2] / full[b][2] - 1) for b in full if full[b][2] and other[b][2]]
        out["without"]["+".join(hide)] = {"changed": changed, "max_ratio_move": max(moves, default=0.0)}
    return out


def main(argv: list[str]) -> int:
    for arg in argv:
        r = compare(Path(arg))
        worst = max(r["gaps"], key=lambda x: x[1], default=("-", 0.0))
        print(f"{r['run']}: {r['benchmarks']} benchmarks; largest ncu/measured clock gap {100 * worst[1]:.1f}% "
              f"({worst[0]}); base pass: {r['base_pass']}")  # fmt: skip
        for hide, w in r["without"].items():
            print(f"  without {hide}: verdicts or causes changed: {', '.join(w['changed']) or 'none'}; "
                  f"largest ratio move {100 * w['max_ratio_move']:.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
