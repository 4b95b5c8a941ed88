"""``triton.autotune``: every pass runs the configs the plain pass chose.

Each pass runs the script in a new process, where triton's ``Autotuner`` times its configs again,
on short noisy loops (and under ncu, on kernels ncu serializes): one pass can pick another config
of the same kernel than the plain pass timed. So the layer records, in the plain pass, what each
autotuner chose (``Autotuner.cache``: tuning key -> config, stored as the config's index in
``Autotuner.configs`` and its text), and in every later pass pre-loads those choices into the
autotuner's ``cache`` as it is made, before its first ``run``: triton then tunes only the keys
the plain pass never tuned.

Written per process, beside the sidecar: ``RUN_DIR/<pass>/autotune-<pid>.json``
(``contract.AUTOTUNE_FORMAT``): per autotuner, the keys it holds, those pinned from the plain pass
and those tuned in this process (in a later pass: afresh, so that pass may have run another
config than the plain pass timed). Nothing runs on a kernel launch: the autotuner is patched at
``__init__`` only, and its ``cache`` is read when the file is written (at the sidecar's rewrites
and at exit).

A triton whose ``Autotuner`` has no ``cache`` dict or ``configs`` list is left alone (a note in
the file says so).
"""

from __future__ import annotations

import functools
import glob
import json
import numbers
import os
import re
import sys
import threading
import types
from typing import Any

from nsightwrap.capture.state import Layer, guarded, layer, patch
from nsightwrap.core import contract

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def config_text(config: Any) -> str:
    """A config as triton prints it (``BLOCK_M: 64, num_warps: 4, ...``), without object addresses,
    which differ from process to process."""
    return _ADDRESS.sub("", str(config))


def key_json(key: Any) -> list[Any] | None:
    """A tuning key (a tuple of the key arguments' values and the tensors' dtype names) as a JSON
    list; None where an element is not a number, a string, a bool or None."""
    if not isinstance(key, tuple):
        return None
    out: list[Any] = []
    for x in key:
        if x is None or isinstance(x, (bool, str)):
            out.append(x)
        elif isinstance(x, numbers.Integral):
            out.append(int(x))
        elif isinstance(x, numbers.Real):
            out.append(float(x))
        else:
            return None
    return out


def _base_fn(tuner: Any) -> Any:
    fn = getattr(tuner, "base_fn", None)
    if isinstance(fn, types.FunctionType):
        return fn
    fn = getattr(tuner, "fn", None)
    for _ in range(8):  # triton.jit / heuristics wrap the function in objects with .fn
        if fn is None or isinstance(fn, types.FunctionType):
            break
        fn = getattr(fn, "fn", None)
    return fn if isinstance(fn, types.FunctionType) else None


