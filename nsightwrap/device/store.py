"""The device file on disk: versioned JSON, one per GPU in the user's cache, read back strictly.

``"format": "nsightwrap-device"``. The reader refuses versions it does not know. History (one line
per change, newest last):
  1 (0.1.0): first version: gpu, software, mode, warnings, measurements by group (bandwidth,
             latency, launch, compute), bandwidth_curve, latency_curve.

The cache holds ``<cache_root()>/device/<uuid>.json`` (the uuid without ``GPU-``, lower case), so a
report on a run made on the same GPU finds the ceilings measured there.
"""

from __future__ import annotations

import os
from pathlib import Path

from nsightwrap.core.contract import uuid_key
from nsightwrap.core.errors import FormatVersionError, ReportParseError
from nsightwrap.core.jsonfile import read_json_object, write_json_atomic
from nsightwrap.core.unpack import cache_root
from nsightwrap.device.result import DeviceFile, device_from_dict, device_to_dict

DEVICE_FORMAT = "nsightwrap-device"
DEVICE_VERSION = 1
READABLE_VERSIONS = (1,)
#: The device file's name inside a run directory's ``env/``.
RUN_DEVICE_FILE = "device.json"


def cache_dir() -> Path:
    """Where device files are cached (not created here)."""
    return cache_root() / "device"


def cache_path(uuid: str) -> Path:
    """The cached device file of the GPU with this uuid."""
    key = uuid_key(uuid)
    if key is None or "/" in key or key.startswith("."):
        raise ValueError(f"not a GPU uuid: {uuid!r}")
    return cache_dir() / f"{key}.json"


def find_cached(uuid: str | None) -> Path | None:
    """The cached device file of this GPU, when there is one."""
    if uuid_key(uuid) is None:
        return None
    try:
        p = cache_path(uuid or "")
    except ValueError:
        return None
    return p if p.is_file() else None


def device_doc(dev: DeviceFile) -> dict[str, object]:
    """The JSON document of ``dev``."""
    return device_to_dict(dev, DEVICE_FORMAT, DEVICE_VERSION)


def write_device_file(dev: DeviceFile, path: str | os.PathLike[str]) -> Path:
    """Write ``dev`` atomically to ``path`` (its folder is created)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    # NaN is never written: a figure that is not a number is null (JSON has no NaN).
    write_json_atomic(p, device_doc(dev), indent=1, allow_nan=False)
    return p


def save_to_cache(dev: DeviceFile) -> Path | None:
    """Write ``dev`` to the cache under its GPU's uuid; None when the GPU has no uuid."""
    if uuid_key(dev.gpu.uuid) is None:
        return None
    return write_device_file(dev, cache_path(dev.gpu.uuid or ""))


def read_device_file(path: str | os.PathLike[str]) -> DeviceFile:
    """Read a device file; a foreign file raises ReportParseError, an unknown version
    FormatVersionError (both one line naming the file)."""
    doc = read_json_object(path, "device file")
    if doc.get("format") != DEVICE_FORMAT:
        raise ReportParseError(
            f"{path}: not an nsightwrap device file (format {doc.get('format')!r})",
            hint="give a file written by nsightwrap device",
        )
    if doc.get("version") not in READABLE_VERSIONS:
        raise FormatVersionError(
            f"{path}: device file version {doc.get('version')!r} is not supported "
            f"(this nsightwrap reads {', '.join(map(str, READABLE_VERSIONS))})",
            hint="upgrade nsightwrap, or measure again with nsightwrap device",
        )
    try:
        return device_from_dict(doc)
    except ReportParseError as exc:
        raise ReportParseError(f"{path}: {exc.message}", hint=exc.hint) from None
    except (TypeError, ValueError) as exc:
        raise ReportParseError(f"{path}: malformed device file ({exc})") from None
