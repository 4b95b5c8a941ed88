"""The package layout keeps its rules: data flows one way, and nothing imports a stage above it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "nsightwrap"

#: What each package may import from nsightwrap (besides itself and ``nsightwrap.__version__``).
ALLOWED = {
    "core": set(),
    "timer": {"core"},
    "capture": {"core", "timer"},
    "device": {"core", "timer"},
    "parsers": {"core", "timer"},
    "run": {"core", "parsers"},
    "analysis": {"core", "timer", "parsers", "run", "device"},
    "compare": {"core", "timer", "parsers", "analysis"},
    "export": {"core", "analysis", "compare", "device"},
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("nsightwrap."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("nsightwrap."))
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_package_imports_only_lower_stages(package: str) -> None:
    bad = {
        f"{p.relative_to(PKG)} imports nsightwrap.{dep}"
        for p in sorted((PKG / package).rglob("*.py"))
        for dep in _imports(p) - ALLOWED[package] - {package}
    }
    assert not bad, sorted(bad)


def test_every_package_says_what_it_owns() -> None:
    for init in sorted(PKG.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc) > 40, f"{init.relative_to(PKG)} has no docstring saying what it owns"


def test_top_level_holds_only_entry_points() -> None:
    assert sorted(p.name for p in PKG.glob("*.py")) == ["__init__.py", "__main__.py", "notebook.py"]


def test_public_api_is_where_users_import_it() -> None:
    import nsightwrap as nw
    from nsightwrap.timer import BenchResult, Region, bench, benchmark

    assert (nw.bench, nw.benchmark, nw.BenchResult, nw.Region) == (bench, benchmark, BenchResult, Region)
    assert callable(nw.load_run) and callable(nw.read_ncu) and callable(nw.read_nsys)
    with pytest.raises(AttributeError):
        _ = nw.no_such_name  # type: ignore[attr-defined]
