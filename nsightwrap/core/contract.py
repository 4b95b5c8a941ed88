"""Names shared by the launcher and the in-process timer (no dependencies: the timer imports it).

``nsightwrap profile`` starts the user's program once per pass and tells the timer, through
these environment variables, where the run directory is and which pass is running.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Absolute path of the run directory of the current ``nsightwrap profile`` run.
ENV_RUN_DIR = "NSIGHTWRAP_RUN_DIR"
#: The pass now running: one of PASSES.
ENV_PASS = "NSIGHTWRAP_PASS"
#: Under the ncu pass, how many measured iterations each benchmark runs (ncu replays each
#: kernel many times, so timings there are meaningless; a few iterations are enough).
ENV_NCU_ITERS = "NSIGHTWRAP_NCU_ITERS"
#: Under the nsys pass, the longest timing loop the capture layer lets a ``do_bench`` or
#: ``Timer`` autorange call run, in ms (``nsightwrap profile --nsys-loop-ms``; ``0``: the script's
#: own). The nsys pass reads each iteration's kernels, gaps and clock, not the loop's length, and
#: a trace of every repeat costs minutes to write and read (docs/capture.md).
ENV_NSYS_LOOP_MS = "NSIGHTWRAP_NSYS_LOOP_MS"
#: The default of ``ENV_NSYS_LOOP_MS``: ``triton.testing.do_bench``'s own default ``rep``.
NSYS_LOOP_MS = 100
#: The analysis's cap on the nsys iterations it reads per benchmark (``analysis.load``; 0: every
#: one). A stored analysis records the value it was made with (``analysis.store.StoreKey``).
ENV_NSYS_ITERATIONS = "NSIGHTWRAP_NSYS_ITERATIONS"

#: ``I/N``: this run is shard I (0-based) of N (``nsightwrap profile --shard``); the timer and
#: the capture layer time only the benchmarks ``nsightwrap.core.shard.in_shard`` deals to it.
ENV_SHARD = "NSIGHTWRAP_SHARD"
#: How benchmarks are dealt to shards: ``index`` (round robin in the order reached, default) or
#: ``hash`` (sha1 of the benchmark's key).
ENV_SHARD_BY = "NSIGHTWRAP_SHARD_BY"


PASS_PLAIN = "plain"
PASS_NCU = "ncu"
PASS_NSYS = "nsys"
PASSES = (PASS_PLAIN, PASS_NCU, PASS_NSYS)
#: The plain pass's clock run: the script once more, right after the plain pass, under nsys
#: sampling the GPU's clock with no CUDA trace (``RUN_DIR/plain-clock/``). Its timings are not
#: the run's (sampling moved some host-bound loops: docs/profile.md); each loop's clock is taken
#: from it only where its timing agrees with the plain pass's.
PASS_PLAIN_CLOCK = "plain-clock"

#: NVTX domain of every range the timer opens.
NVTX_DOMAIN = "nsightwrap"
#: Prefix of the per-iteration push/pop range nested in the benchmark's range: the measured
#: call alone runs inside ``<bench>/iter<i>`` (flush and queue-holding work stay outside).
ITER_PREFIX = "iter"

#: Sidecar written by the timer in the plain pass: ``<run dir>/plain/timer-<pid>.json``.
SIDECAR_GLOB = "timer-*.json"
SIDECAR_FORMAT = "nsightwrap-timer"
#: Version of the timer sidecar format (docs/contracts.md lists the fields).
SIDECAR_VERSION = 2

#: Under the ncu pass, ``1`` makes the timer also bracket each measured call with
#: cudaProfilerStart/Stop, so that ``ncu --profile-from-start off`` profiles exactly the measured
#: kernels without relying on an NVTX filter.
ENV_NCU_PROFILER_API = "NSIGHTWRAP_NCU_PROFILER_API"


#: The ``format`` field of a report JSON (its ``version`` is ``analysis.model.FORMAT_VERSION``).
REPORT_FORMAT = "nsightwrap-report"


def _ncu_regex_escape(text: str) -> str:
    # ncu's regex filters are ECMAScript-like; escape only the metacharacters (benchmark names
    # such as "mm[M=64]" carry brackets), never "/" or "@", which ncu reads as separators.
    return "".join("\\" + ch if ch in "\\^$.|?*+()[]{}" else ch for ch in text)


def ncu_iteration_filter(bench: str | None = None) -> list[str]:
    """ncu arguments that profile only kernels inside a timer iteration range.

    That is, push/pop range ``iter<i>`` of domain ``nsightwrap`` nested in the benchmark's range
    (all benchmarks, or only ``bench``), so flush and queue-holding kernels, which run in the
    benchmark range but outside ``iter<i>``, are not profiled. A push/pop filter ends in "/".
    """
    outer = ".*" if bench is None else _ncu_regex_escape(bench)
    return ["--nvtx", "--nvtx-include", f"regex:{NVTX_DOMAIN}@{outer}/{ITER_PREFIX}[0-9]+/"]


def ncu_benchmarks_filter(benchmarks: Sequence[tuple[str, str]]) -> list[str]:
    """ncu arguments that profile only the kernels inside the iteration ranges of ``benchmarks``,
    each given as (range path ``domain:name`` as the analysis spells it, iteration prefix): the
    coverage pass (``nsightwrap profile`` re-profiles benchmarks the capped passes left without
    ncu figures of their own).

    ncu honours one ``--nvtx-include`` per NVTX domain: given one per benchmark of a domain it
    profiled only one benchmark's launches, while one filter with an alternation profiled all of
    them (studies/cover_probe, H100, 2026-12-07: three filters 3 kernels, one alternation 66). So
    the benchmarks of a domain share one filter, each level of their range stacks an alternation
    of the names at that level (regex-escaped; ``/`` separates levels and stays outside the
    groups). Benchmarks of one domain with stacks of different depths need one filter per depth,
    of which ncu may honour one: the analysis says which benchmarks the pass got nothing of."""
    groups: dict[tuple[str, int], list[list[str]]] = {}
    for nvtx_path, iter_prefix in benchmarks:
        dom, _, name = nvtx_path.partition(":") if ":" in nvtx_path else ("", "", nvtx_path)
        levels = [*name.split("/"), iter_prefix]
        cols = groups.setdefault((dom, len(levels)), [[] for _ in levels])
        for col, level in zip(cols, levels, strict=True):
            if level not in col:
                col.append(level)
    out: list[str] = []
    for (dom, _), cols in groups.items():
        parts = [_ncu_regex_escape(c[0]) if len(c) == 1 else "(" + "|".join(map(_ncu_regex_escape, c)) + ")" for c in cols]
        head = f"{dom}@" if dom else ""
        out += ["--nvtx-include", f"regex:{head}{'/'.join(parts)}[0-9]+/"]
    return out


# --- the zero-change capture layer (nsightwrap/capture, docs/capture.md) ----------------------

#: ``1``: load the capture layer in every Python process of the pass (``nsightwrap profile`` sets
#: it with ``PYTHONPATH`` starting at ``capture_boot_dir()``); ``0`` or unset: leave it out.
ENV_CAPTURE = "NSIGHTWRAP_CAPTURE"
#: Site names given on the command line (``--label FILE:LINE=NAME``), as a JSON object
#: ``{"FILE:LINE": "NAME"}``.
ENV_LABELS = "NSIGHTWRAP_LABELS"
#: An ncu pass started early (``nsightwrap profile`` starts the next one while a pass runs): the
#: first Python process of the target, once its capture layer is in, imports the modules of
#: ``ENV_PREIMPORT`` and waits until this file exists before the script's first line runs. The
#: layer takes the variable out of the environment, so the processes the script starts do not wait.
ENV_GO_FILE = "NSIGHTWRAP_GO_FILE"
#: Comma-separated modules the waiting process imports before it waits (``torch``): the 3-4 s of
#: ``import torch`` then overlap the pass before (``Profiler.stage``).
ENV_PREIMPORT = "NSIGHTWRAP_PREIMPORT"
#: The pid of the ``nsightwrap profile`` that started the pass early: a waiting process whose
#: profile has died leaves instead of waiting for ever.
ENV_GO_OWNER = "NSIGHTWRAP_GO_OWNER"
#: Where the first Python process of the plain pass writes what the early start needs to know
#: (``{"imports": [...], "env_before_torch": [...]}``): which of ``PREIMPORTABLE`` the script
#: imported, and which environment variables it set before its ``import torch`` (then torch is
#: not imported early: torch reads some of them, OMP_NUM_THREADS or TORCH_LOGS, at import).
ENV_STARTUP_FILE = "NSIGHTWRAP_STARTUP_FILE"
#: The modules an early-started pass may import before it waits.
PREIMPORTABLE = ("torch", "triton", "triton.testing")
#: Kinds of timing a benchmark can come from (``BenchmarkResult.source["kind"]``).
SOURCE_KINDS = ("nsightwrap_bench", "do_bench", "do_bench_cudagraph", "torch_benchmark", "cuda_events", "nvtx_range")
#: NVTX domain of the ranges that mirror a user's own NVTX ranges under the ncu pass (a domain of
#: its own, so that they never nest inside the ``nsightwrap`` ranges of a captured timing).
MIRROR_DOMAIN = "nsightwrap_nvtx"


def capture_boot_dir() -> str:
    """The folder put first on ``PYTHONPATH`` to load the capture layer: it holds only a
    ``sitecustomize.py`` (which chains to any other ``sitecustomize`` on the path)."""
    import os

    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "capture", "boot")


def safe_range_name(text: str) -> str:
    """A benchmark or range name usable in ncu filters: no ``/`` or ``@`` (ncu's separators), one
    space between words."""
    return " ".join(text.replace("/", "-").replace("@", "-").split()) or "unnamed"


def mirror_range_name(path: str) -> str:
    """Name of the range (domain ``MIRROR_DOMAIN``) that mirrors the user's NVTX range ``path`` (as
    the parsers write it: ``domain:outer/inner``, no prefix in the default domain) under the ncu
    pass; instance ``k`` of it is ``nsightwrap_nvtx@<name>/iter<k>/``."""
    return safe_range_name(path.replace("/", " > "))


def ncu_default_filter() -> list[str]:
    """The ncu filter of a ``profile`` run without ``--nvtx-include``: the iteration ranges of the
    timer and of captured timings, and the first instances of the user's own NVTX ranges, which
    the capture layer mirrors under the ncu pass (``--nvtx-include`` filters are OR-ed)."""
    return [*ncu_iteration_filter(), "--nvtx-include", f"regex:{MIRROR_DOMAIN}@.*/{ITER_PREFIX}[0-9]+/"]


def ncu_nvtx_filter(domain: str | None, names: list[str] | tuple[str, ...], kind: str = "pushpop") -> str:
    """The ``--nvtx-include`` value that selects kernels inside one NVTX range, in ncu's syntax.

    Push/pop ranges (``names``: outermost first) end in ``/``: ``domain@outer/inner/``, or
    ``outer/inner/`` in the default domain. A start/end range takes no ``/``: ``domain@name``, or
    ``name`` in the default domain. A missing domain is written as no domain at all (never the
    ``nan@`` a missing value in a table prints as)."""
    dom = domain if isinstance(domain, str) and domain else None
    head = f"{dom}@" if dom else ""
    if kind == "startend":
        return head + (names[-1] if names else "")
    return head + "".join(f"{n}/" for n in names)


def kernel_time_copies(method: Mapping[str, Any]) -> tuple[float, float | None] | None:
    """The memcpy/memset of one call in a sidecar entry's ``method.kernel_time`` (the timer's
    CUPTI reading): (copies per call, their duration in ns per call or None where the sidecar
    predates it); None when the call made none or the reading was off."""
    kt = method.get("kernel_time")
    if not isinstance(kt, Mapping):
        return None
    count = kt.get("copies_per_call")
    if not isinstance(count, (int, float)) or not count > 0:
        return None
    ns = kt.get("copy_ns_per_call")
    return float(count), float(ns) if isinstance(ns, (int, float)) else None


#: Values of a sidecar entry's ``method.flush`` (the timer's ``write+read``, the flushes a captured
#: timing names) that leave dirty lines in the L2: the next kernel pays their write-back.
DIRTY_FLUSHES = frozenset({"zero", "zero_", "memset", "fill", "dirty"})
#: Values of ``method.flush`` that leave the L2 clean, as ncu's cache control does.
CLEAN_FLUSHES = frozenset({"write+read", "clean", "write_read"})


def uuid_key(uuid: str | None) -> str | None:
    """One GPU UUID as every reader spells it: ``GPU-6F1C...`` (NVML, nvidia-smi) and ``6f1c...``
    (torch) -> ``6f1c...``; None when unknown."""
    if not uuid:
        return None
    key = str(uuid).strip().lower().removeprefix("gpu-")
    return key or None


#: The tensor-op counters every ncu pass collects unless ``nsightwrap profile
#: --no-roofline-counters`` (names of ncu 2025.3 on Hopper; a name a GPU lacks reads n/a, it does
#: not fail the pass): without them a GEMM has no FLOP count for the roofline. They cost 5 more
#: replay passes per kernel (12 -> 17, docs/device.md).
ROOFLINE_NCU_METRICS = (
    "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp16.sum",
    "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
    "sm__ops_path_tensor_src_fp8.sum",
    "sm__ops_path_tensor_src_int8.sum",
)

#: The base pass runs only where some benchmark's measured SM clock (what ncu's durations are
#: carried to) is further than this from the clock ncu ran its kernels at: carrying a duration
#: from f_ncu to f_ref with an elasticity e in [0, 1] moves it by at most |f_ncu / f_ref - 1|, so
#: below this no measured elasticity can move a ratio by more than this (half the default
#: --tolerance). analysis/basepass.py decides.
BASE_CLOCK_GAP = 0.05


#: Reference-clock sources measured on the GPU during the work (nsys's GPC-clock samples inside
#: the benchmark's kernels, the timer's stamps or probe), or given by the user: trusted as the
#: clock of the timed loop. Others (NVML, nvidia-smi samples) are read from the host and can miss
#: the clock under load, so the kernels' own durations under nsys check them.
TRUSTED_CLOCK_SOURCES = ("nsys GPU metrics", "probe", "stamps", "given", "boost", "base")


#: The capture layer's record of ``triton.autotune`` choices, one file per process beside the
#: sidecar: ``RUN_DIR/<pass>/autotune-<pid>.json`` (docs/capture.md, "Autotuned kernels").
AUTOTUNE_FORMAT = "nsightwrap-autotune"
AUTOTUNE_GLOB = "autotune-*.json"


def value_runs(values: Sequence[Any]) -> list[list[Any]]:
    """``values`` as ``[value, count]`` pairs of equal neighbours: a timer's per-sample clocks
    (the same clock for hundreds of samples) in a few pairs (the report JSON's
    ``timer.sample_clock_runs``)."""
    runs: list[list[Any]] = []
    for v in values:
        if runs and runs[-1][0] == v:
            runs[-1][1] += 1
        else:
            runs.append([v, 1])
    return runs


def expand_runs(runs: Any) -> list[Any] | None:
    """The values of ``[value, count]`` pairs, in order; None where ``runs`` is not a list of
    such pairs (a count a positive integer)."""
    if not isinstance(runs, list):
        return None
    out: list[Any] = []
    for r in runs:
        if not (isinstance(r, list) and len(r) == 2 and type(r[1]) is int and r[1] > 0):
            return None
        out += [r[0]] * r[1]
    return out
