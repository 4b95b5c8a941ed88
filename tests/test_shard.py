"""Dealing benchmarks to shards (nsightwrap.core.shard): deterministic, complete, the same in
every process, and what ``nsightwrap.bench`` and sweeps do with a benchmark of another shard."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from nsightwrap.core import shard as sh
from nsightwrap.core.errors import NoCudaError, UsageError
from nsightwrap.core.shard import Dealer, Shard, deal, hash_slot, parse_shard, read_log, shard_from_env

KEYS = [f"mm[M={m},N={n}]" for m in range(1, 126) for n in (1024, 4096, 8192, 16384, 2, 3, 5, 7)]


@pytest.fixture(autouse=True)
def _fresh_dealer(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("NSIGHTWRAP_SHARD", "NSIGHTWRAP_SHARD_BY", "NSIGHTWRAP_RUN_DIR", "NSIGHTWRAP_PASS"):
        monkeypatch.delenv(var, raising=False)
    sh.reset()
    yield
    sh.reset()


def test_parse_shard_reads_i_of_n_and_refuses_the_rest() -> None:
    assert parse_shard("0/4") == Shard(0, 4, "index")
    assert parse_shard(" 3 / 4 ", "hash") == Shard(3, 4, "hash")
    assert str(parse_shard("7/8")) == "7/8"
    with pytest.raises(UsageError, match=r"--shard '3' is not I/N"):
        parse_shard("3")
    with pytest.raises(UsageError, match="at least 1"):
        parse_shard("0/0")
    # A Slurm array started at 1 gives N/N for its last task: the hint says what to write.
    with pytest.raises(UsageError, match=r"shard 4 does not exist among 4.*SLURM_ARRAY_TASK_ID - 1"):
        parse_shard("4/4")
    with pytest.raises(UsageError, match="unknown dealing rule 'random'"):
        parse_shard("0/2", "random")


@pytest.mark.parametrize("by", ["index", "hash"])
@pytest.mark.parametrize("n", [1, 2, 3, 7, 8])
def test_dealing_is_complete_and_disjoint(by: str, n: int) -> None:
    shares = [deal(KEYS, Shard(i, n, by)) for i in range(n)]
    dealt = [k for share in shares for k in share]
    assert sorted(dealt) == sorted(KEYS)  # every key once: no gap, no overlap
    assert len(set(dealt)) == len(KEYS)
    sizes = [len(s) for s in shares]
    if by == "index":  # round robin: shares differ by at most one
        assert max(sizes) - min(sizes) <= 1
    else:  # sha1 is near uniform over 1,000 keys
        assert max(sizes) < 1.35 * len(KEYS) / n


def test_index_dealing_interleaves_neighbouring_points() -> None:
    # Neighbouring sweep points (small and large shapes alike) go to different shards.
    assert deal(KEYS[:8], Shard(1, 4)) == [KEYS[1], KEYS[5]]


def test_hash_dealing_does_not_depend_on_order_or_on_other_keys() -> None:
    s = Shard(2, 5, "hash")
    assert set(deal(KEYS, s)) == set(deal(list(reversed(KEYS)), s))
    assert set(deal(KEYS[:100], s)) == set(deal(KEYS, s)) & set(KEYS[:100])
    assert hash_slot("mm[M=64,N=4096]", 8) == hash_slot("mm[M=64,N=4096]", 8)


def test_the_same_dealing_in_another_process_with_another_hash_seed(tmp_path: Path) -> None:
    code = (
        "import json,sys; from nsightwrap.core.shard import Shard, deal; keys=json.load(sys.stdin); "
        "print(json.dumps({by: [deal(keys, Shard(i, 3, by)) for i in range(3)] for by in ('index','hash')}))"
    )
    outs = [
        subprocess.run(
            [sys.executable, "-c", code], input=json.dumps(KEYS), capture_output=True, text=True, check=True,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
        ).stdout  # fmt: skip
        for seed in ("1", "12345")
    ]
    here = {by: [deal(KEYS, Shard(i, 3, by)) for i in range(3)] for by in ("index", "hash")}
    assert json.loads(outs[0]) == json.loads(outs[1]) == here


def test_dealer_answers_a_key_again_the_same_and_logs_what_it_dealt(tmp_path: Path) -> None:
    log = tmp_path / "plain" / "shard-1.jsonl"
    d = Dealer(Shard(0, 2), log)
    assert [d(k) for k in ("a", "b", "a", "c", "b")] == [True, False, True, True, False]
    head, entries = read_log(log)
    assert head["format"] == "nsightwrap-shard-log" and head["shard"] == "0/2" and head["by"] == "index"
    assert [(e["key"], e["position"], e["mine"]) for e in entries] == [("a", 0, True), ("b", 1, False), ("c", 2, True)]
    with log.open("a") as f:  # a crash mid-line leaves a truncated last line: it is dropped
        f.write('{"key": "d", "posi')
    assert len(read_log(log)[1]) == 3


def test_no_shard_means_every_key_is_in(monkeypatch: pytest.MonkeyPatch) -> None:
    assert shard_from_env() is None
    assert all(sh.in_shard(k) for k in KEYS[:10])


def test_in_shard_follows_the_environment_and_logs_under_the_run_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NSIGHTWRAP_SHARD", "1/3")
    monkeypatch.setenv("NSIGHTWRAP_RUN_DIR", str(tmp_path))
    monkeypatch.setenv("NSIGHTWRAP_PASS", "ncu")
    mine = [k for k in KEYS[:9] if sh.in_shard(k)]
    assert mine == deal(KEYS[:9], Shard(1, 3)) == [KEYS[1], KEYS[4], KEYS[7]]
    logs = list((tmp_path / "ncu").glob("shard-*.jsonl"))
    assert len(logs) == 1 and len(read_log(logs[0])[1]) == 9


def test_a_bad_shard_variable_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NSIGHTWRAP_SHARD", "2-of-4")
    with pytest.raises(UsageError, match="NSIGHTWRAP_SHARD '2-of-4' is not I/N"):
        sh.in_shard("x")


def test_bench_of_another_shard_returns_untimed_without_touching_the_gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import nsightwrap as nw

    monkeypatch.setenv("NSIGHTWRAP_SHARD", "1/2")
    monkeypatch.setenv("NSIGHTWRAP_RUN_DIR", str(tmp_path))
    monkeypatch.setenv("NSIGHTWRAP_PASS", "plain")
    # This machine has no torch: a benchmark this shard owned would raise NoCudaError.
    r = nw.bench(lambda: None, name="first", flops=10)
    assert r.timed is False and r.n == 0 and r.samples_ns == ()
    assert r.method["shard"] == "1/2" and "shard 1/2" in str(r)
    assert not list((tmp_path / "plain").glob("timer-*.json"))  # nothing was timed, nothing written
    with pytest.raises(NoCudaError):
        nw.bench(lambda: None, name="second")  # position 1: shard 1 owns it


def test_a_sweep_builds_only_the_points_of_its_shard(monkeypatch: pytest.MonkeyPatch) -> None:
    import nsightwrap as nw

    monkeypatch.setenv("NSIGHTWRAP_SHARD", "1/3")
    built: list[int] = []

    @nw.benchmark({"M": [16, 32, 48, 64]}, name="mm")
    def mm(M: int):  # noqa: N803 - the sweep's parameter name
        built.append(M)
        return lambda: None

    # Point 0 (M=16) is shard 0's: skipped unbuilt. Point 1 (M=32) is this shard's: built, and
    # timing it needs a GPU this machine lacks.
    with pytest.raises(NoCudaError):
        mm()
    assert built == [32]
    sh.reset()
    monkeypatch.setenv("NSIGHTWRAP_SHARD", "2/3")
    monkeypatch.setattr(mm, "params", {"M": [16, 32]})  # both points belong to shards 0 and 1
    results = mm()
    assert built == [32] and [r.name for r in results] == ["mm[M=16]", "mm[M=32]"]
    assert not any(r.timed for r in results)
