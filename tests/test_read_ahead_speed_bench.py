"""benchmarks/read_ahead_speed.py on a shipped run: both modes make the profile's decision, and
the table and JSON carry what docs/profile.md records."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import read_ahead_speed
from nsightwrap.analysis.basepass import check_run
from nsightwrap.core.rundir import read_manifest

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"


def test_both_modes_answer_as_the_check_does(tmp_path: Path, capsys) -> None:
    out = tmp_path / "ahead.json"
    assert read_ahead_speed.main(["--runs", "h200-mixed", "--repeat", "1", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    (row,) = res["rows"]
    m = read_manifest(RUNS / "h200-mixed")
    before = {**m, "passes": [p for p in m["passes"] if p["name"] != "ncu-base"]}
    runs, _ = check_run(RUNS / "h200-mixed", before, name="ncu-base")
    assert row["base_pass"] == ("needed" if runs else "not needed")
    for mode in ("in series", "read ahead"):
        assert row[mode]["check_s"] > 0 and row[mode]["final_s"] > 0
        assert row[mode]["base_pass"] == [row["base_pass"]]  # read ahead or not, the same decision
    text = capsys.readouterr().out
    assert "| h200-mixed |" in text and "check read ahead s" in text
