"""``nsightwrap profile --shard`` and ``--gpus`` end to end on CPU: fake ncu / nsys / nvidia-smi
on PATH (nvidia-smi lists ``FAKE_GPUS`` H200s), real subprocesses, and a sweep target that deals
its points with nsightwrap's own rule and writes real timer sidecars."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_tools._common import fake_gpu_uuid
from fake_tools.harness import TESTS, manifest, passes, profile, use_fakes

from nsightwrap.core.shard import Shard, deal

SWEEP = str(TESTS / "shard_target.py")
KEYS = [f"mm[M={16 * (i + 1)}]" for i in range(12)]


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_fakes(monkeypatch, tmp_path)
    for var in ("CUDA_VISIBLE_DEVICES", "FAKE_SLOW_GPU", "SHARD_TARGET_FAIL_GPU", "SHARD_TARGET_SLEEP",
                "SHARD_TARGET_N", "SHARD_TARGET_SHUFFLE", "NSIGHTWRAP_SHARD", "NSIGHTWRAP_SHARD_BY"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("FAKE_GPUS", "3")
    runs = tmp_path / "tool_runs.jsonl"
    monkeypatch.setenv("FAKE_TOOLS_RUNS", str(runs))
    return runs


def _runs(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def _sidecar_names(run: Path) -> list[str]:
    return [b["name"] for p in sorted((run / "plain").glob("timer-*.json")) for b in json.loads(p.read_text())["benchmarks"]]


def test_shard_times_and_traces_only_its_share(fakes: Path, tmp_path: Path, capsys) -> None:
    r = profile(capsys, "-o", "run", "--shard", "1/3", "--no-analyze", SWEEP)
    assert r.code == 0, r.err
    run = tmp_path / "run"
    m = manifest(run)
    mine = deal(KEYS, Shard(1, 3))
    assert mine == ["mm[M=32]", "mm[M=80]", "mm[M=128]", "mm[M=176]"]
    s = m["shard"]
    assert (s["mode"], s["index"], s["count"], s["by"], s["spec"]) == ("shard", 1, 3, "index", "1/3")
    assert s["benchmarks"] == mine and s["dealt"] == 12 and s["consistent"] is True
    assert s["gpu"]["uuid"] == fake_gpu_uuid(0).removeprefix("GPU-") and s["host"]
    for name in ("plain", "ncu", "nsys"):  # every pass told the target its shard, and it dealt alike
        p = passes(m)[name]
        assert p["env"]["NSIGHTWRAP_SHARD"] == "1/3" and p["env"]["NSIGHTWRAP_SHARD_BY"] == "index"
        assert "shard=1/3" in (run / name / "stdout.log").read_text()
        assert list((run / name).glob("shard-*.jsonl")), name
    assert _sidecar_names(run) == mine  # the plain pass timed its share only
    ran = _runs(fakes)  # ncu (and its clock-sweep twin) and nsys ran the shard's share
    assert {x["tool"] for x in ran} == {"ncu", "nsys"} and {x["shard"] for x in ran} == {"1/3"}


def test_bad_shard_options_are_usage_errors(fakes: Path, tmp_path: Path, capsys) -> None:
    r = profile(capsys, "-o", "run", "--shard", "3/3", SWEEP)
    assert r.code == 2 and "shard 3 does not exist among 3" in r.err and "SLURM_ARRAY_TASK_ID - 1" in r.err
    r = profile(capsys, "-o", "run", "--replicate", SWEEP)
    assert r.code == 2 and "--replicate needs --gpus" in r.err
    r = profile(capsys, "-o", "run", "--gpus", "0,1", "--shard", "0/2", SWEEP)
    assert r.code == 2 and "--gpus deals the shards itself" in r.err
    r = profile(capsys, "-o", "run", "--gpus", "0,7", SWEEP)
    assert r.code == 2 and "there is no GPU 7 (nvidia-smi -L has 0, 1, 2)" in r.err
    r = profile(capsys, "-o", "run", "--gpus", "1,1", SWEEP)
    assert r.code == 2 and "names GPU 1" in r.err and "twice" in r.err
    assert not (tmp_path / "run").exists()


def test_a_shard_dealt_nothing_is_not_a_failed_ncu_pass(fakes: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("SHARD_TARGET_N", "2")  # shard 2 of 3 gets none of the 2 points
    monkeypatch.setenv("FAKE_TOOLS_MODE", "ncu-zero")  # and ncu, truly, profiles nothing
    r = profile(capsys, "-o", "run", "--shard", "2/3", "--no-analyze", SWEEP)
    assert r.code == 0, r.err
    assert "shard 2/3: no benchmark was dealt to this shard" in r.err
    assert passes(manifest(tmp_path / "run"))["ncu"]["status"] == "ok"
    # The same empty ncu pass for a shard that owns a benchmark is the usual failure.
    r = profile(capsys, "-o", "run2", "--shard", "0/3", "--no-analyze", SWEEP)
    assert r.code == 3 and "no kernel was profiled" in r.err


def test_gpus_run_shards_in_parallel_and_a_failing_one_fails_alone(fakes: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("SHARD_TARGET_SLEEP", "1.5")  # long enough for passes to overlap on a loaded machine
    monkeypatch.setenv("SHARD_TARGET_FAIL_GPU", "2")  # GPU 2 runs out of memory in its plain pass
    r = profile(capsys, "-o", "run", "--gpus", "all", SWEEP)
    assert r.code == 3, r.err
    run = tmp_path / "run"
    m = manifest(run)
    assert (m["format"], m["version"], m["mode"], m["count"], m["status"]) == ("nsightwrap-merged", 1, "shard", 3, "failed")
    st = {s["index"]: s for s in m["shards"]}
    assert [st[i]["status"] for i in range(3)] == ["complete", "complete", "failed"]
    assert "plain pass: the target exited with code 7" in st[2]["message"]
    assert "shard 2/3" in r.err and "exited with code 7" in r.err
    for i in range(3):
        assert st[i]["gpu"]["uuid"] == fake_gpu_uuid(i) and st[i]["dir"] == f"shards/{i}"
        assert manifest(run / "shards" / str(i))["shard"]["spec"] == f"{i}/3"
        assert st[i]["benchmarks"] == deal(KEYS, Shard(i, 3))
    # Each shard's profilers saw its own GPU and TMPDIR (ncu's lock lives there), all at once.
    ncu: dict[str, dict] = {}
    for x in _runs(fakes):
        if x["tool"] == "ncu":
            ncu.setdefault(x["gpu"], x)  # each shard's first ncu pass
    assert sorted(ncu) == sorted(fake_gpu_uuid(i) for i in range(3))
    assert len({x["tmpdir"] for x in ncu.values()}) == 3 and all(Path(x["tmpdir"]).is_absolute() for x in ncu.values())
    # Shards 0 and 1 run the same passes side by side, so their ncu passes overlap; shard 2's plain
    # pass fails at once, which shifts its later passes by a whole plain pass.
    both = [ncu[fake_gpu_uuid(i)] for i in (0, 1)]
    assert max(x["t0"] for x in both) < min(x["t1"] for x in both), "the ncu passes did not overlap"
    assert not (run / "tmp").exists()
    # The merged report names the GPU of every benchmark, and says what shard 2 lost.
    from nsightwrap.analysis.load import analyze

    res = analyze(run)
    got = [(b.name, b.gpu_uuid, b.shard) for b in res.benchmarks]
    want = [(k, fake_gpu_uuid(i), i) for k in KEYS for i in (0, 1) if k in deal(KEYS, Shard(i, 3))]
    assert got == want
    assert any("shard 2" in n and "failed" in n and "none of its benchmarks" in n for n in res.notes)
    assert "GPU" in r.out and "shards (3)" in r.out


def test_allow_failed_shards_exits_0_but_keeps_the_failure(fakes: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("SHARD_TARGET_FAIL_GPU", "1")
    r = profile(capsys, "-o", "run", "--passes", "plain", "--gpus", "0,1", "--allow-failed-shards", "-q", SWEEP)
    assert r.code == 0, r.err
    m = manifest(tmp_path / "run")
    assert m["status"] == "failed" and [s["status"] for s in m["shards"]] == ["complete", "failed"]
    assert "--allow-failed-shards" not in json.dumps(manifest(tmp_path / "run" / "shards" / "0")["target"])


def test_replicate_measures_gpu_to_gpu_variance_and_flags_the_slow_gpu(fakes: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("FAKE_SLOW_GPU", "1")  # 12% slower at a 12% lower clock, hot, 500 W limit
    r = profile(capsys, "-o", "run", "--passes", "plain", "--gpus", "all", "--replicate", SWEEP)
    assert r.code == 0, r.err
    run = tmp_path / "run"
    m = manifest(run)
    assert m["mode"] == "replicate" and all(len(s["benchmarks"]) == 12 for s in m["shards"])
    assert all(manifest(run / "shards" / str(i))["shard"]["mode"] == "replicate" for i in range(3))
    from nsightwrap.analysis.load import analyze
    from nsightwrap.export.jsonio import report_from_dict, report_to_dict
    from nsightwrap.export.markdown import render_markdown

    res = analyze(run)
    assert len(res.benchmarks) == 36
    v = res.gpu_variance
    assert v is not None and v.metric == "timer" and len(v.spreads) == 12 and len(v.gpus) == 3
    assert all(0.11 < s.spread < 0.13 and s.slowest == fake_gpu_uuid(1) for s in v.spreads)
    (slow,) = v.slow
    assert slow.gpu_uuid == fake_gpu_uuid(1) and (slow.slower_in, slow.of) == (12, 12)
    assert slow.cycles_ratio == pytest.approx(1.0, abs=0.01) and slow.temperature_c == 83 and slow.power_limit_w == 500
    assert "its SM clock is lower (1.77 GHz against 1.98 GHz)" in slow.message
    assert "power limit 500 W (others 700 W)" in slow.message
    md = render_markdown(res)
    assert "## GPU-to-GPU variance" in md and fake_gpu_uuid(1) in md
    back = report_from_dict(json.loads(json.dumps(report_to_dict(res))))
    assert back.gpu_variance == v and back.shards == res.shards
    assert [b.gpu_uuid for b in back.benchmarks] == [b.gpu_uuid for b in res.benchmarks]
    # compare, GPU against GPU: the slow GPU's time is +12% but the same in SM cycles.
    from nsightwrap.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["compare", str(run), "--gpu-vs-gpu", "--format", "json", "-o", str(tmp_path / "g.json")])
    assert exc.value.code in (0, None)
    doc = json.loads((tmp_path / "g.json").read_text())
    assert doc["format"] == "nsightwrap-gpu-compare" and doc["reference"]["gpu"] == fake_gpu_uuid(0)
    by = {g["gpu"]: g["comparison"] for g in doc["gpus"]}
    slow_cmp = by[fake_gpu_uuid(1)]
    assert slow_cmp["summary"]["geomean_ratio"] == pytest.approx(1.12, abs=0.01)
    assert slow_cmp["summary"]["geomean_cycles_ratio"] == pytest.approx(1.0, abs=0.01)
    assert {b["reason"] for b in slow_cmp["benchmarks"]} == {"clock_only"}
    assert by[fake_gpu_uuid(2)]["summary"]["geomean_ratio"] == pytest.approx(1.0, abs=0.01)


def test_shard_options_hand_every_option_on_but_the_parents_own() -> None:
    from nsightwrap.cli.gpus import shard_options

    argv = ["--debug", "profile", "-q", "--gpus", "all", "-o", "run", "--timeout", "60", "--replicate",
            "--output=x", "--ncu-iters", "2", "--allow-failed-shards", "--", "bench.py", "-o", "mine"]  # fmt: skip
    assert shard_options(argv, 3) == (["--debug"], ["-q", "--timeout", "60", "--ncu-iters", "2"])
    assert shard_options(["profile", "--gpus=0,1", "-orun", "bench.py"], 1) == ([], [])


def test_ctrl_c_stops_every_shard_and_keeps_what_they_wrote(fakes: Path, tmp_path: Path, monkeypatch) -> None:
    import os
    import signal
    import subprocess
    import time

    from fake_tools.harness import alive, spawn_profile

    monkeypatch.setenv("SHARD_TARGET_SLEEP", "60")
    p = spawn_profile(["-o", "run", "--passes", "plain", "--gpus", "0,1", SWEEP], dict(os.environ), tmp_path)
    run = tmp_path / "run"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not all((run / "shards" / str(i) / "plain" / "stdout.log").is_file() for i in (0, 1)):
        time.sleep(0.2)
    time.sleep(1.0)  # the targets are running
    # Only this test's shard targets: other tests on other workers run shard_target.py too.
    shard_pids = [pid for pid in (int(x) for x in subprocess.run(["pgrep", "-f", "shard_target.py"], capture_output=True, text=True).stdout.split())
                  if _env_names(pid, str(run))]  # fmt: skip
    assert shard_pids, "no shard target is running"
    os.kill(p.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches nsightwrap, not the shards' own sessions
    out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    m = manifest(run)
    assert m["status"] == "interrupted" and all(s["status"] == "interrupted" for s in m["shards"])
    assert all(manifest(run / "shards" / str(i))["status"] == "interrupted" for i in (0, 1))
    assert "interrupted" in err
    time.sleep(0.5)
    assert not [pid for pid in shard_pids if alive(pid)]


def _env_names(pid: int, text: str) -> bool:
    """Whether process ``pid``'s environment mentions ``text`` (its run directory)."""
    try:
        return text.encode() in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
