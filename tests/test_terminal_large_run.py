"""The terminal report of a run larger than its summary table: the roofline and energy tables show
the benchmarks of the summary table (the worst), and say how many they left out; a run the table
holds whole is shown whole. Real H200 runs, the table's size made smaller than the run."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from nsightwrap.analysis.load import analyze
from nsightwrap.export import reportfmt as f
from nsightwrap.export.terminal import print_report

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def text(run: Path, max_rows: int) -> tuple[str, list[str]]:
    """(the terminal report at 160 columns with ``max_rows`` rows, the benchmarks' labels)."""
    result = analyze(run)
    console = Console(record=True, width=160, file=io.StringIO(), highlight=False)
    print_report(result, console, max_rows=max_rows)
    worst = [f.label(b) for b in f.worst_first(result.benchmarks)]
    return console.export_text(), worst


def section(out: str, head: str) -> str:
    return out[out.index(head) :]


def test_roofline_and_energy_tables_hold_the_summary_tables_benchmarks() -> None:
    out, worst = text(FIXTURES / "power" / "h200-run", 2)
    roof = section(out, "roofline: ")
    energy = section(out, "energy and power (NVML)")
    roof = roof[: roof.index("energy and power (NVML)")]
    for name in worst[:2]:
        assert f"┃ {name}" in energy or f"│ {name}" in energy or f" {name} " in energy
        assert name in roof
    left = worst[2]
    assert f" {left} " not in energy.split("energy/call = ")[0]
    assert "the roofline of the 2 benchmarks of the table above shown, 1 left out" in roof
    assert "the energy of the 2 benchmarks of the table above shown, 1 left out" in energy


def test_a_run_the_table_holds_is_shown_whole() -> None:
    out, worst = text(FIXTURES / "power" / "h200-run", 50)
    assert "left out" not in out
    roof = section(out, "roofline: ")
    assert all(name in roof for name in worst)
