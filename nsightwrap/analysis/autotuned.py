"""Which config of each ``triton.autotune`` kernel every pass ran, and the benchmarks it concerns.

The capture layer pins the plain pass's autotuner choices into the later passes and writes, per
process, ``RUN_DIR/<pass>/autotune-<pid>.json`` (``contract.AUTOTUNE_FORMAT``, written by
``capture/autotune.py``; docs/capture.md, "Autotuned kernels"): per autotuner, every key it holds
with the config chosen, the keys pinned from the plain pass and those tuned in that process. The
ncu passes (the ncu pass, the clock sweep's, the coverage pass) all write in ``RUN_DIR/ncu/``.

A key a later pass ran with another config than the plain pass chose (tuned afresh there: the
plain pass's choice could not be pinned, or the plain pass recorded none) means that pass
measured another kernel than the one the script's timing is of. The files do not say which
benchmark ran which key, so a key is tied to the benchmarks whose launches in that pass are of
the autotuned function (the kernel's name is the function's) at the block size the config gives
(``num_warps`` x 32 threads); where the config names no ``num_warps``, by the kernel name alone.
Such a benchmark gets no ncu figure (``Provenance.no_ncu``), or its nsys figure is not used
(``Provenance.no_nsys``), each with one line that names both configs and what was compared.

Whatever the autotune files say (and for kernels no autotuner chose), a benchmark's kernels in the
ncu pass are checked against its own kernels in the nsys pass by their resources
(``resource_mismatch``): registers per thread and static and dynamic shared memory per block, as
ncu (``launch__registers_per_thread``, ``launch__shared_mem_per_block_static`` / ``_dynamic``) and
the nsys export's kernel table (``registersPerThread``, ``staticSharedMemory``,
``dynamicSharedMemory``) record them. The same function at the same grid and block but built
otherwise (another specialization, another config that launches the same shape, a JIT that
recompiled) is another kernel: such a benchmark gets no ncu figure, the reason naming the field
and both values. The plain pass's kernels are not recorded, so only ncu against nsys is checked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nsightwrap.analysis.iterations import ITER_PATH, NsysIterations
from nsightwrap.analysis.ncusample import dims_size
from nsightwrap.core.contract import AUTOTUNE_FORMAT, AUTOTUNE_GLOB, PASS_NCU, PASS_NSYS, PASS_PLAIN

if TYPE_CHECKING:
    from nsightwrap.analysis.reconcile import BenchmarkSpec

#: A tuning key as the files write it (a JSON list), as a tuple.
TuneKey = tuple[Any, ...]
#: The note the capture layer writes for an autotuner it can neither record nor pin.
_UNPINNABLE = re.compile(r"^(?P<cls>\S+) of (?P<name>.+?) has no `cache` dict or `configs` list")
#: Threads per warp: a Triton kernel's block is ``num_warps`` x 32 threads.
WARP = 32
#: The first words of the note that says why a benchmark's nsys figure is not used.
NO_NSYS_LEAD = "nsys figure not used: "
#: A kernel's resources as the reasons name them, with ncu's metric and the nsys ops column
#: (parsers/nsys.py) of each; all in registers or bytes.
RESOURCES = (
    ("registers per thread", "launch__registers_per_thread", "registers"),
    ("static shared memory per block (bytes)", "launch__shared_mem_per_block_static", "shared_static_bytes"),
    ("dynamic shared memory per block (bytes)", "launch__shared_mem_per_block_dynamic", "shared_dynamic_bytes"),
)
#: One launch's resources in the order of ``RESOURCES`` (None: not recorded).
Resources = tuple[int | None, ...]
#: (function name, grid size, block size): a kernel and launch shape both passes name alike.
ShapeKey = tuple[str, int | None, int | None]


@dataclass(frozen=True)
class Tuner:
    """One autotuner as one pass's processes recorded it."""

    tuner: str  # ``file:line function`` of the kernel's definition
    function: str  # the function's qualified name
    chosen: tuple[tuple[TuneKey, str], ...]  # key -> the config as triton prints it
    pinned: frozenset[TuneKey]
    tuned: frozenset[TuneKey]

    @property
    def kernel(self) -> str:
        """The kernel's name as ncu and nsys show it: the function's own name."""
        return self.function.split(".")[-1]


@dataclass(frozen=True)
class PassTuning:
    """One pass's autotune files: its autotuners, those it could not pin, files it could not read."""

    pass_name: str
    tuners: tuple[Tuner, ...]
    #: Kernel names of autotuners the layer could neither record nor pin, with the class named.
    unpinnable: tuple[tuple[str, str], ...] = ()
    #: The layer's notes (choices not pinned, files not read).
    notes: tuple[str, ...] = ()
    unread: tuple[str, ...] = ()


