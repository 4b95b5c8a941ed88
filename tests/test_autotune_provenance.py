"""The analysis reads the capture layer's autotune files (RUN_DIR/<pass>/autotune-<pid>.json):
a benchmark whose ncu (or nsys) pass ran another config of an autotuned kernel than the plain
pass timed gets no ratio between the two kernels (nsightwrap/analysis/autotuned.py).

The run is the real H200 run fixtures/runs/h200-nvtx (its `own_nvtx.py:52 do_bench #1` times
the Triton kernel `add_kernel`, block 128), copied, with autotune files written by the capture
layer's own writer (`capture.autotune.Tuners`) as if `add_kernel` were `triton.autotune`d."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from nsightwrap.analysis.autotuned import config_difference, read_pass
from nsightwrap.analysis.load import analyze
from nsightwrap.analysis.model import BenchmarkResult, RunResult, Verdict
from nsightwrap.capture.autotune import Tuners
from nsightwrap.capture.state import Layer
from nsightwrap.core import contract

RUN = Path(__file__).resolve().parent.parent / "fixtures" / "runs" / "h200-nvtx"
BENCH = "own_nvtx.py:52 do_bench #1"
KEY = (16777216, "torch.float32", "torch.float32", "torch.float32")


class Config:
    """A config as triton's prints (``BLOCK: 1024, num_warps: 4, ...``)."""

    def __init__(self, block: int, num_warps: int) -> None:
        self.kwargs, self.num_warps = {"BLOCK": block}, num_warps

    def __str__(self) -> str:
        return f"BLOCK: {self.kwargs['BLOCK']}, num_warps: {self.num_warps}, num_ctas: 1, num_stages: 3"


def add_kernel(x_ptr: Any, y_ptr: Any, out_ptr: Any, n: int, BLOCK: int) -> None:  # noqa: N803 - triton's spelling
    """The autotuned function (its name is the kernel's, as ncu and nsys show it)."""


class Autotuner:
    """What the layer reads of triton's ``Autotuner``: ``configs``, ``cache``, ``base_fn``."""

    def __init__(self, configs: list[Config]) -> None:
        self.configs, self.base_fn = configs, add_kernel
        self.cache: dict[tuple[Any, ...], Config] = {}


CONFIGS = [Config(1024, 4), Config(2048, 4), Config(1024, 8)]


def _pass(run: Path, name: str, configs: list[Config], choose: int | None = None, *, cache: bool = True) -> dict[str, Any]:
    """One process of pass ``name`` made by the layer's own writer: the autotuner is made (and
    pinned in a later pass), then ``KEY`` is tuned to ``configs[choose]`` where not pinned."""
    layer = Layer({contract.ENV_PASS: name, contract.ENV_RUN_DIR: str(run)})
    tuners = Tuners(layer)
    tuner = Autotuner(configs)
    if not cache:
        del tuner.cache
    tuners.made(tuner)
    if cache and KEY not in tuner.cache and choose is not None:
        tuner.cache[KEY] = configs[choose]  # tuned in this process
    tuners.write()
    (path,) = (run / name).glob(contract.AUTOTUNE_GLOB)
    return json.loads(path.read_text())  # type: ignore[no-any-return]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    dst = tmp_path / "run"
    shutil.copytree(RUN, dst, ignore=shutil.ignore_patterns("analysis"))
    return dst


def _bench(result: RunResult) -> BenchmarkResult:
    return next(b for b in result.benchmarks if b.name == BENCH)


def _no_ncu(b: BenchmarkResult) -> str:
    """The reason the benchmark has no ncu figure (after the captured timing's description)."""
    return next(n for n in b.notes if n.startswith("no ncu: "))


def test_a_pinned_config_keeps_its_ratio(run: Path) -> None:
    bare = _bench(analyze(RUN))
    assert bare.verdict is Verdict.EXPLAINED and bare.ratio is not None
    _pass(run, "plain", CONFIGS, 0)
    for name in ("ncu", "nsys"):
        doc = _pass(run, name, CONFIGS, 1)  # would tune to another config; the plain pass's is pinned
        (t,) = doc["tuners"]
        assert t["pinned"] == [list(KEY)] and t["tuned"] == []
    b = _bench(analyze(run))
    assert (b.verdict, b.ratio) == (bare.verdict, bare.ratio)
    assert b.nsys is not None and not any("config" in n for n in b.notes)


