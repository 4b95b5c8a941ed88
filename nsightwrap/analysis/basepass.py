"""Whether the clock sweep's base pass can change an answer, decided after the other passes.

The base pass (ncu at ``--clock-control base``) measures each kernel's clock elasticity ``e``,
which carries ncu's duration from the clock ncu ran the kernel at (``f_ncu``) to the benchmark's
measured clock (``f_ref``): ``t * (f_ncu / f_ref) ** e``. With ``e`` anywhere in [0, 1], that
factor lies between 1 and ``f_ncu / f_ref``, so where every benchmark's two clocks are within
``BASE_CLOCK_GAP`` of each other, no measured elasticity can move a ratio by more than that, and
the pass is skipped. The shipped runs measured it (docs/profile.md, "What the clock sweep buys").
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nsightwrap.analysis.model import RunResult
from nsightwrap.core.contract import BASE_CLOCK_GAP


def clock_gaps(result: RunResult) -> list[tuple[str, float]]:
    """Per benchmark with both clocks, ``|f_ncu / f_ref - 1|`` (ncu's clock against its reference)."""
    out = []
    for b in result.benchmarks:
        f_ncu = b.ncu.sm_clock_hz if b.ncu is not None else None
        if f_ncu and b.ref_clock_hz and f_ncu > 0 and b.ref_clock_hz > 0:
            out.append((b.name, abs(f_ncu / b.ref_clock_hz - 1.0)))
    return out


def base_pass_unneeded(result: RunResult, gap: float = BASE_CLOCK_GAP) -> str | None:
    """None when some benchmark's clocks are further apart than ``gap`` (the pass is needed);
    else one line saying why it is not."""
    gaps = clock_gaps(result)
    if any(g > gap for _, g in gaps):
        return None
    if not gaps:
        return "no benchmark has a measured SM clock to carry ncu's durations to"
    name, worst = max(gaps, key=lambda x: x[1])
    return (
        f"every benchmark's measured SM clock is within {100 * gap:g}% of ncu's (largest {100 * worst:.1f}%, "
        f"{name}): no clock elasticity can move a ratio by more than that"
    )


def check_run(run_dir: Path, manifest: Mapping[str, Any], read_ncu: Any = None) -> str | None:
    """``base_pass_unneeded`` of the run as it stands (``nsightwrap profile`` asks before the base
    pass; ``read_ncu``: the ncu report reader, the CLI's runs in a child process so that a crash of
    the native reader cannot take the profile down). A run the analysis cannot read yet gets the
    pass (None)."""
    from nsightwrap.analysis.load import analyze

    try:
        result = analyze(run_dir, manifest=manifest, **({"read_ncu": read_ncu} if read_ncu else {}))
    except Exception:  # noqa: BLE001 - whatever the reason, the pass then runs: never less data
        return None
    return base_pass_unneeded(result)
