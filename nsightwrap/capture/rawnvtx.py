"""The NVTX library's own push/pop, bound before the mirror patches them.

The layer's ranges (``nsightwrap.capture.ranges``) go through these, so that they are never
mirrored themselves; the mirror (``nsightwrap.capture.nvtxmirror``) binds them when it patches.
Until then they call the domain's methods, which are still the library's.
"""

from __future__ import annotations

from typing import Any

#: The library's push/pop functions, bound by ``bind`` before any patch.
_RAW: dict[str, Any] = {}


def bind(push: Any, pop: Any) -> None:
    """Keep the library's ``Domain.push_range``/``pop_range`` (the first binding wins)."""
    _RAW.setdefault("push", push)
    _RAW.setdefault("pop", pop)


def raw_push(domain: Any, attributes: Any) -> None:
    """Push one range on ``domain`` through the library, past any mirror patch."""
    fn = _RAW.get("push")
    if fn is not None:
        fn(domain, attributes)
    else:
        domain.push_range(attributes)


def raw_pop(domain: Any) -> None:
    """Pop one range of ``domain`` through the library, past any mirror patch."""
    fn = _RAW.get("pop")
    if fn is not None:
        fn(domain)
    else:
        domain.pop_range()
