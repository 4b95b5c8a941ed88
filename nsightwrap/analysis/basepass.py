"""Whether the clock sweep's passes can change an answer, decided after the other passes.

**The base pass** (ncu at ``--clock-control base``) measures each kernel's clock elasticity
``e``, which carries ncu's duration from the clock ncu ran the kernel at (``f_ncu``) to the
benchmark's measured clock (``f_ref``): ``t * (f_ncu / f_ref) ** e``. With ``e`` anywhere in
[0, 1], that factor lies between 1 and ``f_ncu / f_ref``, so where every benchmark's two clocks
are within ``BASE_CLOCK_GAP`` of each other, no measured elasticity can move a ratio by more than
that, and the pass is skipped. Where they are further apart, the run is analysed again with every
guessed elasticity at 0 and at 1 (analysis/whatif.py, the ends of what a measured one can be):
where neither end moves any benchmark's verdict or causes, the pass is skipped.

**The duration pass** (ncu with each kernel's duration and SM clock only) replaces the ncu
pass's durations, which its counters' replay passes move (docs/timer-accuracy.md); the run is
analysed with every ncu duration ``DURATION_MOVE`` shorter and longer, and where no verdict or
cause moves, the pass is skipped.

The shipped runs measured what each pass buys (docs/profile.md, "What the clock sweep buys").
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, wait
from pathlib import Path
from typing import Any

from nsightwrap.analysis.model import RunResult
from nsightwrap.analysis.whatif import WhatIf
from nsightwrap.core.contract import BASE_CLOCK_GAP
from nsightwrap.core.rundir import CLOCK_SWEEP_PASS

#: How far the duration pass can move a benchmark's ncu durations, as a fraction: on the shipped
#: H200 runs (15 benchmarks) it moved a benchmark's ncu sum by 0.0-1.8%, and by 7.3% on one of
#: fixtures/runs/h200-mixed (radix-sort kernels the counters' replay reads 10% short); single
#: kernels of a few us moved up to 22%.
DURATION_MOVE = 0.10


def clock_gaps(result: RunResult) -> list[tuple[str, float]]:
    """Per benchmark with both clocks, ``|f_ncu / f_ref - 1|`` (ncu's clock against its reference)."""
    out = []
    for b in result.benchmarks:
        f_ncu = b.ncu.sm_clock_hz if b.ncu is not None else None
        if f_ncu and b.ref_clock_hz and f_ncu > 0 and b.ref_clock_hz > 0:
            out.append((b.name, abs(f_ncu / b.ref_clock_hz - 1.0)))
    return out


def base_pass_unneeded(result: RunResult, gap: float = BASE_CLOCK_GAP) -> str | None:
    """None when some benchmark's clocks are further apart than ``gap`` (the pass is needed);
    else one line saying why it is not."""
    gaps = clock_gaps(result)
    if any(g > gap for _, g in gaps):
        return None
    if not gaps:
        return "no benchmark has a measured SM clock to carry ncu's durations to"
    name, worst = max(gaps, key=lambda x: x[1])
    return (
        f"every benchmark's measured SM clock is within {100 * gap:g}% of ncu's (largest {100 * worst:.1f}%, "
        f"{name}): no clock elasticity can move a ratio by more than that"
    )


def diagnoses(result: RunResult) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Per benchmark its verdict and the codes of its causes: what a what-if must not move."""
    return {b.name: (b.verdict.value, tuple(sorted(c.code.value for c in b.causes))) for b in result.benchmarks}


def moved(base: RunResult, other: RunResult) -> str | None:
    """The first benchmark whose verdict or causes differ between the two analyses, in one line;
    None where none does."""
    a, b = diagnoses(base), diagnoses(other)
    for name, (v, causes) in a.items():
        w, other_causes = b.get(name, ("missing", ()))
        if (v, causes) != (w, other_causes):
            def say(x: str, c: tuple[str, ...]) -> str:
                return x + (f" ({', '.join(c)})" if c else "")

            return f"{name}: {say(v, causes)} becomes {say(w, other_causes)}"
    extra = sorted(set(b) - set(a))
    return f"{extra[0]} appears" if extra else None


class ReadOnce:
    """``read`` that reads each file once (keyed by path, mtime and size) and hands out copies:
    the checks and the final analysis read the same reports several times over. ``prefetch``
    starts a read in the background, for a report that is final while the passes go on (the
    ncu pass's report and the nsys export during the duration pass); a later
    call waits for it and gets its result, or its exception, as if it had read then."""

    def __init__(self, read: Callable[[Path], Any]) -> None:
        self._read = read
        self._memo: dict[tuple[str, int, int], Future[Any]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(path: Path) -> tuple[str, int, int]:
        st = Path(path).stat()
        return (str(path), st.st_mtime_ns, st.st_size)

    def _future(self, path: Path, background: bool) -> Future[Any]:
        key = self._key(path)
        with self._lock:
            fut = self._memo.get(key)
            if fut is not None:
                return fut
            fut = self._memo[key] = Future()
        if background:
            # A daemon thread: a read still going when the profile ends does not hold the exit.
            threading.Thread(target=self._fill, args=(key, fut, path), name="nsightwrap-prefetch", daemon=True).start()
        else:
            self._fill(key, fut, path)
        return fut

    def _fill(self, key: tuple[str, int, int], fut: Future[Any], path: Path) -> None:
        try:
            fut.set_result(self._read(path))
        except Exception as exc:  # noqa: BLE001 - a report's error is the same for every reader: kept
            fut.set_exception(exc)
        except BaseException as exc:  # Ctrl-C: not the report's answer, so not kept
            with self._lock:
                self._memo.pop(key, None)
            fut.set_exception(exc)
            raise

    def prefetch(self, path: Path) -> None:
        """Start reading ``path`` in the background (nothing where it is missing or read)."""
        try:
            self._future(Path(path), background=True)
        except OSError:
            pass  # not there (the pass wrote nothing): the analysis says so when it looks

    def settle(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for the reads going on in the background (a profile that ends
        without its analysis lets its reader children finish rather than orphan them)."""
        with self._lock:
            pending = [f for f in self._memo.values() if not f.done()]
        wait(pending, timeout=timeout_s)

    def __call__(self, path: Path) -> Any:
        return copy.deepcopy(self._future(Path(path), background=False).result())


def read_once(read: Callable[[Path], Any]) -> ReadOnce:
    """``read`` that reads each file once and can read ahead (``ReadOnce``)."""
    return ReadOnce(read)


def _first_move(result: RunResult, what_ifs: Sequence[tuple[str, WhatIf]], analyse: Callable[..., RunResult]) -> str | None:
    """The first what-if (``(label, WhatIf)``) that moves a verdict or a cause, in one line."""
    for label, w in what_ifs:
        change = moved(result, analyse(what_if=w))
        if change is not None:
            return f"{label}, {change}"
    return None


def check_run(
    run_dir: Path, manifest: Mapping[str, Any], read_ncu: Any = None, name: str = CLOCK_SWEEP_PASS,
    read_nsys: Any = None,
) -> tuple[bool, str]:  # fmt: skip
    """Whether pass ``name`` (``ncu-duration`` or ``ncu-base``) can change an answer of the run as
    it stands, and why, in one line (``nsightwrap profile`` asks before each; ``read_ncu``: the ncu
    report reader, the CLI's runs in a child process so that a crash of the native reader cannot
    take the profile down; ``read_nsys``: the nsys one, both best ``read_once``). A run the
    analysis cannot read yet gets the pass."""
    from functools import partial

    from nsightwrap.analysis.load import analyze

    kw: dict[str, Any] = {"manifest": manifest, **({"read_ncu": read_ncu} if read_ncu else {})}
    analyse = partial(analyze, run_dir, read_nsys=read_nsys, **kw)
    try:
        result = analyse()
        if name == CLOCK_SWEEP_PASS:
            why = base_pass_unneeded(result)
            if why is not None:
                return False, why
            ends = [(f"with every guessed clock elasticity at {e:g}", WhatIf(elasticity=e)) for e in (0.0, 1.0)]
            change = _first_move(result, ends, analyse)
            if change is not None:
                return True, change
            gap_name, worst = max(clock_gaps(result), key=lambda x: x[1])
            return False, (
                f"no benchmark's verdict or causes move with the guessed clock elasticities at 0 or at 1 "
                f"(largest clock gap {100 * worst:.1f}%, {gap_name})"
            )
        if not result.benchmarks:
            return False, "no benchmark to judge"
        scales = [(1 - DURATION_MOVE), (1 + DURATION_MOVE)]
        moves = [(f"with every ncu duration {100 * (s - 1):+g}%", WhatIf(duration_scale=s)) for s in scales]
        change = _first_move(result, moves, analyse)
        if change is not None:
            return True, change
        return False, (
            f"no benchmark's verdict or causes move with every ncu duration {100 * DURATION_MOVE:g}% shorter "
            "or longer, more than the duration pass moves them"
        )
    except Exception as exc:  # noqa: BLE001 - whatever the reason, the pass then runs: never less data
        return True, f"the run so far could not be analysed ({type(exc).__name__}: {exc})"
