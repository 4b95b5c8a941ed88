"""Escaping of arbitrary text (kernel names hold ``<``, ``>``, ``,``, ``|``, ``*``) for Markdown and HTML."""

from __future__ import annotations

import html as _html
import re

# Characters Markdown would read as syntax inside a table cell; escaped with a backslash.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|#~])")


def md_cell(s: object) -> str:
    """Text safe inside one Markdown table cell: ``|`` and emphasis escaped, ``<>&`` as entities."""
    text = "" if s is None else str(s)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    # A newline would end the table row.
    return " ".join(text.splitlines())


def html(s: object) -> str:
    """Text safe in HTML element content and in quoted attribute values."""
    return _html.escape("" if s is None else str(s), quote=True)
