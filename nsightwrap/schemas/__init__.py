"""The JSON Schemas of nsightwrap's files, shipped with the package: ``report.schema.json`` (what
``nsightwrap report --format json`` writes, docs/report-json.md) and ``manifest.schema.json``
(``RUN_DIR/manifest.json``, docs/contracts.md) and ``sidecar.schema.json`` (the timer sidecar,
``RUN_DIR/plain/timer-<pid>.json``). Each requires every field nsightwrap writes (the sidecar:
the fields a reader needs) and allows fields a later version adds. ``problem`` checks a document
against one without jsonschema: every reader of these files uses it (docs/faults.md).

    import json, jsonschema, nsightwrap.schemas as s
    jsonschema.validate(json.load(open("run.json")), s.load("report"))
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

NAMES = ("report", "manifest", "sidecar")


def load(name: str) -> dict[str, Any]:
    """The schema ``name`` (one of ``NAMES``) as a dict."""
    if name not in NAMES:
        raise KeyError(f"no schema {name!r} (schemas: {', '.join(NAMES)})")
    text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "null": (type(None),),
}
_NAMES = {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null", int: "an integer",
          float: "a number"}  # fmt: skip
_WANT = {"object": "an object", "array": "a list", "string": "a string", "number": "a number", "integer": "an integer",
         "boolean": "a boolean", "null": "null"}  # fmt: skip


def _is(v: Any, t: str) -> bool:
    # JSON has no separate boolean-as-integer: true is not a number here.
    if isinstance(v, bool) and t in ("number", "integer"):
        return False
    if t == "integer" and isinstance(v, float):
        return v.is_integer()
    return isinstance(v, _JSON_TYPES[t])


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        ref = str(node["$ref"])
        target: Any = root
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


#: Python types that keep a JSON type whatever their value (an integral float keeps "integer" too,
#: left to the item-by-item check; bool is not int here, as ``_is`` has it).
_EXACT: dict[str, tuple[type, ...]] = {"number": (int, float), "integer": (int,), "string": (str,),
                                       "boolean": (bool,), "null": (type(None),)}  # fmt: skip


def _exact_types(node: dict[str, Any]) -> frozenset[type] | None:
    """The Python types every value of which keeps ``node``, for a node that checks the type
    alone (no const, enum, minimum, properties, items or oneOf); None for any other node."""
    if not set(node) <= {"type", "description", "title"} or "type" not in node:
        return None
    types = [node["type"]] if isinstance(node["type"], str) else list(node["type"])
    if not all(t in _EXACT for t in types):
        return None
    return frozenset(c for t in types for c in _EXACT[t])


def _problem(v: Any, node: dict[str, Any], root: dict[str, Any], at: str, required: bool) -> str | None:
    node = _resolve(node, root)
    if "oneOf" in node:
        found = [_problem(v, o, root, at, required) for o in node["oneOf"]]
        if None in found:
            return None
        # The branch the document got furthest into (a manifest's format picks its branch).
        return max(found, key=lambda f: (f or "").count("/") + (0 if "must be '" in (f or "") else 1))
    if "const" in node and v != node["const"]:
        return f"field '{at or '/'}' must be {node['const']!r}, not {v!r}"
    if "enum" in node and v not in node["enum"]:
        return f"field '{at}' must be one of {', '.join(map(repr, node['enum']))}, not {v!r}"
    types = node.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else list(types)
        if not any(_is(v, t) for t in types):
            got = _NAMES.get(type(v), type(v).__name__)
            want = " or ".join(_WANT[t] for t in types)
            return f"field '{at}' must be {want}, not {got}"
    if "minimum" in node and isinstance(v, (int, float)) and not isinstance(v, bool) and v < node["minimum"]:
        return f"field '{at}' must be at least {node['minimum']}, not {v!r}"
    if isinstance(v, dict):
        if required:
            for key in node.get("required", ()):
                if key not in v:
                    return f"field '{at + '/' if at else ''}{key}' is missing"
        for key, sub in node.get("properties", {}).items():
            # A null field is a missing one, let through unless required; a null in a list
            # (a sample) is checked against the list's item type.
            if key in v and (v[key] is not None or required):
                p = _problem(v[key], sub, root, f"{at}/{key}" if at else key, required)
                if p:
                    return p
    if isinstance(v, list) and isinstance(node.get("items"), dict):
        exact = _exact_types(_resolve(node["items"], root))
        # A list of plain values (samples: thousands of them) passes in one pass when every item
        # is of a type allowed as such; else each item is checked, to name the first wrong one.
        if exact is not None and set(map(type, v)) <= exact:
            return None
        for i, x in enumerate(v):
            p = _problem(x, node["items"], root, f"{at}/{i}" if at else str(i), required)
            if p:
                return p
    return None


def problem(doc: Any, name: str, *, required: bool = False) -> str | None:
    """The first way ``doc`` breaks schema ``name``, as ``field 'passes/0/argv' must be a list,
    not a string``; None when it keeps it. A small validator of the keywords the shipped schemas
    use (type, properties, items, const, enum, minimum, oneOf, $ref), so that the product needs
    no jsonschema. ``required=False`` checks the values a document has and lets it lack some (a
    run still running, a file written by an older version, a shard that failed), a null field
    counting as a missing one (NaN and Infinity are read as null; a null item of a list is
    checked): it refuses a value of another type, what a reader would trip over;
    ``required=True`` is the schema to the letter."""
    root = _cached(name)
    return _problem(doc, root, root, "", required)


@cache
def _cached(name: str) -> dict[str, Any]:
    return load(name)  # read, never changed
