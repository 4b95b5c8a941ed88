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
