"""tests/slow_tests.txt names real tests: a renamed or removed test would otherwise leave a stale
line, and a slow test that lost its line would silently slow down `make test`."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import SLOW_LIST, slow_tests

ROOT = Path(__file__).resolve().parent.parent


def test_every_line_names_a_test_function() -> None:
    entries = slow_tests()
    assert len(entries) >= 40
    for entry in sorted(entries):
        file, name = entry.split("::")
        path = ROOT / file
        assert path.is_file(), entry
        funcs = {n.name for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)}
        assert name in funcs, f"{SLOW_LIST.name}: {entry} names no test function"


def test_the_marker_is_registered_and_make_splits_on_it() -> None:
    assert "slow:" in (ROOT / "pyproject.toml").read_text()
    make = (ROOT / "Makefile").read_text()
    assert '-m "not gpu and not slow"' in make and '-m "slow and not gpu"' in make
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test\n" in ci and "make test-slow\n" in ci
