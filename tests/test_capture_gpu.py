"""The capture layer with real torch and triton on a GPU: what an unmodified script computes is
what the layer records, do_bench's structure is the one the layer relies on, the ncu pass runs
only a few iterations, the autotuner is left alone, and a crash looks as without nsightwrap.

Every script runs in a real subprocess with the layer loaded the way ``nsightwrap profile``
loads it (``PYTHONPATH`` + ``NSIGHTWRAP_CAPTURE=1``); no profiler is needed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from nsightwrap.core.contract import capture_boot_dir

pytestmark = pytest.mark.gpu



@pytest.fixture(autouse=True)
def _torch_and_triton_with_a_gpu() -> None:
    # Checked per test, not at import: on a machine without torch the module is still collected
    # and its tests deselected by `-m "not gpu"` (or skipped by conftest where no GPU is present).
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")


def _run(tmp_path: Path, body: str, pass_name: str = "plain", **env: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(body))
    (tmp_path / "run" / "plain").mkdir(parents=True, exist_ok=True)
    e = {**os.environ, "NSIGHTWRAP_CAPTURE": "1", "NSIGHTWRAP_PASS": pass_name,
         "NSIGHTWRAP_RUN_DIR": str(tmp_path / "run"),
         "PYTHONPATH": os.pathsep.join([capture_boot_dir(), os.environ.get("PYTHONPATH", "")]), **env}  # fmt: skip
    return subprocess.run([sys.executable, str(script)], env=e, cwd=tmp_path, capture_output=True, text=True, timeout=120)


def _sidecar(tmp_path: Path) -> dict[str, Any]:
    files = sorted((tmp_path / "run" / "plain").glob("timer-*-capture.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text())


ALL = """
import json, statistics
import torch, triton, triton.language as tl, triton.testing
from torch.utils.benchmark import Timer

x = torch.randn(64, 4096, device="cuda", dtype=torch.bfloat16)
w = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
f = lambda: torch.nn.functional.linear(x, w)

def do_bench_cuda(f, n=8):
    cache = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")
    s = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    e = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
    for i in range(n):
        cache.zero_()
        s[i].record()
        f()
        e[i].record()
    torch.cuda.synchronize()
    return [a.elapsed_time(b) for a, b in zip(s, e)]

@triton.autotune(configs=[triton.Config({"B": 256}), triton.Config({"B": 1024})], key=["n"])
@triton.jit
def add(x_ptr, y_ptr, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n) + 1, mask=o < n)

