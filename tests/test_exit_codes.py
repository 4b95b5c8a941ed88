"""One list of exit codes (nsightwrap/core/errors.py), and the README's table and ``--help`` made
from it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from nsightwrap.core import errors
from nsightwrap.core.errors import EXIT_MEANINGS, exit_code_lines

README = Path(__file__).resolve().parent.parent / "README.md"


def test_every_exit_constant_has_a_meaning() -> None:
    codes = {v for k, v in vars(errors).items() if k.startswith("EXIT_") and isinstance(v, int)}
    assert codes == {c for c, _ in EXIT_MEANINGS}
    assert len({c for c, _ in EXIT_MEANINGS}) == len(EXIT_MEANINGS)


def test_readme_table_is_the_generated_one() -> None:
    text = README.read_text()
    start = text.index("<!-- exit-codes:")
    block = text[text.index("\n", start) + 1 : text.index("<!-- /exit-codes -->")].strip().splitlines()
    assert block == exit_code_lines(markdown=True), "run: python -m nsightwrap.core.errors, and paste it into README.md"


def test_help_lists_every_exit_code() -> None:
    out = subprocess.run([sys.executable, "-m", "nsightwrap", "--help"], capture_output=True, text=True,
                         env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"}).stdout  # fmt: skip
    flat = " ".join(out.split())  # as wrapped to the terminal's width
    for code, what in EXIT_MEANINGS:
        assert f"{code} {what}" in flat, (code, what)
    assert "nsightwrap[html]" in out  # rich markup does not eat the extra's name