class Tuners:
    """The autotuners of this process: their choices, and what was pinned from the plain pass."""

    def __init__(self, L: Layer) -> None:
        self.L = L
        self.lock = threading.Lock()
        self.tuners: list[tuple[Any, dict[str, Any], dict[tuple[Any, ...], None]]] = []  # (tuner, where, pinned keys)
        self.ids: dict[str, int] = {}
        self.notes: list[str] = []
        self._plain: dict[str, dict[tuple[Any, ...], tuple[int | None, str]]] | None = None

    @property
    def pins(self) -> bool:
        """Later passes pin the plain pass's choices; the plain pass records them. The plain
        pass's clock run pins them too: a loop re-tuned there can run another config (on an H100
        the clock run of a Triton matmul sweep re-tuned one size of eight to another config), and
        the clock sampled there would then not be the one the plain pass's loop ran at."""
        return self.L.pass_name in (contract.PASS_NCU, contract.PASS_NSYS, contract.PASS_PLAIN_CLOCK)

    def note(self, text: str) -> None:
        with self.lock:
            if text not in self.notes and len(self.notes) < 50:
                self.notes.append(text)

    def made(self, tuner: Any) -> None:
        """A new ``Autotuner``: registered, and in a later pass given the plain pass's choices."""
        cache, configs = getattr(tuner, "cache", None), getattr(tuner, "configs", None)
        fn = _base_fn(tuner)
        name = getattr(fn, "__qualname__", None) or type(tuner).__name__
        if not isinstance(cache, dict) or not isinstance(configs, list):
            self.note(f"{type(tuner).__module__}.{type(tuner).__name__} of {name} has no `cache` dict or `configs` "
                      "list: its choices are neither recorded nor pinned (this pass tunes it again)")  # fmt: skip
            return
        code = getattr(fn, "__code__", None)
        file = os.path.abspath(code.co_filename) if code is not None else ""
        line = int(code.co_firstlineno) if code is not None else 0
        with self.lock:
            base = f"{os.path.basename(file)}:{line} {name}"
            n = self.ids[base] = self.ids.get(base, 0) + 1
            ident = base if n == 1 else f"{base} #{n}"
            pinned: dict[tuple[Any, ...], None] = {}  # in the plain pass's order
            where = {"tuner": ident, "file": file, "line": line, "function": name, "configs": len(configs)}
            self.tuners.append((tuner, where, pinned))
        if self.pins:
            self._pin(tuner, ident, cache, configs, pinned)

    def _pin(self, tuner: Any, ident: str, cache: dict[Any, Any], configs: list[Any], pinned: dict[tuple[Any, ...], None]) -> None:
        chosen = self.plain().get(ident, {})
        for key, (index, text) in chosen.items():
            if index is None or not 0 <= index < len(configs) or config_text(configs[index]) != text:
                self.note(f"{ident}: key {list(key)} not pinned: the plain pass chose {text!r}, which is not "
                          f"config {index} of this pass's {len(configs)}")  # fmt: skip
                continue
            cache[key] = configs[index]
            pinned[key] = None

    def plain(self) -> dict[str, dict[tuple[Any, ...], tuple[int | None, str]]]:
        """The plain pass's choices, from every process's file: tuner -> key -> (index, config)."""
        if self._plain is not None:
            return self._plain
        out: dict[str, dict[tuple[Any, ...], tuple[int | None, str]]] = {}
        run_dir = self.L.run_dir
        for path in sorted(glob.glob(os.path.join(run_dir or "", contract.PASS_PLAIN, contract.AUTOTUNE_GLOB))) if run_dir else ():
            try:
                with open(path, encoding="utf-8") as f:
                    doc = json.load(f)
                for t in doc.get("tuners") or ():
                    keys = out.setdefault(str(t["tuner"]), {})
                    for c in t.get("chosen") or ():
                        idx = c.get("index")
                        keys.setdefault(tuple(c["key"]), (int(idx) if isinstance(idx, int) else None, str(c.get("config"))))
            except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
                self.note(f"{path}: not read ({type(exc).__name__}: {exc}); its choices are not pinned")
        self._plain = out
        return out

    def document(self) -> dict[str, Any] | None:
        """This process's file: None while no autotuner was made and nothing is to be said."""
        with self.lock:
            tuners = list(self.tuners)
            notes = list(self.notes)
        if not tuners and not notes:
            return None
        triton = sys.modules.get("triton")
        docs = []
        for tuner, where, pinned in tuners:
            configs = getattr(tuner, "configs", None) or []
            chosen, tuned, dropped = [], [], 0
            for key, config in list(getattr(tuner, "cache", {}).items()):
                k = key_json(key)
                if k is None:
                    dropped += 1
                    continue
                try:
                    index: int | None = configs.index(config)
                except ValueError:  # a config pruning made: found by its text, else none
                    text = config_text(config)
                    index = next((i for i, c in enumerate(configs) if config_text(c) == text), None)
                chosen.append({"key": k, "index": index, "config": config_text(config)})
                if key not in pinned:
                    tuned.append(k)
            docs.append({**where, "chosen": chosen, "pinned": [list(k) for k in pinned],
                         "tuned": tuned, "not_recorded": dropped})  # fmt: skip
        return {
            "format": contract.AUTOTUNE_FORMAT, "version": 1, "pass": self.L.pass_name, "pid": os.getpid(),
            "argv": list(sys.argv), "triton_version": getattr(triton, "__version__", None) if triton else None,
            "tuners": docs, "notes": notes,
        }  # fmt: skip

    def path(self) -> str | None:
        if not self.L.run_dir or self.L.pass_name is None:
            return None
        return os.path.join(self.L.run_dir, self.L.pass_name, f"autotune-{os.getpid()}.json")

    def write(self) -> None:
        """Write this process's file (whole, atomically); a failure is the layer's, never the script's."""
        path = self.path()
        if path is None:
            return
        with guarded("autotune"):
            doc = self.document()
            if doc is None:
                return
            from nsightwrap.core.jsonfile import write_json_atomic

            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_json_atomic(path, doc, indent=1)


_TUNERS: Tuners | None = None


def tuners() -> Tuners | None:
    """This process's record of autotuners (None until ``triton.runtime.autotuner`` is patched)."""
    return _TUNERS


def patch_autotuner(mod: Any) -> None:
    """Patch ``triton.runtime.autotuner.Autotuner.__init__`` (module just imported), in a run (a
    run directory and a pass): each autotuner made is registered, and pinned in later passes."""
    global _TUNERS
    L = layer()
    if L is None or not L.run_dir or L.pass_name is None or getattr(mod, "_nsightwrap_patched", False):
        return
    T = _TUNERS = _TUNERS or Tuners(L)
    if T.write not in L.after_write:
        L.after_write.append(T.write)  # the choices so far, beside every sidecar write
    cls = getattr(mod, "Autotuner", None)
    init = getattr(cls, "__init__", None) if isinstance(cls, type) else None
    if cls is None or not callable(init):
        T.note(f"{mod.__name__} has no Autotuner class: autotuned kernels are tuned again in every pass")
        return

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807 - the patched method
        init(self, *args, **kwargs)
        with guarded("autotune"):
            T.made(self)

    patch(cls, "__init__", __init__)
    mod._nsightwrap_patched = True
