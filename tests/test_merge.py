"""``nsightwrap merge``: shard run directories made by ``profile --shard`` (fake tools on PATH,
real subprocesses) merged into one run, and every way a set of shards can fail to be one."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fake_tools._common import fake_gpu_uuid
from fake_tools.harness import TESTS, manifest, profile, use_fakes

from nsightwrap.core.shard import Shard, deal

SWEEP = str(TESTS / "shard_target.py")
KEYS = [f"mm[M={16 * (i + 1)}]" for i in range(12)]


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    use_fakes(monkeypatch, tmp_path)
    for var in ("CUDA_VISIBLE_DEVICES", "FAKE_SLOW_GPU", "SHARD_TARGET_FAIL_GPU", "SHARD_TARGET_SLEEP",
                "SHARD_TARGET_N", "SHARD_TARGET_SHUFFLE", "SHARD_TARGET_GPU_NAME"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("FAKE_GPUS", "3")


def _shard(capsys, monkeypatch, i: int, n: int = 3, *extra: str, gpu: int | None = None, out: str | None = None) -> Path:
    """``profile --shard i/n`` (plain pass only: fast), on fake GPU ``gpu`` (default i)."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", str(i if gpu is None else gpu))
    run = out or f"s{i}"
    r = profile(capsys, "-q", "--passes", "plain", "--no-analyze", "-o", run, "--shard", f"{i}/{n}", *extra, SWEEP)
    assert r.code == 0, r.err
    return Path(run)


def merge(capsys, *args: str):
    from fake_tools.harness import Result

    from nsightwrap.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["merge", *args])
    cap = capsys.readouterr()
    code = exc.value.code
    return Result(code if isinstance(code, int) else 0, cap.out, cap.err)


def test_merge_joins_the_shards_keeping_every_raw_file(fakes, tmp_path: Path, monkeypatch, capsys) -> None:
    dirs = [_shard(capsys, monkeypatch, i) for i in (2, 0, 1)]  # any order
    r = merge(capsys, *map(str, dirs), "-o", "merged")
    assert r.code == 0, r.err
    assert "merged 3 shards, 12 benchmarks: merged (complete)" in r.out
    m = manifest(tmp_path / "merged")
    assert (m["format"], m["version"], m["mode"], m["count"], m["by"]) == ("nsightwrap-merged", 1, "shard", 3, "index")
    assert m["order"] == KEYS and m["lost"] == [] and m["gpu_names"] == ["NVIDIA H200"]
    for s in m["shards"]:
        i = s["index"]
        assert s["benchmarks"] == deal(KEYS, Shard(i, 3)) and s["status"] == "complete"
        assert s["source"] == str((tmp_path / f"s{i}").resolve()) and s["gpu"]["uuid"] == fake_gpu_uuid(i)
        src, dst = tmp_path / f"s{i}", tmp_path / "merged" / "shards" / str(i)
        files = sorted(str(p.relative_to(src)) for p in src.rglob("*") if p.is_file())
        assert files == sorted(str(p.relative_to(dst)) for p in dst.rglob("*") if p.is_file())
        sidecar = next((dst / "plain").glob("timer-*.json"))
        assert os.path.samefile(sidecar, src / "plain" / sidecar.name)  # hard-linked, not copied
    from nsightwrap.analysis.load import analyze

    res = analyze(tmp_path / "merged")
    assert [(b.name, b.shard, b.gpu_uuid) for b in res.benchmarks] == [
        (k, i, fake_gpu_uuid(i)) for k in KEYS for i in range(3) if k in deal(KEYS, Shard(i, 3))
    ]
    # A merged run is a run: report and compare read it as one.
    r2 = merge(capsys, "merged", "-o", "again")  # a merged run's shards can be merged again
    assert r2.code == 0 and manifest(tmp_path / "again")["order"] == KEYS
    from nsightwrap.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["compare", "merged", "again", "--format", "json", "-o", "c.json"])
    assert exc.value.code in (0, None)
    assert json.loads((tmp_path / "c.json").read_text())["summary"]["counts"]["SAME"] == 12


