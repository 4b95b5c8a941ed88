"""The native part of reading a ``.ncu-rep``: every call into NVIDIA's ``ncu_report`` module.

``ncu_report`` is a compiled library, and some builds of it crash the whole process on reports
they should read (the copy inside Nsight Compute 2025.3.1's ``extras/python`` segfaults in
``metric.unit()`` on reports of that same ncu). So these calls are kept apart from everything
else: ``read_actions`` walks the report and returns plain data (names, raw metric values with
their units, NVTX state), and ``parsers.ncu`` turns that into the kernel frame. Run as a module,
it does the same in a child process and writes the result to a pickle file, so that a crash
costs one child, not the run (``nsightwrap.run.ncu_isolated``):

    python -m nsightwrap.parsers.ncu_native REPORT.ncu-rep OUT.pickle

Standard library and ``ncu_report`` only: the child starts in about 50 ms (no pandas).
"""

from __future__ import annotations

import faulthandler
import importlib.util
import json
import os
import pickle
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: What ``read_actions`` returns per kernel: ``name`` (demangled), ``short``, ``metrics``
#: (ncu name -> ``("num", value, unit)`` or ``("str", text)`` or None) and ``nvtx``
#: (``(push_pop, start_end)``: domain -> range names, outermost first; None without --nvtx).
RawAction = dict[str, Any]

#: First line the child writes on stderr, before it touches the report: which module it loaded.
MODULE_TAG = "NSIGHTWRAP_NCU_REPORT_MODULE "


class CorruptReport(Exception):
    """``ncu_report`` read the file but handed back what a sound report cannot hold."""


class ModuleMissing(Exception):
    """No ``ncu_report`` module can be imported."""


@dataclass(frozen=True)
class ModuleInfo:
    """Where an ``ncu_report`` module lives and what it is."""

    path: str | None  # the module's file (or package folder); None when none is importable
    version: str | None
    origin: str  # "pip" (the ncu-report package), "nsight-compute" (extras/python), "other", "missing"

    def describe(self) -> str:
        """``ncu_report 2025.3.1 from Nsight Compute's extras/python (/opt/...)``."""
        if self.path is None:
            return "no ncu_report module"
        where = {"pip": "the ncu-report package", "nsight-compute": "Nsight Compute's extras/python"}.get(
            self.origin, "an unknown source"
        )
        return f"ncu_report {self.version or '(version unknown)'} from {where} ({self.path})"


_NSIGHT_VERSION = re.compile(r"[Nn]sight[-_ ]?[Cc]ompute[-_ /]*(\d{4}\.\d+(?:\.\d+)*)")


def module_info(path: str | None = None) -> ModuleInfo:
    """Which ``ncu_report`` an ``import ncu_report`` would load (without importing it), or the
    one at ``path``: its file, version and origin."""
    if path is None:
        try:
            spec = importlib.util.find_spec("ncu_report")
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.origin:
            return ModuleInfo(None, None, "missing")
        path = spec.origin
    real = os.path.realpath(path)
    try:
        from importlib import metadata

        for dist_name in ("ncu-report", "ncu_report"):
            try:
                dist = metadata.distribution(dist_name)
            except metadata.PackageNotFoundError:
                continue
            for rel in ("ncu_report/__init__.py", "ncu_report.py"):
                if os.path.realpath(str(dist.locate_file(rel))) == real:
                    return ModuleInfo(path, dist.version, "pip")
    except Exception:  # broken metadata must not stop the report from being read
        pass
    m = _NSIGHT_VERSION.search(real)
    if m or "extras/python" in real.replace(os.sep, "/"):
        return ModuleInfo(path, m.group(1) if m else None, "nsight-compute")
    return ModuleInfo(path, None, "other")


def _metric(metric: Any, string_kind: Any) -> Any:
    if metric is None:
        return None
    if metric.kind() == string_kind:
        return ("str", metric.as_string())
    return ("num", float(metric.as_double()), metric.unit())


def _nvtx(action: Any) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]] | None:
    state = action.nvtx_state()
    if state is None:  # report taken without --nvtx
        return None
    push_pop: dict[str, tuple[str, ...]] = {}
    start_end: dict[str, tuple[str, ...]] = {}
    for domain_id in state.domains():
        info = state.domain_by_id(domain_id)
        name = info.name()
        push_pop[name] = tuple(info.push_pop_ranges())  # outermost first
        start_end[name] = tuple(info.start_end_ranges())
    return push_pop, start_end


def read_actions(path: str | Path) -> list[RawAction]:
    """Every profiled kernel of the report at ``path`` (an unpacked ``.ncu-rep``), as plain data.

    Raises ModuleMissing without ``ncu_report`` and CorruptReport for what a damaged report
    makes ``ncu_report`` hand back (an action without metrics, None where an object belongs).
    """
    try:
        import ncu_report
    except ImportError as exc:
        raise ModuleMissing(str(exc)) from exc
    context = ncu_report.load_report(str(path))
    demangled = ncu_report.IAction.NameBase_DEMANGLED
    string_kind = ncu_report.IMetric.ValueKind_STRING
    out: list[RawAction] = []
    try:
        for r in range(context.num_ranges()):
            rng = context.range_by_idx(r)
            for a in range(rng.num_actions()):
                action = rng.action_by_idx(a)
                names = action.metric_names()
                if not names:  # its result message failed to decode; ncu always records launch__*
                    raise CorruptReport(f"kernel {len(out)} could not be decoded")
                out.append(
                    {
                        "name": action.name(demangled),
                        "short": action.name(),
                        "metrics": {str(n): _metric(action.metric_by_name(n), string_kind) for n in names},
                        "nvtx": _nvtx(action),
                    }
                )
    except (AttributeError, TypeError, RuntimeError) as exc:
        # ncu_report hands back None or bad names from damaged payloads
        raise CorruptReport(str(exc)) from None
    return out


def main(argv: list[str] | None = None) -> int:
    """Child entry point: read REPORT, pickle ``("ok", actions)`` or ``("error", kind, text)``."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m nsightwrap.parsers.ncu_native REPORT OUT.pickle", file=sys.stderr)
        return 2
    report, out = args
    # A crash in native code then leaves the Python stack on stderr: the parent names the call.
    faulthandler.enable()
    result: tuple[Any, ...]
    try:
        import ncu_report

        # Said before the report is touched: if the next call crashes, the parent knows who did it.
        sys.stderr.write(MODULE_TAG + json.dumps({"file": getattr(ncu_report, "__file__", None)}) + "\n")
        sys.stderr.flush()
        result = ("ok", read_actions(report))
    except ModuleMissing as exc:
        result = ("error", "missing", str(exc))
    except ImportError as exc:
        result = ("error", "missing", str(exc))
    except CorruptReport as exc:
        result = ("error", "corrupt", str(exc))
    tmp = out + ".part"
    with open(tmp, "wb") as f:
        pickle.dump(result, f, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
