"""nsightwrap: GPU kernel timings you can trust.

Time kernels from Python with the best practices built in (``bench``), profile a script under
Nsight Compute and Nsight Systems (``nsightwrap profile``), and reconcile the numbers at one SM
clock. In a notebook, ``load_run``, ``read_ncu`` and ``read_nsys`` give the analysis and the
parsed reports as DataFrames. Everything is imported lazily, so ``import nsightwrap`` imports
neither torch nor pandas.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_LAZY = {
    "bench": "nsightwrap.timer",
    "benchmark": "nsightwrap.timer",
    "BenchResult": "nsightwrap.timer",
    "Region": "nsightwrap.timer",
    "label": "nsightwrap.capture.api",
    "uncaptured": "nsightwrap.capture.api",
    "load_run": "nsightwrap.notebook",
    "read_ncu": "nsightwrap.notebook",
    "read_nsys": "nsightwrap.notebook",
    "Run": "nsightwrap.notebook",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nsightwrap' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(__all__)
