"""Which benchmarks belong to this process's shard (``nsightwrap profile --shard I/N``).

The launcher tells the target its shard through ``NSIGHTWRAP_SHARD`` (``I/N``, shards numbered
0 to N-1) and the dealing rule through ``NSIGHTWRAP_SHARD_BY``. Everything that decides whether
to time something asks ``in_shard(key)``: ``nsightwrap.bench`` and sweeps with the benchmark's
full name (``mm[M=64,N=4096]``), the capture layer with the captured timing's site and call
number (``bench.py:42#3``). With no shard set every key is in.

Dealing rules:

- ``index`` (the default): the n-th distinct key this process asks about (0-based, in the order
  the script reaches them) goes to shard ``n % N``. Neighbouring points of a sweep land on
  different shards, so shards get the same number of benchmarks (within one) and a mix of
  small and large shapes: the best balance of wall time. It needs the script to reach its
  benchmarks in the same order in every process, which a script that does not enumerate a
  ``set`` or the file system does.
- ``hash``: a key goes to shard ``sha1(key) % N`` (never Python's ``hash()``, which changes
  from process to process). Independent of order, and a key keeps its shard when other
  benchmarks are added, but the shares are uneven for small counts.

Both give the same answer for the same key in every process on every machine. A key asked about
again gets the same answer (its first position counts). Under ``nsightwrap profile`` each process
appends what it dealt to ``<run dir>/<pass>/shard-<pid>.jsonl`` (one JSON object per line: a
header, then ``key``, ``position``, ``slot``, ``mine``), so that ``nsightwrap merge`` can prove
that the shards' shares neither overlap nor leave a gap.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nsightwrap.core import contract
from nsightwrap.core.errors import UsageError

#: Dealing rules (``--shard-by``, ``NSIGHTWRAP_SHARD_BY``); the first is the default.
SHARD_BY = ("index", "hash")
#: Format of the per-process dealing log.
LOG_FORMAT = "nsightwrap-shard-log"
LOG_VERSION = 1
LOG_GLOB = "shard-*.jsonl"

_SLURM_HINT = (
    "shards are numbered 0 to N-1; in a Slurm array that starts at 1 (--array=1-N) give "
    "--shard $((SLURM_ARRAY_TASK_ID - 1))/$SLURM_ARRAY_TASK_COUNT"
)


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (0 <= index < count), dealt by rule ``by``."""

    index: int
    count: int
    by: str = "index"

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def slot(self, key: str, position: int) -> int:
        """The shard that owns ``key``, the ``position``-th distinct key (0-based) of a process."""
        return position % self.count if self.by == "index" else hash_slot(key, self.count)


