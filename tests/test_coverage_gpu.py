"""Every benchmark keeps an ncu figure of its own work, on a GPU machine (ncu and nsys on PATH).

A persistent-grid Triton kernel keeps its name, grid and block at every size, so ncu's
per-launch-config cap is spent on the first sizes; the coverage pass must give the others their
own figures (or the report says ``no ncu`` with nsightwrap's reason), never another size's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = """\
import torch
import triton
import triton.language as tl

@triton.jit
def scale_rows(x_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        offs = tl.arange(0, BLOCK)
        m = offs < n_cols
        v = tl.load(x_ptr + row * n_cols + offs, mask=m)
        tl.store(y_ptr + row * n_cols + offs, v * 2.0, mask=m)

def run(x):
    y = torch.empty_like(x)
    scale_rows[(132,)](x, y, x.shape[0], x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]), num_warps=4)
    return y

for n in (256, 1024, 4096):
    x = torch.randn(8192, n, device="cuda")
    print(n, triton.testing.do_bench(lambda: run(x)))
"""


@pytest.mark.gpu
def test_each_size_gets_its_own_ncu_figure_or_says_why_not(tmp_path: Path) -> None:
    script = tmp_path / "rows_sweep.py"
    script.write_text(SCRIPT)
    run = tmp_path / "run"
    cp = subprocess.run(
        [sys.executable, "-m", "nsightwrap", "profile", "-o", str(run), "--ncu-kernel-cap", "1", "--no-clock-sweep",
         str(script)],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )  # fmt: skip
    keep = os.environ.get("NSIGHTWRAP_GPU_TEST_KEEP")
    if keep:
        shutil.copytree(run, Path(keep) / "coverage", dirs_exist_ok=True)
    assert cp.returncode in (0, 1), cp.stderr[-3000:]
    rep = subprocess.run([sys.executable, "-m", "nsightwrap", "report", str(run), "--format", "json", "--detail"],
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    if rep.returncode not in (0, 1):  # a report JSON without --detail (older option set)
        rep = subprocess.run([sys.executable, "-m", "nsightwrap", "report", str(run), "--format", "json"],
                             capture_output=True, text=True, timeout=300)  # fmt: skip
    assert rep.returncode in (0, 1), rep.stderr[-2000:]
    benches = [b for b in json.loads(rep.stdout)["benchmarks"] if (b.get("source") or {}).get("kind") == "do_bench"]
    assert len(benches) == 3, [b["name"] for b in benches]
    own = 0
    for b in benches:
        if b["verdict"] in ("no ncu", "no_ncu"):  # the JSON spells verdict words with underscores
            # nsightwrap's own reason, never a filter the user did not write.
            text = " ".join(b.get("notes") or ())
            assert "no ncu:" in text and "--nvtx-include" not in text, text
            continue
        ncu_ns, nsys_ns = b["ncu"]["median_ns"], (b.get("nsys") or {}).get("median_ns")
        if nsys_ns:
            # Its own work: within what the clock and ncu's front end explain of its nsys kernels.
            assert 0.7 < ncu_ns / nsys_ns < 1.5, (b["name"], ncu_ns, nsys_ns)
        own += 1
    # The cap of 1 profiled only the first size in the capped passes: the others came from the
    # coverage pass (or said why not).
    m = json.loads((run / "manifest.json").read_text())
    cover = (m.get("plan") or {}).get("coverage") or {}
    assert own == 3 or cover.get("runs"), (own, cover)
