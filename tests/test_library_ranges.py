"""NVTX ranges that libraries open inside a script's calls are not the script's benchmarks."""

from __future__ import annotations

from pathlib import Path

import pytest

from nsightwrap.analysis.captured import is_library_range
from nsightwrap.analysis.load import analyze

RUNS = Path(__file__).resolve().parent.parent / "fixtures" / "runs"


@pytest.mark.parametrize(
    ("path", "domain"),
    [
        ("CCCL:cub::DeviceRadixSort::SortKeys", "CCCL"),  # inside torch.sort
        ("NCCL:ncclAllReduce", "NCCL"),
        ("cuBLAS:gemm", "cuBLAS"),
        ("aten::mm", None),
    ],
)
def test_library_ranges_are_recognised(path: str, domain: str | None) -> None:
    assert is_library_range(path, domain)


@pytest.mark.parametrize(
    ("path", "domain"), [("mydomain:myrange", "mydomain"), ("step/mm", None), ("outer/inner", None)]
)
def test_a_scripts_own_ranges_are_not(path: str, domain: str | None) -> None:
    assert not is_library_range(path, domain)


def test_the_scripts_own_ranges_stay_benchmarks() -> None:
    r = analyze(RUNS / "h200-nvtx")
    ranges = [b.name for b in r.benchmarks if b.source.get("kind") == "nvtx_range"]
    assert ranges and not any(is_library_range(n, None) for n in ranges)
