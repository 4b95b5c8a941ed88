"""Read a ``.ncu-rep`` in a child process, so that a crash of ``ncu_report`` costs one child.

``parsers.ncu`` does the parsing; only its native part (``parsers.ncu_native.read_actions``, the
calls into NVIDIA's compiled ``ncu_report``) runs in ``python -m nsightwrap.parsers.ncu_native``,
which hands its result back as a pickle file. A child killed by a signal (the ``ncu_report``
inside Nsight Compute 2025.3.1 segfaults in ``metric.unit()``) becomes one
``NativeReaderCrashed`` line naming the module, its version, the report and what to install;
the report is never touched. The child imports neither pandas nor nsightwrap's analysis, so it
costs about 50 ms beside the read itself.

``NSIGHTWRAP_NCU_IN_PROCESS=1`` reads in this process instead (faster by that much, no safety
net).
"""

from __future__ import annotations

import json
import os
import pickle
import re
import signal
import sys
import tempfile
from collections import OrderedDict
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from nsightwrap.core.errors import NativeReaderCrashed, ReportParseError
from nsightwrap.parsers import ncu, ncu_native
from nsightwrap.run.launch import probe

#: Environment variable: ``1`` reads ``.ncu-rep`` files in this process (no child).
ENV_IN_PROCESS = "NSIGHTWRAP_NCU_IN_PROCESS"
#: A report of a few thousand kernels reads in seconds; beyond this the child is stuck.
READ_TIMEOUT_S = 600.0

#: What to install when ``ncu_report`` crashes or is missing.
FIX = (
    "pip install ncu-report (the PyPI build reads reports of ncu 2025.3.1) and keep Nsight "
    "Compute's extras/python off PYTHONPATH and sys.path, so that it is the one imported"
)


def _signal_name(returncode: int) -> str:
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return f"signal {-returncode}"


def _child_module(stderr: str) -> ncu_native.ModuleInfo | None:
    for line in stderr.splitlines():
        if line.startswith(ncu_native.MODULE_TAG):
            try:
                file = json.loads(line[len(ncu_native.MODULE_TAG) :]).get("file")
            except ValueError:
                return None
            return ncu_native.module_info(file) if file else None
    return None


_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+) in (\S+)')


def _crash_site(stderr: str) -> str:
    """`` in unit() at ncu_report.py:1234``: from the child's faulthandler dump (innermost frame
    first), the frame that nsightwrap's reader called into, i.e. the ``ncu_report`` call that
    crashed."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if "most recent call first" in line:
            frames = [m for m in (_FRAME.match(f) for f in lines[i + 1 :]) if m]
            for inner, outer in zip(frames, frames[1:], strict=False):
                if os.path.basename(outer.group(1)) == "ncu_native.py" and os.path.basename(inner.group(1)) != "ncu_native.py":
                    return f" in {inner.group(3)}() at {os.path.basename(inner.group(1))}:{inner.group(2)}"
            break
    return ""


def read_actions_isolated(path: Path, shown: Path | None = None) -> list[dict[str, Any]]:
    """``ncu_native.read_actions(path)`` run in a child process with this process's ``sys.path``.

    Raises NativeReaderCrashed when the child dies of a signal, and the errors of
    ``read_actions`` (ModuleMissing, CorruptReport) as the parser expects them. Messages name
    ``shown`` (the file the user gave, e.g. the ``.gz`` that ``path`` was unpacked from).
    """
    if os.environ.get(ENV_IN_PROCESS) == "1":
        return ncu_native.read_actions(path)
    try:
        st = os.stat(path)
        # sys.path too: another search path may import another ncu_report.
        key: tuple[str, int, int, int] | None = (os.path.realpath(path), st.st_size, st.st_mtime_ns, hash(tuple(sys.path)))
    except OSError:
        key = None
    if key is not None and key in _CACHE:
        _CACHE.move_to_end(key)
        return list(_CACHE[key])
    actions = _read_in_child(path, shown)
    if key is not None:
        _CACHE[key] = actions
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return list(actions)


#: Reports read by a child, kept per (path, size, mtime, sys.path) so that a process that analyses the same
#: run twice (a notebook, report after profile, the test suite) starts one child per report.
CACHE_SIZE = 8
_CACHE: OrderedDict[tuple[str, int, int, int], list[dict[str, Any]]] = OrderedDict()


def _read_in_child(path: Path, shown: Path | None) -> list[dict[str, Any]]:
    # The child imports what this process would: same interpreter, same module search path.
    env = {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    name = shown or path
    with tempfile.TemporaryDirectory(prefix="nsightwrap-ncu-") as tmp:
        out = Path(tmp) / "actions.pickle"
        argv = [sys.executable, "-m", "nsightwrap.parsers.ncu_native", str(path), str(out)]
        res = probe(argv, timeout_s=READ_TIMEOUT_S, env=env)
        info = _child_module(res.stderr) or ncu_native.module_info()
        if res.returncode is not None and res.returncode < 0:
            raise NativeReaderCrashed(
                f"{name}: {info.describe()} crashed while reading it ({_signal_name(res.returncode)}"
                f"{_crash_site(res.stderr)}); the report itself is kept",
                hint=FIX,
            )
        if res.returncode is None:
            raise ReportParseError(f"{name}: reading it with {info.describe()} failed: {res.error}", hint=FIX)
        if res.returncode != 0 or not out.is_file():
            last = (res.stderr.strip().splitlines() or [f"exit code {res.returncode}"])[-1]
            raise ReportParseError(f"{name}: reading it with {info.describe()} failed: {last}", hint=FIX)
        with out.open("rb") as f:
            result = pickle.load(f)  # noqa: S301 - written a moment ago by our own child
    if result[0] == "ok":
        actions: list[dict[str, Any]] = result[1]
        return actions
    kind, text = result[1], result[2]
    if kind == "missing":
        raise ncu_native.ModuleMissing(text)
    raise ncu_native.CorruptReport(text)


def read_ncu_rep_isolated(path: str | Path) -> pd.DataFrame:
    """``parsers.ncu.read_ncu_rep`` with its native part in a child process."""
    return ncu.read_ncu_rep(path, reader=partial(read_actions_isolated, shown=Path(path)))


def read_ncu_isolated(path: str | Path) -> pd.DataFrame:
    """``parsers.ncu.read_ncu`` (``.csv`` or ``.ncu-rep``) with the native part in a child."""
    return ncu.read_ncu(path, reader=partial(read_actions_isolated, shown=Path(path)))
