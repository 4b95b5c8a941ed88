"""The GPU machine's set-up scripts: wheels packed by scripts/gpu/pack_wheels.py are installed by
scripts/gpu/env.sh, as they would be from .whl/ (real subprocesses, a real wheel, pip offline)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _wheel(folder: Path, name: str, value: int) -> Path:
    """A minimal pure-Python wheel, deflated as wheels are."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-0.1-py3-none-any.whl"
    info = f"{name}-0.1.dist-info"
    files = {
        f"{name}/__init__.py": f"VALUE = {value}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{k},,\n" for k in files) + f"{info}/RECORD,,\n"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for k, v in files.items():
            z.writestr(k, v)
    return path


def test_packed_wheels_are_stored_and_install_as_they_would_from_their_folders(tmp_path: Path) -> None:
    work = tmp_path / "tree"
    main = _wheel(work / ".whl", "nwfake_main", 1)
    _wheel(work / ".whl-extra", "nwfake_extra", 2)
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu" / "pack_wheels.py"), ".whl", ".whl-extra"],
                          cwd=work, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    packed = work / ".wheels.tar.xz"
    assert done.stdout.startswith(".wheels.tar.xz: ")
    with tarfile.open(packed) as tar:
        assert sorted(tar.getnames()) == sorted(
            [".whl", f".whl/{main.name}", ".whl-extra", ".whl-extra/nwfake_extra-0.1-py3-none-any.whl"]
        )
        inner = tar.extractfile(f".whl/{main.name}")
        assert inner is not None
        (tmp_path / "inner.whl").write_bytes(inner.read())
    with zipfile.ZipFile(tmp_path / "inner.whl") as z, zipfile.ZipFile(main) as orig:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_STORED}
        assert {n: z.read(n) for n in z.namelist()} == {n: orig.read(n) for n in orig.namelist()}
    # the GPU machine carries only the packed file
    for folder in (".whl", ".whl-extra"):
        for f in (work / folder).iterdir():
            f.unlink()
        (work / folder).rmdir()
    env = dict(os.environ, NSIGHTWRAP_SITE=str(tmp_path / "site"), NSIGHTWRAP_WHEELS_DIR=str(tmp_path / "wheels"),
               NSIGHTWRAP_EXTRA_WHEELS=".whl-extra", PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")  # fmt: skip
    env.pop("PYTHONPATH", None)
    script = f". {shlex.quote(str(ROOT / 'scripts' / 'gpu' / 'env.sh'))} && python3 -c 'import nwfake_main, nwfake_extra; print(nwfake_main.VALUE + nwfake_extra.VALUE)'"
    ran = subprocess.run(
        ["bash", "-c", script], cwd=work, env=env, capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "3"
    assert "failed" not in ran.stderr
