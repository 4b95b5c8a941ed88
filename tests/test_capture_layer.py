"""The capture layer's mechanics, in real subprocesses over stand-in torch / triton / nvtx
(tests/capture_standins: a simulated GPU whose kernels have known durations, and a log of every
kernel, event record and NVTX push/pop).

It must be invisible (argv, __main__, exit code, output, -m targets, spawn children, a user's own
sitecustomize, scripts that import nsightwrap), capture what the script's code got, put NVTX
ranges around exactly what was timed (and nothing inside the window in the plain pass), keep the
ncu pass short, and leave the user's traceback as it is.
"""

from __future__ import annotations

import sys
from pathlib import Path

from capture_helpers import frames, line, run

KERNEL = """
import torch, triton.testing
def kernel():
    torch.cuda.launch("mm", 10.0)
"""


def test_script_sees_argv_main_path_and_exit_code_as_without_layer(tmp_path: Path) -> None:
    body = """
    import json, os, sys
    print(json.dumps({"argv": sys.argv, "name": __name__, "path0": sys.path[0], "file": __file__,
                      "boot": any("capture" in p and p.endswith("boot") for p in sys.path)}))
    print("to stderr", file=sys.stderr)
    sys.exit(7)
    """
    bare = run(tmp_path, body, capture=False, argv=[sys.executable, "script.py", "a b", "--x=1"])
    with_layer = run(tmp_path, None, argv=[sys.executable, "script.py", "a b", "--x=1"])
    assert bare.code == with_layer.code == 7
    assert with_layer.out == bare.out and with_layer.err == bare.err
    assert '"argv": ["script.py", "a b", "--x=1"]' in with_layer.out and '"name": "__main__"' in with_layer.out
    assert '"boot": false' in with_layer.out  # the layer's folder is off the script's sys.path
    assert with_layer.sidecars() == []  # nothing timed, nothing written


def test_module_target_runs_as_main(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "bench.py").write_text(KERNEL.strip() + "\nif __name__ == '__main__':\n"
                                  "    import sys; print('ms', triton.testing.do_bench(kernel, rep=1), sys.argv[1:])\n")  # fmt: skip
    r = run(tmp_path, None, argv=[sys.executable, "-m", "pkg.bench", "--n", "2"])
    assert r.code == 0, r.err
    assert r.out.strip() == "ms 0.01 ['--n', '2']"
    (b,) = r.sidecar()["benchmarks"]
    assert b["name"] == "bench.py:5 do_bench #1" and b["source"]["file"].endswith("pkg/bench.py")


def test_users_own_sitecustomize_still_runs_and_fails_as_it_would(tmp_path: Path) -> None:
    user = tmp_path / "usersite"
    user.mkdir()
    (user / "sitecustomize.py").write_text("import os\nos.environ['USER_SITE_RAN'] = 'yes'\n")
    body = "import os, sys, sitecustomize\nprint(os.environ.get('USER_SITE_RAN'), sitecustomize.__file__)\n"
    r = run(tmp_path, body, PYTHONPATH=str(user))
    assert r.code == 0, r.err
    assert r.out.split() == ["yes", str(user / "sitecustomize.py")]
    (user / "sitecustomize.py").write_text("raise RuntimeError('broken site')\n")
    bare = run(tmp_path, "print('ran')\n", capture=False, PYTHONPATH=str(user))
    got = run(tmp_path, None, PYTHONPATH=str(user))
    assert bare.err == got.err == "Error in sitecustomize; set PYTHONVERBOSE for traceback:\nRuntimeError: broken site\n"
    assert got.out == bare.out == "ran\n"


def test_spawn_children_load_the_layer_and_write_their_own_sidecar(tmp_path: Path) -> None:
    body = KERNEL + """
import multiprocessing as mp
def child(q):
    q.put(triton.testing.do_bench(kernel, rep=1, return_mode="median"))
if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    p.start(); print("child", q.get()); p.join()
    print("parent", triton.testing.do_bench(kernel, rep=1))
"""
    r = run(tmp_path, body)
    assert r.code == 0, r.err
    docs = r.sidecars()
    assert len(docs) == 2 and len({d["pid"] for d in docs}) == 2
    names = sorted(b["name"] for d in docs for b in d["benchmarks"])
    assert names == sorted([f"script.py:{line(body, 'q.put')} do_bench #1", f"script.py:{line(body, 'parent')} do_bench #1"])


