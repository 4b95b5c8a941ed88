"""Post-import hooks: run a function on a module right after the script first imports it.

The layer never imports torch or triton itself (but for a pass started early, whose boot module
imports what the plain pass's script imported before it waits for its turn): a finder on ``sys.meta_path`` waits for the
script's own ``import`` of a named module, lets the normal machinery load it, and calls the hook
on the executed module (before the importer sees it, so ``from triton.testing import do_bench``
already gets the patched function). A module already imported gets its hook at once.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

Hook = Callable[[ModuleType], None]


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self) -> None:
        self.hooks: dict[str, Hook] = {}
        self.busy = threading.local()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        hook = self.hooks.get(fullname)
        if hook is None:
            return None
        busy = getattr(self.busy, "names", None)
        if busy is None:
            busy = self.busy.names = set()
        if fullname in busy:
            return None
        busy.add(fullname)
        try:
            spec = None
            for finder in list(sys.meta_path):
                if finder is self:
                    continue
                fs = getattr(finder, "find_spec", None)
                if fs is None:
                    continue
                spec = fs(fullname, path, target)
                if spec is not None:
                    break
        finally:
            busy.discard(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        _wrap(spec, fullname, hook)
        return spec


def _wrap(spec: importlib.machinery.ModuleSpec, fullname: str, hook: Hook) -> None:
    loader: Any = spec.loader
    original = loader.exec_module

    def exec_module(module: ModuleType) -> None:
        original(module)
        _run(hook, module, fullname)

    if isinstance(loader, importlib.abc.FileLoader):
        # A file loader belongs to this one module: patch the instance, keeping its type (code
        # that checks isinstance(module.__loader__, SourceFileLoader) sees what it expects).
        try:
            loader.exec_module = exec_module  # type: ignore[method-assign]
            return
        except (AttributeError, TypeError):
            pass
    spec.loader = _LoaderProxy(loader, exec_module)  # type: ignore[assignment]


class _LoaderProxy:
    """A loader that runs the hook after the wrapped loader's exec_module (everything else is
    the wrapped loader's)."""

    def __init__(self, loader: Any, exec_module: Callable[[ModuleType], None]) -> None:
        self._loader = loader
        self.exec_module = exec_module

    def create_module(self, spec: Any) -> Any:
        cm = getattr(self._loader, "create_module", None)
        return cm(spec) if cm is not None else None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


def _run(hook: Hook, module: ModuleType, name: str) -> None:
    try:
        hook(module)
    except Exception as exc:  # noqa: BLE001 - a failed patch leaves the module as it is
        from nsightwrap.capture.state import note_layer_error

        note_layer_error(f"patching {name}", exc)


_FINDER: _Finder | None = None


def when_imported(name: str, hook: Hook) -> None:
    """Call ``hook(module)`` once module ``name`` is imported (now, if it already is)."""
    global _FINDER
    mod = sys.modules.get(name)
    if mod is not None:
        _run(hook, mod, name)
        return
    if _FINDER is None:
        _FINDER = _Finder()
        sys.meta_path.insert(0, _FINDER)
    _FINDER.hooks[name] = hook


def installed_hooks() -> tuple[str, ...]:
    return tuple(_FINDER.hooks) if _FINDER else ()
