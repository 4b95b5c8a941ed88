"""Microbenchmarks of the GPU's ceilings (bandwidth, latency, launch, compute), run with
nsightwrap's timer, and the device file they leave (docs/device.md).

Modules: ``measure`` (the microbenchmarks; torch and triton imported only while measuring),
``kernels`` (their Triton kernels), ``power`` (NVML power draw and other processes), ``result``
(the frozen device-file data), ``store`` (the versioned JSON file and the per-GPU cache), ``roofs``
(the roofs a device file gives; datasheet peaks). Runs inside a process with torch; imports
``core`` and ``timer`` only, and the analysis and exporters read ``result``, ``store`` and
``roofs`` without a GPU.
"""