def test_merge_refuses_missing_and_repeated_shards(fakes, tmp_path: Path, monkeypatch, capsys) -> None:
    s0, s1, s2 = (_shard(capsys, monkeypatch, i) for i in range(3))
    r = merge(capsys, str(s0), str(s2), "-o", "m")
    assert r.code == 2 and "missing shard(s) 1 of 3: have 0, 2" in r.err
    r = merge(capsys, str(s0), str(s0), str(s1), str(s2), "-o", "m")
    assert r.code == 2 and "overlap: shard 0/3 is given 2 times (s0, s0)" in r.err
    other = _shard(capsys, monkeypatch, 1, 4, out="four")
    r = merge(capsys, str(s0), str(other), str(s2), "-o", "m")
    assert r.code == 2 and "not shards of one split" in r.err
    assert not (tmp_path / "m").exists()
    assert len(r.err.strip().splitlines()) == 1  # one clear line


def test_merge_refuses_shards_that_saw_different_benchmarks(fakes, tmp_path: Path, monkeypatch, capsys) -> None:
    s0 = _shard(capsys, monkeypatch, 0)
    monkeypatch.setenv("SHARD_TARGET_N", "15")  # the script grew between shards: a gap
    s1, s2 = _shard(capsys, monkeypatch, 1), _shard(capsys, monkeypatch, 2)
    r = merge(capsys, str(s0), str(s1), str(s2), "-o", "m")
    assert r.code == 2 and "gap: benchmark 'mm[M=208]' was dealt to shard 0, which did not time it" in r.err


def test_merge_refuses_index_dealing_of_an_unstable_order_but_hash_copes(fakes, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("SHARD_TARGET_SHUFFLE", "1")  # every process reaches the points in its own order
    dirs = [_shard(capsys, monkeypatch, i) for i in range(3)]
    r = merge(capsys, *map(str, dirs), "-o", "m")
    assert r.code == 2 and "the shards saw different benchmark lists" in r.err and "--shard-by hash" in r.err
    dirs = [_shard(capsys, monkeypatch, i, 3, "--shard-by", "hash", out=f"h{i}") for i in range(3)]
    r = merge(capsys, *map(str, dirs), "-o", "h")
    assert r.code == 0, r.err
    m = manifest(tmp_path / "h")
    owned = [k for s in m["shards"] for k in s["benchmarks"]]
    assert sorted(owned) == sorted(KEYS) and m["by"] == "hash"
    for s in m["shards"]:
        assert set(s["benchmarks"]) == set(deal(KEYS, Shard(s["index"], 3, "hash")))


def test_merge_refuses_mixed_gpu_models_and_versions_unless_allowed(fakes, tmp_path: Path, monkeypatch, capsys) -> None:
    s0, s1 = _shard(capsys, monkeypatch, 0, 2), _shard(capsys, monkeypatch, 1, 2)
    monkeypatch.setenv("SHARD_TARGET_GPU_NAME", "NVIDIA H100 80GB HBM3")
    h100 = _shard(capsys, monkeypatch, 1, 2, out="h100")
    r = merge(capsys, str(s0), str(h100), "-o", "m")
    assert r.code == 2 and "different GPU models (NVIDIA H100 80GB HBM3 in h100; NVIDIA H200 in s0)" in r.err
    assert "--allow-mixed" in r.err
    r = merge(capsys, str(s0), str(h100), "-o", "m", "--allow-mixed")
    assert r.code == 0 and manifest(tmp_path / "m")["gpu_names"] == ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]
    # A shard made by another nsightwrap version (its manifest says so).
    doc = json.loads((s1 / "manifest.json").read_text())
    doc["nsightwrap_version"] = "0.0.9"
    (s1 / "manifest.json").write_text(json.dumps(doc))
    r = merge(capsys, str(s0), str(s1), "-o", "m2")
    assert r.code == 2 and "different nsightwrap versions (0.0.9 in s1; 0.1.0 in s0)" in r.err


