"""Per-process state of the capture layer: the pass, the captured timings, what was not captured.

One ``Layer`` per process (``layer()``), created when the layer is installed. Everything here
runs inside the user's program, so nothing may raise into it: the layer's own failures are kept
in ``Layer.errors`` (and in the sidecar) and the user's call then runs as without nsightwrap.
Standard library only; torch is touched only once the script has imported it.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from nsightwrap.capture import naming
from nsightwrap.core import contract
from nsightwrap.core.spacing import RewriteSpacing

#: Directories whose frames are never user code: a call from there is the library's own.
_PKG_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # nsightwrap/


@dataclass(frozen=True)
class Site:
    """Where a timing was made in the user's code."""

    file: str  # absolute path
    line: int
    function: str

    @property
    def basename(self) -> str:
        return os.path.basename(self.file)

    @property
    def key(self) -> str:
        """``file.py:41``: the site as the report and ``--label`` name it."""
        return f"{self.basename}:{self.line}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "function": self.function}


_SITES: dict[tuple[Any, int], Site] = {}


def site_of(frame: Any) -> Site:
    """The site of ``frame``'s current line (cached per code object and line)."""
    key = (frame.f_code, int(frame.f_lineno or 0))
    site = _SITES.get(key)
    if site is None:
        code = frame.f_code
        site = _SITES[key] = Site(os.path.abspath(code.co_filename), key[1], code.co_name)
    return site


@dataclass
class Capture:
    """One captured timing: a benchmark of the run (sidecar entry, docs/contracts.md)."""

    name: str
    kind: str  # contract.SOURCE_KINDS
    site: Site
    call: int
    label: str | None
    api: str  # what the user called: triton.testing.do_bench, Timer.blocked_autorange, ...
    t_start: float = field(default_factory=time.time)
    t_end: float | None = None
    samples_ns: list[float] = field(default_factory=list)
    user_value_ns: float | None = None
    returned: Any = None
    method: dict[str, Any] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)
    status: str = "running"  # running, ok, incomplete (the process ended mid-way)
    #: Where its windows lie on the GPU's timeline, for the plain pass's clock (capture/gpuwindows.py).
    clock_windows: dict[str, Any] | None = None
    #: The stable id, ``<file>:<line> <what> #<call>``: the site and the n-th call from it, the
    #: same whatever the name (``source.id``; ``--label`` and compare keep working across renames).
    id: str = ""
    seq: int = 0  # the order the calls began in (names are given in that order)
    explicit: bool = False  # named by nw.label, --label or the Timer's label (kept as given)
    #: The perf_report sweep point the call ran in (base name, values), and the enclosing
    #: function's arguments with a short form (naming.frame_args).
    sweep: tuple[str, dict[str, str]] | None = None
    args: dict[str, str] = field(default_factory=dict)
    #: What the name says was varied (``{"N": "2048", "provider": "torch"}``): the sidecar's params.
    params: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.id:
            self.id = self.name  # made without an id: its name is one

    @property
    def nvtx_path(self) -> str:
        return f"{contract.NVTX_DOMAIN}:{self.name}"

    def source(self) -> dict[str, Any]:
        return {
            "kind": self.kind, "id": self.id, "site": self.site.key, "call": self.call, "label": self.label,
            "file": self.site.file, "line": self.site.line, "function": self.site.function, "api": self.api,
        }  # fmt: skip

    def to_entry(self) -> dict[str, Any]:
        """The sidecar entry: the timer's fields (samples per call in ns, method) plus where the
        timing came from and what the user's code got back."""
        s = _summary(self.samples_ns)
        return _json_safe({
            "name": self.name, "params": dict(self.params), "nvtx_path": self.nvtx_path, "iter_prefix": contract.ITER_PREFIX,
            "timed": bool(self.samples_ns), "samples_ns": list(self.samples_ns), **s,
            "sm_clock_hz": None, "clock_source": "none", "sample_clock_hz": None, "throttled": 0,
            "throttle_reasons": [], "method": self.method, "flops": None, "bytes": None, "tflops": None,
            "gbps": None, "source": self.source(), "user_value_ns": self.user_value_ns,
            "returned": self.returned, "details": self.details, "status": self.status,
            "window_s": [self.t_start, self.t_end if self.t_end is not None else time.time()],
            **({"clock_windows": self.clock_windows} if self.clock_windows else {}),
        })  # fmt: skip