out = {}
out["events"] = [do_bench_cuda(f), do_bench_cuda(f)]
out["mean"] = triton.testing.do_bench(f, rep=5)
out["median"] = triton.testing.do_bench(f, rep=5, return_mode="median")
out["quantiles"] = triton.testing.do_bench(f, rep=5, quantiles=[0.2, 0.5, 0.8])
out["all"] = triton.testing.do_bench(f, rep=5, return_mode="all")
out["graph"] = triton.testing.do_bench_cudagraph(f, rep=5)
a = torch.randn(1 << 20, device="cuda"); b = torch.empty_like(a)
add[lambda m: (triton.cdiv(a.numel(), m["B"]),)](a, b, a.numel())  # autotunes with do_bench
m = Timer("f()", globals={"f": f}, label="linear", sub_label="64x4096x4096").blocked_autorange(min_run_time=0.05)
out["timer"] = {"median": m.median, "number": m.number_per_run, "raw": m.raw_times}
print("RESULT " + json.dumps(out))
"""


def test_unmodified_script_timings_are_what_the_script_got(tmp_path: Path) -> None:
    r = _run(tmp_path, ALL)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.split("RESULT ", 1)[1])
    doc = _sidecar(tmp_path)
    assert doc["capture_errors"] == [] and doc["not_captured"] == []
    by = {b["name"]: b for b in doc["benchmarks"]}
    kinds = sorted(b["source"]["kind"] for b in doc["benchmarks"])
    # Two event calls, four do_bench, one cudagraph, one Timer; nothing from the autotuner.
    assert kinds == ["cuda_events"] * 2 + ["do_bench"] * 4 + ["do_bench_cudagraph", "torch_benchmark"], kinds
    ev = [b for b in doc["benchmarks"] if b["source"]["kind"] == "cuda_events"]
    assert [b["source"]["call"] for b in ev] == [1, 2] and ev[0]["name"].endswith("do_bench_cuda #1")
    for b, times in zip(ev, out["events"], strict=True):
        assert b["samples_ns"] == pytest.approx([t * 1e6 for t in times], rel=1e-9)
    db = [b for b in doc["benchmarks"] if b["source"]["kind"] == "do_bench"]
    mean, median, quant, every = db
    assert mean["user_value_ns"] == pytest.approx(out["mean"] * 1e6, rel=1e-9)
    assert median["user_value_ns"] == pytest.approx(out["median"] * 1e6, rel=1e-9)
    assert quant["user_value_ns"] == pytest.approx(out["quantiles"][1] * 1e6, rel=1e-9)  # the 0.5 one
    assert every["samples_ns"] == pytest.approx([t * 1e6 for t in out["all"]], rel=1e-9)
    # triton 3.x's structure: a runtime estimate window, then the repeats queued before one
    # synchronize, each after a 256 MB cache.zero_() flush; the samples give back its mean.
    for b in db:
        m = b["method"]
        assert (m["estimate_window"], m["flush"], m["flush_bytes"], m["calls_per_sample"]) == (True, "zero", 256 << 20, 1)
        assert m["queued_before_sync"] == m["repeats"] == len(b["samples_ns"]) > 5
    assert sum(mean["samples_ns"]) / len(mean["samples_ns"]) == pytest.approx(out["mean"] * 1e6, rel=1e-6)
    g = next(b for b in doc["benchmarks"] if b["source"]["kind"] == "do_bench_cudagraph")
    assert g["method"]["cuda_graph"] and g["method"]["n_repeat"] > 1 and len(g["samples_ns"]) == 10
    assert g["user_value_ns"] == pytest.approx(out["graph"] * 1e6, rel=1e-9)
    assert sum(g["samples_ns"]) / 10 == pytest.approx(out["graph"] * 1e6, rel=1e-6)
    t = by["linear 64x4096x4096"]
    assert t["user_value_ns"] == pytest.approx(out["timer"]["median"] * 1e9, rel=1e-9)
    n = out["timer"]["number"]
    assert t["samples_ns"] == pytest.approx([x / n * 1e9 for x in out["timer"]["raw"]], rel=1e-9)
    assert t["method"]["calls_per_sample"] == n


NCU = """
import torch, triton.testing
calls = [0]
x = torch.randn(1 << 20, device="cuda")
def f():
    calls[0] += 1
    x.mul_(1.0)
v = triton.testing.do_bench(f, rep=50, quantiles=[0.5, 0.2, 0.8])
print("VALUE", v, "CALLS", calls[0])
"""


def test_ncu_pass_runs_few_iterations_and_returns_the_plain_value(tmp_path: Path) -> None:
    plain = _run(tmp_path, NCU)
    assert plain.returncode == 0, plain.stderr
    plain_calls = int(plain.stdout.split("CALLS")[1])
    under = _run(tmp_path, NCU, "ncu", NSIGHTWRAP_NCU_ITERS="3")
    assert under.returncode == 0, under.stderr
    assert int(under.stdout.split("CALLS")[1]) == 1 + 3 < plain_calls  # warm-up + 3 iterations
    assert under.stdout.split("CALLS")[0] == plain.stdout.split("CALLS")[0]  # the same printed value


CRASH = """
import torch, triton.testing
x = torch.randn(1024, device="cuda")
print("first", triton.testing.do_bench(lambda: x.add_(1), rep=2))
def bad():
    raise ValueError("boom in the user's fn")
triton.testing.do_bench(bad)
"""


def test_crash_inside_do_bench_keeps_the_traceback_and_exit_code(tmp_path: Path) -> None:
    r = _run(tmp_path, CRASH)
    env = {k: v for k, v in os.environ.items() if k not in ("NSIGHTWRAP_CAPTURE",)}
    bare = subprocess.run([sys.executable, str(tmp_path / "script.py")], env=env, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)  # fmt: skip
    assert r.returncode == bare.returncode == 1
    assert "ValueError: boom in the user's fn" in r.stderr and "nsightwrap" not in r.stderr
    frames = [ln.strip() for ln in r.stderr.splitlines() if ln.strip().startswith("File ")]
    assert frames == [ln.strip() for ln in bare.stderr.splitlines() if ln.strip().startswith("File ")]
    doc = _sidecar(tmp_path)
    assert [b["source"]["call"] for b in doc["benchmarks"]] == [1]  # the timing before the crash
    assert "raised ValueError: boom" in doc["not_captured"][0]["reason"]
