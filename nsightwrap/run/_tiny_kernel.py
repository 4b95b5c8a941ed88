"""One tiny kernel on one GPU through the CUDA driver API (ctypes), for ``nsightwrap doctor``.

``python -m nsightwrap.run._tiny_kernel [ORDINAL]`` JIT-compiles an empty PTX kernel, launches it
once and exits 0; ncu run around it shows whether the GPU's performance counters can be read
and whether ncu can lock the clocks. No torch, no CUDA toolkit: only the driver's libcuda, so it
starts in well under a second. On failure it prints one line naming the driver call and exits 1.
"""

from __future__ import annotations

import ctypes
import sys

PTX = b"""
.version 7.0
.target sm_50
.address_size 64
.visible .entry nsightwrap_doctor_tiny()
{
    ret;
}
"""


def main(argv: list[str]) -> int:
    ordinal = int(argv[0]) if argv else 0
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        print(f"tiny kernel: no CUDA driver: {exc}")
        return 1

    def call(name: str, *args: object) -> None:
        rc = getattr(cuda, name)(*args)
        if rc != 0:
            text = ctypes.c_char_p()
            cuda.cuGetErrorString(rc, ctypes.byref(text))
            raise RuntimeError(f"{name} failed: {text.value.decode() if text.value else rc}")

    dev, ctx, mod, fn = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    try:
        call("cuInit", 0)
        call("cuDeviceGet", ctypes.byref(dev), ordinal)
        call("cuDevicePrimaryCtxRetain", ctypes.byref(ctx), dev)
        call("cuCtxSetCurrent", ctx)
        call("cuModuleLoadData", ctypes.byref(mod), ctypes.c_char_p(PTX))
        call("cuModuleGetFunction", ctypes.byref(fn), mod, b"nsightwrap_doctor_tiny")
        u = ctypes.c_uint
        call("cuLaunchKernel", fn, u(1), u(1), u(1), u(32), u(1), u(1), u(0), None, None, None)
        call("cuCtxSynchronize")
    except RuntimeError as exc:
        print(f"tiny kernel: {exc}")
        return 1
    print("tiny kernel: ran")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
