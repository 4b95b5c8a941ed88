"""Per-sample SM clock on the GPU: (``%globaltimer``, ``%clock64``) of SM 0 before and after each window.

As nvbench's ``gpu_frequency`` does, a tiny kernel (one program per SM; the one on SM 0 writes)
reads the GPU's global nanosecond timer and SM 0's cycle counter just before the start event and
again after the end event; cycles over nanoseconds is the SM clock over the sample. ``%clock64``
is per SM, so both readings of a pair must come from the same SM: SM 0, as in nvbench.

The kernel is a Triton kernel (inline PTX), compiled once per process on first use; without
Triton, or where it fails to build, ``Stamps.load`` returns None with the reason and the timer
falls back to NVML readings aligned to each sample.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

#: The stamp kernel's name as profilers show it (the kernel-time reading splits calls on it).
STAMP_KERNEL = "nsightwrap_stamp"

_state: dict[str, Any] = {}


def clocks_from_stamps(raw: Sequence[int] | np.ndarray) -> tuple[list[float | None], list[float | None]]:
    """Per sample (SM clock in Hz, interval in ns) from the flat stamp buffer.

    ``raw`` holds four int64 per sample: globaltimer and clock64 before, then after. A sample
    whose stamps are missing (0: the program on SM 0 did not run, or the sample was not taken)
    or not increasing gets None.
    """
    a = np.asarray(raw, dtype=np.int64).reshape(-1, 4)
    clocks: list[float | None] = []
    spans: list[float | None] = []
    for gt0, ck0, gt1, ck1 in a.tolist():
        dt, dc = gt1 - gt0, ck1 - ck0
        if gt0 <= 0 or gt1 <= 0 or dt <= 0 or dc <= 0:
            clocks.append(None)
            spans.append(None)
            continue
        clocks.append(dc / dt * 1e9)
        spans.append(float(dt))
    return clocks, spans


class Stamps:
    """The stamp buffer of one measurement and the launches that fill it."""

    def __init__(self, torch: Any, kernel: Any, sm_count: int, device: str, capacity: int) -> None:
        self._torch = torch
        self._kernel = kernel
        self._grid = (max(1, sm_count),)
        self.capacity = capacity
        # Two stamps (globaltimer, clock64) per sample: slot 2i before the window, 2i+1 after;
        # sample ``capacity`` is a spare for windows that are not samples (the empty window).
        self.buf = torch.zeros(4 * (capacity + 1), dtype=torch.int64, device=device)

    @staticmethod
    def load(torch: Any, sm_count: int, device: str, capacity: int) -> tuple[Stamps | None, str | None]:
        """A ``Stamps`` for ``capacity`` samples, or (None, why not)."""
        if "kernel" not in _state:
            try:
                from nsightwrap.timer._stamp_kernel import nsightwrap_stamp

                probe = torch.zeros(4, dtype=torch.int64, device=device)
                nsightwrap_stamp[(max(1, sm_count),)](probe, 0, num_warps=1)  # compiles it
                torch.cuda.synchronize()
                _state["kernel"] = nsightwrap_stamp
                _state["error"] = None if int(probe[0].item()) > 0 else "the program on SM 0 wrote nothing"
            except Exception as exc:  # no Triton, no compiler, an unsupported GPU: fall back to NVML
                _state["kernel"] = None
                _state["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".strip(": ")
        if _state["kernel"] is None:
            return None, f"stamp kernel unavailable ({_state['error']})"
        return Stamps(torch, _state["kernel"], sm_count, device, capacity), None

    def stamp(self, slot: int) -> None:
        """Queue one stamp into ``slot`` on the current stream."""
        self._kernel[self._grid](self.buf, slot, num_warps=1)

    def before(self, i: int) -> None:
        self.stamp(2 * i)

    def after(self, i: int) -> None:
        self.stamp(2 * i + 1)

    def read(self, n: int) -> tuple[list[float | None], list[float | None]]:
        """(clock Hz, interval ns) of samples ``0 .. n-1`` (synchronizes the stream)."""
        n = min(n, self.capacity)
        if n <= 0:
            return [], []
        return clocks_from_stamps(self.buf[: 4 * n].cpu().numpy())


def finite(v: float | None) -> bool:
    """True for a real number (not None, not NaN)."""
    return v is not None and math.isfinite(v)