@dataclass(frozen=True)
class Divergence:
    """A key a later pass ran with another config than the plain pass chose (or with one the plain
    pass never recorded)."""

    pass_name: str
    tuner: Tuner
    key: TuneKey
    plain: str | None
    ran: str
    #: The layer's note on why the plain pass's choice was not pinned (None: the plain pass had none).
    why_not_pinned: str | None = None

    @property
    def block(self) -> int | None:
        """Threads per block the config launches (``num_warps`` x 32), None where not named."""
        w = config_fields(self.ran).get("num_warps")
        return int(w) * WARP if w is not None and w.isdigit() else None


@dataclass(frozen=True)
class Provenance:
    """Per benchmark (in the order of the specs): why its ncu figure, or its nsys figure, is of
    another config than the plain pass timed (None: nothing found), and notes."""

    no_ncu: tuple[str | None, ...]
    no_nsys: tuple[str | None, ...]
    notes: tuple[tuple[str, ...], ...]
    #: Per benchmark: whether its ncu pass's autotuned kernels are known to be the plain pass's
    #: configs (every key of their autotuners pinned or chosen alike): then a launch shape ncu and
    #: nsys disagree on is the nsys pass's other config, not ncu's.
    ncu_pinned: tuple[bool, ...] = ()
    #: The run's notes: autotune files that could not be read.
    run_notes: tuple[str, ...] = ()


def config_fields(text: str) -> dict[str, str]:
    """``"BLOCK: 64, num_warps: 4"`` -> ``{"BLOCK": "64", "num_warps": "4"}`` (what parses)."""
    out: dict[str, str] = {}
    for part in text.split(", "):
        k, sep, v = part.partition(": ")
        if sep and k.strip():
            out[k.strip()] = v.strip()
    return out


def config_difference(a: str, b: str) -> tuple[str, str]:
    """The fields two configs differ in, each side as ``k: v, ...`` (whole texts where they do not parse)."""
    fa, fb = config_fields(a), config_fields(b)
    if not fa or not fb:
        return a, b
    keys = [k for k in dict.fromkeys([*fa, *fb]) if fa.get(k) != fb.get(k)]
    if not keys:
        return a, b
    return (", ".join(f"{k}: {fa.get(k, '-')}" for k in keys), ", ".join(f"{k}: {fb.get(k, '-')}" for k in keys))


def read_pass(pass_dir: Path, pass_name: str) -> PassTuning | None:
    """The autotune files of one pass directory, merged over its processes (None: no file).

    A key tuned in any process of the pass counts as tuned; a key chosen differently by two
    processes keeps each choice (both are checked against the plain pass)."""
    paths = sorted(pass_dir.glob(AUTOTUNE_GLOB)) if pass_dir.is_dir() else []
    if not paths:
        return None
    found: dict[str, dict[str, Any]] = {}
    unpinnable: dict[str, str] = {}
    notes: list[str] = []
    unread: list[str] = []
    for path in paths:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(doc, Mapping) or doc.get("format") != AUTOTUNE_FORMAT:
                raise ValueError(f"not an {AUTOTUNE_FORMAT} file")
            for t in doc.get("tuners") or ():
                rec = found.setdefault(str(t["tuner"]), {"function": str(t.get("function") or t["tuner"]),
                                                         "chosen": {}, "pinned": set(), "tuned": set()})  # fmt: skip
                for c in t.get("chosen") or ():
                    rec["chosen"].setdefault((tuple(c["key"]), str(c.get("config"))), None)
                rec["pinned"].update(tuple(k) for k in t.get("pinned") or ())
                rec["tuned"].update(tuple(k) for k in t.get("tuned") or ())
            for n in doc.get("notes") or ():
                notes.append(str(n))
                if (m := _UNPINNABLE.match(str(n))) is not None:
                    unpinnable.setdefault(m.group("name").split(".")[-1], m.group("cls"))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            unread.append(f"{path.parent.name}/{path.name}: not read ({type(exc).__name__}: {exc})")
    tuners = tuple(
        Tuner(name, rec["function"], tuple(rec["chosen"]), frozenset(rec["pinned"]), frozenset(rec["tuned"]))
        for name, rec in found.items()
    )
    return PassTuning(pass_name, tuners, tuple(unpinnable.items()), tuple(dict.fromkeys(notes)), tuple(unread))


