"""Parameter sweeps (``benchmark``), benchmark names, and user ``Region`` ranges."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from nsightwrap.core.shard import in_shard
from nsightwrap.timer.gpu import DOMAIN
from nsightwrap.timer.loop import bench
from nsightwrap.timer.result import BenchResult, bench_name


def sweep_points(params: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the parameter values, in the order given (last key varies fastest)."""
    keys = list(params)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(params[k] for k in keys))]



def _nothing() -> None:
    """Stands in for the callable of a sweep point that another shard times."""


class Sweep:
    """A benchmark over a grid of parameters; calling it runs every point (see ``benchmark``)."""

    def __init__(self, factory: Callable[..., Callable[[], Any]], name: str, params: Mapping[str, Sequence[Any]],
                 flops: Any, nbytes: Any, options: dict[str, Any]) -> None:  # fmt: skip
        self.factory = factory
        self.name = name
        self.params = dict(params)
        self._flops = flops
        self._bytes = nbytes
        self._options = options

    def points(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(benchmark name, parameters) of every point."""
        for p in sweep_points(self.params):
            yield bench_name(self.name, p), p

    def run(self) -> list[BenchResult]:
        """Build each point's callable with ``factory(**params)`` and ``bench`` it."""
        out = []
        for key, p in self.points():
            if not in_shard(key):
                # Another shard times this point: its inputs are not built (bench returns at once).
                out.append(bench(_nothing, name=self.name, params=p, **self._options))
                continue
            fn = self.factory(**p)
            flops = self._flops(**p) if callable(self._flops) else self._flops
            nbytes = self._bytes(**p) if callable(self._bytes) else self._bytes
            out.append(bench(fn, name=self.name, params=p, flops=flops, bytes=nbytes, **self._options))
        return out

    __call__ = run


def benchmark(
    params: Mapping[str, Sequence[Any]] | None = None,
    *,
    name: str | None = None,
    flops: float | Callable[..., float] | None = None,
    bytes: float | Callable[..., float] | None = None,  # noqa: A002 - the public keyword is ``bytes``
    **options: Any,
) -> Callable[[Callable[..., Callable[[], Any]]], Sweep]:
    """Decorate a factory ``f(**point) -> callable``; the result is a ``Sweep`` whose call runs one
    benchmark per point, named ``name[k=v,...]``. ``flops``/``bytes`` may be functions of the point;
    other options go to ``bench``."""

    def wrap(factory: Callable[..., Callable[[], Any]]) -> Sweep:
        return Sweep(factory, name or factory.__name__, params or {}, flops, bytes, options)

    return wrap


class Region:
    """A user-defined NVTX push/pop range in the ``nsightwrap`` domain (``with Region("setup"):``)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> Region:
        DOMAIN.push_range(message=self.name)
        return self

    def __exit__(self, *exc: object) -> None:
        DOMAIN.pop_range()
