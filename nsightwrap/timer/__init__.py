"""The in-process timer (``nsightwrap.bench``): sample loop, result type, statistics, clocks.

Imported inside the user's process. It imports only ``nsightwrap.core``, numpy, nvtx, NVML and
(lazily, on the first measurement) torch and Triton: nothing from ``parsers``, ``analysis`` or
``export``.

Modules: ``loop`` (``bench``: warm-up, held queue, flush, events, stopping), ``gpu`` (per-process
GPU state), ``result`` (``BenchResult``), ``stats`` (statistics and the stopping rule), ``nvml``
(NVML clock sampling), ``stamps`` (each sample's SM clock
from ``clock64`` and ``globaltimer``), ``kerneltime`` (the CUPTI kernel-only reading), ``sweep``
(``benchmark``, ``Region``), ``sidecar`` (the file the plain pass leaves for the analysis).
"""

from nsightwrap.timer.loop import bench, current_pass
from nsightwrap.timer.result import BenchResult, bench_name
from nsightwrap.timer.sidecar import sidecar_path, write_sidecar
from nsightwrap.timer.sweep import Region, Sweep, benchmark, sweep_points

__all__ = [
    "BenchResult",
    "Region",
    "Sweep",
    "bench",
    "bench_name",
    "benchmark",
    "current_pass",
    "sidecar_path",
    "sweep_points",
    "write_sidecar",
]
