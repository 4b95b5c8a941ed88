"""The package layout keeps its rules: data flows one way, and nothing imports a stage above it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "nsightwrap"

#: What each package may import from nsightwrap (besides itself and ``nsightwrap.__version__``).
ALLOWED = {
    "core": {"schemas"},  # jsonfile checks a file against its shipped schema
    "schemas": set(),  # data files and their loader
    "timer": {"core"},
    "capture": {"core", "timer"},
    "device": {"core", "timer"},
    "parsers": {"core", "timer"},
    "run": {"core", "parsers"},
    "analysis": {"core", "timer", "parsers", "device"},
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


def _module_name(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _import_graph() -> dict[str, set[str]]:
    """Module -> the nsightwrap modules it imports, function-level imports included (``from
    nsightwrap.x import y`` counts as the module ``nsightwrap.x.y`` where that is a module)."""
    modules = {_module_name(p): p for p in PKG.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's own package
                    pkg = name.split(".") if is_pkg else name.split(".")[:-1]
                    pkg = pkg[: len(pkg) - (node.level - 1)]
                    base = ".".join([*pkg, base] if base else pkg)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for t in targets:
                while t and t not in modules:
                    t = t.rpartition(".")[0]
                if t and t != name and t != "nsightwrap":
                    deps.add(t)
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: set[frozenset[str]] = set()

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.add(frozenset(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


#: Import circles still to break, all through function-level imports; the test fails on any new
#: one, and on one of these once it is gone, so that the list only shrinks.
KNOWN_CYCLES: set[frozenset[str]] = set()


def test_no_import_circles() -> None:
    found = _cycles(_import_graph())
    assert found - KNOWN_CYCLES == set(), sorted(sorted(c) for c in found - KNOWN_CYCLES)
    assert KNOWN_CYCLES - found == set(), "a known circle is gone: take it off KNOWN_CYCLES"


#: The commands whose import walk must never climb: from the CLI module down, every arrow (module
#: level or inside a function) goes to the module's own package or one ``ALLOWED`` lists for it.
WALKED = ("nsightwrap.cli.profile_cmd", "nsightwrap.cli.report_cmd")


def _package(module: str) -> str:
    return module.split(".")[1]


def _climbs(graph: dict[str, set[str]], roots: tuple[str, ...]) -> tuple[set[str], set[str]]:
    """(every module the walk from ``roots`` reaches, each arrow on it that climbs). The CLI and
    the entry points above it may import any stage; a stage imports only those below it."""
    seen: set[str] = set()
    todo = list(roots)
    bad: set[str] = set()
    while todo:
        m = todo.pop()
        if m in seen:
            continue
        seen.add(m)
        for dep in graph.get(m, ()):
            todo.append(dep)
            src, dst = _package(m), _package(dep)
            if src in ALLOWED and dst != src and dst not in ALLOWED[src]:
                bad.add(f"{m} -> {dep}")
    return seen, bad


def test_the_walk_of_profile_and_report_never_climbs() -> None:
    graph = _import_graph()
    seen, bad = _climbs(graph, WALKED)
    assert not bad, sorted(bad)
    # The walk reaches every stage it should, so that the check above is not empty.
    for m in ("nsightwrap.run.profiling", "nsightwrap.analysis.load", "nsightwrap.analysis.merged",
              "nsightwrap.core.rundir", "nsightwrap.parsers.ncu", "nsightwrap.export.terminal"):  # fmt: skip
        assert m in seen, m


def test_a_climb_on_the_walk_is_found() -> None:
    graph = _import_graph()
    graph["nsightwrap.analysis.load"] = {*graph["nsightwrap.analysis.load"], "nsightwrap.run.merge"}
    graph["nsightwrap.core.rundir"] = {*graph["nsightwrap.core.rundir"], "nsightwrap.analysis.model"}
    _, bad = _climbs(graph, WALKED)
    assert bad == {"nsightwrap.analysis.load -> nsightwrap.run.merge", "nsightwrap.core.rundir -> nsightwrap.analysis.model"}
