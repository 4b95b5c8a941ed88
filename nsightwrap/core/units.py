"""Units as the NVIDIA tools print them, and their conversion to nsightwrap's base units.

Base units: time in ns, frequencies in Hz, sizes in bytes, rates per second, percentages as
printed (0-100). ncu scales sizes with 1000-based prefixes (``Kbyte`` = 1000 bytes), prints
frequencies as ``hz``/``Khz``/``Mhz``/``Ghz`` (any case) or ``cycle/nsecond``-style rates,
and times as ``ns``/``us``/``ms``/``s`` or ``nsecond``/``usecond``/``msecond``/``second``.
Counts (``cycle``, ``inst``, ``warp``, ``sector``, ...) may carry a ``K``/``M``/``G``/``T``
prefix. nvidia-smi prints ``MHz``, ``W``, ``C``, ``MiB`` (1024-based), ``KB/s``.
A unit this module does not know is kept as it is, with factor 1.
"""

from __future__ import annotations

import math
import re

# Time as a quantity: converted to ns.
_TIME_NS = {
    "ps": 1e-3, "psecond": 1e-3,
    "ns": 1.0, "nsecond": 1.0,
    "us": 1e3, "usecond": 1e3,
    "ms": 1e6, "msecond": 1e6,
    "s": 1e9, "second": 1e9, "sec": 1e9,
}  # fmt: skip
# Time in a denominator ("per nsecond"): rates are kept per second; this is the multiplier.
_PER_TIME = {name: 1e9 / factor for name, factor in _TIME_NS.items()}
_FREQ = {"hz": 1.0, "khz": 1e3, "mhz": 1e6, "ghz": 1e9, "thz": 1e12}
# ncu's size and count prefixes are decimal (Kbyte = 1000 bytes).
_SI = {"K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
# nvidia-smi's memory sizes are binary (MiB).
_BINARY = {"KiB": 2.0**10, "MiB": 2.0**20, "GiB": 2.0**30, "TiB": 2.0**40}
_SIZE_SHORT = {"B": 1.0, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
_WORD = re.compile(r"[a-z][a-z_]*")


def _part(unit: str, *, denominator: bool) -> tuple[float, str]:
    """Multiplier and base name of one side of a unit (no ``/`` inside).

    For a denominator the multiplier is already inverted: ``per usecond`` gives 1e6.
    """
    u = unit.strip()
    if u in ("", "%"):
        return 1.0, u
    if u.lower() in _FREQ:
        return _FREQ[u.lower()], "hz"
    if u in _TIME_NS:
        return (_PER_TIME[u], "second") if denominator else (_TIME_NS[u], "ns")
    if u in _BINARY:
        factor, base = _BINARY[u], "byte"
    elif u in _SIZE_SHORT:
        factor, base = _SIZE_SHORT[u], "byte"
    elif u[0] in _SI and _WORD.fullmatch(u[1:]):
        factor, base = _SI[u[0]], u[1:]
    else:
        factor, base = 1.0, u
    return (1.0 / factor if denominator else factor), base


def unit_factor(unit: str) -> tuple[float, str]:
    """Return ``(factor, base_unit)`` such that ``value * factor`` is in ``base_unit``.

    >>> unit_factor("usecond")
    (1000.0, 'ns')
    >>> unit_factor("Kbyte/block")
    (1000.0, 'byte/block')
    >>> unit_factor("cycle/nsecond")
    (1000000000.0, 'hz')
    """
    parts = (unit or "").split("/")
    if len(parts) > 2:
        return 1.0, unit
    num_factor, num_base = _part(parts[0], denominator=False)
    if len(parts) == 1:
        return num_factor, num_base
    den_factor, den_base = _part(parts[1], denominator=True)
    factor = num_factor * den_factor
    base = f"{num_base}/{den_base}"
    if base == "cycle/second":  # a clock: cycles per second is Hz
        base = "hz"
    return factor, base


def to_base(value: float, unit: str) -> float:
    """``value`` printed in ``unit`` converted to the base unit (see ``unit_factor``)."""
    factor, _ = unit_factor(unit)
    return value * factor


_NUMBER = re.compile(r"^\s*([-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")
_MISSING = {"", "n/a", "[n/a]", "nan", "[not supported]", "not supported", "[unknown error]", "unknown error"}


def parse_number(text: str) -> float:
    """A number as the tools print it (``1,980,000``, ``12.3``, ``N/A``) as a float; NaN if absent.

    Raises ValueError when the text is not a number at all.
    """
    t = text.strip()
    if t.lower() in _MISSING:
        return math.nan
    return float(t.replace(",", ""))


def parse_quantity(text: str, default_unit: str = "") -> float:
    """``"1980 MHz"`` -> 1.98e9: a number with an optional unit, converted to the base unit.

    ``default_unit`` applies when the value itself carries none (``--format=csv,nounits``).
    ``N/A`` and similar give NaN; text that is no number raises ValueError.
    """
    t = text.strip()
    if t.lower() in _MISSING:
        return math.nan
    m = _NUMBER.match(t)
    if m is None:
        raise ValueError(f"not a quantity: {text!r}")
    value = float(m.group(1).replace(",", ""))
    unit = m.group(2) or default_unit
    return to_base(value, unit)


def format_ns(ns: float | None, digits: int = 4, missing: str = "-") -> str:
    """A time in ns in its largest unit that keeps it >= 1, to ``digits`` significant digits:
    ``17.31 us``, ``1.2 s``; ``missing`` when unknown. The one time formatter of the text outputs
    (``BenchResult``'s ``print``, the device views)."""
    if ns is None or not math.isfinite(ns):
        return missing
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.{digits}g} {unit}"
    return f"{ns:.{digits}g} ns"


def us_text(ns: float | None, digits: int = 2, missing: str = "n/a") -> str:
    """A time in ns as microseconds with ``digits`` decimals (``17.31 us``), the unit the
    analysis's notes and causes speak in; ``missing`` when unknown."""
    return missing if ns is None else f"{ns / 1e3:.{digits}f} us"


def ghz_text(hz: float | None, digits: int = 3, missing: str = "n/a") -> str:
    """A clock in Hz as GHz with ``digits`` decimals (``1.980 GHz``); ``missing`` when unknown."""
    return missing if hz is None else f"{hz / 1e9:.{digits}f} GHz"
