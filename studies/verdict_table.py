"""Each benchmark's verdict set against what ncu, carried to the clock the loop ran at, says, and
each gap part against its bound: the validation table of a run of an unmodified script.

    python -m studies.verdict_table RUN_DIR_OR_REPORT_JSON ... [--tolerance 0.1] [--json OUT]

For every benchmark: the timing T (what the script's timing method reported), ncu's per-iteration
sum at ncu's own clocks and carried to the reference clock, that clock and where it was measured,
the ratio the verdict used, the verdict, and the check: whether ``|T / ncu@clock - 1|`` is within
the tolerance where the verdict says ``ok`` and outside it where it does not (where the report
found the loop's clock contradicted by the kernels' own durations, those durations under nsys
stand for ncu at the loop's clock). Then the gap's parts,
the largest bound named in a part's evidence, and the residual as a share of the gap.

The residual is counted two ways: strictly (within 10% of the gap) and against what the report
judges it by (``residual_allowance`` in nsightwrap/analysis/gap/verdict.py: the larger of 10% of
the gap and the timing's noise, its measured IQR or at least the noise floor), which the row names.
Every part is checked against the bound its evidence states (``bound_low_ns`` .. ``bound_high_ns``),
and a cache part against the side its cache state allows (a dirtier loop than ncu's costs, a warmer
one saves). After the tables, with several runs: the totals and every benchmark whose residual is
over 10% of its gap or whose part is out of its bound.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from nsightwrap.analysis.gap.verdict import PARTLY_SHARE, residual_allowance

#: Values are on a 1/8 ns grid (analysis/gap/common.py): a part this far past its bound is at it.
GRID_NS = 0.125
OK_WORDS = ("ok",)
NOT_JUDGED = ("no ncu", "no timer", "no data")


def _report(path: Path) -> dict[str, Any]:
    if path.is_file():
        return json.loads(path.read_text())
    cp = subprocess.run([sys.executable, "-m", "nsightwrap", "report", str(path), "--format", "json", "--detail"],
                        capture_output=True, text=True)  # fmt: skip
    if cp.returncode not in (0, 1) or not cp.stdout.strip():
        cp = subprocess.run([sys.executable, "-m", "nsightwrap", "report", str(path), "--format", "json"],
                            capture_output=True, text=True)  # fmt: skip
    return json.loads(cp.stdout)


def _src(s: str | None) -> str:
    s = s or ""
    for key, short in (("ncu's own clock", "ncu's own"), ("plain pass GPU", "plain"), ("nsys GPU metrics", "nsys"),
                       ("timer stamps", "stamps"), ("nvidia-smi", "smi")):  # fmt: skip
        if s.startswith(key) or (key != "ncu's own clock" and key in s):
            return short
    return s[:20] or "-"


def _bound(ev: Any) -> float | None:
    if not isinstance(ev, dict):
        return None
    vals = [v for k, v in ev.items() if "bound" in k and isinstance(v, (int, float))]
    return max(vals) if vals else None


def out_of_bound(p: dict[str, Any]) -> str | None:
    """Why a part is outside its physical bound (its evidence's ``bound_low_ns`` .. ``bound_high_ns``,
    and for the cache part the side its cache state allows), or None."""
    ev, ns = p.get("evidence") or {}, float(p.get("ns") or 0.0)
    lo, hi = ev.get("bound_low_ns"), ev.get("bound_high_ns")
    if isinstance(lo, (int, float)) and ns < lo - GRID_NS:
        return f"{p.get('cause')} {ns / 1e3:+.2f} us under its bound {lo / 1e3:+.2f} us"
    if isinstance(hi, (int, float)) and ns > hi + GRID_NS:
        return f"{p.get('cause')} {ns / 1e3:+.2f} us over its bound {hi / 1e3:+.2f} us"
    if p.get("cause") == "cache_state":
        state = ev.get("loop_cache")
        if (state == "dirty" and ns < -GRID_NS) or (state == "warm" and ns > GRID_NS):
            return f"cache_state {ns / 1e3:+.2f} us against its {state} loop's side"
    return None


def allowance(b: dict[str, Any]) -> tuple[float | None, str]:
    """What the report judged the residual against (ns) and which it was; for reports written
    before it was recorded, computed from the timing's IQR the same way."""
    gap, timer = b.get("gap") or {}, b.get("timer") or {}
    m = gap.get("measurements") or {}
    a, what = m.get("residual_allowance_ns"), m.get("residual_judged_against")
    if isinstance(a, (int, float)) and isinstance(what, str):
        return float(a), what
    total = gap.get("total_ns")
    if not isinstance(total, (int, float)):
        return None, "-"
    iqr = timer.get("iqr_ns") if (timer.get("n") or 0) >= 2 else None
    return residual_allowance(float(total), gap.get("timer_ns"), iqr)