def test_crash_inside_a_patched_call_shows_the_users_traceback(tmp_path: Path) -> None:
    body = KERNEL + """
print("first", triton.testing.do_bench(kernel, rep=1))
def bad():
    raise ValueError("boom")
triton.testing.do_bench(bad)
"""
    bare = run(tmp_path, body, capture=False)
    got = run(tmp_path, None)
    assert got.code == bare.code == 1
    assert frames(got.err) == frames(bare.err) and "nsightwrap" not in got.err
    assert got.err.rstrip().endswith("ValueError: boom") and got.out == bare.out
    doc = got.sidecar()
    assert [b["name"] for b in doc["benchmarks"]] == [f"script.py:{line(body, 'first')} do_bench #1"]  # kept
    (nc,) = doc["not_captured"]
    assert nc["site"] == f"script.py:{line(body, 'do_bench(bad)')}" and "raised ValueError: boom" in nc["reason"]


def test_call_the_layer_does_not_understand_runs_unpatched_and_is_named(tmp_path: Path) -> None:
    body = KERNEL + """
try:
    triton.testing.do_bench(kernel, return_mode="fastest")
except AssertionError:
    print("triton refused it")
print(triton.testing.do_bench(kernel, rep=1, quantiles=[0.5, 2.0]))
"""
    bare = run(tmp_path, body, capture=False)
    got = run(tmp_path, None)
    assert got.out == bare.out and got.code == bare.code
    doc = got.sidecar()
    assert doc["benchmarks"] == []
    reasons = {n["site"]: n["reason"] for n in doc["not_captured"]}
    a, b = f"script.py:{line(body, 'fastest')}", f"script.py:{line(body, '2.0')}"
    assert set(reasons) == {a, b}
    assert "return_mode 'fastest'" in reasons[a] and "quantiles" in reasons[b]


def test_do_bench_is_captured_with_every_return_mode(tmp_path: Path) -> None:
    body = KERNEL + """
for mode in ("mean", "median", "min", "max"):
    print(mode, triton.testing.do_bench(kernel, rep=1, return_mode=mode))
print(triton.testing.do_bench(kernel, rep=1, quantiles=[0.2, 0.5, 0.8]))
print(len(triton.testing.do_bench(kernel, rep=1, return_mode="all")))
"""
    r = run(tmp_path, body)
    assert r.code == 0, r.err
    bs = r.sidecar()["benchmarks"]
    assert [b["method"]["return_mode"] for b in bs] == ["mean", "median", "min", "max", "mean", "all"]
    # The estimate window (5 calls of 10 us + flushes) is not a sample: every sample is one call.
    for b in bs:
        assert b["samples_ns"] == [10000.0] * b["n"] and b["n"] == b["method"]["queued_before_sync"] > 5
        assert b["user_value_ns"] == 10000.0 and b["method"]["estimate_window"] is True
        assert (b["method"]["flush"], b["method"]["flush_bytes"]) == ("zero", 256 << 20)
    assert bs[4]["returned"] == [0.01, 0.01, 0.01] and bs[4]["method"]["quantiles"] == [0.2, 0.5, 0.8]
    n = line(body, "mode, triton")
    assert [b["name"] for b in bs][:2] == [f"script.py:{n} do_bench #1", f"script.py:{n} do_bench #2"]


def test_nsys_pass_ranges_hold_exactly_the_timed_call(tmp_path: Path) -> None:
    r = run(tmp_path, KERNEL + "triton.testing.do_bench(kernel, rep=0.05)\n", pass_name="nsys")
    assert r.code == 0, r.err
    t = r.trace()
    start = t.index("+nsightwrap:script.py:5 do_bench #1")
    # The estimate window: 5 flushes + calls. Then each repeat: flush outside, the call inside.
    assert t[start + 2 : start + 4] == ["R", "+nsightwrap:estimate"]
    first = t.index("+nsightwrap:iter0")
    assert t[first - 2 : first + 4] == ["K:FillFunctor_zero", "R", "+nsightwrap:iter0", "K:mm", "-nsightwrap", "R"]
    assert r.sidecars() == []  # the nsys pass keeps its own timings apart, in nsys/
    (own,) = (tmp_path / "run" / "nsys").glob("timer-*-capture.json")
    assert "script.py:5 do_bench #1" in own.read_text()


