"""How often the capture layer rewrites its sidecar: the file is rewritten whole and grows with
every capture, so the rewrites are spaced by what they cost (at most 5% of the script's time),
and the exit handler writes the rest."""

from __future__ import annotations

import json
from pathlib import Path

from nsightwrap.capture.state import Capture, Layer, Site
from nsightwrap.core import contract


def _capture(i: int) -> Capture:
    return Capture(
        name=f"bench.py:7 do_bench #{i}", kind="do_bench", site=Site("/work/bench.py", 7, "main"), call=i,
        label=None, api="triton.testing.do_bench", samples_ns=[4288.0 + i] * 1400, user_value_ns=4288.0 + i,
    )  # fmt: skip


def _names(path: Path) -> list[str]:
    return [b["name"] for b in json.loads(path.read_text())["benchmarks"]]


def test_rewrites_are_spaced_by_their_cost_and_forced_at_the_end(tmp_path: Path) -> None:
    L = Layer({contract.ENV_PASS: contract.PASS_PLAIN, contract.ENV_RUN_DIR: str(tmp_path)})
    L.finish(_capture(1))
    path = Path(L.sidecar_path() or "")
    assert _names(path) == ["bench.py:7 do_bench #1"]  # the first capture is written at once
    assert L.spacing.cost_s > 0 and L.spacing.interval_s() == max(0.25, 20 * L.spacing.cost_s)
    L.spacing.cost_s = 1.0  # as if rewriting the file had taken a second: the next one waits 20 s
    assert L.spacing.interval_s() == 20.0
    L.finish(_capture(2))
    assert _names(path) == ["bench.py:7 do_bench #1"]
    L.flush(force=True)  # what the exit handler does
    assert _names(path) == ["bench.py:7 do_bench #1", "bench.py:7 do_bench #2"]


def test_many_captures_do_not_rewrite_the_file_after_each(tmp_path: Path) -> None:
    L = Layer({contract.ENV_PASS: contract.PASS_PLAIN, contract.ENV_RUN_DIR: str(tmp_path)})
    writes = 0
    last = None
    for i in range(1, 201):
        L.finish(_capture(i))
        stamp = L.spacing.last_end
        writes += stamp != last
        last = stamp
    # 200 captures in well under a second of host time: a handful of writes, not 200.
    assert 1 <= writes <= 10, writes
    L.flush(force=True)
    assert len(_names(Path(L.sidecar_path() or ""))) == 200