def rows(doc: dict[str, Any], tol: float) -> list[dict[str, Any]]:
    out = []
    for b in doc.get("benchmarks") or ():
        timer, ncu = b.get("timer") or {}, b.get("ncu") or {}
        t = b.get("user_value_ns") or timer.get("median_ns")
        n_raw, n_ref = ncu.get("median_ns"), ncu.get("normalized_ns") or ncu.get("median_ns")
        nsys_ns = (b.get("nsys") or {}).get("median_ns")  # the loop's kernels under nsys, per iteration
        verdict = str(b.get("verdict")).replace("_", " ")  # the JSON writes verdict words with underscores
        check = "-"
        # ncu at the clock the loop ran at; where the report found that clock contradicted by the
        # kernels' own durations, those durations (nsys, per iteration) stand for it instead.
        contradicted = any("is contradicted by the kernels' own durations" in str(n) for n in b.get("notes") or ())
        at_loop = nsys_ns if contradicted and nsys_ns else n_ref
        if t and at_loop and verdict not in NOT_JUDGED:
            within = abs(t / at_loop - 1) <= tol
            check = "agrees" if within == (verdict in OK_WORDS) else "DIFFERS"
            if b.get("clock_unresolved_ratio") is not None:
                check += " (marked: clock unresolved)"
            elif check == "DIFFERS" and within and verdict == "flagged" and nsys_ns and t / nsys_ns - 1 > tol:
                # Within the tolerance of ncu, flagged on its error parts (launch overhead, the
                # events' own cost): the loop's own kernels under nsys take that much less than T.
                check += f" (flagged on its error parts: T / nsys kernels {t / nsys_ns:.2f})"
        gap = b.get("gap") or {}
        parts = gap.get("parts") or []
        total, resid = gap.get("total_ns"), gap.get("residual_ns")
        allowed, against = allowance(b) if parts or resid is not None else (None, "-")
        out.append({
            "name": b.get("name"), "t_us": t / 1e3 if t else None, "ncu_raw_us": n_raw / 1e3 if n_raw else None,
            "ncu_ref_us": n_ref / 1e3 if n_ref else None, "clock_ghz": (b.get("ref_clock_hz") or 0) / 1e9 or None,
            "clock_src": _src(b.get("ref_clock_source")), "ratio": b.get("ratio"), "ratio_raw": b.get("ratio_raw"),
            "t_over_nsys": t / nsys_ns if t and nsys_ns else None,
            "verdict": verdict, "check": check,
            "parts": [(p.get("cause"), p.get("ns", 0) / 1e3, _bound(p.get("evidence"))) for p in parts],
            "residual_us": resid / 1e3 if resid is not None else None,
            "residual_share": abs(resid) / abs(total) if resid is not None and total else None,
            # Strictly: within 10% of the gap (a gap of 0 holds only a residual of 0).
            "within_strict": abs(resid) <= PARTLY_SHARE * abs(total or 0.0) if resid is not None else None,
            "allowance_us": allowed / 1e3 if allowed is not None else None,
            "within_allowance": abs(resid) <= allowed if resid is not None and allowed is not None else None,
            "judged_against": against,
            "out_of_bound": [w for p in parts if (w := out_of_bound(p)) is not None],
        })  # fmt: skip
    return out


def _f(v: Any, fmt: str = ".2f") -> str:
    return format(v, fmt) if isinstance(v, (int, float)) else "-"


