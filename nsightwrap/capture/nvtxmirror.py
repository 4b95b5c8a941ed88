"""The user's own NVTX ranges under the ncu pass: each of the first ``--ncu-iters`` instances of a
range gets a mirror range ``nsightwrap_nvtx@<path>/iter<k>/`` on the same thread.

ncu's NVTX filter cannot pick the k-th instance of a range, and nsightwrap cannot know the
names of a script's ranges before it runs. The mirror gives both: the default ncu filter
(``contract.ncu_default_filter``) profiles the kernels of the first few instances of every range
the script opens through Python (the ``nvtx`` package: ``Domain.push_range`` / ``start_range``,
``nvtx.push_range``, ``nvtx.annotate``; ``torch.cuda.nvtx``), and the analysis knows which
instance each kernel ran in. Only the ncu pass is patched; the plain and nsys passes see the
user's ranges untouched (nsys attributes every instance itself). Ranges opened from C/C++ are
not seen: for those ``--nvtx-include`` with the filters nsightwrap prints is the way.

A start/end range is mirrored on the thread that started it; ended on another thread, its mirror
is closed at that thread's next NVTX call (ncu attributes kernels per launching thread anyway).
"""

from __future__ import annotations

import threading
from typing import Any

from nsightwrap.capture import ranges, rawnvtx
from nsightwrap.core import contract


class Mirror:
    """Per-process mirror state: instance counts per range path, per-thread stacks."""

    def __init__(self, iters: int) -> None:
        self.iters = iters
        self.counts: dict[str, int] = {}
        self.local = threading.local()
        self.lock = threading.Lock()
        self.open_ids: dict[Any, tuple[int, int]] = {}  # start/end id -> (thread ident, depth pushed)
        self.stale: dict[int, int] = {}  # thread ident -> mirror ranges to pop there

    def _stacks(self) -> dict[str | None, list[tuple[str, int]]]:
        s = getattr(self.local, "stacks", None)
        if s is None:
            s = self.local.stacks = {}
        return s

    def _drain(self) -> None:
        me = threading.get_ident()
        n = self.stale.pop(me, 0) if self.stale else 0
        if n:
            ranges.pop(n, contract.MIRROR_DOMAIN)

    def _open(self, path: str) -> int:
        with self.lock:
            k = self.counts.get(path, 0)
            self.counts[path] = k + 1
        if k >= self.iters:
            return 0
        return ranges.push((contract.mirror_range_name(path), f"{contract.ITER_PREFIX}{k}"), contract.MIRROR_DOMAIN)

    def pushed(self, domain: str | None, message: str | None) -> None:
        """The user pushed range ``message`` in ``domain`` (None: the default domain)."""
        if domain in (contract.NVTX_DOMAIN, contract.MIRROR_DOMAIN):
            return
        self._drain()
        stack = self._stacks().setdefault(domain, [])
        names = [n for n, _ in stack] + [message or ""]
        path = (f"{domain}:" if domain else "") + "/".join(names)
        stack.append((message or "", self._open(path)))

    def popped(self, domain: str | None) -> None:
        if domain in (contract.NVTX_DOMAIN, contract.MIRROR_DOMAIN):
            return
        stack = self._stacks().get(domain)
        if not stack:
            return
        _, n = stack.pop()
        if n:
            ranges.pop(n, contract.MIRROR_DOMAIN)
        self._drain()

    def started(self, domain: str | None, message: str | None, range_id: Any) -> None:
        if domain in (contract.NVTX_DOMAIN, contract.MIRROR_DOMAIN):
            return
        self._drain()
        n = self._open((f"{domain}:" if domain else "") + (message or ""))
        if n:
            with self.lock:
                self.open_ids[(domain, range_id)] = (threading.get_ident(), n)

    def ended(self, domain: str | None, range_id: Any) -> None:
        with self.lock:
            got = self.open_ids.pop((domain, range_id), None)
        if got is None:
            return
        tid, n = got
        if tid == threading.get_ident():
            ranges.pop(n, contract.MIRROR_DOMAIN)
        else:
            with self.lock:
                self.stale[tid] = self.stale.get(tid, 0) + n


_mirror: Mirror | None = None


def _message(attributes: Any, kwargs: dict[str, Any]) -> str | None:
    m = kwargs.get("message")
    if m is None and attributes is not None:
        m = getattr(attributes, "message", None)
    m = getattr(m, "string", m)  # nvtx's RegisteredString
    return None if m is None else str(m)


def _domain_name(d: Any) -> str | None:
    n = getattr(d, "name", None)
    if n is None:
        h = getattr(d, "handle", None)
        n = getattr(h, "name", None)
    return str(n) if n else None