def divergences(plain: PassTuning | None, later: PassTuning) -> list[Divergence]:
    """Every key ``later`` ran with a config other than the plain pass's, or tuned afresh where the
    plain pass recorded no choice. A key tuned afresh that came out as the plain pass's config is
    the same kernel: not listed."""
    chose: dict[tuple[str, TuneKey], set[str]] = {}
    for t in plain.tuners if plain is not None else ():
        for key, config in t.chosen:
            chose.setdefault((t.tuner, key), set()).add(config)
    out: list[Divergence] = []
    for t in later.tuners:
        for key, config in t.chosen:
            mine = chose.get((t.tuner, key))
            if mine is None and key not in t.tuned:
                continue  # pinned, or from an earlier run's disk cache the plain pass read too
            if mine is not None and config in mine:
                continue
            why = next((n for n in later.notes if n.startswith(f"{t.tuner}: key {list(key)} not pinned")), None)
            out.append(Divergence(later.pass_name, t, key, sorted(mine)[0] if mine else None, config, why))
    return out


def _ncu_blocks(kernels: pd.DataFrame | None, specs: Sequence[BenchmarkSpec]) -> dict[int, dict[str, set[int | None]]]:
    """Per benchmark: each kernel (function name) ncu ran in its iterations, with its block sizes."""
    from nsightwrap.analysis.reconcile import base_name

    out: dict[int, dict[str, set[int | None]]] = {}
    if kernels is None or kernels.empty:
        return out
    heads = {f"{s.nvtx_path}/{s.iter_prefix}": i for i, s in enumerate(specs)}
    for paths, name, block in zip(kernels["nvtx_ranges"], kernels["kernel"].astype(str), kernels["block"], strict=True):
        seq = (paths,) if isinstance(paths, str) else tuple(paths) if isinstance(paths, (list, tuple, np.ndarray)) else ()
        for p in seq:
            m = ITER_PATH.fullmatch(str(p))
            if m and (b := heads.get(m.group(1))) is not None:
                out.setdefault(b, {}).setdefault(base_name(name), set()).add(dims_size(block))
                break
    return out


def _nsys_blocks(found: NsysIterations | None) -> dict[int, dict[str, set[int | None]]]:
    """Per benchmark: each kernel (function name) nsys saw launched in its iterations, with its block sizes."""
    from nsightwrap.analysis.reconcile import base_name

    out: dict[int, dict[str, set[int | None]]] = {}
    if found is None or found.ops.empty or "op_id" not in found.ops:
        return out
    k = found.ops[(found.ops["kind"].astype(str) == "kernel") & found.ops["spec"].notna()][["op_id", "spec"]]
    cols = [c for c in ("op_id", "name", "block") if c in found.all_ops]
    if k.empty or "name" not in cols:
        return out
    k = k.merge(found.all_ops[cols].drop_duplicates("op_id"), on="op_id", how="inner")
    blocks = k["block"] if "block" in k else pd.Series(None, index=k.index)
    for spec, name, block in zip(k["spec"], k["name"].astype(str), blocks, strict=True):
        out.setdefault(int(spec), {}).setdefault(base_name(name), set()).add(dims_size(block))
    return out


def _tied(d: Divergence, blocks: Mapping[str, set[int | None]]) -> str | None:
    """How divergence ``d`` is tied to a benchmark whose launches are ``blocks`` (None: it is not)."""
    seen = blocks.get(d.tuner.kernel)
    if not seen:
        return None
    want = d.block
    known = {b for b in seen if b is not None}
    if want is None or not known:
        return "tied to this benchmark by the kernel's name alone: the autotune files do not say which benchmark ran which key"
    if want not in known:
        return None
    plain_w = config_fields(d.plain).get("num_warps") if d.plain else None
    alike = plain_w is not None and plain_w.isdigit() and int(plain_w) * WARP == want
    return (
        f"tied to this benchmark by the kernel's name and its block of {want} threads (num_warps {want // WARP})"
        + (", which both configs launch" if alike else "")
    )


def _reason(d: Divergence, tie: str) -> str:
    pass_word = {PASS_NCU: "the ncu pass", PASS_NSYS: "the nsys pass"}.get(d.pass_name, f"the {d.pass_name} pass")
    key = json.dumps(list(d.key))
    if d.plain is None:
        return (
            f"{pass_word} may have run another config of {d.tuner.kernel} than the plain pass timed (none recorded "
            f"vs {d.ran}): its autotuner tuned key {key} afresh there and the plain pass recorded no choice for that "
            f"key; {tie}"
        )
    a, b = config_difference(d.plain, d.ran)
    why = (
        "nsightwrap could not pin the plain pass's choice there (it is not the config at the same place in that "
        "pass's configs: the script's configs differ between the passes)"
        if d.why_not_pinned else "its autotuner tuned that key afresh there"
    )  # fmt: skip
    return f"{pass_word} ran another config of {d.tuner.kernel} than the plain pass timed ({a} vs {b}) for key {key}: {why}; {tie}"


