"""The JSON Schemas of nsightwrap's files, shipped with the package: ``report.schema.json`` (what
``nsightwrap report --format json`` writes, docs/report-json.md) and ``manifest.schema.json``
(``RUN_DIR/manifest.json``, docs/contracts.md). Each requires every field nsightwrap writes and
allows fields a later version adds.

    import json, jsonschema, nsightwrap.schemas as s
    jsonschema.validate(json.load(open("run.json")), s.load("report"))
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

NAMES = ("report", "manifest")


def load(name: str) -> dict[str, Any]:
    """The schema ``name`` (``report`` or ``manifest``) as a dict."""
    if name not in NAMES:
        raise KeyError(f"no schema {name!r} (schemas: {', '.join(NAMES)})")
    text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data