def test_another_config_in_the_ncu_pass_is_no_ncu_with_both_configs(run: Path) -> None:
    _pass(run, "plain", CONFIGS, 0)
    # The ncu pass's configs in another order: the plain pass's choice (index 0, BLOCK 1024) is not
    # config 0 there, so the layer cannot pin it, and the key is tuned afresh to BLOCK 2048.
    doc = _pass(run, "ncu", [CONFIGS[1], CONFIGS[0], CONFIGS[2]], 0)
    (t,) = doc["tuners"]
    assert t["tuned"] == [list(KEY)] and t["pinned"] == [] and "not pinned" in doc["notes"][0]
    _pass(run, "nsys", CONFIGS)
    result = analyze(run)
    b = _bench(result)
    assert b.verdict is Verdict.NO_NCU and b.ncu is None and b.ratio is None
    why = _no_ncu(b)
    assert why.startswith(
        "no ncu: the ncu pass ran another config of add_kernel than the plain pass timed (BLOCK: 1024 vs BLOCK: 2048)"
    ), why
    assert '[16777216, "torch.float32", "torch.float32", "torch.float32"]' in why
    assert "nsightwrap could not pin the plain pass's choice there" in why
    # Both configs launch 128 threads: the reason says what tied the key to this benchmark.
    assert "block of 128 threads (num_warps 4), which both configs launch" in why
    assert "a ratio between two different kernels would mean nothing" in why
    # The benchmarks without add_kernel are untouched.
    others = {x.name: x.verdict for x in analyze(RUN).benchmarks if x.name != BENCH}
    assert {x.name: x.verdict for x in result.benchmarks if x.name != BENCH} == others


def test_a_key_tuned_afresh_to_the_plain_pass_config_keeps_its_ratio(run: Path) -> None:
    bare = _bench(analyze(RUN))
    _pass(run, "plain", CONFIGS, 0)
    _pass(run, "ncu", [CONFIGS[1], CONFIGS[0], CONFIGS[2]], 1)  # tuned afresh, to BLOCK 1024 again
    assert (b := _bench(analyze(run))).verdict is bare.verdict and b.ratio == bare.ratio


def test_a_config_of_another_block_size_is_not_this_benchmarks(run: Path) -> None:
    # The ncu pass tuned the key to num_warps 8 (256 threads), but ncu's launches of add_kernel in
    # this benchmark are 128 threads: that key's launches are not among them.
    bare = _bench(analyze(RUN))
    _pass(run, "plain", CONFIGS, 0)
    _pass(run, "ncu", [CONFIGS[1], CONFIGS[0], CONFIGS[2]], 2)
    assert (b := _bench(analyze(run))).verdict is bare.verdict and b.ratio == bare.ratio


def test_another_config_in_the_nsys_pass_drops_the_nsys_figure(run: Path) -> None:
    _pass(run, "plain", CONFIGS, 0)
    _pass(run, "ncu", CONFIGS)
    _pass(run, "nsys", [CONFIGS[1], CONFIGS[0], CONFIGS[2]], 0)
    b = _bench(analyze(run))
    assert b.nsys is None and b.ncu is not None and b.ratio is not None
    why = next(n for n in b.notes if n.startswith("nsys figure not used: "))
    assert "the nsys pass ran another config of add_kernel than the plain pass timed (BLOCK: 1024 vs BLOCK: 2048)" in why


def test_a_key_the_plain_pass_never_recorded_is_no_ncu(run: Path) -> None:
    # No plain pass file (the plain process made no autotuner the layer saw): the ncu pass tuned
    # the key itself, and nothing says it is the plain pass's config.
    _pass(run, "ncu", CONFIGS, 0)
    b = _bench(analyze(run))
    assert b.verdict is Verdict.NO_NCU
    assert _no_ncu(b).startswith(
        "no ncu: the ncu pass may have run another config of add_kernel than the plain pass timed (none recorded vs "
        "BLOCK: 1024, num_warps: 4"
    ), b.notes


def test_an_autotuner_nsightwrap_could_not_pin_is_said(run: Path) -> None:
    bare = _bench(analyze(RUN))
    for name in ("plain", "ncu"):
        doc = _pass(run, name, CONFIGS, cache=False)
        assert doc["tuners"] == [] and "has no `cache` dict" in doc["notes"][0]
    b = _bench(analyze(run))
    assert b.verdict is bare.verdict  # ncu's and nsys's launch shapes agree: nothing to hold against it
    said = [n for n in b.notes if n.startswith("nsightwrap could not pin the autotuner of add_kernel (")]
    assert said and "Autotuner has no `cache` dict or `configs` list): every pass tuned it afresh" in said[0]


def test_an_unreadable_file_is_a_run_note(run: Path) -> None:
    (run / "ncu" / "autotune-1.json").write_text("{not json")
    r = analyze(run)
    assert any(n.startswith("autotune record ncu/autotune-1.json: not read (JSONDecodeError") for n in r.notes)
    assert read_pass(run / "nsys", "nsys") is None


def test_config_difference_names_the_fields_that_differ() -> None:
    assert config_difference("BLOCK_M: 64, num_warps: 4", "BLOCK_M: 128, num_warps: 4") == ("BLOCK_M: 64", "BLOCK_M: 128")
    assert config_difference("odd", "text") == ("odd", "text")
