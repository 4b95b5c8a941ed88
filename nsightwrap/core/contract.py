"""Names shared by the launcher and the in-process timer (no dependencies: the timer imports it).

``nsightwrap profile`` starts the user's program once per pass and tells the timer, through
these environment variables, where the run directory is and which pass is running.
"""

from __future__ import annotations

#: Absolute path of the run directory of the current ``nsightwrap profile`` run.
ENV_RUN_DIR = "NSIGHTWRAP_RUN_DIR"
#: The pass now running: one of PASSES.
ENV_PASS = "NSIGHTWRAP_PASS"
#: Under the ncu pass, how many measured iterations each benchmark runs (ncu replays each
#: kernel many times, so timings there are meaningless; a few iterations are enough).
ENV_NCU_ITERS = "NSIGHTWRAP_NCU_ITERS"

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
