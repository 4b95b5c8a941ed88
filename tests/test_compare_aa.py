"""False alarms of ``nsightwrap compare`` on real H200 A/A runs (fixtures/aa, sidecars only).

The runs are made on the GPU by ``benchmarks/compare_false_alarm.py collect fixtures/aa``; this
test evaluates them on the CPU.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
AA = ROOT / "fixtures" / "aa"


def _evaluate(folder: Path) -> dict[str, Any]:
    from bench_modules import load_benchmark

    return load_benchmark("compare_false_alarm").evaluate(folder, None, "timer")  # type: ignore[no-any-return]


@pytest.mark.skipif(not (AA / "aa-00").is_dir(), reason="fixtures/aa not collected yet (needs the GPU run)")
def test_no_false_alarm_on_h200_a_a_runs_and_ten_percent_is_detected() -> None:
    r = _evaluate(AA)
    assert r["aa"]["pairs"] >= 20
    assert r["aa"]["false_alarms"] == 0, r["aa"]["per_benchmark"]
    ten = r["scaled"]["1.10"]
    assert ten["control_false_alarms"] == 0
    assert ten["detection_rate"] >= 0.9, ten["per_benchmark"]