def patch_nvtx(nvtx_module: Any, iters: int) -> None:
    """Mirror the ranges opened through the ``nvtx`` package (``nvtx.nvtx`` just imported)."""
    global _mirror
    from nsightwrap.capture.state import guarded

    lib = __import__("nvtx._lib.lib", fromlist=["Domain"])
    Domain = lib.Domain
    rawnvtx.bind(Domain.push_range, Domain.pop_range)
    _mirror = _mirror or Mirror(iters)
    m = _mirror
    o_push, o_pop, o_start, o_end = Domain.push_range, Domain.pop_range, Domain.start_range, Domain.end_range

    def push_range(self: Any, attributes: Any = None, **kwargs: Any) -> Any:
        r = o_push(self, attributes, **kwargs)
        with guarded("nvtx mirror"):
            m.pushed(_domain_name(self), _message(attributes, kwargs))
        return r

    def pop_range(self: Any) -> Any:
        with guarded("nvtx mirror"):
            m.popped(_domain_name(self))
        return o_pop(self)

    def start_range(self: Any, attributes: Any = None, **kwargs: Any) -> Any:
        r = o_start(self, attributes, **kwargs)
        with guarded("nvtx mirror"):
            m.started(_domain_name(self), _message(attributes, kwargs), r)
        return r

    def end_range(self: Any, range_id: Any) -> Any:
        with guarded("nvtx mirror"):
            m.ended(_domain_name(self), range_id)
        return o_end(self, range_id)

    Domain.push_range, Domain.pop_range = push_range, pop_range
    Domain.start_range, Domain.end_range = start_range, end_range

    # nvtx.annotate, nvtx.push_range & co. call the library functions with a domain handle.
    mod = nvtx_module
    f_push, f_pop = getattr(mod, "libnvtx_push_range", None), getattr(mod, "libnvtx_pop_range", None)
    f_start, f_end = getattr(mod, "libnvtx_start_range", None), getattr(mod, "libnvtx_end_range", None)
    if f_push is not None and f_pop is not None:

        def lib_push(attributes: Any, handle: Any, *a: Any) -> Any:
            r = f_push(attributes, handle, *a)
            with guarded("nvtx mirror"):
                m.pushed(_domain_name(handle), _message(attributes, {}))
            return r

        def lib_pop(handle: Any, *a: Any) -> Any:
            with guarded("nvtx mirror"):
                m.popped(_domain_name(handle))
            return f_pop(handle, *a)

        mod.libnvtx_push_range, mod.libnvtx_pop_range = lib_push, lib_pop
    if f_start is not None and f_end is not None:

        def lib_start(attributes: Any, handle: Any, *a: Any) -> Any:
            r = f_start(attributes, handle, *a)
            with guarded("nvtx mirror"):  # the library returns (range id, domain handle)
                m.started(_domain_name(handle), _message(attributes, {}), r[0] if isinstance(r, tuple) else r)
            return r

        def lib_end(range_id: Any, *a: Any) -> Any:
            # nvtx.end_range((range_id, domain_handle)) hands both; the handle may come second.
            with guarded("nvtx mirror"):
                handle = a[0] if a else None
                rid = range_id
                if isinstance(range_id, tuple) and len(range_id) == 2:
                    rid, handle = range_id
                m.ended(_domain_name(handle), rid)
            return f_end(range_id, *a)

        mod.libnvtx_start_range, mod.libnvtx_end_range = lib_start, lib_end


def patch_torch_nvtx(mod: Any, iters: int) -> None:
    """Mirror the ranges of ``torch.cuda.nvtx`` (the default domain)."""
    global _mirror
    from nsightwrap.capture.state import guarded

    _mirror = _mirror or Mirror(iters)
    m = _mirror
    o_push, o_pop = getattr(mod, "range_push", None), getattr(mod, "range_pop", None)
    o_start, o_end = getattr(mod, "range_start", None), getattr(mod, "range_end", None)
    if o_push is not None and o_pop is not None:

        def range_push(msg: Any, *a: Any, **k: Any) -> Any:
            r = o_push(msg, *a, **k)
            with guarded("torch nvtx mirror"):
                m.pushed(None, str(msg))
            return r

        def range_pop(*a: Any, **k: Any) -> Any:
            with guarded("torch nvtx mirror"):
                m.popped(None)
            return o_pop(*a, **k)

        range_push.__doc__, range_pop.__doc__ = o_push.__doc__, o_pop.__doc__
        mod.range_push, mod.range_pop = range_push, range_pop
    if o_start is not None and o_end is not None:

        def range_start(msg: Any, *a: Any, **k: Any) -> Any:
            r = o_start(msg, *a, **k)
            with guarded("torch nvtx mirror"):
                m.started(None, str(msg), r)
            return r

        def range_end(range_id: Any, *a: Any, **k: Any) -> Any:
            with guarded("torch nvtx mirror"):
                m.ended(None, range_id)
            return o_end(range_id, *a, **k)

        mod.range_start, mod.range_end = range_start, range_end
