"""The scripts of benchmarks/ and studies/ as modules (packages run from the repository root),
for tests of their pure parts and of their recorded data."""

from __future__ import annotations

import importlib
from types import ModuleType


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks.<name>``, or ``studies.<name>`` for a study."""
    try:
        return importlib.import_module(f"benchmarks.{name}")
    except ModuleNotFoundError as err:
        if err.name != f"benchmarks.{name}":
            raise
        return importlib.import_module(f"studies.{name}")