def test_the_layers_nvtx_domains_are_made_before_the_first_timed_window(tmp_path: Path) -> None:
    # The first NVTX call of a process loads the profiler's hook: it must not fall inside a window.
    body = KERNEL + "s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)\n" \
        "s.record(); kernel(); e.record(); torch.cuda.synchronize(); print(s.elapsed_time(e))\n"
    t = run(tmp_path, body, pass_name="nsys").trace()
    assert "D:nsightwrap" in t and "R" in t and t.index("D:nsightwrap") < t.index("R"), t
    plain = run(tmp_path, None).trace()
    assert not [x for x in plain if x.startswith("D:")], plain  # the plain pass makes no NVTX call


def test_plain_pass_opens_no_range_at_all(tmp_path: Path) -> None:
    body = KERNEL + """
from nsightwrap.capture.state import layer
triton.testing.do_bench(kernel, rep=0.05)
print("windows", layer().windows_opened)
"""
    r = run(tmp_path, body)
    t = r.trace()
    assert not [x for x in t if x.startswith(("+", "-"))]
    # do_bench runs triton's own loop untouched: not even an event hook inside it (the user gets
    # triton's _summarize_statistics of return_mode="all", which is what it would have returned).
    assert r.out.strip() == "windows 0"
    under_nsys = run(tmp_path, None, pass_name="nsys").out.split()
    assert under_nsys[0] == "windows" and int(under_nsys[1]) >= 2  # the estimate and the repeats, in ranges
    repeat = ["K:FillFunctor_zero", "R", "K:mm", "R"]  # flush, start record, the call, end record
    assert any(t[i : i + 4] == repeat for i in range(len(t)))


def test_plain_do_bench_submits_what_triton_does_and_leaves_nothing_alive(tmp_path: Path) -> None:
    """The plain pass's do_bench, next to triton's own inside ``uncaptured()``: the same kernels
    and event records in the same order, and after the call neither keeps its 256 MB flush buffer
    or an event of the call alive (nothing the next call's allocations could see). The 2 us add's
    do_bench lands in a faster mode with the layer in some processes (docs/capture.md): these are
    the two ways a call could carry state to the next that this rules out."""
    body = KERNEL + """
import gc
import nsightwrap as nw
def alive():
    objs = gc.get_objects()  # no gc.collect(): what a reference cycle would keep is counted too
    flush = sum(isinstance(o, torch.Tensor) and o.numel() == 64 * 1024 * 1024 for o in objs)
    return flush, sum(isinstance(o, torch.cuda.Event) for o in objs)
print("before", *alive())
triton.testing.do_bench(kernel, rep=0.05, return_mode="median")
print("layer", *alive())
torch.cuda.launch("mark", 1.0)  # where the second call starts, in the stand-ins' log
with nw.uncaptured():
    triton.testing.do_bench(kernel, rep=0.05, return_mode="median")
print("bare", *alive())
"""
    r = run(tmp_path, body)
    assert r.code == 0, r.err
    counts = {ln.split()[0]: ln.split()[1:] for ln in r.out.splitlines() if ln.split()[0] in ("before", "layer", "bare")}
    assert counts["layer"] == counts["bare"] == counts["before"] == ["0", "0"]
    t = r.trace()
    cut = t.index("K:mark")
    first, second = t[:cut], t[cut + 1 :]
    assert first and first == second  # kernel for kernel, record for record
    assert r.sidecar()["benchmarks"] and len(r.sidecar()["benchmarks"]) == 1  # only the first was captured


