"""``nsightwrap.label``: name the next captured timing (or every one inside a ``with`` block)."""

from __future__ import annotations

from types import TracebackType

from nsightwrap.capture.state import layer


class label:  # noqa: N801 - used like a function: nw.label("mm 64x4096")
    """Name the captured timings of this thread.

    ``nw.label("mm small")`` on the line before a ``do_bench`` call, a ``Timer`` measurement or a
    CUDA-event loop names the next timing the capture layer records (``mm small``, then
    ``mm small #2`` if the name comes again). ``with nw.label("mm small"):`` names every timing
    made inside the block. Outside ``nsightwrap profile`` it does nothing.
    """

    def __init__(self, name: str) -> None:
        self.name = str(name)
        L = layer()
        if L is not None:
            L.local.pending_label = self.name

    def __enter__(self) -> label:
        L = layer()
        if L is not None:
            if getattr(L.local, "pending_label", None) == self.name:
                L.local.pending_label = None
            stack = getattr(L.local, "label_stack", None)
            if stack is None:
                stack = L.local.label_stack = []
            stack.append(self.name)
        return self

    def __exit__(
        self, typ: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        L = layer()
        stack = getattr(L.local, "label_stack", None) if L is not None else None
        if stack:
            stack.pop()