def test_merge_refuses_what_is_not_a_shard(fakes, tmp_path: Path, monkeypatch, capsys) -> None:
    r = profile(capsys, "-q", "--passes", "plain", "--no-analyze", "-o", "whole", SWEEP)
    assert r.code == 0
    r = merge(capsys, "whole", "-o", "m")
    assert r.code == 2 and "whole is a whole run, not a shard (it was profiled without --shard)" in r.err
    r = merge(capsys, "nowhere", "-o", "m")
    assert r.code == 2 and "nowhere: no such run directory" in r.err
    s0, s1 = _shard(capsys, monkeypatch, 0, 2), _shard(capsys, monkeypatch, 1, 2)
    (tmp_path / "taken").mkdir()
    r = merge(capsys, str(s0), str(s1), "-o", "taken")
    assert r.code == 2 and "taken exists already" in r.err


def test_merge_of_a_failed_shard_is_written_and_exits_3(fakes, tmp_path: Path, monkeypatch, capsys) -> None:
    s0 = _shard(capsys, monkeypatch, 0, 2)
    monkeypatch.setenv("SHARD_TARGET_FAIL_GPU", "1")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    r = profile(capsys, "-q", "--passes", "plain", "--no-analyze", "-o", "s1", "--shard", "1/2", SWEEP)
    assert r.code == 3
    r = merge(capsys, str(s0), "s1", "-o", "m")
    assert r.code == 3 and "shard 1/2 failed" in r.err
    m = manifest(tmp_path / "m")
    assert m["status"] == "failed" and m["shards"][1]["message"] == "plain pass failed"
    r = merge(capsys, str(s0), "s1", "-o", "m2", "--allow-failed-shards")
    assert r.code == 0


H200_SHARDS = TESTS.parent / "fixtures" / "runs" / "h200-shards"
H200_UUID = "GPU-25a0436b-795b-0afe-263f-57ec955706cb"
H200_KEYS = [f"mm[M={m},N=4096]" for m in (16, 64, 256, 1024, 2048, 4096)]


def test_the_real_h200_merged_run_reads_as_one_run(tmp_path: Path) -> None:
    from nsightwrap.analysis.load import analyze
    from nsightwrap.export.markdown import render_markdown

    res = analyze(H200_SHARDS)
    assert [(b.name, b.shard, b.gpu_uuid) for b in res.benchmarks] == [(k, i % 2, H200_UUID) for i, k in enumerate(H200_KEYS)]
    assert all(b.timer is not None and b.timer.median_ns > 0 for b in res.benchmarks)
    # Shard 0 ran every pass, shard 1 the plain pass only: the report says which has what.
    assert all((b.ncu is not None and b.nsys is not None) == (b.shard == 0) for b in res.benchmarks)
    assert any(n.startswith("shard 1: no ncu report") for n in res.notes)
    assert [(s.index, s.status, s.gpu_uuid, s.benchmarks) for s in res.shards] == [(0, "complete", H200_UUID, 3), (1, "complete", H200_UUID, 3)]
    assert res.shards[0].power_limit_w == 700 and res.shards[0].temperature_c is not None
    assert res.gpu_variance is None  # shards, not replicas
    md = render_markdown(res)
    assert f"| mm\\[M=16,N=4096\\] | {H200_UUID} |" in md and "## Shards" in md


def test_the_real_h200_shards_merge_again_and_refuse_gpu_vs_gpu(tmp_path: Path, capsys) -> None:
    r = merge(capsys, str(H200_SHARDS), "-o", str(tmp_path / "again"))
    assert r.code == 0, r.err
    m = manifest(tmp_path / "again")
    assert m["order"] == H200_KEYS and [s["benchmarks"] for s in m["shards"]] == [H200_KEYS[0::2], H200_KEYS[1::2]]
    from nsightwrap.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["compare", str(H200_SHARDS), "--gpu-vs-gpu"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "ran no benchmark in common (shard run" in err and "--replicate" in err
