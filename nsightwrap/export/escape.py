"""Escaping of arbitrary text (kernel names hold ``<``, ``>``, ``,``, ``|``, ``*``) for Markdown and HTML."""

from __future__ import annotations

import html as _html
import re

# Characters Markdown would read as syntax inside a table cell; escaped with a backslash.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|#~])")


def md_cell(s: object) -> str:
    """Text safe inside one Markdown table cell: ``|`` and emphasis escaped, ``<>&`` as entities."""
    # A newline would end the table row: lines joined by a space before controls are escaped.
    text = terminal_safe(" ".join(("" if s is None else str(s)).splitlines()))
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = _MD_SPECIAL.sub(r"\\\1", text)
    # A newline would end the table row.
    return " ".join(text.splitlines())


def html(s: object) -> str:
    """Text safe in HTML element content and in quoted attribute values."""
    # Tabs and newlines are layout in HTML (a <pre> block): kept; every other control escaped.
    return _html.escape(_UNSAFE_HTML.sub(_visible, "" if s is None else str(s)), quote=True)


# C0/C1 controls (ESC starts terminal escape sequences: screen clears, OSC 8 links), DEL, and the
# bidi overrides and isolates that reorder what a reader sees (Trojan Source).
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSAFE_HTML = re.compile(r"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Characters XML 1.0 forbids outright (a JUnit file holding one is not XML at all).
_XML_ILLEGAL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _visible(m: re.Match[str]) -> str:
    c = m.group(0)
    return f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}"


def terminal_safe(s: object) -> str:
    """Text safe to print: control and bidi characters shown as ``\\xNN`` / ``\\uNNNN`` escapes.

    It does no rich-markup escaping: print the result with ``markup=False`` or as a ``Text``."""
    return _UNSAFE.sub(_visible, "" if s is None else str(s))


def xml_safe(s: object) -> str:
    """Text XML 1.0 can hold: its illegal characters (and every other control) shown escaped.

    The XML writer escapes ``<``, ``>`` and ``&`` itself."""
    text = "" if s is None else str(s)
    return _UNSAFE.sub(_visible, _XML_ILLEGAL.sub(_visible, text))