def test_plain_do_bench_runs_triton_loop_with_torchs_own_event(tmp_path: Path) -> None:
    """Inside the plain pass's do_bench, ``torch.cuda.Event`` is torch's own (the layer's hooks on
    every event made the 2 us add's calls land in a faster mode: docs/capture.md), and the hooks
    are back after it, also when ``fn`` raises; with a second thread alive they stay in (on their
    suppressed path) so that thread's event windows are still seen."""
    body = KERNEL + """
import threading
def probe(tag, seen):
    def fn():
        ev = torch.cuda.Event
        seen.add((tag, ev.record is hooked, ev.__dict__["__new__"] is hooked_new, ev.elapsed_time is hooked_read))
        kernel()
    return fn
hooked, hooked_read = torch.cuda.Event.record, torch.cuda.Event.elapsed_time
hooked_new = torch.cuda.Event.__dict__["__new__"]
seen = set()
triton.testing.do_bench(probe("alone", seen), rep=0.05)
print("back", torch.cuda.Event.record is hooked)
def boom():
    raise ValueError("in fn")
try:
    triton.testing.do_bench(boom, rep=0.05)
except ValueError:
    print("back after raise", torch.cuda.Event.record is hooked)
stop = threading.Event()
t = threading.Thread(target=stop.wait); t.start()
triton.testing.do_bench(probe("threads", seen), rep=0.05)
stop.set(); t.join()
for tag, *flags in sorted(seen):
    print(tag, *flags)
"""
    r = run(tmp_path, body)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert "back True" in lines and "back after raise True" in lines
    # Alone: torch's own record, __new__ and elapsed_time in every call of fn; beside a thread, the layer's.
    assert [ln for ln in lines if ln.startswith(("alone", "threads"))] == ["alone False False False", "threads True True True"]
    hooks = [b["method"].get("event_hooks") for b in r.sidecar()["benchmarks"]]
    assert hooks == ["out", "suppressed"]  # the call that raised is not captured


def test_ncu_pass_runs_a_few_iterations_and_returns_the_plain_value(tmp_path: Path) -> None:
    body = """
import torch, triton.testing
calls = [0]
def kernel():
    calls[0] += 1
    torch.cuda.launch("mm", 10.0)
print(triton.testing.do_bench(kernel, rep=0.1, quantiles=[0.5, 0.2]), calls[0])
"""
    plain = run(tmp_path, body)
    ncu = run(tmp_path, None, pass_name="ncu", NSIGHTWRAP_NCU_ITERS="2")
    assert ncu.code == 0, ncu.err
    value, count = ncu.out.rsplit(" ", 1)
    assert value == plain.out.rsplit(" ", 1)[0] and int(count) == 1 + 2  # warm-up + 2 iterations
    t = ncu.trace()
    i = t.index("+nsightwrap:script.py:7 do_bench #1")
    assert t[i + 1 : i + 10] == ["K:FillFunctor_zero", "+nsightwrap:iter0", "K:mm", "-nsightwrap",
                                 "K:FillFunctor_zero", "+nsightwrap:iter1", "K:mm", "-nsightwrap", "-nsightwrap"]  # fmt: skip
    assert "R" not in t  # triton's own loop did not run


def test_autotuner_benchmarks_are_not_user_timings(tmp_path: Path) -> None:
    body = KERNEL + """
from triton.runtime import autotuner
print(autotuner.pick([kernel, kernel]))
print(triton.testing.do_bench(kernel, rep=0.05))
"""
    r = run(tmp_path, body, pass_name="nsys")
    assert r.code == 0, r.err
    names = [x for x in r.trace() if x.startswith("+nsightwrap:") and "do_bench" in x]
    n = line(body, "print(triton.testing.do_bench")
    assert names == [f"+nsightwrap:script.py:{n} do_bench #1"]
    plain = run(tmp_path, None)
    assert [b["name"] for b in plain.sidecar()["benchmarks"]] == [f"script.py:{n} do_bench #1"]


BLOG = """
import torch
def f():
    torch.cuda.launch("mm", 12.0)
def do_bench_cuda(f, n_repeats=4):
    cache = torch.empty(64, dtype=torch.int8)
    a = torch.randn(8, 8)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeats)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeats)]
    for i in range(n_repeats):
        cache.zero_()
        torch.matmul(a, a)
        starts[i].record()
        f()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]
for _ in range(3):
    print(do_bench_cuda(f))
"""


