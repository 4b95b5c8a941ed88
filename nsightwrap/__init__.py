"""nsightwrap: GPU kernel timings you can trust.

Time kernels from Python with the best practices built in (``bench``), profile a script under
Nsight Compute and Nsight Systems (``nsightwrap profile``), and reconcile the numbers at one SM
clock. The timer is imported lazily so that ``import nsightwrap`` never imports torch.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_TIMER_NAMES = ("bench", "benchmark", "BenchResult", "Region")

__all__ = ["__version__", *_TIMER_NAMES]


def __getattr__(name: str) -> Any:
    if name in _TIMER_NAMES:
        from nsightwrap import timer

        return getattr(timer, name)
    raise AttributeError(f"module 'nsightwrap' has no attribute {name!r}")
