"""The GPU's figures the parts are bounded by: its L2 size, DRAM bandwidth and DRAM latency (``DeviceLimits``).

A dirty L2 can cost a kernel at most the write-back of the dirty lines it evicts (no more than the
L2, no more than the lines its own DRAM traffic brings in): ``min(L2, dram bytes) / bandwidth``;
on an H200, 60 MiB / 4.8 TB/s is 13.1 us. A warm L2 can save a kernel at most what its DRAM
traffic costs in ncu's clean replay: the bytes at the bandwidth, ``dram bytes / bandwidth``, plus
the one DRAM latency its first loads wait before any byte arrives (every kernel of ncu's replay
starts on a flushed L2, so each one with DRAM traffic waits it at least once; on a warm L2 the
same loads hit in the L2). A short kernel never reaches the peak bandwidth: for it the latency
is most of what a warm L2 saves (4.2 MB take 0.87 us at an H200's 4.8 TB/s, its HBM latency is
0.34 us). The L2 size comes from the device file of ``nsightwrap device`` (``gpu.l2_bytes``),
else from the timer's own device record (the CUDA device properties); the bandwidth from the
device file's best measured HBM bandwidth, else from NVIDIA's datasheet; the DRAM latency from the
device file's HBM latency, else an H200's as ``nsightwrap device`` measured it; ``source`` says which.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: The DRAM latency where the device file has none measured: an H200's HBM latency (340 ns, random
#: walks of 256 and 512 MiB; fixtures/device/h200.json, docs/device.md). Published figures for
#: other Hopper GPUs are 500-600 cycles (250-300 ns at 1.98 GHz); a lower latency makes a tighter bound.
HBM_LATENCY_NS = 340.0
HBM_LATENCY_SOURCE = "an H200's HBM latency as nsightwrap device measured it (not measured on this GPU)"


@dataclass(frozen=True)
class DeviceLimits:
    """The run's GPU: L2 size (bytes), DRAM bandwidth (bytes/s) and DRAM latency (ns), each with
    where it came from."""

    l2_bytes: float | None = None
    l2_source: str = "none"
    dram_bytes_per_s: float | None = None
    dram_source: str = "none"
    dram_latency_ns: float = HBM_LATENCY_NS
    latency_source: str = HBM_LATENCY_SOURCE

    @property
    def source(self) -> str:
        """Where the figures came from, in one phrase."""
        return (
            f"L2 size from {self.l2_source}, DRAM bandwidth from {self.dram_source}, "
            f"DRAM latency from {self.latency_source}"
        )

    def warm_saving_ns(self, nbytes: float | None, kernels: int) -> float | None:
        """The most a warm L2 can save ``kernels`` kernels that move ``nbytes`` of DRAM traffic in
        ncu's clean replay: the bytes at the DRAM bandwidth plus one DRAM latency per kernel."""
        t = self.traffic_ns(nbytes)
        return None if t is None else t + max(0, kernels) * self.dram_latency_ns

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
    roofs: Any, sidecars: Sequence[tuple[Any, Mapping[str, Any]]], device_l2_bytes: float | None = None,
    device_latency_ns: float | None = None,
) -> DeviceLimits:
    """The run's ``DeviceLimits`` from its roofs (``model.Roofs``: measured or datasheet memory
    bandwidth), the L2 size of the device file (``device_l2_bytes``) or of the timer's device record,
    and the device file's HBM latency (``device_latency_ns``)."""
    measured = device_latency_ns is not None and device_latency_ns > 0
    lat_ns = float(device_latency_ns) if measured and device_latency_ns is not None else HBM_LATENCY_NS
    lat_src = "the device file's HBM latency measurement" if measured else HBM_LATENCY_SOURCE
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
        return DeviceLimits(l2, l2_src, dram_latency_ns=lat_ns, latency_source=lat_src)
    where = (
        f"the device file's {getattr(roofs, 'memory_name', '') or 'HBM'} measurement"
        if src == "measured"
        else f"{getattr(roofs, 'where', '') or 'the datasheet'} (not measured on this GPU)"
    )
    return DeviceLimits(l2, l2_src, float(bw), where, lat_ns, lat_src)