def table(name: str, rs: list[dict[str, Any]]) -> str:
    lines = [f"### {name}", "",
             "| benchmark | T us | ncu raw us | ncu @clock us | clock GHz (source) | ratio | T / nsys kernels | verdict | check | parts us (bound us) | residual us (% of gap) |",
             "| --- | ---: | ---: | ---: | --- | ---: | ---: | --- | --- | --- | ---: |"]  # fmt: skip
    for r in rs:
        parts = ", ".join(f"{c} {v:+.2f}" + (f" ({b / 1e3:.1f})" if b else "") for c, v, b in r["parts"]) or "-"
        share = f" ({r['residual_share'] * 100:.0f}%)" if r["residual_share"] is not None else ""
        name_cell = str(r["name"]).replace("|", "\\|")
        lines.append(f"| {name_cell} | {_f(r['t_us'])} | {_f(r['ncu_raw_us'])} | {_f(r['ncu_ref_us'])} | "
                     f"{_f(r['clock_ghz'], '.3f')} ({r['clock_src']}) | {_f(r['ratio'])} | {_f(r.get('t_over_nsys'))} | {r['verdict']} | {r['check']} | "
                     f"{parts} | {_f(r['residual_us'])}{share} |")  # fmt: skip
    judged = [r for r in rs if r["check"] != "-"]
    agree = sum(r["check"] == "agrees" for r in judged)
    c = counts(rs)
    clocked = sum(r["clock_src"] not in ("ncu's own", "-") for r in rs)
    no_ncu = sum(r["verdict"] == "no ncu" for r in rs)
    parts_flag = sum(r["check"].startswith("DIFFERS (flagged on its error parts") for r in judged)
    marked = sum(r["check"].endswith("(marked: clock unresolved)") for r in judged)
    also = "".join([
        f"; {parts_flag} more flagged within the tolerance on error parts nsys confirms" if parts_flag else "",
        f"; {marked} more marked `clock unresolved`: a clock measured for the loop turns them" if marked else "",
    ])
    also = f" ({also[2:]})" if also else ""
    lines += ["", f"{len(rs)} benchmarks: verdict agrees with ncu at the clock on {agree} of {len(judged)} judged{also}; "
              f"clock measured for {clocked}; `no ncu` {no_ncu}; {summary(c)}", ""]  # fmt: skip
    return "\n".join(lines)


def decomposed(rs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows with a decomposed gap (parts and a residual)."""
    return [r for r in rs if r["within_strict"] is not None and r["parts"]]


def counts(rs: list[dict[str, Any]]) -> dict[str, int]:
    """The residual counted both ways, the parts out of their bounds, and the ``explained`` rows
    whose residual is over what they were judged against (there should be none)."""
    d = decomposed(rs)
    return {
        "decomposed": len(d),
        "strict": sum(bool(r["within_strict"]) for r in d),
        "noise_aware": sum(bool(r["within_strict"] or r["within_allowance"]) for r in d),
        "out_of_bound": sum(bool(r["out_of_bound"]) for r in d),
        "explained_over": sum(r["verdict"] == "explained" and r["within_allowance"] is False for r in d),
    }


def summary(c: dict[str, int]) -> str:
    """The counts in one line."""
    return (
        f"residual within 10% of the gap on {c['strict']} of {c['decomposed']} decomposed, within the larger of 10% "
        f"of the gap and the timing's noise on {c['noise_aware']}; parts out of their bound on {c['out_of_bound']}; "
        f"`explained` with the residual over what it is judged against: {c['explained_over']}"
    )


def offenders(everything: dict[str, list[dict[str, Any]]]) -> str:
    """Every benchmark whose residual is over 10% of its gap or whose part is out of its bound."""
    lines = ["### residual over 10% of the gap, or a part out of its bound", "",
             "| run | benchmark | verdict | gap us | residual us | judged against | within it | out of bound |",
             "| --- | --- | --- | ---: | ---: | --- | --- | --- |"]  # fmt: skip
    for run, rs in everything.items():
        for r in decomposed(rs):
            if r["within_strict"] and not r["out_of_bound"]:
                continue
            gap_us = r["residual_us"] / r["residual_share"] if r["residual_share"] else None
            name = str(r["name"]).replace("|", "\\|")
            lines.append(f"| {Path(run).name} | {name} | {r['verdict']} | {_f(gap_us)} | {_f(r['residual_us'])} | "
                         f"{r['judged_against']} | {'yes' if r['within_allowance'] else 'no'} | "
                         f"{'; '.join(r['out_of_bound']) or '-'} |")  # fmt: skip
    total = {k: sum(counts(rs)[k] for rs in everything.values()) for k in counts([])}
    return "\n".join([*lines, "", f"all runs: {summary(total)}", ""])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    ap.add_argument("--tolerance", type=float, default=0.10)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    everything = {}
    for p in a.runs:
        rs = rows(_report(p), a.tolerance)
        everything[str(p)] = rs
        print(table(p.name, rs))
    if len(everything) > 1:
        print(offenders(everything))
    if a.json:
        a.json.write_text(json.dumps(everything))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
