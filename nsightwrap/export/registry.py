"""One shape for every exporter: ``render(result) -> str | bytes``, registered by (kind, format).

A result kind is the data an exporter reads: ``report`` (``analysis.model.RunResult``),
``compare`` (``compare.verdicts.Comparison``), ``device`` (``device.result.DeviceFile``), and the
report's sections, each a ``RunResult`` too: ``gap``, ``power``, ``shards``, ``roofline``. A format
is one module that holds every kind's exporter for it (hyperfine's one file per format):

=========  =====================================  ======================================
format     module                                 kinds
=========  =====================================  ======================================
terminal   ``export.terminal`` (rich, as text)    report, compare, device
md         ``export.markdown``                    report, compare, device, sections
html       ``export.html`` (charts: ``charts``)   report, device, sections
json       ``export.jsonio``                      report, compare, device
junit      ``export.junit``                       compare
=========  =====================================  ======================================

A new format is a new module listed in ``FORMAT_MODULES`` whose functions carry
``@exporter(kind, format)``; a new result kind is one function in each format module. Modules
load on first use, so asking for Markdown never imports matplotlib or lxml.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

#: Where each format's exporters live (imported on first use).
FORMAT_MODULES = {
    "terminal": "nsightwrap.export.terminal",
    "md": "nsightwrap.export.markdown",
    "html": "nsightwrap.export.html",
    "json": "nsightwrap.export.jsonio",
    "junit": "nsightwrap.export.junit",
}
#: The result kinds exporters render.
KINDS = ("report", "compare", "device", "gap", "power", "shards", "roofline")


class Render(Protocol):
    """What every exporter is: one result in, the whole output out (text, or bytes for XML)."""

    def __call__(self, result: Any, /) -> str | bytes: ...


@dataclass(frozen=True)
class Exporter:
    """One registered exporter: the kind it reads, its format, and the function."""

    kind: str
    format: str
    render: Render


_REGISTRY: dict[tuple[str, str], Exporter] = {}

F = TypeVar("F", bound=Callable[..., Any])


def exporter(kind: str, fmt: str) -> Callable[[F], F]:
    """Register the decorated function as the ``fmt`` exporter of ``kind`` (it is returned as is)."""
    if kind not in KINDS or fmt not in FORMAT_MODULES:
        raise ValueError(f"unknown exporter ({kind!r}, {fmt!r}): kinds {KINDS}, formats {tuple(FORMAT_MODULES)}")

    def register(fn: F) -> F:
        _REGISTRY[(kind, fmt)] = Exporter(kind, fmt, fn)
        return fn

    return register


def _load(fmt: str) -> None:
    if fmt in FORMAT_MODULES:
        importlib.import_module(FORMAT_MODULES[fmt])


def get(kind: str, fmt: str) -> Exporter:
    """The exporter of ``kind`` in ``fmt``; LookupError naming the formats ``kind`` has."""
    _load(fmt)
    try:
        return _REGISTRY[(kind, fmt)]
    except KeyError:
        raise LookupError(f"no {fmt!r} exporter for {kind!r}; it has: {', '.join(formats(kind)) or 'none'}") from None


def render(kind: str, fmt: str, result: Any) -> str | bytes:
    """``result`` (of ``kind``) rendered in ``fmt``."""
    return get(kind, fmt).render(result)


def formats(kind: str) -> tuple[str, ...]:
    """Every format ``kind`` can be rendered in (loads every format module)."""
    for fmt in FORMAT_MODULES:
        _load(fmt)
    return tuple(f for f in FORMAT_MODULES if (kind, f) in _REGISTRY)
