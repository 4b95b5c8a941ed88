"""What an event window holds that ncu's duration does not, on adds of 2 us (studies/timer-accuracy-log.md,
"The 2 us add").

    python3 -m studies.add_study --rounds 3 --json add-study.json > add-study.md
    python3 -m studies.add_study --tables-from studies/results/add-study.json.gz   # the table again, no GPU

Elementwise adds of 512 to 1 Mi fp32 elements (``torch.add(a, b, out=o)``, one output buffer
per size, so its cache state is set up like the inputs') and an empty Triton kernel, each after
every set-up of ``CONDITIONS`` (all end in the timer's short hold), read three ways:

- the event window less the empty window taken with the same set-up, as ``nsightwrap.bench``
  reads it (median of ``--samples`` per round, rounds rotate the order of the set-ups);
- CUPTI's kernel time (``torch.profiler``) of 10 more calls with that set-up;
- ``gpu__time_duration.sum`` alone under ``ncu --clock-control none``, ``--ncu-iters`` iterations
  per set-up, at ``--cache-control none`` (the kernel sees the set-up's cache state, as the
  event window does) and at ``all`` (ncu's default: ncu flushes the caches before the kernel).

Needs a GPU, triton and ncu.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.common import ncu_refs
from studies.ncu_gap import Setups, Study, plain_medians, study_main
from studies.ncu_gap import load as load  # (a saved run, for --tables-from and the tests)

#: name -> elements of the add (0: the empty Triton kernel, one program, touches nothing).
KERNELS = {"null": 0, "add_512": 512, "add_4k": 4096, "add_64k": 65536, "add_1m": 2**20}
#: key -> what is queued before the window, after which the timer's short hold follows.
CONDITIONS = {
    "cold": "the timer's flush (2x L2, write then read): inputs and output cold",
    "warm": "no flush: inputs and output in L2 from the previous call (output dirty)",
    "out_dirty": "flush, then the output zeroed: output in L2 and dirty, inputs cold",
    "out_clean": "flush, then the output summed: output in L2 and clean, inputs cold",
    "in_warm": "flush, then the same add into another buffer: inputs in L2, output cold",
}
#: The ncu runs: key -> (--cache-control, metrics); the duration alone in both.
NCU_RUNS = {
    "none": ("none", ("gpu__time_duration.sum",)),
    "all": ("all", ("gpu__time_duration.sum",)),
}


class Add:
    """One kernel of ``KERNELS`` with its buffers and the set-ups that touch them."""

    def __init__(self, torch: Any, name: str) -> None:
        n = KERNELS[name]
        self.torch = torch
        m = max(n, 1)
        self.a, self.b = torch.randn(m, device="cuda"), torch.randn(m, device="cuda")
        self.out, self.other = torch.empty(m, device="cuda"), torch.empty(m, device="cuda")
        self.fn: Callable[[], Any]
        if n == 0:
            import triton
            import triton.language as tl

            @triton.jit
            def _empty(x_ptr):  # type: ignore[no-untyped-def]
                tl.program_id(0)

            self.fn = lambda: _empty[(1,)](self.out)
        else:
            self.fn = lambda: torch.add(self.a, self.b, out=self.out)

    def before(self, setups: Setups, cond: str) -> int:
        """Queue ``cond``'s set-up; returns the short hold in cycles."""
        if cond != "warm":
            setups.gpu.flush()
        if cond == "out_dirty":
            self.out.zero_()
        elif cond == "out_clean":
            self.out.sum()
        elif cond == "in_warm":
            self.torch.add(self.a, self.b, out=self.other)
        return setups.short_hold


def study_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per kernel and set-up: medians over the rounds (ns) and each ncu run's median."""
    refs = {k: ncu_refs(doc.get(f"ncu_{k}") or []) for k in NCU_RUNS}
    rows = plain_medians(doc, CONDITIONS)
    for row in rows:
        for key in NCU_RUNS:
            ref = refs[key].get(f"{row['kernel']}.{row['condition']}")
            row[f"ncu_{key}_ns"] = ref.duration_ns if ref else None
    return rows


def _us(v: float | None) -> str:
    return "" if v is None else f"{v / 1e3:.2f}"


def _diff(a: float | None, b: float | None) -> str:
    return "" if a is None or b is None else f"{(a - b) / 1e3:+.2f}"


def study_table(rows: Sequence[dict[str, Any]]) -> str:
    """Markdown: per kernel and set-up, every reading in us and the event window less ncu."""
    lines = [
        "| kernel | set-up | events less empty us | CUPTI kernel us | ncu, cache none us | ncu, cache all us "
        "| events - ncu none us | events - ncu all us | ncu none - CUPTI us |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        ev, none, full = r["events_ns"], r.get("ncu_none_ns"), r.get("ncu_all_ns")
        lines.append(
            f"| {r['kernel']} | {r['condition']} | {_us(ev)} | {_us(r['kernel_ns'])} | {_us(none)} | {_us(full)} "
            f"| {_diff(ev, none)} | {_diff(ev, full)} | {_diff(none, r['kernel_ns'])} |"
        )
    return "\n".join(lines) + "\n"


def render(doc: dict[str, Any]) -> str:
    """The header, the set-ups and the table of a run."""
    head = [doc.get("header", ""), "", "Set-ups (each ends in the timer's short hold):", ""]
    head += [f"- `{k}`: {v}" for k, v in CONDITIONS.items()]
    return "\n".join(head) + "\n\n" + study_table(study_rows(doc))


def _prepare(setups: Setups, name: str) -> tuple[Callable[[], Any], Callable[[str], int]]:
    import torch

    k = Add(torch, name)
    return k.fn, lambda cond: k.before(setups, cond)


STUDY = Study(
    module="studies.add_study",
    title="2 us add study",
    kernels=tuple(KERNELS),
    default_kernels=tuple(KERNELS),
    conditions=CONDITIONS,
    ncu_runs=NCU_RUNS,
    prepare=_prepare,
    render=render,
    samples=60,
    ncu_iters=30,
)


def main(argv: Sequence[str] | None = None) -> None:
    study_main(STUDY, __doc__, argv)


if __name__ == "__main__":
    main()