def _pinned_all(t: PassTuning | None, plain: PassTuning | None, kernels: set[str]) -> bool:
    """Whether every key of the autotuners of ``kernels`` ran the plain pass's config in ``t``."""
    if t is None or plain is None:
        return False
    mine = [x for x in t.tuners if x.kernel in kernels]
    return bool(mine) and not [d for d in divergences(plain, PassTuning(t.pass_name, tuple(mine), (), t.notes))]


def _whole(v: object) -> int | None:
    """A resource figure as a whole number (None: missing or not a number)."""
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return int(round(f)) if np.isfinite(f) else None


def _ncu_resources(kernels: pd.DataFrame | None, specs: Sequence[BenchmarkSpec]) -> dict[int, dict[ShapeKey, set[Resources]]]:
    """Per benchmark: the resources of each kernel and launch shape ncu profiled in its iterations."""
    from nsightwrap.analysis.reconcile import base_name

    out: dict[int, dict[ShapeKey, set[Resources]]] = {}
    if kernels is None or kernels.empty or not any(m in kernels for _, m, _c in RESOURCES):
        return out
    heads = {f"{s.nvtx_path}/{s.iter_prefix}": i for i, s in enumerate(specs)}
    res = [kernels[m].tolist() if m in kernels else [None] * len(kernels) for _, m, _c in RESOURCES]
    rows = zip(kernels["nvtx_ranges"], kernels["kernel"].astype(str), kernels["grid"], kernels["block"], *res,
               strict=True)  # fmt: skip
    for paths, name, grid, block, *values in rows:
        seq = (paths,) if isinstance(paths, str) else tuple(paths) if isinstance(paths, (list, tuple, np.ndarray)) else ()
        for p in seq:
            m = ITER_PATH.fullmatch(str(p))
            if m and (b := heads.get(m.group(1))) is not None:
                key = (base_name(name), dims_size(grid), dims_size(block))
                out.setdefault(b, {}).setdefault(key, set()).add(tuple(_whole(v) for v in values))
                break
    return out


def _nsys_resources(found: NsysIterations | None) -> dict[int, dict[ShapeKey, set[Resources]]]:
    """Per benchmark: the resources of each kernel and launch shape nsys saw launched in its iterations."""
    from nsightwrap.analysis.reconcile import base_name

    out: dict[int, dict[ShapeKey, set[Resources]]] = {}
    if found is None or found.ops.empty or "op_id" not in found.ops:
        return out
    cols = ["op_id", "name", "grid", "block", *(c for _, _m, c in RESOURCES)]
    if not set(cols) <= set(found.all_ops):
        return out
    k = found.ops[(found.ops["kind"].astype(str) == "kernel") & found.ops["spec"].notna()][["op_id", "spec"]]
    if k.empty:
        return out
    k = k.merge(found.all_ops[cols].drop_duplicates("op_id"), on="op_id", how="inner")
    # Millions of launches, a few distinct kernels: each distinct row once.
    k = k.drop(columns="op_id").drop_duplicates()
    res = [k[c].tolist() for _, _m, c in RESOURCES]
    for spec, name, grid, block, *values in zip(k["spec"], k["name"].astype(str), k["grid"], k["block"], *res,
                                                strict=True):  # fmt: skip
        key = (base_name(name), dims_size(grid), dims_size(block))
        out.setdefault(int(spec), {}).setdefault(key, set()).add(tuple(_whole(v) for v in values))
    return out


def _alike(a: Resources, b: Resources) -> bool:
    """Whether two launches' resources agree on every field both recorded."""
    return all(x is None or y is None or x == y for x, y in zip(a, b, strict=True))