def test_event_loop_calls_are_one_benchmark_per_call_of_the_site(tmp_path: Path) -> None:
    r = run(tmp_path, BLOG)
    assert r.code == 0, r.err
    bs = r.sidecar()["benchmarks"]
    assert [b["name"] for b in bs] == [f"script.py:13 do_bench_cuda #{i}" for i in (1, 2, 3)]
    for b in bs:
        assert b["samples_ns"] == [12000.0] * 4 and b["user_value_ns"] == 12000.0
        assert b["source"] == {"kind": "cuda_events", "id": b["name"], "site": "script.py:13", "call": b["source"]["call"],
                               "label": None, "file": str(tmp_path / "script.py"), "line": 13,
                               "function": "do_bench_cuda", "api": "torch.cuda.Event"}  # fmt: skip
        assert b["method"]["queued_before_sync"] == 4 and b["method"]["windows_read"] == 4


def test_event_windows_get_ranges_and_ncu_only_the_first_few(tmp_path: Path) -> None:
    nsys = run(tmp_path, BLOG, pass_name="nsys")
    t = nsys.trace()
    w = t.index("+nsightwrap:script.py:13 do_bench_cuda #1")
    # flush and dummy matmul outside, the start record, the ranges, the timed call, pops, end record
    assert t[w - 3 : w + 6] == ["K:FillFunctor_zero", "K:gemm", "R", "+nsightwrap:script.py:13 do_bench_cuda #1",
                                "+nsightwrap:iter0", "K:mm", "-nsightwrap", "-nsightwrap", "R"]  # fmt: skip
    assert sum(x == "+nsightwrap:iter3" for x in t) == 3
    ncu = run(tmp_path, None, pass_name="ncu", NSIGHTWRAP_NCU_ITERS="2")
    iters = [x for x in ncu.trace() if x.startswith("+nsightwrap:iter")]
    assert iters == ["+nsightwrap:iter0", "+nsightwrap:iter1"] * 3


def test_nested_windows_are_paired_by_what_the_script_reads(tmp_path: Path) -> None:
    body = """
import torch
def timed(n=3):
    outer_s, outer_e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    pairs = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    outer_s.record()
    for s, e in pairs:
        s.record()
        torch.cuda.launch("k", 5.0)
        e.record()
    outer_e.record()
    torch.cuda.synchronize()
    return outer_s.elapsed_time(outer_e), [s.elapsed_time(e) for s, e in pairs]
for _ in range(3):
    print(timed())
"""
    r = run(tmp_path, body)
    assert r.code == 0, r.err
    bs = {b["name"]: b for b in r.sidecar()["benchmarks"]}
    # The first call's nesting is learnt from its reads; from the second call on both the outer
    # window and every inner one are captured.
    assert bs["script.py:6 timed #3"]["samples_ns"] == [15000.0]
    assert bs["script.py:8 timed #2"]["samples_ns"] == [5000.0] * 3


def test_events_on_a_second_thread(tmp_path: Path) -> None:
    body = """
import threading, torch
def work():
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); torch.cuda.launch("k", 7.0); e.record()
    print(s.elapsed_time(e))
t = threading.Thread(target=work); t.start(); t.join()
"""
    r = run(tmp_path, body)
    assert r.out.strip() == "0.007"
    (b,) = r.sidecar()["benchmarks"]
    assert b["samples_ns"] == [7000.0] and b["source"]["function"] == "work"


def test_events_without_timing_and_library_events_are_ignored(tmp_path: Path) -> None:
    body = """
import torch
e = torch.cuda.Event()
e.record()
s, t = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    s.record(); torch.cuda.launch("k", 1.0); t.record()
"""
    r = run(tmp_path, body)
    assert r.code == 0, r.err
    assert r.sidecars() == []


def test_cudagraph_samples_are_per_call_of_the_graph(tmp_path: Path) -> None:
    r = run(tmp_path, KERNEL + "print(triton.testing.do_bench_cudagraph(kernel, rep=1))\n")
    (b,) = r.sidecar()["benchmarks"]
    m = b["method"]
    assert (m["n_repeat"], m["calls_per_sample"], m["cuda_graph"], m["flush"]) == (100, 100, True, "none")
    assert b["samples_ns"] == [10000.0] * 10 and b["user_value_ns"] == 10000.0


