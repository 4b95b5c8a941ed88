"""Tabulate studies/plain_control/run.sh: each number a script printed, per way of running it
(plain, smi, layer, pass), as the median over rounds and the range, beside plain's.

    python3 studies/plain_control/summarize.py OUT_DIR
"""

from __future__ import annotations

import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

WAYS = ("plain", "smi", "layer", "pass")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def numbers(path: Path) -> dict[tuple[int, str, int], float]:
    """Each number of the printout by (line number, the line's words, position in the line)."""
    out: dict[tuple[int, str, int], float] = {}
    for i, line in enumerate(path.read_text(errors="replace").splitlines()):
        words = NUMBER.sub("#", line).strip()
        if not words or words.startswith(("[", "==", "GPU", "Collecting", "Generat")):
            continue
        for j, m in enumerate(NUMBER.finditer(line)):
            out[(i, words[:48], j)] = float(m.group())
    return out


def main(out: Path) -> None:
    for script in sorted({p.name.split(".")[0] for p in out.glob("*.plain.*.log")}):
        got: dict[str, dict[tuple[int, str, int], list[float]]] = {w: defaultdict(list) for w in WAYS}
        for way in WAYS:
            for path in sorted(out.glob(f"{script}.{way}.*.log")):
                if path.name.endswith(".profile.log"):
                    continue
                for key, v in numbers(path).items():
                    got[way][key].append(v)
        print(f"### {script}\n")
        print("| printed | " + " | ".join(f"{w} (median, min..max)" for w in WAYS) + " | pass / plain |")
        print("| --- |" + " ---: |" * (len(WAYS) + 1))
        for key in sorted(got["plain"]):
            if len({v for w in WAYS for v in got[w].get(key) or ()}) <= 1:
                continue  # the same everywhere: a size, an index, a label's number
            cells = []
            for w in WAYS:
                vs = got[w].get(key) or []
                cells.append(f"{statistics.median(vs):.4g} ({min(vs):.4g}..{max(vs):.4g})" if vs else "-")
            p, q = got["plain"][key], got["pass"].get(key)
            ratio = f"{statistics.median(q) / statistics.median(p):.3f}" if q and statistics.median(p) else "-"
            line, words, pos = key
            print(f"| {line}: {words} [{pos}] | " + " | ".join(cells) + f" | {ratio} |")
        print()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(Path(sys.argv[1]))
