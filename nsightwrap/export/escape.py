"""Escaping of arbitrary text (kernel names hold ``<``, ``>``, ``,``, ``|``, ``*``) for every text
output: the terminal, Markdown (cells and code blocks), HTML, XML and CSV. Every one shows control
characters and bidi overrides as ``\\xNN`` / ``\\uNNNN`` escapes (JSON escapes them itself)."""

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


#: First characters that make a spreadsheet read a CSV cell as a formula (``=HYPERLINK(...)``),
#: per OWASP's CSV injection advice; tab and carriage return are already escaped as ``\\x09``.
_FORMULA_START = ("=", "+", "-", "@")


def csv_cell(v: object) -> object:
    """A CSV cell: a string with its controls escaped and, when it starts like a formula, a
    single quote before it; any other value (a number, negative ones included) as it is."""
    if not isinstance(v, str):
        return v
    text = terminal_safe(v)
    return "'" + text if text.startswith(_FORMULA_START) else text


def code_block(text: object, lang: str = "") -> list[str]:
    """The lines of a Markdown fenced code block holding ``text``: its fence a run of backticks
    longer than any in the text (so the text cannot end the block), controls but tab and newline
    escaped."""
    body = _UNSAFE_HTML.sub(_visible, "" if text is None else str(text)).replace("\r", "\\x0d")
    longest = max((len(run) for run in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + lang, *body.split("\n"), fence]
