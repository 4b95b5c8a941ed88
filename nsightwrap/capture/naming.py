"""Names of captured timings from what the script itself varies.

A captured timing keeps a stable id, ``<file>:<line> <what> #<call>`` (the site and the n-th call
from it), and gets a readable name where the script says what it varies:

- a ``triton.testing.perf_report`` sweep point: the Benchmark's ``plot_name`` (else the function's
  name) with its ``line_arg`` and ``x_names`` values, ``softmax-performance[provider=torch,N=2048]``;
- calls from one site whose enclosing function was called with different arguments: the function
  with the arguments that differ, ``bench[N=2048,dtype=bfloat16]``.

The format is the one ``nsightwrap.bench`` gives a sweep point (``mm[M=64,N=4096]``). Only
values that print the same in every process are used (numbers, short words, dtypes, shapes, named
functions): a name must be the same in every pass, since the NVTX ranges of the ncu and nsys
passes carry it. Standard library only (it runs inside the user's process).
"""

from __future__ import annotations

import enum
import re
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nsightwrap.core import contract

#: A string argument used in a name: a short word (no spaces, brackets, ``=`` or ``,``, which
#: would make ``name[k=v,...]`` ambiguous).
_WORD = re.compile(r"[A-Za-z0-9_.+:\-]{1,32}")
#: At most this many arguments of the enclosing function are looked at.
_MAX_ARGS = 12


def param_value(v: Any) -> str | None:
    """How ``v`` appears in a name, or None where it has no short form that is the same in every
    process (a tensor, an object whose repr holds an address)."""
    if v is None or isinstance(v, bool):
        return str(v)
    if isinstance(v, enum.Enum):
        return str(v.name)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, str):
        return v if _WORD.fullmatch(v) else None
    if type(v).__name__ == "dtype":  # torch.float16 -> float16; numpy's dtype prints its name
        s = str(v).removeprefix("torch.")
        return s if _WORD.fullmatch(s) else None
    if isinstance(v, (tuple, list)) and 0 < len(v) <= 4 and all(type(x) is int for x in v):
        return "x".join(str(x) for x in v)  # a shape
    if isinstance(v, (types.FunctionType, types.BuiltinFunctionType)):
        name = getattr(v, "__name__", "")
        return name if _WORD.fullmatch(name) else None  # not <lambda>
    return None


def frame_args(frame: Any) -> dict[str, str]:
    """The arguments of ``frame``'s function that have a short form (``param_value``), by name, in
    the function's order; empty at module level."""
    code = frame.f_code
    n = code.co_argcount + code.co_kwonlyargcount
    if not n:
        return {}
    loc = frame.f_locals
    out: dict[str, str] = {}
    for name in code.co_varnames[: min(n, _MAX_ARGS)]:
        if name in ("self", "cls") or name not in loc:
            continue
        s = param_value(loc[name])
        if s is not None:
            out[name] = s
    return out


def render(base: str, params: Mapping[str, str]) -> str:
    """``base[k=v,...]`` (``base`` alone without params), safe as an NVTX range name."""
    if not params:
        return contract.safe_range_name(base)
    return contract.safe_range_name(f"{base}[{','.join(f'{k}={v}' for k, v in params.items())}]")


@dataclass(frozen=True)
class NameInput:
    """What a captured timing's name is made from."""

    id: str  # file:line what #call
    group: str  # file:line what: calls from one site
    function: str  # the function the site is in
    line: int
    #: The sweep point it ran in (perf_report): base name and the varied values; None outside one.
    sweep: tuple[str, Mapping[str, str]] | None = None
    #: The enclosing function's arguments with a short form.
    args: Mapping[str, str] = field(default_factory=dict)


def auto_names(items: Sequence[NameInput], taken: set[str] | frozenset[str] = frozenset()) -> list[tuple[str, dict[str, str]]]:
    """Each item's name and params, in order (``items`` in the order the calls began; ``taken``:
    names given otherwise, by a label).

    A sweep point is named by its sweep; calls of one site by the enclosing function's arguments
    that differ between them (none differ, or one call: the id). Where one name would come from
    two sites, each gets its line (``bench:41[N=2048]``); a name that comes again from one site
    gets `` #2``, `` #3``; a name already taken gets ``'``."""
    cand: list[tuple[str, dict[str, str]] | None] = [None] * len(items)
    groups: dict[str, list[int]] = {}
    for i, it in enumerate(items):
        if it.sweep is not None:
            cand[i] = (it.sweep[0], dict(it.sweep[1]))
        else:
            groups.setdefault(it.group, []).append(i)
    for idx in groups.values():
        if len(idx) < 2:
            continue
        first = items[idx[0]].args
        common = [k for k in first if all(k in items[j].args for j in idx)]
        varied = [k for k in common if len({items[j].args[k] for j in idx}) > 1]
        if varied and items[idx[0]].function not in ("<module>", "<lambda>"):
            for j in idx:
                cand[j] = (items[j].function, {k: items[j].args[k] for k in varied})
    names = [render(*c) if c is not None else None for c in cand]
    sites: dict[str, set[str]] = {}
    for i, n in enumerate(names):
        if n is not None:
            sites.setdefault(n, set()).add(items[i].group)
    for i, n in enumerate(names):
        c = cand[i]
        if n is not None and c is not None and len(sites[n]) > 1:
            names[i] = render(f"{c[0]}:{items[i].line}", c[1])
    out: list[tuple[str, dict[str, str]]] = []
    seen: dict[str, int] = {}
    used = set(taken)
    for i, it in enumerate(items):
        n, c = names[i], cand[i]
        if n is None or c is None:
            name, params = it.id, {}
        else:
            k = seen[n] = seen.get(n, 0) + 1
            name, params = (n if k == 1 else f"{n} #{k}"), c[1]
        while name in used:  # two sites that print alike (same file name in two folders)
            name += "'"
        used.add(name)
        out.append((name, params))
    return out
