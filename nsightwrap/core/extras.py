"""Optional dependencies: what needs them, and the one-line error when one is missing.

matplotlib draws the device page's measured curves (``nsightwrap device --format html``) and
nothing else, so it is the ``html`` extra (``pip install 'nsightwrap[html]'``): every report
format, the HTML report included (its charts are written as SVG by ``export.svgplot``),
``compare`` and the notebook work without it. The chart module imports it lazily; the device
page checks for it first, so a missing one is one line and exit 8 instead of a traceback.
"""

from __future__ import annotations

from nsightwrap.core.errors import MissingExtra

HTML_INSTALL = "pip install 'nsightwrap[html]'"


def require_html(what: str = "the HTML report") -> None:
    """Raise ``MissingExtra`` (exit 8) naming the install command when matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise MissingExtra(
            f"{what} needs matplotlib (the 'html' extra), which is not installed",
            hint=f"{HTML_INSTALL}, or choose another --format (table, md, json)",
        ) from None
