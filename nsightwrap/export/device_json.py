"""JSON view of a device file: the versioned document itself (docs/device.md)."""

from __future__ import annotations

import json

from nsightwrap.device.result import DeviceFile
from nsightwrap.device.store import device_doc


def render_device_json(dev: DeviceFile) -> str:
    """The device file as JSON text (the same document the cache holds)."""
    return json.dumps(device_doc(dev), indent=1, allow_nan=False) + "\n"
