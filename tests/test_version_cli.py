"""``python -m nsightwrap --version``: nsightwrap's version, then one line each for ncu and nsys.

Run as a real child process with the fake tools on PATH (they answer ``--version`` with the real
tools' text), and with an empty PATH, where neither is found.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fake_tools.harness import FAKES

from nsightwrap import __version__
from nsightwrap.run.tools import known_locations

FAKE_NCU = FAKES / "bin" / "ncu"
FAKE_NSYS = FAKES / "target-linux-x64" / "nsys"


def version(path: list[str], **env: str) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("NSIGHTWRAP_NCU", "NSIGHTWRAP_NSYS")}
    # sys.executable is absolute: the empty PATH only hides the tools.
    r = subprocess.run(
        [sys.executable, "-m", "nsightwrap", "--version"], capture_output=True, text=True, timeout=120,
        env={**clean, "PATH": os.pathsep.join(path), **env},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stderr == ""
    return r.stdout.splitlines()


def test_version_names_the_tools_on_path() -> None:
    lines = version([str(FAKE_NCU.parent), str(FAKE_NSYS.parent), os.environ["PATH"]])
    assert lines == [
        f"nsightwrap {__version__}",
        f"ncu 2025.3.1.0 at {FAKE_NCU}",  # the version the fake prints, as real ncu 2025.3.1 does
        f"nsys 2025.3.1.90-253135822126v0 at {FAKE_NSYS}",
    ]


@pytest.mark.skipif(
    bool(known_locations("ncu") or known_locations("nsys")), reason="ncu or nsys is installed where nsightwrap looks"
)
def test_version_without_tools_says_not_found() -> None:
    assert version([]) == [
        f"nsightwrap {__version__}",
        "ncu: not found (put it on PATH or set NSIGHTWRAP_NCU)",
        "nsys: not found (put it on PATH or set NSIGHTWRAP_NSYS)",
    ]
    # An explicit tool that is not there is named, with the variable that gave it. (PATH holds
    # only this Python, for the fake nsys's `#!/usr/bin/env python3`.)
    python_only = [os.path.dirname(sys.executable)]
    lines = version(python_only, NSIGHTWRAP_NCU="/no/such/ncu", NSIGHTWRAP_NSYS=str(FAKE_NSYS))
    assert lines[1:] == [
        "ncu: not found (at /no/such/ncu, given by NSIGHTWRAP_NCU)",
        f"nsys 2025.3.1.90-253135822126v0 at {FAKE_NSYS}",
    ]