def resource_mismatch(
    specs: Sequence[BenchmarkSpec], ncu: pd.DataFrame | None, found: NsysIterations | None
) -> tuple[str | None, ...]:
    """Per benchmark: why its ncu kernels are not the ones nsys timed in it (one line beginning
    ``OTHER_CONFIG_HEAD``), or None. A kernel ncu profiled at a launch shape nsys saw it at in the
    benchmark's iterations must have the registers per thread and shared memory (static and dynamic)
    of one of nsys's launches there; a field either side did not record is not compared."""
    from nsightwrap.analysis.ncusample import OTHER_CONFIG_HEAD

    mine, theirs = _ncu_resources(ncu, specs), _nsys_resources(found)
    out: list[str | None] = [None] * len(specs)
    for b, kernels in mine.items():
        seen = theirs.get(b, {})
        for key in sorted(k for k in kernels if k in seen):
            odd = [r for r in sorted(kernels[key], key=str) if not any(_alike(r, t) for t in seen[key])]
            if not odd:
                continue
            r, t = odd[0], sorted(seen[key], key=str)[0]
            diff = "; ".join(
                f"{what} {x} vs {y} under nsys"
                for (what, _m, _c), x, y in zip(RESOURCES, r, t, strict=True) if x is not None and y is not None and x != y
            )  # fmt: skip
            out[b] = (
                f"{OTHER_CONFIG_HEAD}{key[0]} than nsys timed here, at the same grid and block ({diff}): another "
                "build of the kernel, and a ratio between two different kernels would mean nothing; a kernel "
                "compiled per process (a JIT, an autotuner nsightwrap cannot pin) needs its choice fixed in the script"
            )
            break
    return tuple(out)


def provenance(
    run_dir: Path, specs: Sequence[BenchmarkSpec], ncu: pd.DataFrame | None, found: NsysIterations | None
) -> Provenance | None:
    """Per benchmark, whether the ncu and nsys passes ran the configs of its autotuned kernels the
    plain pass timed, from the run's autotune files, and whether its ncu kernels have the resources
    of its nsys kernels (``resource_mismatch``); None where no pass wrote an autotune file and
    every benchmark's resources agree."""
    from nsightwrap.analysis.ncusample import NO_NCU_LEAD

    passes = {p: read_pass(run_dir / p, p) for p in (PASS_PLAIN, PASS_NCU, PASS_NSYS)}
    built = resource_mismatch(specs, ncu, found)
    n = len(specs)
    if not any(passes.values()):
        if not any(built):
            return None
        none: tuple[str | None, ...] = (None,) * n
        return Provenance(built, none, ((),) * n, (False,) * n)
    plain = passes[PASS_PLAIN]
    no_ncu: list[str | None] = [None] * n
    no_nsys: list[str | None] = [None] * n
    notes: list[list[str]] = [[] for _ in range(n)]
    launched = {PASS_NCU: _ncu_blocks(ncu, specs), PASS_NSYS: _nsys_blocks(found)}
    for name in (PASS_NCU, PASS_NSYS):
        later = passes[name]
        if later is None:
            continue
        for d in divergences(plain, later):
            for b, blocks in launched[name].items():
                tie = _tied(d, blocks)
                if tie is None:
                    continue
                if name == PASS_NCU and no_ncu[b] is None:
                    no_ncu[b] = NO_NCU_LEAD + _reason(d, tie) + "; a ratio between two different kernels would mean nothing"
                elif name == PASS_NSYS and no_nsys[b] is None:
                    no_nsys[b] = NO_NSYS_LEAD + _reason(d, tie) + "; its kernels there are not the ones the plain pass timed"
    # Autotuners the layer could not pin: every pass tuned them afresh, and no file holds their choices.
    cant: dict[str, str] = {}
    for t in passes.values():
        for kernel, cls in t.unpinnable if t is not None else ():
            cant.setdefault(kernel, cls)
    for b in range(n):
        mine = set(launched[PASS_NCU].get(b, {})) | set(launched[PASS_NSYS].get(b, {}))
        for kernel, cls in cant.items():
            if kernel in mine:
                notes[b].append(
                    f"nsightwrap could not pin the autotuner of {kernel} ({cls} has no `cache` dict or `configs` list): "
                    "every pass tuned it afresh and recorded no choice, so the config ncu and nsys ran is checked "
                    "against each other by launch shape only, not against the plain pass's"
                )
    unread = tuple(
        f"autotune record {u}: the autotuned kernels' configs in that process were not checked against the plain pass's"
        for t in passes.values() if t is not None for u in t.unread
    )  # fmt: skip
    pinned = tuple(_pinned_all(passes[PASS_NCU], plain, set(launched[PASS_NCU].get(b, {}))) for b in range(n))
    # The autotune files' reason (it names both configs) first, else the resources'.
    no_ncu = [why or other for why, other in zip(no_ncu, built, strict=True)]
    return Provenance(tuple(no_ncu), tuple(no_nsys), tuple(tuple(x) for x in notes), pinned, unread)
