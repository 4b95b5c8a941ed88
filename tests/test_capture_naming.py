"""Names of captured timings from what the script varies: a ``perf_report`` sweep's points, the
arguments that differ between calls of one site, a Timer's labels; the stable id
``file:line what #call`` beside them; ``--label`` over all of it; the same names in every pass.
Real subprocesses over the stand-in torch and triton (tests/capture_standins)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from capture_helpers import line, run

from nsightwrap.capture.naming import NameInput, auto_names, param_value

SWEEP = """
import torch, triton.testing
from torch.utils.benchmark import Timer
from triton.testing import Benchmark, perf_report

@perf_report(Benchmark(x_names=["N"], x_vals=[1024, 2048, 4096, 8192], line_arg="provider",
                       line_vals=["triton", "torch"], line_names=["Triton", "Torch"],
                       plot_name="softmax-performance", args={"M": 4096}))
def benchmark(M, N, provider):
    if provider == "torch":
        return triton.testing.do_bench(lambda: torch.cuda.launch("softmax_torch", N / 100), rep=1)
    return triton.testing.do_bench(lambda: torch.cuda.launch("softmax_triton", N / 200), rep=1)

def mm(fn, M, N, dtype=torch.bfloat16, warm=True):
    return triton.testing.do_bench(lambda: torch.cuda.launch("mm", M * N / 1e5), rep=1)

def kernel():
    torch.cuda.launch("k", 3.0)

benchmark.run(print_data=True)
for m in (64, 128):
    print("mm", mm(kernel, m, 4096))
