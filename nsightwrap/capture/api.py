"""``nsightwrap.label``: name the next captured timing (or every one inside a ``with`` block);
``nsightwrap.uncaptured``: run a block as without the capture layer."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

from nsightwrap.capture import state
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


@contextmanager
def uncaptured() -> Iterator[None]:
    """Run a block as the script runs without ``nsightwrap profile``.

    ``with nw.uncaptured():`` takes the capture layer's hooks out of ``triton.testing``,
    ``torch.utils.benchmark.Timer`` and ``torch.cuda.Event`` for the length of the block (in every
    thread): timings made inside are not captured and run the libraries' own code, nothing of the
    layer in between. Use it for timings the report should leave out, or to check that the layer
    changes nothing (benchmarks/capture_overhead.py). Outside ``nsightwrap profile`` it does nothing.
    """
    with state.uncaptured():
        yield
