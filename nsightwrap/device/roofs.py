"""The roofs a device file gives (memory and compute peaks), and NVIDIA's datasheet figures for
the GPUs nsightwrap knows, used only when nothing was measured (and then marked ``datasheet``).

Compute peaks are at a clock: a measured peak at the SM clock measured during it, a datasheet
peak at the GPU's boost clock. A kernel that ran at another clock is held against
``peak * f_kernel / f_peak`` (tensor and FMA throughput follow the SM clock); the memory roof
does not follow the SM clock. Device-property formulas (SMs x clock x ...) are never used: they
are wrong for tensor cores, for HBM3e and for a GPU below its boost clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from nsightwrap.device.result import DeviceFile

#: Compute roofs by name, in the order shown. ``int8`` is integer ops per second.
COMPUTE_ROOFS = ("bf16", "fp16", "tf32", "fp8", "int8", "fp32")
#: Which measurement is the memory roof, in order of preference when several were measured: the
#: highest sustained HBM bandwidth of read, copy (read + write counted) and write.
MEMORY_ROOFS = ("hbm_read", "hbm_copy", "hbm_write")


@dataclass(frozen=True)
class Peak:
    """One compute roof: FLOP/s (OP/s for int8) at ``sm_clock_hz``."""

    name: str
    flops_per_s: float
    sm_clock_hz: float | None


@dataclass(frozen=True)
class DeviceRoofs:
    """The roofs of one GPU and where they come from (``measured`` or ``datasheet``)."""

    source: str
    gpu_name: str
    gpu_uuid: str | None
    memory_bytes_per_s: float | None
    memory_name: str
    l2_bytes_per_s: float | None
    peaks: tuple[Peak, ...]
    where: str = ""
    mode: str = ""
    created: str = ""

    def peak(self, name: str) -> Peak | None:
        """The compute roof ``name``, or None when it is not known."""
        return next((p for p in self.peaks if p.name == name), None)


def measured_roofs(dev: DeviceFile, where: str = "") -> DeviceRoofs:
    """The roofs of a device file: the best HBM bandwidth, L2 read, and every measured peak."""
    bw = [m for n in MEMORY_ROOFS if (m := dev.get("bandwidth", n)) is not None and m.measured]
    best = max(bw, key=lambda m: m.value or 0.0) if bw else None
    l2 = dev.get("bandwidth", "l2_read")
    peaks = tuple(
        Peak(m.name, float(m.value or 0.0), m.sm_clock_hz)
        for name in COMPUTE_ROOFS
        if (m := dev.get("compute", name)) is not None and m.measured
    )
    return DeviceRoofs(
        source="measured",
        gpu_name=dev.gpu.name,
        gpu_uuid=dev.gpu.uuid,
        memory_bytes_per_s=best.value if best else None,
        memory_name=best.name if best else "",
        l2_bytes_per_s=l2.value if l2 is not None and l2.measured else None,
        peaks=peaks,
        where=where,
        mode=dev.mode,
        created=dev.created,
    )


@dataclass(frozen=True)
class _Sheet:
    label: str
    boost_hz: float  # the clock of the fp32 figure (SMs x 128 FMA x 2 x boost_hz)
    hbm_bytes_per_s: float
    dense: dict[str, float]  # roof name -> FLOP/s (OP/s) dense, no sparsity
    #: The clock NVIDIA's tensor-core figures are computed at, which is not the boost clock: the
    #: SXM parts' 989.4 TFLOP/s bf16 is 132 SMs x 4096 FLOP/clock x 1.83 GHz (fp32's 66.9 is at
    #: 1.98 GHz); PCIe 756.5 = 114 x 4096 x 1.62 GHz; NVL 835.5 = 132 x 4096 x 1.545 GHz.
    tensor_hz: float = 0.0

    def clock(self, roof: str) -> float:
        return self.boost_hz if roof == "fp32" or not self.tensor_hz else self.tensor_hz


#: NVIDIA's published dense (no sparsity) peaks at the boost clock: H100 and H200 datasheets.
_SHEETS: dict[str, _Sheet] = {
    "h200": _Sheet("NVIDIA H200 SXM datasheet", 1.98e9, 4.8e12,
                   {"bf16": 989.4e12, "fp16": 989.4e12, "tf32": 494.7e12, "fp8": 1978.9e12,
                    "int8": 1978.9e12, "fp32": 66.9e12}, tensor_hz=1.83e9),
    "h200 nvl": _Sheet("NVIDIA H200 NVL datasheet", 1.785e9, 4.8e12,
                       {"bf16": 835.5e12, "fp16": 835.5e12, "tf32": 417.5e12, "fp8": 1670.5e12,
                        "int8": 1670.5e12, "fp32": 60.0e12}, tensor_hz=1.545e9),
    "h100 sxm": _Sheet("NVIDIA H100 SXM datasheet", 1.98e9, 3.35e12,
                       {"bf16": 989.4e12, "fp16": 989.4e12, "tf32": 494.7e12, "fp8": 1978.9e12,
                        "int8": 1978.9e12, "fp32": 66.9e12}, tensor_hz=1.83e9),
    "h100 pcie": _Sheet("NVIDIA H100 PCIe datasheet", 1.755e9, 2.0e12,
                        {"bf16": 756.5e12, "fp16": 756.5e12, "tf32": 378.0e12, "fp8": 1513.0e12,
                         "int8": 1513.0e12, "fp32": 51.2e12}, tensor_hz=1.62e9),
    "h100 nvl": _Sheet("NVIDIA H100 NVL datasheet", 1.785e9, 3.9e12,
                       {"bf16": 835.5e12, "fp16": 835.5e12, "tf32": 417.5e12, "fp8": 1670.5e12,
                        "int8": 1670.5e12, "fp32": 60.0e12}, tensor_hz=1.545e9),
}  # fmt: skip


def _sheet_key(gpu_name: str) -> str | None:
    n = gpu_name.lower()
    if "h200" in n:
        return "h200 nvl" if "nvl" in n else "h200"
    if "h100" in n:
        if "nvl" in n:
            return "h100 nvl"
        if "pcie" in n:
            return "h100 pcie"
        return "h100 sxm"  # "NVIDIA H100 80GB HBM3" is the SXM part
    return None


def datasheet_roofs(gpu_name: str | None, uuid: str | None = None) -> DeviceRoofs | None:
    """Datasheet roofs of a GPU nsightwrap knows by name (H100, H200), else None."""
    key = _sheet_key(gpu_name or "")
    if key is None:
        return None
    s = _SHEETS[key]
    return DeviceRoofs(
        source="datasheet",
        gpu_name=str(gpu_name),
        gpu_uuid=uuid,
        memory_bytes_per_s=s.hbm_bytes_per_s,
        memory_name="hbm",
        l2_bytes_per_s=None,
        peaks=tuple(Peak(n, s.dense[n], s.clock(n)) for n in COMPUTE_ROOFS if n in s.dense),
        where=s.label,
    )
