"""``nsightwrap compare --format json``: the comparison as versioned JSON for scripts."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from nsightwrap.compare.verdicts import BenchVerdict, Comparison, Interval, Spread
from nsightwrap.export.compare_energy import energy_json

COMPARE_FORMAT = "nsightwrap-compare"
#: Version of the compare JSON. History (newest last):
#:   1 (0.1.0): first version.
COMPARE_VERSION = 1


def _interval(iv: Interval | None) -> dict[str, float] | None:
    return None if iv is None else {"estimate": iv.estimate, "low": iv.low, "high": iv.high}


def _spread(s: Spread) -> dict[str, Any]:
    return {"median_ns": s.median, "min_ns": s.minimum, "q3_ns": s.q3, "n": s.n}


def _verdict(v: BenchVerdict) -> dict[str, Any]:
    return {
        "benchmark": v.key,
        "verdict": v.verdict.value,
        "reason": v.reason.value,
        "message": v.message,
        "baseline": _spread(v.baseline),
        "current": _spread(v.current),
        "ratio": _interval(v.ratio),
        "p_value": v.p_value,
        "cycles_ratio": _interval(v.cycles_ratio),
        "baseline_clock_hz": v.baseline_clock_hz,
        "current_clock_hz": v.current_clock_hz,
    }


def to_dict(c: Comparison) -> dict[str, Any]:
    """The comparison as a JSON-ready dict (``"format": "nsightwrap-compare"``)."""
    return {
        "format": COMPARE_FORMAT,
        "version": COMPARE_VERSION,
        "baseline": {"path": c.baseline, "gpu": c.baseline_gpu},
        "current": {"path": c.current, "gpu": c.current_gpu},
        "metric": c.metric,
        "settings": asdict(c.settings),
        "summary": {
            "counts": {k.value: n for k, n in c.counts().items()},
            "geomean_ratio": c.geomean_ratio,
            "geomean_cycles_ratio": c.geomean_cycles_ratio,
            "slower": [v.key for v in c.slower],
        },
        "benchmarks": [_verdict(v) for v in c.verdicts],
        "added": list(c.added),
        "removed": list(c.removed),
        "energy": energy_json(c),
    }


def to_json(c: Comparison) -> str:
    """The comparison as indented JSON text."""
    return json.dumps(to_dict(c), indent=2) + "\n"
