"""The GPU's figures the parts are bounded by: its L2 size and its DRAM bandwidth (``DeviceLimits``).

A dirty L2 can cost a kernel at most the write-back of the dirty lines it evicts (no more than the
L2, no more than the lines its own DRAM traffic brings in): ``min(L2, dram bytes) / bandwidth``;
on an H200, 60 MiB / 4.8 TB/s is 13.1 us. A warm L2 can save a kernel at most its DRAM traffic in
ncu's clean replay, ``dram bytes / bandwidth``. The L2 size comes from the device file of
``nsightwrap device`` (``gpu.l2_bytes``), else from the timer's own device record (the CUDA
device properties); the bandwidth from the device file's best measured HBM bandwidth, else from
NVIDIA's datasheet, and ``source`` says which.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class DeviceLimits:
    """The run's GPU: L2 size (bytes) and DRAM bandwidth (bytes/s), each with where it came from."""

    l2_bytes: float | None = None
    l2_source: str = "none"
    dram_bytes_per_s: float | None = None
    dram_source: str = "none"

    @property
    def source(self) -> str:
        """Where both figures came from, in one phrase."""
        return f"L2 size from {self.l2_source}, DRAM bandwidth from {self.dram_source}"

    def traffic_ns(self, nbytes: float | None) -> float | None:
        """The time ``nbytes`` of DRAM traffic take at the DRAM bandwidth (None where unknown)."""
        if nbytes is None or not self.dram_bytes_per_s or nbytes < 0:
            return None
        return nbytes / self.dram_bytes_per_s * 1e9

    def write_back_ns(self, nbytes: float | None = None) -> float | None:
        """The write-back of a whole dirty L2 at the DRAM bandwidth, or of ``nbytes`` where fewer."""
        if not self.l2_bytes:
            return None
        return self.traffic_ns(self.l2_bytes if nbytes is None else min(self.l2_bytes, nbytes))


def device_limits(
    roofs: Any, sidecars: Sequence[tuple[Any, Mapping[str, Any]]], device_l2_bytes: float | None = None
) -> DeviceLimits:
    """The run's ``DeviceLimits`` from its roofs (``model.Roofs``: measured or datasheet memory
    bandwidth), the L2 size of the device file (``device_l2_bytes``) or of the timer's device record."""
    l2: float | None = device_l2_bytes if device_l2_bytes else None
    l2_src = "the device file (nsightwrap device)" if l2 else "none"
    if l2 is None:
        for _, doc in sidecars:
            dev = doc.get("device")
            if isinstance(dev, Mapping) and isinstance(dev.get("l2_bytes"), (int, float)) and dev["l2_bytes"] > 0:
                l2, l2_src = float(dev["l2_bytes"]), "the CUDA device properties the timer recorded"
                break
    bw = getattr(roofs, "memory_bytes_per_s", None)
    src = getattr(roofs, "source", "none")
    if not bw:
        return DeviceLimits(l2, l2_src)
    where = (
        f"the device file's {getattr(roofs, 'memory_name', '') or 'HBM'} measurement"
        if src == "measured"
        else f"{getattr(roofs, 'where', '') or 'the datasheet'} (not measured on this GPU)"
    )
    return DeviceLimits(l2, l2_src, float(bw), where)
