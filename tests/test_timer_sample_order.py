"""The order of one timing sample (``timer.gpu.window_ns``), over a recording stand-in of torch:
the flush, then the hold, then the stamp, the window, the second stamp, and the synchronize."""

from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Any

import nsightwrap
from nsightwrap.timer.gpu import window_ns


class _Event:
    def __init__(self, log: list[Any], name: str) -> None:
        self.log, self.name = log, name

    def record(self) -> None:
        self.log.append(self.name)

    def synchronize(self) -> None:
        self.log.append("synchronize")

    def elapsed_time(self, other: Any) -> float:
        return 0.0042  # ms


class _Stamps:
    capacity = 8

    def __init__(self, log: list[Any]) -> None:
        self.log = log

    def before(self, slot: int) -> None:
        self.log.append(("stamp before", slot))

    def after(self, slot: int) -> None:
        self.log.append(("stamp after", slot))


def _sample(flush_first: bool | None) -> tuple[list[Any], float]:
    log: list[Any] = []
    torch = SimpleNamespace(cuda=SimpleNamespace(_sleep=lambda cycles: log.append(("sleep", cycles))))
    gpu = SimpleNamespace(torch=torch, flush=lambda: log.append("flush"))
    kw = {} if flush_first is None else {"flush_first": flush_first}
    ns = window_ns(
        gpu, lambda: log.append("fn"), _Event(log, "start"), _Event(log, "end"),  # type: ignore[arg-type]
        hold_cycles=1000, flush=True, stamps=_Stamps(log), index=3, nvtx=False, **kw,
    )  # fmt: skip
    return log, ns


def test_a_sample_flushes_then_holds_then_times() -> None:
    log, ns = _sample(None)
    assert log == [
        "flush", ("sleep", 1000), ("stamp before", 3), "start", "fn", "end", ("stamp after", 3), "synchronize",
    ]  # fmt: skip
    assert ns == 4200.0


def test_the_old_order_is_still_there_for_the_study() -> None:
    log, _ = _sample(False)
    assert log[:2] == [("sleep", 1000), "flush"]


def test_the_default_warm_up_is_short() -> None:
    # A long back-to-back warm-up pulled a GEMM's SM clock down for the samples after it.
    assert inspect.signature(nsightwrap.bench).parameters["warmup_s"].default == 0.005
