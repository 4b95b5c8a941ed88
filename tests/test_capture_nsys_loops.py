"""Shorter loops under nsys: the capture layer caps do_bench's ``warmup``/``rep`` and
Timer's autorange run times at ``NSIGHTWRAP_NSYS_LOOP_MS`` in the nsys pass only, says so in the
nsys pass's own sidecar, and leaves the plain pass and ``timeit`` as the script asks. Real
subprocesses over the stand-in torch / triton of tests/capture_standins (simulated GPU time)."""

from __future__ import annotations

import json
from pathlib import Path

from capture_helpers import run

BODY = """
import torch, triton.testing
from torch.utils.benchmark import Timer
def kernel():
    torch.cuda.launch("mm", 10.0)
print(triton.testing.do_bench(kernel, warmup=1, rep=4))
m = Timer("torch.cuda.launch('k', 20.0)").blocked_autorange(min_run_time=0.004)
print(len(m.raw_times))
print(Timer("torch.cuda.launch('k', 5.0)").timeit(10))
"""


def _iters(trace: list[str], bench: str) -> int:
    """The iteration ranges opened inside benchmark range ``bench``."""
    i = trace.index(f"+nsightwrap:{bench}")
    depth, n = 0, 0
    for ev in trace[i + 1 :]:
        if ev.startswith("+nsightwrap"):
            depth += 1
            n += depth == 1 and ev.startswith("+nsightwrap:iter")
        elif ev == "-nsightwrap":
            if depth == 0:
                break
            depth -= 1
    return n


def _nsys_sidecar(tmp: Path) -> dict[str, dict]:
    (own,) = (tmp / "run" / "nsys").glob("timer-*-capture.json")
    return {b["name"]: b for b in json.loads(own.read_text())["benchmarks"]}


def test_nsys_pass_caps_do_bench_and_autorange_loops(tmp_path: Path) -> None:
    full = run(tmp_path, BODY, pass_name="nsys", NSIGHTWRAP_NSYS_LOOP_MS="0")
    assert full.code == 0, full.err
    bench, timer = "script.py:6 do_bench #1", "script.py:7 Timer.blocked_autorange #1"
    n_full, t_full = _iters(full.trace(), bench), _iters(full.trace(), timer)
    assert all("nsys_loop_ms" not in b["method"] for b in _nsys_sidecar(tmp_path).values())
    for f in (tmp_path / "run" / "nsys").glob("timer-*"):
        f.unlink()
    short = run(tmp_path, None, pass_name="nsys", NSIGHTWRAP_NSYS_LOOP_MS="1")
    assert short.code == 0, short.err
    n_short, t_short = _iters(short.trace(), bench), _iters(short.trace(), timer)
    # do_bench's rep 4 ms -> 1 ms: about a quarter of the repeats; the Timer's 4 ms -> 1 ms too.
    assert 0 < n_short < n_full / 2 and 0 < t_short < t_full
    got = _nsys_sidecar(tmp_path)
    assert got[bench]["method"]["nsys_loop_ms"] == {"rep": [4.0, 1.0]}  # warmup 1 ms is not over the cap
    assert got[timer]["method"]["nsys_loop_ms"] == {"min_run_time": [4.0, 1.0]}
    assert "nsys_loop_ms" not in got["script.py:9 Timer.timeit #1"]["method"]  # its length is the user's
    # The script runs on as it did: the same lines printed, a measured value where it printed one.
    assert len(short.out.splitlines()) == len(full.out.splitlines()) == 3


def test_plain_pass_never_shortens(tmp_path: Path) -> None:
    a = run(tmp_path, BODY, NSIGHTWRAP_NSYS_LOOP_MS="1")
    assert a.code == 0, a.err
    b = {x["name"]: x for x in a.sidecar()["benchmarks"]}
    assert all("nsys_loop_ms" not in x["method"] for x in b.values())
    for f in (tmp_path / "run" / "plain").glob("timer-*"):
        f.unlink()
    c = run(tmp_path, BODY, NSIGHTWRAP_NSYS_LOOP_MS="0")
    n = {x["name"]: x["n"] for x in c.sidecar()["benchmarks"]}
    assert {k: v["n"] for k, v in b.items()} == n


def test_a_bad_cap_falls_back_to_the_default(tmp_path: Path) -> None:
    r = run(tmp_path, BODY, pass_name="nsys", NSIGHTWRAP_NSYS_LOOP_MS="soon")
    assert r.code == 0, r.err
    # 100 ms is over both loops here: nothing is shortened, the script's own lengths run.
    assert all("nsys_loop_ms" not in b["method"] for b in _nsys_sidecar(tmp_path).values())