print("once", triton.testing.do_bench(kernel, rep=1))
t = Timer("torch.cuda.launch('linear', 20.0)", label="linear", sub_label="64x4096", description="bf16")
print("timer", t.timeit(10).median)
"""


def _names(ran: object) -> list[str]:
    return [b["name"] for b in ran.sidecar()["benchmarks"]]  # type: ignore[attr-defined]


def test_perf_report_points_arguments_and_timer_labels_name_the_timings(tmp_path: Path) -> None:
    r = run(tmp_path, SWEEP)
    assert r.code == 0, r.err
    bs = r.sidecar()["benchmarks"]
    torch_line, triton_line = line(SWEEP, 'launch("softmax_torch"'), line(SWEEP, 'launch("softmax_triton"')
    sweep = [b for b in bs if b["source"]["function"] == "benchmark"]
    # Eight points of two providers: each named by the sweep, each with its stable id and params.
    assert [b["name"] for b in sweep] == [f"softmax-performance[provider={p},N={n}]"
                                          for n in (1024, 2048, 4096, 8192) for p in ("triton", "torch")]  # fmt: skip
    point = {b["name"]: b for b in sweep}["softmax-performance[provider=torch,N=2048]"]
    assert point["params"] == {"provider": "torch", "N": "2048"}
    assert point["source"]["id"] == f"script.py:{torch_line} do_bench #2" and point["source"]["call"] == 2
    assert point["samples_ns"][0] == pytest.approx(2048 / 100 * 1e3)  # the torch provider's kernel at N=2048, not another
    assert {b["source"]["line"] for b in sweep} == {torch_line, triton_line}
    # Calls of one site named by the argument that differs (M), not the ones that do not (N,
    # dtype, warm) nor the function passed; a lone call and a labelled Timer as before.
    mm_line = line(SWEEP, 'launch("mm"')
    rest = [(b["name"], b["params"], b["source"]["id"]) for b in bs if b not in sweep]
    assert rest == [
        ("mm[M=64]", {"M": "64"}, f"script.py:{mm_line} do_bench #1"),
        ("mm[M=128]", {"M": "128"}, f"script.py:{mm_line} do_bench #2"),
        (f"script.py:{line(SWEEP, 'once')} do_bench #1", {}, f"script.py:{line(SWEEP, 'once')} do_bench #1"),
        ("linear 64x4096 bf16", {}, f"script.py:{line(SWEEP, 't.timeit')} Timer.timeit #1"),
    ]


def test_every_pass_uses_the_plain_pass_names(tmp_path: Path) -> None:
    plain = run(tmp_path, SWEEP)
    assert plain.code == 0, plain.err
    names = _names(plain)
    nsys = run(tmp_path, None, pass_name="nsys")
    assert nsys.code == 0, nsys.err
    # The nsys pass's ranges (what nsys attributes kernels by) carry the plain pass's names.
    opened = [x.removeprefix("+nsightwrap:") for x in nsys.trace() if x.startswith("+nsightwrap:")]
    assert [x for x in opened if x in names] == names
    (nsys_doc,) = [json.loads(p.read_text()) for p in (tmp_path / "run" / "nsys").glob("timer-*-capture.json")]
    assert [b["name"] for b in nsys_doc["benchmarks"]] == names
    # Under ncu each call returns what the call of that name returned in the plain pass.
    ncu = run(tmp_path, None, pass_name="ncu", NSIGHTWRAP_NCU_ITERS="1")
    assert ncu.code == 0, ncu.err
    assert ncu.out == plain.out and "softmax-performance:" in plain.out


def test_a_label_names_a_sweep_site_over_its_points(tmp_path: Path) -> None:
    site = "script.py:" + str(line(SWEEP, 'launch("softmax_torch"'))
    r = run(tmp_path, SWEEP, NSIGHTWRAP_LABELS=json.dumps({site: "softmax torch"}))
    assert r.code == 0, r.err
    names = _names(r)
    assert names[:4] == ["softmax-performance[provider=triton,N=1024]", "softmax torch",
                         "softmax-performance[provider=triton,N=2048]", "softmax torch #2"]  # fmt: skip


def _item(i: int, group: str = "b.py:7 do_bench", args: dict[str, str] | None = None, function: str = "bench",
          line: int = 7, sweep: tuple[str, dict[str, str]] | None = None) -> NameInput:  # fmt: skip
    return NameInput(f"{group} #{i}", group, function, line, sweep, args or {})


def test_auto_names_disambiguate_sites_repeats_and_taken_names() -> None:
    # Two sites in one function with the same arguments: each gets its line.
    items = [_item(1, args={"N": "1"}), _item(1, "b.py:9 do_bench", {"N": "1"}, line=9),
             _item(2, args={"N": "2"}), _item(2, "b.py:9 do_bench", {"N": "2"}, line=9)]  # fmt: skip
    assert [n for n, _ in auto_names(items)] == ["bench:7[N=1]", "bench:9[N=1]", "bench:7[N=2]", "bench:9[N=2]"]
    # The same arguments again from one site: #2; nothing differs: the id; a taken name: '.
    again = [_item(1, args={"N": "1", "k": "x"}), _item(2, args={"N": "2", "k": "x"}), _item(3, args={"N": "1", "k": "x"})]
    assert auto_names(again) == [("bench[N=1]", {"N": "1"}), ("bench[N=2]", {"N": "2"}), ("bench[N=1] #2", {"N": "1"})]
    same = [_item(1, args={"N": "1"}), _item(2, args={"N": "1"})]
    assert [n for n, _ in auto_names(same)] == ["b.py:7 do_bench #1", "b.py:7 do_bench #2"]
    point = [_item(1, sweep=("mm", {"M": "64"}))]
    assert auto_names(point, taken={"mm[M=64]"}) == [("mm[M=64]'", {"M": "64"})]
    # Module level: no function to name them by.
    top = [_item(1, args={"N": "1"}, function="<module>"), _item(2, args={"N": "2"}, function="<module>")]
    assert [n for n, _ in auto_names(top)] == ["b.py:7 do_bench #1", "b.py:7 do_bench #2"]


def test_only_values_that_print_alike_in_every_process_go_in_a_name() -> None:
    class dtype:  # noqa: N801 - named like torch's
        def __str__(self) -> str:
            return "torch.bfloat16"

    def gemm() -> None: ...

    assert [param_value(v) for v in (2048, 0.5, True, "torch", dtype(), (64, 4096), gemm)] == [
        "2048", "0.5", "True", "torch", "bfloat16", "64x4096", "gemm"]  # fmt: skip
    assert [param_value(v) for v in (object(), lambda: 0, "two words", "a[1]", "x" * 40, [1.5])] == [None] * 6


def _cli(capsys, *args: str) -> tuple[int, str]:  # noqa: ANN001 - pytest's capsys
    """``nsightwrap ARGS`` in this process: its exit code and stdout."""
    from nsightwrap.cli import main

    with pytest.raises(SystemExit) as exc:
        main(list(args))
    code = exc.value.code
    return (code if isinstance(code, int) else (0 if code is None else 1)), capsys.readouterr().out


def test_report_of_a_profiled_sweep_shows_the_names(tmp_path: Path, monkeypatch, capsys) -> None:  # noqa: ANN001
    from fake_tools.harness import profile
    from test_capture_profile import SWEEP as NO_SWEEP_PASS
    from test_capture_profile import _setup

    script = _setup(tmp_path, monkeypatch)
    script.write_text(textwrap.dedent(SWEEP))
    r = profile(capsys, "-o", "run", "--no-analyze", *NO_SWEEP_PASS, "--ncu-iters", "1", str(script))
    assert r.code == 0, r.err
    code, out = _cli(capsys, "report", str(tmp_path / "run"), "--format", "json")
    assert code == 0
    got = {b["name"]: b for b in json.loads(out)["benchmarks"]}
    point = got["softmax-performance[provider=torch,N=2048]"]
    assert point["source"]["id"] == "bench_mm.py:" + str(line(SWEEP, 'launch("softmax_torch"')) + " do_bench #2"
    assert point["params"] == {"provider": "torch", "N": "2048"} and point["ncu"] is not None
    assert "mm[M=128]" in got and "linear 64x4096 bf16" in got
    code, md = _cli(capsys, "report", str(tmp_path / "run"), "--format", "md")
    assert code == 0 and "provider=torch,N=2048" in md
