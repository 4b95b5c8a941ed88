"""The layer's own NVTX ranges: ``nsightwrap`` (captured timings) and ``nsightwrap_nvtx`` (mirrors
of the user's ranges under the ncu pass).

Ranges are opened only in the ncu and nsys passes (nothing listens in the plain pass, so a timed
window there holds no NVTX call at all). Event attributes are made once per name: a push costs
one call into the NVTX library. ``nvtx`` is imported, and the layer's domains made, when torch
is imported in those passes (``warm``), never in the plain pass: the first NVTX call of a
process loads the profiler's NVTX hook, and a lazy first use would put that (milliseconds)
inside the first timed window, after its start event.
"""

from __future__ import annotations

from typing import Any

from nsightwrap.capture.rawnvtx import raw_pop, raw_push
from nsightwrap.core import contract

_domains: dict[str, Any] = {}
_attrs: dict[tuple[str, str], Any] = {}
_broken = False


def _domain(name: str) -> Any:
    global _broken
    d = _domains.get(name)
    if d is None and not _broken:
        try:
            import nvtx

            d = nvtx.get_domain(name)
        except Exception:  # noqa: BLE001 - no nvtx: timings are still captured, without ranges
            _broken = True
            return None
        _domains[name] = d
    return d


def warm(mirrors: bool) -> None:
    """Import nvtx and make the layer's domain now, outside any timed window (and the mirrors'
    domain, which only the ncu pass uses)."""
    _domain(contract.NVTX_DOMAIN)
    if mirrors:
        _domain(contract.MIRROR_DOMAIN)


def push(names: tuple[str, ...] | list[str], domain: str = contract.NVTX_DOMAIN) -> int:
    """Push one range per name (outermost first); how many were pushed."""
    d = _domain(domain)
    if d is None or not hasattr(d, "handle"):  # the DummyDomain of an NVTX with no tool attached
        return 0
    for n in names:
        a = _attrs.get((domain, n))
        if a is None:
            a = _attrs[(domain, n)] = d.get_event_attributes(message=n)
        raw_push(d, a)
    return len(names)


def pop(count: int, domain: str = contract.NVTX_DOMAIN) -> None:
    """Pop ``count`` ranges pushed by ``push``."""
    if count <= 0:
        return
    d = _domain(domain)
    if d is None:
        return
    for _ in range(count):
        raw_pop(d)