def _summary(samples: list[float]) -> dict[str, float | int | None]:
    import statistics

    if not samples:
        return {"median_ns": None, "min_ns": None, "mean_ns": None, "stdev_ns": None, "iqr_ns": None, "n": 0}
    q = statistics.quantiles(samples, n=4, method="inclusive") if len(samples) > 1 else [samples[0]] * 3
    return {
        "median_ns": statistics.median(samples), "min_ns": min(samples), "mean_ns": statistics.fmean(samples),
        "stdev_ns": statistics.stdev(samples) if len(samples) > 1 else 0.0, "iqr_ns": q[2] - q[0],
        "n": len(samples),
    }  # fmt: skip


def _json_safe(v: Any) -> Any:
    # Strict JSON: NaN and inf become null; tuples lists; anything else its repr.
    if isinstance(v, float):
        return v if v == v and v not in (float("inf"), float("-inf")) else None
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, dict):
        return {str(k): _json_safe(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_safe(x) for x in v]
    try:
        return _json_safe(float(v))
    except (TypeError, ValueError):
        return repr(v)


def over_cap(asked_ms: Mapping[str, Any], cap_ms: float | None) -> dict[str, list[float]]:
    """The loop lengths (ms, by argument name) over the nsys pass's cap ``cap_ms``, each
    ``[asked, run]``; empty where none is or there is no cap (docs/capture.md, "Shorter loops under
    nsys")."""
    out: dict[str, list[float]] = {}
    if cap_ms is None:
        return out
    for name, asked in asked_ms.items():
        if isinstance(asked, (int, float)) and not isinstance(asked, bool) and asked > cap_ms:
            out[name] = [float(asked), float(cap_ms)]
    return out


class Layer:
    """The capture layer of this process."""

    def __init__(self, environ: dict[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        p = env.get(contract.ENV_PASS)
        self.pass_name: str | None = p if p in (*contract.PASSES, contract.PASS_PLAIN_CLOCK) else None
        self.run_dir: str | None = env.get(contract.ENV_RUN_DIR) or None
        try:
            self.ncu_iters = max(1, int(env.get(contract.ENV_NCU_ITERS, "3")))
        except ValueError:
            self.ncu_iters = 3
        try:
            self.nsys_loop_ms = max(0.0, float(env.get(contract.ENV_NSYS_LOOP_MS, contract.NSYS_LOOP_MS)))
        except ValueError:
            self.nsys_loop_ms = float(contract.NSYS_LOOP_MS)
        self.labels = _parse_labels(env.get(contract.ENV_LABELS, ""))
        self.captures: list[Capture] = []
        self.not_captured: list[dict[str, Any]] = []
        self.errors: list[dict[str, Any]] = []
        self.lock = threading.RLock()
        self._calls: dict[tuple[str, str], int] = {}  # (site key, what) -> calls so far
        self._label_calls: dict[str, int] = {}
        self.local = threading.local()
        self._dirty = False
        self.spacing = RewriteSpacing()  # the sidecar is rewritten whole: not after every capture
        self._device: dict[str, Any] | None = None
        self._plain: dict[str, Any] | None = None
        self.internal_dirs: list[str] = [_PKG_DIR + os.sep]
        self._internal: dict[Any, bool] = {}  # code object -> library code (cached: on every record)
        self.windows_opened = 0  # event windows the layer kept (tests: none inside a plain do_bench)
        self._names: set[str] = set()
        #: Called after each sidecar write: other records kept beside it (capture/autotune.py
        #: adds its own when it patches triton's autotuner).
        self.after_write: list[Any] = []
        self._seq = 0
        self._plain_ids: dict[str, dict[str, Any]] | None = None

    # -- passes --------------------------------------------------------------------------------

    @property
    def under_ncu(self) -> bool:
        return self.pass_name == contract.PASS_NCU

    @property
    def loop_cap_ms(self) -> float | None:
        """Under nsys, the longest loop (ms) a do_bench or Timer autorange call may run; else None."""
        if self.pass_name != contract.PASS_NSYS or not self.nsys_loop_ms > 0:
            return None
        return self.nsys_loop_ms

    @property
    def ranges_on(self) -> bool:
        """NVTX ranges are opened only where a profiler listens (the ncu and nsys passes)."""
        return self.pass_name in (contract.PASS_NCU, contract.PASS_NSYS)

    @property
    def plain_clock(self) -> bool:
        """The plain pass runs under nsys sampling the GPU's clock: timings get anchors and
        their windows' places on the GPU's timeline (capture/gpuwindows.py)."""
        from nsightwrap.capture.gpuwindows import enabled

        return enabled(self.pass_name)

    @property
    def records(self) -> bool:
        """Timings are kept, and a sidecar written, in the plain pass (the run's timings) and the
        nsys pass (the same timings under nsys: the gap's profiler-overhead part compares them),
        or outside a profile run; never under ncu, which replays every kernel."""
        return self.pass_name in (contract.PASS_PLAIN, contract.PASS_NSYS, contract.PASS_PLAIN_CLOCK, None)

    # -- user code or library ------------------------------------------------------------------

    def add_internal(self, module: Any) -> None:
        """Frames from ``module``'s package are library code (torch, triton, nvtx)."""
        f = getattr(module, "__file__", None)
        if f:
            d = os.path.dirname(os.path.abspath(f)) + os.sep
            if d not in self.internal_dirs:
                self.internal_dirs.append(d)
                self._internal.clear()

    def is_internal(self, frame: Any) -> bool:
        code = frame.f_code
        got = self._internal.get(code)
        if got is None:
            fn = code.co_filename
            got = self._internal[code] = fn.startswith("<frozen") or any(fn.startswith(d) for d in self.internal_dirs)
        return got

    # -- naming --------------------------------------------------------------------------------

    def begin(self, kind: str, site: Site, what: str, api: str, label: str | None = None,
              frame: Any = None) -> Capture | None:  # fmt: skip
        """A new captured timing at ``site``: its call number, id and name (``frame``: the user's
        frame at the site, whose arguments may name it). None when another shard of ``--shard``
        owns it (then the call runs as without nsightwrap)."""
        with self.lock:
            key = (site.key, what)
            call = self._calls.get(key, 0) + 1
            self._calls[key] = call
            ident = contract.safe_range_name(f"{site.key} {what} #{call}")
            chosen = self.take_label() or self.labels_for(site) or label
            sweep: tuple[str, dict[str, str]] | None = None
            args: dict[str, str] = {}
            params: dict[str, str] = {}
            if chosen:
                chosen = contract.safe_range_name(chosen)
                n = self._label_calls.get(chosen, 0) + 1
                self._label_calls[chosen] = n
                name = chosen if n == 1 else f"{chosen} #{n}"
            else:
                stack = getattr(self.local, "sweep", None)
                sweep = stack[-1] if stack else None
                if sweep is None and frame is not None:
                    try:
                        args = naming.frame_args(frame)
                    except Exception as exc:  # noqa: BLE001 - the id names it then
                        self.error("naming", exc)
                name, params = self._first_name(ident, sweep)
            while name in self._names:  # two sites that print alike (same file name in two folders)
                name += "'"
            self._names.add(name)
            self._seq += 1
            seq = self._seq
        try:
            from nsightwrap.core.shard import in_shard

            if not in_shard(f"{site.key}#{call}"):
                return None
        except Exception as exc:  # noqa: BLE001 - a shard problem must not stop the script
            self.error("shard", exc)
        cap = Capture(name=name, kind=kind, site=site, call=call, label=chosen, api=api, id=ident, seq=seq,
                      explicit=bool(chosen), sweep=sweep, args=args, params=params)  # fmt: skip
        cap.method["pass"] = self.pass_name or "standalone"
        return cap

    def _first_name(self, ident: str, sweep: tuple[str, dict[str, str]] | None) -> tuple[str, dict[str, str]]:
        """The name a call gets when it begins. The ncu and nsys passes open NVTX ranges with it, so
        there it is the plain pass's name for the same id (read from its sidecar). In the plain pass
        (and where the plain pass has no such call) it is the sweep point's name or the id; the
        plain pass names its calls again from all of them when it writes its sidecar (``rename``:
        which arguments differ is known only then)."""
        if self.pass_name not in (contract.PASS_PLAIN, None):
            entry = self.plain_entry(ident)
            if entry is not None and entry.get("name"):
                params = entry.get("params")
                return str(entry["name"]), ({str(k): str(v) for k, v in params.items()} if isinstance(params, dict) else {})
        if sweep is None:
            return ident, {}
        base = naming.render(*sweep)
        n = self._label_calls.get(base, 0) + 1
        self._label_calls[base] = n
        return (base if n == 1 else f"{base} #{n}"), dict(sweep[1])

    def rename(self) -> None:
        """Name the plain pass's calls from all of them (``naming.auto_names``): a sweep point by its
        sweep, the calls of one site by the arguments that differ between them, else by the id.
        Labelled calls keep their label."""
        if self.pass_name not in (contract.PASS_PLAIN, None):
            return
        auto = sorted((c for c in self.captures if not c.explicit), key=lambda c: c.seq)
        items = [naming.NameInput(c.id, c.id.rsplit(" #", 1)[0], c.site.function, c.site.line, c.sweep, c.args)
                 for c in auto]  # fmt: skip
        taken = {c.name for c in self.captures if c.explicit}
        for c, (name, params) in zip(auto, naming.auto_names(items, taken), strict=True):
            c.name, c.params = name, params

    @contextmanager
    def sweep_point(self, base: str, params: dict[str, str]) -> Iterator[None]:
        """The timings made inside belong to the sweep point ``base`` with ``params`` (a
        ``perf_report`` call of the benchmark function)."""
        stack = getattr(self.local, "sweep", None)
        if stack is None:
            stack = self.local.sweep = []
        stack.append((base, params))
        try:
            yield
        finally:
            stack.pop()

    def labels_for(self, site: Site) -> str | None:
        for (file, line), name in self.labels.items():
            if line == site.line and (site.basename == file or site.file.endswith(os.sep + file.lstrip(os.sep))):
                return name
        return None

    def take_label(self) -> str | None:
        """The label set by ``nsightwrap.label`` on this thread: a pending one is used once; one
        entered as a context manager holds for every timing inside it."""
        pending = getattr(self.local, "pending_label", None)
        if pending is not None:
            self.local.pending_label = None
            return str(pending)
        stack = getattr(self.local, "label_stack", None)
        return str(stack[-1]) if stack else None

    # -- results -------------------------------------------------------------------------------

    def finish(self, cap: Capture) -> None:
        cap.t_end = time.time()
        if cap.status == "running":
            cap.status = "ok"
        self.add(cap)
        self.flush()

    def add(self, cap: Capture) -> None:
        with self.lock:
            if cap not in self.captures:
                self.captures.append(cap)
            self._dirty = True

    def skip(self, site: Site | None, kind: str, reason: str) -> None:
        """A timing call the layer did not capture, and why (the report lists them)."""
        with self.lock:
            self.not_captured.append({"site": site.key if site else None, "file": site.file if site else None,
                                      "line": site.line if site else None, "kind": kind, "reason": reason})  # fmt: skip
            self._dirty = True
        self.flush()

    def error(self, where: str, exc: BaseException) -> None:
        """The layer's own failure: kept, never raised into the script."""
        with self.lock:
            if len(self.errors) < 50:
                self.errors.append({"where": where, "error": f"{type(exc).__name__}: {exc}",
                                    "traceback": traceback.format_exc(limit=6)})  # fmt: skip
            self._dirty = True

    # -- sidecar ---------------------------------------------------------------------------------

    def sidecar_path(self) -> str | None:
        if not self.run_dir or not self.records or self.pass_name is None:
            return None
        return os.path.join(self.run_dir, self.pass_name, f"timer-{os.getpid()}-capture.json")

    def flush(self, *, force: bool = False) -> None:
        """Rewrite the sidecar, unless ``force`` only when ``spacing`` says it is due (the file
        grows with every capture: benchmarks/sidecar_write_speed.py). The exit handler forces
        the last write, so a script that raises keeps every capture; a process killed outright
        loses at most those since the last rewrite."""
        path = self.sidecar_path()
        if path is None or not self._dirty:
            return
        if not force and not self.spacing.due():
            return
        t0 = time.monotonic()
        try:
            with self.lock:
                doc = self.document()
                self._dirty = False
            from nsightwrap.core.jsonfile import write_json_atomic

            os.makedirs(os.path.dirname(path), exist_ok=True)
            write_json_atomic(path, doc, indent=1, allow_nan=False)
            for also in self.after_write:  # what else is kept beside the sidecar (the autotuners' choices)
                also()
            self.spacing.wrote(t0)
        except Exception as exc:  # noqa: BLE001 - a full disk must not stop the script
            self.errors.append({"where": "sidecar", "error": f"{type(exc).__name__}: {exc}"})

    def document(self) -> dict[str, Any]:
        torch = sys.modules.get("torch")
        try:
            self.rename()
        except Exception as exc:  # noqa: BLE001 - the names given when the calls began stay
            self.error("naming", exc)
        entries = [c.to_entry() for c in self.captures if c.samples_ns or c.user_value_ns is not None]
        return {
            "format": contract.SIDECAR_FORMAT, "version": contract.SIDECAR_VERSION, "pid": os.getpid(),
            "producer": "nsightwrap.capture", "device": self.device(),
            "torch_version": getattr(torch, "__version__", None) if torch else None,
            "python": sys.version.split()[0], "argv": list(sys.argv),
            "benchmarks": entries, "not_captured": list(self.not_captured),
            "capture_errors": [{k: v for k, v in e.items() if k != "traceback"} for e in self.errors],
        }  # fmt: skip

    def device(self) -> dict[str, Any]:
        """The GPU the script uses, once it has initialised CUDA (never initialised here)."""
        if self._device is not None:
            return self._device
        torch = sys.modules.get("torch")
        try:
            if torch is not None and torch.cuda.is_initialized():
                i = torch.cuda.current_device()
                p = torch.cuda.get_device_properties(i)
                self._device = {
                    "name": p.name, "index": i, "sm_count": int(p.multi_processor_count),
                    "l2_bytes": int(getattr(p, "L2_cache_size", 0)) or None,
                    "uuid": str(getattr(p, "uuid", "") or "") or None,
                }  # fmt: skip
                return self._device
        except Exception as exc:  # noqa: BLE001
            self.error("device", exc)
        return {}

    def _read_plain(self) -> None:
        self._plain, self._plain_ids = {}, {}
        if not self.run_dir:
            return
        import glob

        for p in sorted(glob.glob(os.path.join(self.run_dir, contract.PASS_PLAIN, "timer-*-capture.json"))):
            try:
                with open(p, encoding="utf-8") as f:
                    doc = json.load(f)
                for e in doc.get("benchmarks") or []:
                    self._plain.setdefault(str(e.get("name")), e)
                    src = e.get("source")
                    if isinstance(src, dict) and src.get("id"):
                        self._plain_ids.setdefault(str(src["id"]), e)
            except (OSError, ValueError, AttributeError):
                continue

    def plain_value(self, name: str) -> Any:
        """What the call named ``name`` returned in the plain pass (the ncu pass's placeholder)."""
        if self._plain is None:
            self._read_plain()
        return (self._plain or {}).get(name)

    def plain_entry(self, ident: str) -> dict[str, Any] | None:
        """The plain pass's sidecar entry of the call with id ``ident`` (its name and params)."""
        if self._plain_ids is None:
            self._read_plain()
        return (self._plain_ids or {}).get(ident)


def _parse_labels(raw: str) -> dict[tuple[str, int], str]:
    out: dict[tuple[str, int], str] = {}
    if not raw:
        return out
    try:
        doc = json.loads(raw)
    except ValueError:
        return out
    for k, v in doc.items() if isinstance(doc, dict) else ():
        file, _, line = str(k).rpartition(":")
        if file and line.isdigit():
            out[(file, int(line))] = str(v)
    return out


_LAYER: Layer | None = None


def layer() -> Layer | None:
    """This process's layer, or None when it is not installed."""
    return _LAYER


def set_layer(value: Layer | None) -> None:
    global _LAYER
    _LAYER = value


#: Every attribute the layer replaced: (owner, name, whether the owner had its own, what it had,
#: the replacement). ``uncaptured`` puts the originals back for the length of a block.
_PATCHES: list[tuple[Any, str, bool, Any, Any]] = []
_PATCH_LOCK = threading.Lock()


def patch(owner: Any, name: str, new: Any) -> None:
    """Set ``owner.name = new``, keeping what was there (a class's own ``__dict__`` entry, so a
    staticmethod ``__new__`` comes back as one)."""
    own = vars(owner)
    _PATCHES.append((owner, name, name in own, own.get(name), new))
    setattr(owner, name, new)


def _take_out(patches: list[tuple[Any, str, bool, Any, Any]]) -> None:
    """Put the originals of ``patches`` (``_PATCHES`` entries) back, last patch first; the caller
    holds ``_PATCH_LOCK``."""
    for owner, name, had, orig, _new in reversed(patches):
        if had:
            setattr(owner, name, orig)
        else:
            delattr(owner, name)


def _put_back(patches: list[tuple[Any, str, bool, Any, Any]]) -> None:
    """Install the layer's replacements of ``patches`` again; the caller holds ``_PATCH_LOCK``."""
    for owner, name, _had, _orig, new in patches:
        setattr(owner, name, new)


@contextmanager
def uncaptured() -> Iterator[None]:
    """Run a block as without the layer: its hooks taken out and nothing captured, in every
    thread, until the block ends. A module first imported inside the block stays unpatched."""
    global _LAYER
    with _PATCH_LOCK:
        saved = _LAYER
        if saved is not None:
            _LAYER = None  # every wrapper still referenced (from-imports) passes straight through
            _take_out(_PATCHES)
    try:
        yield
    finally:
        if saved is not None:
            with _PATCH_LOCK:
                _put_back(_PATCHES)
                _LAYER = saved


_UNPATCHED: set[int] = set()  # ids of the owners ``unpatched`` has put back now


@contextmanager
def unpatched(owner: Any) -> Iterator[bool]:
    """``owner`` as its library has it for the length of the block (the layer's other hooks stay
    in), where no other code could miss the hooks: only while this is the process's one Python
    thread (an event another thread records meanwhile would go unseen) and not already inside such
    a block. Yields whether the originals were put back."""
    with _PATCH_LOCK:
        mine = [p for p in _PATCHES if p[0] is owner]
        swap = bool(mine) and id(owner) not in _UNPATCHED and threading.active_count() == 1
        if swap:
            _UNPATCHED.add(id(owner))
            _take_out(mine)
    try:
        yield swap
    finally:
        if swap:
            with _PATCH_LOCK:
                _put_back(mine)
                _UNPATCHED.discard(id(owner))


def note_layer_error(where: str, exc: BaseException) -> None:
    if _LAYER is not None:
        _LAYER.error(where, exc)


@contextmanager
def guarded(where: str) -> Iterator[None]:
    """Run layer bookkeeping; a failure is recorded and swallowed (never the user's)."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001
        note_layer_error(where, exc)
