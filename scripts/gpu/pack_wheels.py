"""Pack the wheels brought to the GPU machine into one small file, ``.wheels.tar.xz``.

    python3 scripts/gpu/pack_wheels.py .whl .whl-nvbench     # then carry .wheels.tar.xz, .debs, .ref

Wheels are deflated zips of compiled libraries, which xz cannot shrink further; re-stored
uncompressed and packed with xz they take about two thirds of the room, so that the working
tree and the wheels stay under the device's 64 MiB. Shared objects are stripped of their debug
symbols on the way (``strip --strip-unneeded``, where ``strip`` is on PATH: nvtx 0.2.17's five
extension modules shrink from 10.8 to 1.3 MB; ncu-report's come stripped already). pip does not
check RECORD's hashes at install, and the code is the same. ``scripts/gpu/env.sh`` unpacks the file and
installs every folder in it as it would ``.whl/`` (a stored zip is as good a wheel as a deflated
one).
"""

from __future__ import annotations

import lzma
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

#: ``strip``, where it is on PATH (looked up once, not per file of every wheel).
STRIP = shutil.which("strip")


def _stripped(name: str, data: bytes) -> bytes:
    """``data`` without debug symbols where ``name`` is a shared object and ``strip`` is here."""
    strip = STRIP
    if strip is None or not (name.endswith(".so") or ".so." in name) or not data.startswith(b"\x7fELF"):
        return data
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / "lib.so"
        f.write_bytes(data)
        if subprocess.run([strip, "--strip-unneeded", str(f)], capture_output=True, check=False).returncode != 0:
            return data
        return f.read_bytes()


def main(folders: list[str]) -> None:
    out = Path(".wheels.tar.xz")
    with tempfile.TemporaryDirectory() as tmp:
        for folder in folders:
            dest = Path(tmp) / Path(folder).name
            dest.mkdir()
            for whl in sorted(Path(folder).glob("*.whl")):
                with (
                    zipfile.ZipFile(whl) as src,
                    zipfile.ZipFile(dest / whl.name, "w", zipfile.ZIP_STORED) as dst,
                ):
                    for info in src.infolist():
                        dst.writestr(info, _stripped(info.filename, src.read(info)), compress_type=zipfile.ZIP_STORED)
        with tarfile.open(out, "w:xz", preset=9 | lzma.PRESET_EXTREME) as tar:
            for folder in folders:
                tar.add(Path(tmp) / Path(folder).name, arcname=Path(folder).name)
    print(f"{out}: {out.stat().st_size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main(sys.argv[1:] or [".whl"])
