"""Print a pip constraints file that pins every direct dependency of nsightwrap to its floor.

    python scripts/lowest_constraints.py [pyproject.toml] > constraints.txt
    pip install -c constraints.txt -e .
    python scripts/lowest_constraints.py --check     # installed versions == the floors

pip has no "lowest versions" resolution, so ``make test-lowest`` writes the floors of
pyproject.toml's ``[project] dependencies`` and of the extras the tests need (``html``:
matplotlib) (``name>=X``) as ``name==X`` and installs with them:
the CPU tests then run against the oldest versions nsightwrap claims to support. A dependency
without a ``>=`` floor is an error: every floor must be one the tests have passed with.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_DEP = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*>=\s*([^,;\s]+)")


#: The optional extras whose floors are proven too: the CPU tests need them (the HTML report).
EXTRAS = ("html",)


def dependencies(text: str, extras: tuple[str, ...] = EXTRAS) -> list[str]:
    """The strings of ``[project] dependencies`` and of the ``extras``' lists (tomllib where it
    exists, else a plain scan)."""
    try:
        import tomllib

        project = tomllib.loads(text)["project"]
        deps: list[str] = list(project["dependencies"])
        for extra in extras:
            deps += project.get("optional-dependencies", {}).get(extra, [])
        return deps
    except ImportError:  # Python 3.10: read the lists by hand
        block = re.search(r"^dependencies\s*=\s*\[(.*?)^\]", text, re.S | re.M)
        out = re.findall(r'"([^"]+)"', block.group(1)) if block else []
        for extra in extras:
            line = re.search(rf"^{re.escape(extra)}\s*=\s*\[(.*?)\]", text, re.S | re.M)
            out += re.findall(r'"([^"]+)"', line.group(1)) if line else []
        return out


def floors(text: str) -> list[tuple[str, str]]:
    """(name, floor) of every direct dependency; SystemExit for one without a floor."""
    out = []
    for dep in dependencies(text):
        m = _DEP.match(dep)
        if not m:
            raise SystemExit(f"dependency {dep!r} has no '>=' floor: give it the lowest version the tests pass with")
        out.append((m.group(1), m.group(2)))
    return out


def check_installed(pins: list[tuple[str, str]]) -> int:
    """Print each dependency's installed version against its floor; 1 when any differs (the job
    would then not be testing the floors)."""
    from importlib import metadata

    bad = 0
    for name, floor in pins:
        try:
            got = metadata.version(name)
        except metadata.PackageNotFoundError:
            got = "missing"
        same = [int(x) for x in re.findall(r"\d+", got)] == [int(x) for x in re.findall(r"\d+", floor)]
        bad += not same
        print(f"{'ok  ' if same else 'DIFF'} {name:<14} floor {floor:<10} installed {got}")
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    check = "--check" in argv
    args = [a for a in argv if a != "--check"]
    path = Path(args[0] if args else "pyproject.toml")
    pins = floors(path.read_text())
    if check:
        return check_installed(pins)
    for name, floor in pins:
        print(f"{name}=={floor}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