TIMER = """
import torch
from torch.utils.benchmark import Timer
t = Timer("torch.cuda.launch('k', 20.0)", label="launch", sub_label="20us", description="demo")
m = t.blocked_autorange(min_run_time=0.001)
print(m.number_per_run, len(m.raw_times))
print(Timer("torch.cuda.launch('k', 5.0)").timeit(10))
"""


def test_torch_timer_measurements_are_captured(tmp_path: Path) -> None:
    r = run(tmp_path, TIMER)
    assert r.code == 0, r.err
    number, blocks = map(int, r.out.split("\n")[0].split())
    a, b = r.sidecar()["benchmarks"]
    assert a["name"] == "launch 20us demo" and a["source"]["kind"] == "torch_benchmark"
    assert a["method"]["calls_per_sample"] == number and a["n"] == blocks == a["method"]["blocks"]
    assert a["user_value_ns"] == a["samples_ns"][0] == 20000.0  # up to float rounding of the clock
    assert a["details"]["label"] == "launch" and a["details"]["sub_label"] == "20us"
    assert b["name"] == "script.py:7 Timer.timeit #1" and b["n"] == 1 and b["method"]["number_per_run"] == 10


def test_torch_timer_ranges_and_ncu_short_path(tmp_path: Path) -> None:
    nsys = run(tmp_path, TIMER, pass_name="nsys")
    t = nsys.trace()
    i = t.index("+nsightwrap:script.py:7 Timer.timeit #1")
    # timeit's warm-up block (2 runs), then the measured block of 10 runs in iter0
    assert t[i + 1 : i + 5] == ["+nsightwrap:warm0", "K:k", "K:k", "-nsightwrap"]
    j = t.index("+nsightwrap:iter0", i)
    assert t[j + 1 : j + 12] == ["K:k"] * 10 + ["-nsightwrap"]
    run(tmp_path, None)  # the plain pass, whose Measurements the ncu pass returns again
    ncu = run(tmp_path, None, pass_name="ncu", NSIGHTWRAP_NCU_ITERS="2")
    assert ncu.out == run(tmp_path, None).out  # the same printed Measurements
    k = ncu.trace().index("+nsightwrap:launch 20us demo")
    assert ncu.trace()[k + 1 : k + 8] == ["+nsightwrap:iter0", "K:k", "-nsightwrap", "+nsightwrap:iter1", "K:k",
                                          "-nsightwrap", "-nsightwrap"]  # fmt: skip


def test_labels_from_the_command_line_and_from_the_script(tmp_path: Path) -> None:
    body = KERNEL + """
import nsightwrap as nw
triton.testing.do_bench(kernel, rep=0.05)
nw.label("mm small")
triton.testing.do_bench(kernel, rep=0.05)
with nw.label("pair"):
    triton.testing.do_bench(kernel, rep=0.05)
    triton.testing.do_bench(kernel, rep=0.05)
triton.testing.do_bench(kernel, rep=0.05)
"""
    r = run(tmp_path, body, NSIGHTWRAP_LABELS='{"script.py:7": "first/one"}')
    assert r.code == 0, r.err
    bs = r.sidecar()["benchmarks"]
    assert [b["name"] for b in bs] == ["first-one", "mm small", "pair", "pair #2", "script.py:13 do_bench #1"]
    assert [b["source"]["label"] for b in bs] == ["first-one", "mm small", "pair", "pair", None]


def test_no_sidecar_and_no_patch_without_the_layer(tmp_path: Path) -> None:
    body = KERNEL + "print(triton.testing.do_bench.__module__, triton.testing.do_bench.__name__)\n"
    r = run(tmp_path, body, capture=False)
    assert r.out.strip() == "triton.testing do_bench"
    assert r.sidecars() == [] and not list((tmp_path / "run" / "plain").iterdir())


