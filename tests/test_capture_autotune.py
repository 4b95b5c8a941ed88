"""``triton.autotune`` under ``nsightwrap profile``: the plain pass records each autotuner's
choices, and the later passes run the same configs instead of tuning again (real subprocesses
over the stand-in triton, whose autotuner picks a config by seeded noise, so two passes with
different seeds pick differently unless the layer pins them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from capture_helpers import Ran, line, run

SCRIPT = """
import os
import torch
import triton
import triton.testing

CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (32, 64, 128, 256) for w in (2, 4, 8, 16)]

@triton.autotune(configs=CONFIGS, key=["M", "N"])
@triton.jit
def matmul_kernel(a, M, N, BLOCK):
    pass

def bench(M, N):
    a = torch.empty(M * N, dtype="bfloat16")
    return triton.testing.do_bench(lambda: matmul_kernel[(1,)](a, M, N), rep=1)

for size in [128, 256, 512, 1024] + [int(s) for s in os.environ.get("EXTRA_SIZES", "").split()]:
    print(size, bench(size, size))
print("tunings", matmul_kernel.tunings)
"""


def _configs(r: Ran) -> list[str]:
    """The autotuned kernel's launches, in order, each named by its config (the stand-in's)."""
    return [e["name"] for e in r.events() if e["op"] == "kernel" and e["name"].startswith("matmul_kernel[")]


def _doc(tmp: Path, pass_name: str) -> dict[str, Any]:
    (path,) = (tmp / "run" / pass_name).glob("autotune-*.json")
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def test_later_passes_run_the_configs_the_plain_pass_chose(tmp_path: Path) -> None:
    plain = run(tmp_path, SCRIPT, STANDIN_AUTOTUNE_SEED="plain")
    assert plain.code == 0, plain.err
    assert "tunings 4" in plain.out
    doc = _doc(tmp_path, "plain")
    (t,) = doc["tuners"]
    assert (doc["format"], doc["pass"], t["tuner"], t["configs"]) == (
        "nsightwrap-autotune", "plain", f"script.py:{line(SCRIPT, '@triton.autotune')} matmul_kernel", 16)  # fmt: skip
    keys = [[s, s, "bfloat16"] for s in (128, 256, 512, 1024)]
    assert [c["key"] for c in t["chosen"]] == keys and t["tuned"] == keys and t["pinned"] == []
    for c in t["chosen"]:
        assert isinstance(c["index"], int) and c["config"].startswith(f"BLOCK: {(32, 64, 128, 256)[c['index'] // 4]},")
    want = _configs(plain)
    # Without the layer, a pass that tunes again (another seed: the noise of another process)
    # runs other configs: what the layer is there to prevent.
    bare = run(tmp_path, None, pass_name="ncu", capture=False, STANDIN_AUTOTUNE_SEED="ncu")
    assert bare.code == 0, bare.err
    assert sorted(set(_configs(bare))) != sorted(set(want))
    # With it, the ncu and nsys passes and the plain pass's clock run pin every key: nothing is
    # tuned, the same configs run.
    for pass_name in ("ncu", "nsys", "plain-clock"):
        r = run(tmp_path, None, pass_name=pass_name, STANDIN_AUTOTUNE_SEED=pass_name, NSIGHTWRAP_NCU_ITERS="2")
        assert r.code == 0, r.err
        assert "tunings 0" in r.out
        assert sorted(set(_configs(r))) == sorted(set(want)), pass_name
        (t2,) = _doc(tmp_path, pass_name)["tuners"]
        assert t2["pinned"] == keys and t2["tuned"] == [] and t2["chosen"] == t["chosen"]


def test_a_key_the_plain_pass_never_tuned_is_tuned_afresh_and_recorded(tmp_path: Path) -> None:
    assert run(tmp_path, SCRIPT).code == 0
    r = run(tmp_path, None, pass_name="ncu", NSIGHTWRAP_NCU_ITERS="1", EXTRA_SIZES="2048")
    assert r.code == 0, r.err
    assert "tunings 1" in r.out
    (t,) = _doc(tmp_path, "ncu")["tuners"]
    assert t["tuned"] == [[2048, 2048, "bfloat16"]] and len(t["pinned"]) == 4


def test_an_autotuner_without_a_cache_is_left_alone_with_a_note(tmp_path: Path) -> None:
    assert run(tmp_path, SCRIPT, STANDIN_OLD_AUTOTUNER="1").code == 0
    r = run(tmp_path, None, pass_name="ncu", NSIGHTWRAP_NCU_ITERS="1", STANDIN_OLD_AUTOTUNER="1")
    assert r.code == 0, r.err
    assert "tunings 4" in r.out  # tuned again, as without nsightwrap
    for pass_name in ("plain", "ncu"):
        doc = _doc(tmp_path, pass_name)
        assert doc["tuners"] == [] and len(doc["notes"]) == 1
        assert "matmul_kernel has no `cache` dict or `configs` list" in doc["notes"][0]
