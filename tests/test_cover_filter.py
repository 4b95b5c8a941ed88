"""The coverage pass's NVTX filter: one ``--nvtx-include`` per domain (ncu honoured one of several
on the H100: studies/cover_probe), matching every asked benchmark's iteration ranges and nothing
outside them. ncu's filter regexes are ECMAScript-like; the features used here (escapes, groups,
alternation, classes) read the same in Python's ``re``."""

from __future__ import annotations

import re
from pathlib import Path

from nsightwrap.core.contract import ncu_benchmarks_filter
from nsightwrap.run.clocksweep import cover_argv


def _includes(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--nvtx-include"]


def _matches(include: str, domain: str, stack: str) -> bool:
    """Whether ``include`` (``regex:[domain@]pattern``) selects a kernel under range ``stack``."""
    body = include.removeprefix("regex:")
    dom, _, pat = body.partition("@") if "@" in body else ("", "", body)
    return dom == domain and re.fullmatch(pat, stack + "/") is not None


def test_one_filter_per_domain_matches_each_benchmark_and_no_other_range() -> None:
    benches = [
        ("nsightwrap:small_things.py:25 do_bench #3", "iter"),
        ("nsightwrap:mm[M=64] (a|b)", "iter"),
        ("nsightwrap_nvtx:relu 4M fp32", "iter"),
        ("nsightwrap:small_things.py:41 cuda_events #1", "iter"),
    ]
    inc = _includes(ncu_benchmarks_filter(benches))
    assert len(inc) == 2 and sorted(i.split("@")[0] for i in inc) == ["regex:nsightwrap", "regex:nsightwrap_nvtx"]
    for path, prefix in benches:
        dom, _, name = path.partition(":")
        assert sum(_matches(i, dom, f"{name}/{prefix}7") for i in inc) == 1, path
        assert not any(_matches(i, dom, f"{name}/flush") for i in inc)  # the loop's flush, outside iter<k>
        assert not any(_matches(i, dom, f"{name}x/{prefix}7") for i in inc)
    # A benchmark not asked for, and regex metacharacters taken as text.
    assert not any(_matches(i, "nsightwrap", "small_things.py:25 do_bench #1/iter0") for i in inc)
    assert not any(_matches(i, "nsightwrap", "mm[M=64] a/iter0") for i in inc)
    assert not any(_matches(i, "nsightwrap", "small_thingsXpy:41 cuda_events #1/iter0") for i in inc)


def test_nested_ranges_keep_slashes_outside_the_groups() -> None:
    inc = _includes(ncu_benchmarks_filter([("softmax_mlp/softmax_mlp", "iter"), ("mm_small/mm_small", "iter")]))
    assert inc == ["regex:(softmax_mlp|mm_small)/(softmax_mlp|mm_small)/iter[0-9]+/"]
    assert _matches(inc[0], "", "mm_small/mm_small/iter3") and not _matches(inc[0], "", "mm_small/iter3")
    # One benchmark alone: no group.
    assert _includes(ncu_benchmarks_filter([("softmax_mlp/softmax_mlp", "iter")])) == ["regex:softmax_mlp/softmax_mlp/iter[0-9]+/"]


def test_the_coverage_argv_replaces_the_ncu_pass_filter_with_one_per_domain() -> None:
    ncu = ["ncu", "--clock-control", "none", "--nvtx", "--nvtx-include", "regex:nsightwrap@.*/iter[0-9]+/",
           "--nvtx-include", "regex:nsightwrap_nvtx@.*/iter[0-9]+/", "--filter-mode", "per-launch-config",
           "--launch-count", "1", "--metrics", "gpu__time_duration.sum", "-o", "r", "-f", "python3", "b.py"]  # fmt: skip
    argv = cover_argv(ncu, Path("/tmp/cover/report"), [("nsightwrap:a", "iter"), ("nsightwrap:b", "iter")])
    assert argv is not None
    assert _includes(argv) == ["regex:nsightwrap@(a|b)/iter[0-9]+/"]
    assert "--filter-mode" not in argv and "--launch-count" not in argv and argv[-2:] == ["python3", "b.py"]