def test_user_nvtx_ranges_are_mirrored_under_ncu_only(tmp_path: Path) -> None:
    body = """
import threading, nvtx, torch
d = nvtx.get_domain("mydomain")
for i in range(3):
    rid = d.start_range(message="myrange")
    torch.cuda.launch("a", 1.0)
    d.end_range(rid)
    nvtx.push_range("graph_replay"); torch.cuda.launch("g", 1.0); nvtx.pop_range()
    with torch.cuda.nvtx.range("step"):
        with nvtx.annotate("inner"):
            torch.cuda.launch("m", 1.0)
def worker():
    for _ in range(3):
        d.push_range(message="work"); torch.cuda.launch("w", 1.0); d.pop_range()
t = threading.Thread(target=worker); t.start(); t.join()
"""
    ncu = run(tmp_path, body, pass_name="ncu", NSIGHTWRAP_NCU_ITERS="2")
    assert ncu.code == 0, ncu.err
    mirrors = [x for x in ncu.trace() if x.startswith("+nsightwrap_nvtx:") and not x.endswith(("iter0", "iter1"))]
    assert mirrors == ["+nsightwrap_nvtx:mydomain:myrange", "+nsightwrap_nvtx:graph_replay", "+nsightwrap_nvtx:step",
                       "+nsightwrap_nvtx:step > inner"] * 2 + ["+nsightwrap_nvtx:mydomain:work"] * 2  # fmt: skip
    t = ncu.trace()
    i = t.index("+nsightwrap_nvtx:step > inner")
    assert t[i - 1 : i + 5] == ["+None:inner", "+nsightwrap_nvtx:step > inner", "+nsightwrap_nvtx:iter0", "K:m",
                                "-nsightwrap_nvtx", "-nsightwrap_nvtx"]  # fmt: skip
    nsys = run(tmp_path, None, pass_name="nsys")
    assert not [x for x in nsys.trace() if "nsightwrap_nvtx" in x]


def test_uncaptured_block_runs_the_libraries_own_code_and_captures_nothing(tmp_path: Path) -> None:
    body = KERNEL + """
import threading
import nsightwrap as nw
from torch.utils.benchmark import Timer
from triton.testing import do_bench  # the wrapper, held by the script
patched = (torch.cuda.Event.record, torch.cuda.Event.__dict__["__new__"], triton.testing.do_bench, Timer.timeit)
do_bench(kernel, rep=0.05)
with nw.uncaptured():
    own = (torch.cuda.Event.record, torch.cuda.Event.__dict__["__new__"], triton.testing.do_bench, Timer.timeit)
    print("hooks out", [a is not b for a, b in zip(own, patched)], own[2].__module__)
    do_bench(kernel, rep=0.05)
    triton.testing.do_bench(kernel, rep=0.05)
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); kernel(); e.record(); s.elapsed_time(e)
    t = threading.Thread(target=lambda: do_bench(kernel, rep=0.05)); t.start(); t.join()
    with nw.uncaptured():
        pass
    print("still out", torch.cuda.Event.record is own[0])
back = (torch.cuda.Event.record, torch.cuda.Event.__dict__["__new__"], triton.testing.do_bench, Timer.timeit)
print("hooks back", [a is b for a, b in zip(back, patched)])
do_bench(kernel, rep=0.05)
"""
    r = run(tmp_path, body)
    assert r.code == 0, r.err
    assert "hooks out [True, True, True, True] triton.testing" in r.out
    assert "still out True" in r.out and "hooks back [True, True, True, True]" in r.out
    n = line(body, "do_bench(kernel, rep=0.05)")
    last = line(body, "do_bench(kernel, rep=0.05)", 5)
    bs = r.sidecar()["benchmarks"]
    assert [b["name"] for b in bs] == [f"script.py:{n} do_bench #1", f"script.py:{last} do_bench #1"]
    assert r.sidecar().get("skipped", []) == []
    # Outside nsightwrap profile it does nothing (and raises nothing).
    plain = run(tmp_path, KERNEL + "import nsightwrap as nw\nwith nw.uncaptured():\n    print(triton.testing.do_bench(kernel, rep=0.05))\n", capture=False)
    assert plain.code == 0 and plain.out.strip() == "0.01", plain.err