def hash_slot(key: str, count: int) -> int:
    """``sha1(key) mod count``: the same on every machine and in every process."""
    digest = hashlib.sha1(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count


def parse_shard(text: str, by: str = "index", *, what: str = "--shard") -> Shard:
    """``"I/N"`` -> Shard; UsageError (one line, with what to do) for anything else."""
    if by not in SHARD_BY:
        raise UsageError(f"{what}: unknown dealing rule {by!r}", hint=f"choose {' or '.join(SHARD_BY)}")
    m = re.fullmatch(r"\s*(-?\d+)\s*/\s*(-?\d+)\s*", text or "")
    if m is None:
        raise UsageError(f"{what} {text!r} is not I/N", hint="e.g. --shard 0/4 for the first of 4 shards")
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1:
        raise UsageError(f"{what} {text}: the number of shards must be at least 1", hint="e.g. --shard 0/4")
    if not 0 <= index < count:
        raise UsageError(f"{what} {text}: shard {index} does not exist among {count}", hint=_SLURM_HINT)
    return Shard(index, count, by)


def shard_from_env(environ: Mapping[str, str] | None = None) -> Shard | None:
    """The shard the launcher gave this process, or None (not sharded)."""
    env = os.environ if environ is None else environ
    raw = env.get(contract.ENV_SHARD)
    if not raw:
        return None
    return parse_shard(raw, env.get(contract.ENV_SHARD_BY) or SHARD_BY[0], what=contract.ENV_SHARD)


def deal(keys: Iterable[str], shard: Shard) -> list[str]:
    """The keys of ``shard`` among ``keys`` (distinct keys in first-seen order), as a process
    that asks about them in this order would deal them."""
    seen: dict[str, None] = dict.fromkeys(keys)
    return [k for pos, k in enumerate(seen) if shard.slot(k, pos) == shard.index]


class Dealer:
    """One process's dealing: remembers every key's answer and logs it (see the module docs)."""

    def __init__(self, shard: Shard | None, log: Path | None = None) -> None:
        self.shard = shard
        self.log = log
        self.answers: dict[str, bool] = {}
        self._log_failed = False

    def __call__(self, key: str) -> bool:
        if self.shard is None:
            return True
        got = self.answers.get(key)
        if got is not None:
            return got
        position = len(self.answers)
        slot = self.shard.slot(key, position)
        mine = slot == self.shard.index
        self.answers[key] = mine
        self._write({"key": key, "position": position, "slot": slot, "mine": mine}, first=position == 0)
        return mine

    def _write(self, entry: dict[str, Any], *, first: bool) -> None:
        if self.log is None or self._log_failed or self.shard is None:
            return
        try:
            self.log.parent.mkdir(parents=True, exist_ok=True)
            # Appended line by line (never rewritten): a crash keeps what was dealt so far.
            with self.log.open("a", encoding="utf-8") as f:
                if first:
                    head = {"format": LOG_FORMAT, "version": LOG_VERSION, "shard": str(self.shard),
                            "by": self.shard.by, "pid": os.getpid()}  # fmt: skip
                    f.write(json.dumps(head) + "\n")
                f.write(json.dumps(entry) + "\n")
        except OSError as exc:
            self._log_failed = True
            print(f"nsightwrap: cannot write the shard log {self.log}: {exc.strerror}", file=sys.stderr)


def log_path(run_dir: str | os.PathLike[str], pass_name: str, pid: int | None = None) -> Path:
    """``<run dir>/<pass>/shard-<pid>.jsonl``."""
    return Path(run_dir) / pass_name / f"shard-{os.getpid() if pid is None else pid}.jsonl"


_dealer: Dealer | None = None


def _current() -> Dealer:
    global _dealer
    if _dealer is None:
        shard = shard_from_env()
        run_dir = os.environ.get(contract.ENV_RUN_DIR)
        pass_name = os.environ.get(contract.ENV_PASS)
        log = log_path(run_dir, pass_name) if shard and run_dir and pass_name in contract.PASSES else None
        _dealer = Dealer(shard, log)
    return _dealer


def in_shard(key: str) -> bool:
    """Whether this process times ``key`` (always True when no shard is set)."""
    return _current()(key)


def current_shard() -> Shard | None:
    """This process's shard (from the environment, read once), or None."""
    return _current().shard


def reset() -> None:
    """Forget the dealing so far and read the environment again (tests; a forked worker)."""
    global _dealer
    _dealer = None


def skipped_method(pass_name: str | None) -> dict[str, Any]:
    """The ``method`` of a result that another shard times (``nsightwrap.bench`` returns it
    untimed and writes nothing for it)."""
    shard = current_shard()
    return {
        "pass": pass_name or "standalone",
        "timing": "none",
        "shard_skipped": f"not timed: shard {shard} of --shard does not own it" if shard else "not timed",
        "shard": str(shard) if shard else None,
    }


def read_log(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A dealing log: its header and its entries (a truncated last line, from a crash, is dropped)."""
    head: dict[str, Any] = {}
    entries: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(obj, dict):
            continue
        if obj.get("format") == LOG_FORMAT:
            head = head or obj
        elif isinstance(obj.get("key"), str):
            entries.append(obj)
    return head, entries
