"""``nsightwrap profile`` of an unmodified script, end to end on CPU: the fake ncu / nsys on PATH
run the real target (a script over the stand-in torch and triton), so the capture layer runs in
every pass as it would on a GPU (the analysis of such runs: tests/test_capture_report.py).
"""

from __future__ import annotations

import inspect
import json
import os
import textwrap
from pathlib import Path

from capture_helpers import TREE, line, standins
from fake_tools.harness import manifest, passes, profile, use_fakes

from nsightwrap.cli.profile_cmd import profile_command
from nsightwrap.core.contract import capture_boot_dir

#: The clock-sweep pass (a second ncu run) adds nothing here: skipped where profile has it.
SWEEP = ["--no-clock-sweep"] if "no_clock_sweep" in inspect.signature(profile_command).parameters else []

SCRIPT = """
import sys
import torch, triton.testing
from torch.utils.benchmark import Timer

def kernel():
    torch.cuda.launch("mm", 10.0)

def do_bench_cuda(f, n=5):
    s = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    e = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for i in range(n):
        torch.empty(64).zero_()
        s[i].record()
        f()
        e[i].record()
    torch.cuda.synchronize()
    return [a.elapsed_time(b) for a, b in zip(s, e)]

if __name__ == "__main__":
    print("events", do_bench_cuda(kernel))
    print("do_bench", triton.testing.do_bench(kernel, rep=1, return_mode="median"))
    print("timeit", Timer("torch.cuda.launch('k', 4.0)").timeit(10).median)
    print("argv", sys.argv[1:])
"""


def _setup(tmp_path: Path, monkeypatch) -> Path:  # noqa: ANN001 - pytest's monkeypatch
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(standins(tmp_path)), TREE]))
    script = tmp_path / "bench_mm.py"
    script.write_text(textwrap.dedent(SCRIPT))
    return script


def test_profile_loads_the_layer_in_every_pass(tmp_path: Path, monkeypatch, capsys) -> None:
    script = _setup(tmp_path, monkeypatch)
    r = profile(capsys, "-o", "run", "--no-analyze", *SWEEP, "--ncu-iters", "2",
                "--label", f"bench_mm.py:{line(SCRIPT, 'do_bench(kernel')}=mm small", str(script), "--n", "1")  # fmt: skip
    assert r.code == 0, r.err
    run = tmp_path / "run"
    p = passes(manifest(run))
    for name in ("plain", "ncu", "nsys"):
        env = p[name]["env"]
        assert env["NSIGHTWRAP_CAPTURE"] == "1" and env["PYTHONPATH"].split(os.pathsep)[0] == capture_boot_dir()
        assert json.loads(env["NSIGHTWRAP_LABELS"]) == {f"bench_mm.py:{line(SCRIPT, 'do_bench(kernel')}": "mm small"}
    argv = p["ncu"]["commands"][0]["argv"]
    assert argv[3:8] == ["--nvtx", "--nvtx-include", "regex:nsightwrap@.*/iter[0-9]+/",
                         "--nvtx-include", "regex:nsightwrap_nvtx@.*/iter[0-9]+/"]  # fmt: skip
    (side,) = sorted((run / "plain").glob("timer-*-capture.json"))
    doc = json.loads(side.read_text())
    names = [b["name"] for b in doc["benchmarks"]]
    assert names == [f"bench_mm.py:{line(SCRIPT, 's[i].record()')} do_bench_cuda #1", "mm small",
                     f"bench_mm.py:{line(SCRIPT, 'Timer(')} Timer.timeit #1"]  # fmt: skip
    plain_out = (run / "plain" / "stdout.log").read_text()
    ncu_out = (run / "ncu" / "stdout.log").read_text()
    # The ncu pass's placeholders are the plain pass's values: the script printed the same.
    for key in ("do_bench", "timeit", "argv"):
        assert next(ln for ln in plain_out.splitlines() if ln.startswith(key)) in ncu_out
    assert "argv ['--n', '1']" in plain_out
    # Under ncu nothing is timed; the nsys pass keeps its own (for the profiler-overhead part).
    assert not list((run / "ncu").glob("timer-*.json")) and len(list((run / "nsys").glob("timer-*-capture.json"))) == 1


def test_no_capture_leaves_the_target_alone(tmp_path: Path, monkeypatch, capsys) -> None:
    script = _setup(tmp_path, monkeypatch)
    r = profile(capsys, "-o", "run", "--no-analyze", *SWEEP, "--no-capture", str(script))
    assert r.code == 0, r.err
    p = passes(manifest(tmp_path / "run"))
    assert "NSIGHTWRAP_CAPTURE" not in p["plain"]["env"]
    assert p["ncu"]["commands"][0]["argv"][3:6] == ["--nvtx", "--nvtx-include", "regex:nsightwrap@.*/iter[0-9]+/"]
    assert p["ncu"]["commands"][0]["argv"][6:10] == ["--filter-mode", "per-launch-config", "--launch-count", "3"]
    assert p["ncu"]["commands"][0]["argv"][10] == "--metrics"
    assert not list((tmp_path / "run" / "plain").glob("timer-*.json"))


def test_bad_label_is_a_usage_error(tmp_path: Path, monkeypatch, capsys) -> None:
    script = _setup(tmp_path, monkeypatch)
    r = profile(capsys, "-o", "run", "--label", "bench_mm.py=mm", str(script))
    assert r.code == 2
    assert "--label 'bench_mm.py=mm' is not FILE:LINE=NAME" in " ".join(r.err.split())
    assert not (tmp_path / "run").exists()
