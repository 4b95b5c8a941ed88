"""Installing the capture layer in a process (called by ``boot/sitecustomize.py``).

It patches nothing yet: it registers post-import hooks for the modules whose timings it captures
(``torch.cuda`` events, ``torch.utils.benchmark``, ``triton.testing``, triton's autotuner; under the ncu pass also
``nvtx`` and ``torch.cuda.nvtx`` for the mirrors), hides its own frames from tracebacks the
interpreter prints, and writes the sidecar at exit. A process without torch or triton pays for
one dictionary lookup per import.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from types import ModuleType
from typing import Any

from nsightwrap.capture import hooks
from nsightwrap.capture.state import Layer, layer, set_layer
from nsightwrap.core import contract

_CAPTURE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def install(environ: dict[str, str] | None = None) -> Layer:
    """Install the layer for this process (idempotent); returns it."""
    L = layer()
    if L is not None:
        return L
    L = Layer(environ)
    set_layer(L)
    hooks.when_imported("torch.cuda.streams", _torch_events)
    hooks.when_imported("torch.utils.benchmark.utils.timer", _torch_timer)
    hooks.when_imported("triton.testing", _triton_testing)
    hooks.when_imported("triton.runtime.autotuner", _triton_autotuner)
    if L.under_ncu:
        hooks.when_imported("nvtx.nvtx", _nvtx)
        hooks.when_imported("torch.cuda.nvtx", _torch_nvtx)
    startup = os.environ.pop(contract.ENV_STARTUP_FILE, None)
    if startup:
        _note_startup(startup)
    _hide_own_frames()
    atexit.register(_at_exit)
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_forked)
    return L


def _torch_events(mod: ModuleType) -> None:
    from nsightwrap.capture.events import patch_event

    L = layer()
    if L is not None:
        L.add_internal(sys.modules.get("torch") or mod)
    Event = getattr(mod, "Event", None)
    if Event is not None:
        patch_event(Event)
    if L is not None and (L.ranges_on or L.plain_clock):
        # Before the script can time anything: the first NVTX call of the process, not the
        # first window, pays for loading the profiler's NVTX hook (in the plain pass too, where
        # nsys samples its clock and the layer marks anchors in NVTX).
        from nsightwrap.capture import ranges

        ranges.warm(mirrors=L.under_ncu)


def _torch_timer(mod: ModuleType) -> None:
    from nsightwrap.capture.torchbench import patch_timer

    patch_timer(mod)


def _triton_testing(mod: ModuleType) -> None:
    from nsightwrap.capture.tritonbench import patch_testing

    patch_testing(mod)


def _triton_autotuner(mod: ModuleType) -> None:
    from nsightwrap.capture.autotune import patch_autotuner

    patch_autotuner(mod)


def _nvtx(mod: ModuleType) -> None:
    from nsightwrap.capture.nvtxmirror import patch_nvtx

    L = layer()
    if L is not None:
        L.add_internal(sys.modules.get("nvtx") or mod)
        patch_nvtx(mod, L.ncu_iters)


def _torch_nvtx(mod: ModuleType) -> None:
    from nsightwrap.capture.nvtxmirror import patch_torch_nvtx

    L = layer()
    if L is not None:
        patch_torch_nvtx(mod, L.ncu_iters)


def _note_startup(path: str) -> None:
    """For the early start of the ncu passes (``contract.ENV_STARTUP_FILE``): at exit, which of
    ``PREIMPORTABLE`` this process imported, and which environment variables the script had set
    or changed by the time it imported torch (torch reads some of them at import)."""
    before = dict(os.environ)
    state: dict[str, Any] = {"env_before_torch": []}

    def at_torch(mod: ModuleType) -> None:
        now = os.environ
        state["env_before_torch"] = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))

    def write() -> None:
        try:
            from nsightwrap.core.jsonfile import write_json_atomic

            doc = {"imports": [m for m in contract.PREIMPORTABLE if m in sys.modules], **state}
            write_json_atomic(path, doc, indent=1)
        except Exception:  # noqa: BLE001 - never fail the exit of the user's program
            pass

    hooks.when_imported("torch", at_torch)
    atexit.register(write)


def _at_exit() -> None:
    L = layer()
    if L is None:
        return
    try:
        with L.lock:
            for c in L.captures:
                if c.status == "running":
                    c.status = "incomplete"
        L.flush(force=True)
    except Exception:  # noqa: BLE001 - never fail the exit of the user's program
        pass
    try:
        from nsightwrap.capture.autotune import tuners

        T = tuners()
        if T is not None:
            T.write()  # every pass, the ncu pass too (it writes no sidecar)
    except Exception:  # noqa: BLE001
        pass


def _forked() -> None:
    # A forked child keeps its parent's call counts (names stay the same) but not its captures,
    # which the parent writes in its own sidecar.
    L = layer()
    if L is not None:
        L.captures = []
        L.not_captured = []
        L.errors = []
        L.lock = threading.RLock()
    mod = sys.modules.get("nsightwrap.capture.autotune")  # loaded once triton's autotuner is
    T = mod.tuners() if mod is not None else None
    if T is not None:
        T.lock = threading.Lock()


# --- tracebacks as without nsightwrap ----------------------------------------------------------


def strip_frames(tb: Any) -> Any:
    """``tb`` without the frames of the capture layer (its wrappers around the user's calls)."""
    import types

    kept = []
    while tb is not None:
        if not tb.tb_frame.f_code.co_filename.startswith(_CAPTURE_DIR):
            kept.append(tb)
        tb = tb.tb_next
    out = None
    for t in reversed(kept):
        out = types.TracebackType(out, t.tb_frame, t.tb_lasti, t.tb_lineno)
    return out


def _clean(exc: BaseException | None, seen: set[int] | None = None) -> None:
    seen = set() if seen is None else seen
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if exc.__traceback__ is not None:
            exc.__traceback__ = strip_frames(exc.__traceback__)
        for sub in getattr(exc, "exceptions", ()) or ():  # ExceptionGroup members
            if isinstance(sub, BaseException):
                _clean(sub, seen)
        if exc.__cause__ is not None:
            _clean(exc.__cause__, seen)
        exc = exc.__context__


def _hide_own_frames() -> None:
    """The interpreter's report of an uncaught exception shows the user's frames only, as it
    would without nsightwrap (the layer's wrapper frames sit between the user's call and the
    library's code)."""
    prev = sys.excepthook

    def excepthook(typ: type[BaseException], value: BaseException, tb: Any) -> None:
        try:
            _clean(value)
            tb = value.__traceback__
        except Exception:  # noqa: BLE001
            pass
        prev(typ, value, tb)

    sys.excepthook = excepthook
    t_prev = threading.excepthook

    def thread_hook(args: Any) -> None:
        try:
            _clean(args.exc_value)
            if args.exc_value is not None:
                args = threading.ExceptHookArgs(
                    (args.exc_type, args.exc_value, args.exc_value.__traceback__, args.thread)
                )
        except Exception:  # noqa: BLE001
            pass
        t_prev(args)

    threading.excepthook = thread_hook
