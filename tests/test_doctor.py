"""``nsightwrap doctor`` on this CPU machine: no GPU (exact lines, exit 2), and one failure at a
time through fake ncu / nsys / QdstrmImporter / nvidia-smi executables written per test.

The fakes answer like the real tools (their messages are those seen on the H200); the GPU state
comes from the real ``nvidia-smi -q -x`` of the H200, edited one field at a time.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from lxml import etree

from nsightwrap.run import doctor

ROOT = Path(__file__).resolve().parent.parent
REF = ROOT / "fixtures" / "reference" / "h200-workload"
XML = REF / "nvidia-smi-q-x.xml"

NCU = textwrap.dedent(
    """
    import gzip, os, shutil, sys
    args = sys.argv[1:]
    mode = os.environ.get("FAKE_DOCTOR_NCU", "ok")
    if args == ["--version"]:
        print("NVIDIA (R) Nsight Compute Command Line Profiler\\nVersion 2025.3.1.0 (build 36398880) (public-release)")
        sys.exit(0)
    clock = args[args.index("--clock-control") + 1]
    out = args[args.index("-o") + 1] + ".ncu-rep"
    print("==PROF== Connected to process 4242 (python3)")
    if mode == "perm":
        print("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
              "Counters on the target device 0. For instructions on enabling permissions and to get more "
              "information see https://developer.nvidia.com/ERR_NVGPUCTRPERM")
        print("==WARNING== No kernels were profiled.")
        sys.exit(0)
    if mode == "nolock" and clock == "base":
        print("==ERROR== Failed to lock the GPU clocks to base: insufficient permissions", file=sys.stderr)
        sys.exit(1)
    print('==PROF== Profiling "nsightwrap_doctor_tiny" - 0: 0%....50%....100% - 3 passes')
    with gzip.open(os.environ["FAKE_DOCTOR_REPORT"], "rb") as src, open(out, "wb") as dst:
        shutil.copyfileobj(src, dst)
    print(f"==PROF== Report: {out}")
    """
)
NSYS = textwrap.dedent(
    """
    import sys
    if sys.argv[1:] == ["--version"]:
        print("NVIDIA Nsight Systems version 2025.3.1.90-253135822126v0")
    """
)
IMPORTER = textwrap.dedent(
    """
    import os, sys
    if os.environ.get("FAKE_DOCTOR_IMPORTER") == "libdw":
        print(f"{sys.argv[0]}: error while loading shared libraries: libdw.so.1: cannot open shared object file: "
              "No such file or directory", file=sys.stderr)
        sys.exit(127)
    print("Usage: QdstrmImporter -i <input.qdstrm>")
    """
)
SMI = textwrap.dedent(
    """
    import os, sys
    if os.environ.get("FAKE_DOCTOR_SMI") == "fail":
        print("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that "
              "the latest NVIDIA driver is installed and running.")
        sys.exit(9)
    if sys.argv[1:] == ["-q", "-x"]:
        sys.stdout.write(open(os.environ["FAKE_DOCTOR_XML"]).read())
        sys.exit(0)
    sys.exit(2)
    """
)


def _exe(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """ncu and nvidia-smi in bin/, nsys with its QdstrmImporter laid out as Nsight ships them;
    PATH holds only these (no real tool can leak in)."""
    _exe(tmp_path / "bin" / "ncu", NCU)
    _exe(tmp_path / "bin" / "nvidia-smi", SMI)
    _exe(tmp_path / "nsight" / "target-linux-x64" / "nsys", NSYS)
    _exe(tmp_path / "nsight" / "linux-desktop-glibc_2_11_3-x64" / "QdstrmImporter", IMPORTER)
    xml = tmp_path / "smi.xml"
    xml.write_bytes(XML.read_bytes())
    for var in ("NSIGHTWRAP_NCU", "NSIGHTWRAP_NSYS", "CUDA_VISIBLE_DEVICES", "FAKE_DOCTOR_NCU",
                "FAKE_DOCTOR_IMPORTER", "FAKE_DOCTOR_SMI"):  # fmt: skip
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path / "bin"), str(tmp_path / "nsight" / "target-linux-x64")]))
    monkeypatch.setenv("FAKE_DOCTOR_XML", str(xml))
    monkeypatch.setenv("FAKE_DOCTOR_REPORT", str(REF / "workload.ncu-rep.gz"))
    return tmp_path


def _edit(fakes: Path, path: str, text: str) -> None:
    """Set one element of the fake GPU's ``nvidia-smi -q -x`` (created if absent)."""
    xml = fakes / "smi.xml"
    tree = etree.parse(str(xml), etree.XMLParser(load_dtd=False, no_network=True))
    gpu = tree.getroot().find("gpu")
    node = gpu.find(path)
    if node is None:
        parent = gpu
        for part in path.split("/"):
            child = parent.find(part)
            parent = child if child is not None else etree.SubElement(parent, part)
        node = parent
    node.text = text
    xml.write_bytes(etree.tostring(tree))


def _checks(*args: str) -> dict[str, doctor.Check]:
    report = doctor.run_checks(*args) if args else doctor.run_checks()
    return {c.name: c for c in report.checks}


def _line(out: str, name: str) -> str:
    """The table line of check ``name`` (status, then the name padded to the widest)."""
    return next(ln for ln in out.splitlines() if ln[6:].startswith(name + "  "))


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from nsightwrap.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["doctor", *args])
    cap = capsys.readouterr()
    return int(exc.value.code or 0), cap.out, cap.err


# ------------------------------------------------------------------------ no GPU at all


def test_no_gpu_at_all_one_line_per_check_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    for var in ("NSIGHTWRAP_NCU", "NSIGHTWRAP_NSYS", "CUDA_VISIBLE_DEVICES"):
        monkeypatch.delenv(var, raising=False)
    code, out, err = _cli(capsys)
    assert code == 2
    lines = out.splitlines()
    expected = [
        "fail  ncu                   not found (looked in PATH, /usr/local/cuda/bin/ncu, /usr/local/cuda-*/bin/ncu, "
        "/opt/nvidia/nsight-compute/*/ncu): profile cannot run its ncu pass; fix: install it, or point at it "
        "with --ncu PATH or NSIGHTWRAP_NCU=PATH",
        "warn  nsys                  not found (looked in PATH, /usr/local/cuda/bin/nsys, "
        "/opt/nvidia/nsight-systems/*/bin/nsys, /usr/local/cuda/nsight-systems-*/bin/nsys, "
        "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys): profile skips its nsys pass; fix: install "
        "it, or point at it with --nsys PATH or NSIGHTWRAP_NSYS=PATH",
        "warn  nsys importer         not checked: no nsys",
    ]
    assert lines[:3] == expected
    gpu_lines = lines[8:22]
    assert gpu_lines == [
        "fail  gpu                   no NVIDIA GPU: nvidia-smi not found (looked in PATH, /usr/bin/nvidia-smi); "
        "fix: run on a machine with an NVIDIA GPU and its driver",
        "fail  persistence mode      no NVIDIA GPU",
        "fail  application clocks    no NVIDIA GPU",
        "fail  locked clocks         no NVIDIA GPU",
        "fail  throttle reasons      no NVIDIA GPU",
        "fail  temperature           no NVIDIA GPU",
        "fail  mig                   no NVIDIA GPU",
        "fail  ecc                   no NVIDIA GPU",
        "fail  other processes       no NVIDIA GPU",
        "fail  CUDA_VISIBLE_DEVICES  no NVIDIA GPU",
        "fail  power limit           no NVIDIA GPU",
        "fail  gpu counters          not checked: no NVIDIA GPU",
        "fail  ncu-report reads ncu  not checked: no NVIDIA GPU",
        "fail  ncu clock lock        not checked: no NVIDIA GPU",
    ]
    # The Python packages sit between them, one line each, whatever this venv holds.
    assert [ln.split()[1] for ln in lines[3:8]] == ["nvtx", "ncu-report", "nvidia-ml-py", "torch", "triton"]
    assert lines[-1].endswith("15 fail") and len(lines) == 23
    assert err == ""


def test_no_gpu_as_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    code, out, _ = _cli(capsys, "--format", "json", "--quick")
    doc = json.loads(out)
    assert code == 2 and doc["format"] == "nsightwrap-doctor" and doc["status"] == "fail" and doc["exit_code"] == 2
    names = [c["name"] for c in doc["checks"]]
    assert names[:8] == ["ncu", "nsys", "nsys importer", "nvtx", "ncu-report", "nvidia-ml-py", "torch", "triton"]
    assert names[8:] == list(doctor.GPU_CHECK_NAMES)  # --quick: no ncu run
    assert all({"status", "message", "evidence", "fix", "group"} <= set(c) for c in doc["checks"])


def test_smi_that_cannot_reach_the_driver(fakes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_DOCTOR_SMI", "fail")
    c = _checks()
    assert c["gpu"].status is doctor.Status.FAIL
    assert c["gpu"].message.startswith("no NVIDIA GPU: nvidia-smi failed: NVIDIA-SMI has failed because it couldn't")
    assert c["gpu counters"].message == "not checked: no NVIDIA GPU"


# ------------------------------------------------------------------------ the healthy fake


def test_all_ok_with_the_h200_state(fakes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c = _checks()
    for name in ("ncu", "nsys", "nsys importer", "gpu", "persistence mode", "application clocks",
                 "locked clocks", "throttle reasons", "temperature", "mig", "ecc", "other processes",
                 "CUDA_VISIBLE_DEVICES", "power limit", "gpu counters", "ncu-report reads ncu",
                 "ncu clock lock"):  # fmt: skip
        assert c[name].status is doctor.Status.OK, (name, c[name].message)
    assert c["ncu"].message.startswith("2025.3.1.0 at ") and c["ncu"].evidence["found_by"] == "PATH"
    assert c["gpu"].message == "GPU 0: NVIDIA H200, driver 580.159.04, CUDA 13.0"
    assert c["temperature"].message == "37 C, 52 C below slowdown"
    assert c["power limit"].message == "700 W (default)"
    assert c["ncu-report reads ncu"].message == "read the report of this ncu (18 kernel)"
    assert c["ncu clock lock"].message.startswith("ncu --clock-control base works: the kernel ran at ")


# ------------------------------------------------------------------------ one failure at a time


def test_counters_without_permission(fakes: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("FAKE_DOCTOR_NCU", "perm")
    code, out, _ = _cli(capsys)
    assert code == 2
    line = _line(out, "gpu counters")
    assert line.startswith("fail  gpu counters")
    assert "no permission to read the GPU performance counters (ERR_NVGPUCTRPERM)" in line
    assert "NVreg_RestrictProfilingToAdminUsers=0" in line and "https://developer.nvidia.com/ERR_NVGPUCTRPERM" in line


def test_clocks_cannot_be_locked(fakes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_DOCTOR_NCU", "nolock")
    c = _checks()["ncu clock lock"]
    assert c.status is doctor.Status.WARN
    assert c.message == "ncu --clock-control base fails: ==ERROR== Failed to lock the GPU clocks to base: insufficient permissions"
    assert c.fix and "--clock-control none" in c.fix


def test_importer_without_libdw(fakes: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_DOCTOR_IMPORTER", "libdw")
    c = _checks()["nsys importer"]
    assert c.status is doctor.Status.FAIL
    assert c.message == "QdstrmImporter cannot start: libdw.so.1 is missing, so nsys leaves only a .qdstrm and no report"
    assert c.fix == "install libdw1 (Debian/Ubuntu) or elfutils-libs (Fedora/RHEL), or put libdw.so.1 on LD_LIBRARY_PATH"


def test_missing_ncu_is_a_failure(fakes: Path) -> None:
    (fakes / "bin" / "ncu").unlink()
    report = doctor.run_checks()
    c = {x.name: x for x in report.checks}
    assert c["ncu"].status is doctor.Status.FAIL and c["gpu counters"].message == "not checked: no ncu"
    assert report.exit_code == 2


@pytest.mark.parametrize(
    ("path", "text", "name", "status", "message"),
    [
        ("persistence_mode", "Disabled", "persistence mode", "warn",
         "disabled: the driver unloads between runs, so each run starts cold (seconds of start-up, clocks reset)"),
        ("applications_clocks/graphics_clock", "1755 MHz", "application clocks", "warn",
         "set to 1755 MHz, default 1980 MHz: kernels run at a clock users do not see"),
        ("clocks_event_reasons/clocks_event_reason_applications_clocks_setting", "Active", "locked clocks", "warn",
         "SM clock 1980 MHz of 1980 MHz: a clock setting holds it (clock event reason: applications clocks "
         "setting); timings are for that clock"),
        ("clocks/sm_clock", "1410 MHz", "locked clocks", "ok",
         "not locked (SM 1410 MHz, max 1980 MHz)"),  # idle: an H200 drops to 345 MHz when idle
        ("clocks_event_reasons/clocks_event_reason_gpu_idle", "Not Active", "locked clocks", "ok",
         "not locked (SM 1980 MHz, max 1980 MHz)"),
        ("clocks_event_reasons/clocks_event_reason_sw_power_cap", "Active", "throttle reasons", "warn",
         "active now: power cap: clocks are being held down"),
        ("temperature/gpu_temp_tlimit", "6 C", "temperature", "warn",
         "37 C, 8 C from the slowdown temperature: long runs will throttle"),
        ("mig_mode/current_mig", "Enabled", "mig", "warn",
         "MIG is enabled: a MIG slice has a fraction of the SMs, L2 and bandwidth; ncu profiles slices in a limited way"),
        ("ecc_mode/pending_ecc", "Disabled", "ecc", "warn", "enabled, disabled after the next reboot"),
        ("gpu_power_readings/current_power_limit", "450.00 W", "power limit", "warn",
         "450 W, below the default 700 W: clocks drop earlier under load"),
    ],
)
def test_each_gpu_state_problem(fakes: Path, path: str, text: str, name: str, status: str, message: str) -> None:
    _edit(fakes, path, text)
    c = doctor.run_checks(fast=True)
    got = {x.name: x for x in c.checks}[name]
    assert (got.status.value, got.message) == (status, message)
    assert bool(got.fix) == (status != "ok")
    if status == "warn":
        assert c.exit_code == 1  # warnings, no failure


def test_a_noisy_neighbour(fakes: Path) -> None:
    xml = fakes / "smi.xml"
    text = xml.read_text().replace(
        "<processes>\n\t\t</processes>",
        "<processes><process_info><gpu_instance_id>N/A</gpu_instance_id><compute_instance_id>N/A</compute_instance_id>"
        "<pid>31337</pid><type>C</type><process_name>python3 train.py</process_name>"
        "<used_memory>40000 MiB</used_memory></process_info></processes>",
    )
    assert "31337" in text
    xml.write_text(text)
    c = {x.name: x for x in doctor.run_checks(fast=True).checks}["other processes"]
    assert c.status is doctor.Status.WARN
    assert c.message == "1 on the GPU: python3 train.py (pid 31337, 40000 MiB): a noisy neighbour makes every number wrong"


@pytest.mark.parametrize(
    ("value", "status", "message"),
    [
        ("0", "ok", "'0': GPU 0 is CUDA device 0"),
        ("1", "warn", "'1' hides GPU 0: the benchmark runs elsewhere"),
        ("", "fail", "'': CUDA sees no GPU"),
        ("GPU-5c1c2662-50ec-2ab1-aa09-64c88e23aaed", "ok",
         "'GPU-5c1c2662-50ec-2ab1-aa09-64c88e23aaed': GPU 0 is CUDA device 0"),
    ],
)
def test_cuda_visible_devices(fakes: Path, monkeypatch: pytest.MonkeyPatch, value: str, status: str, message: str) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", value)
    c = {x.name: x for x in doctor.run_checks(0, fast=True).checks}["CUDA_VISIBLE_DEVICES"]
    assert (c.status.value, c.message) == (status, message)


def test_a_gpu_that_does_not_exist(fakes: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _cli(capsys, "--gpu", "3", "--quick")
    assert code == 2 and out == ""
    assert "--gpu 3: no such GPU; nvidia-smi lists 1 (0-0)" in err


def test_ncu_report_from_nsight_compute_extras_is_named(fakes: Path, tmp_path: Path) -> None:
    """Nsight Compute's own ncu_report first on PYTHONPATH, as NVIDIA's docs suggest: a failure
    that names it, its version and what to install, and the crash when it reads ncu's report."""
    extras = tmp_path / "opt" / "nvidia" / "nsight-compute" / "2025.3.1" / "extras" / "python"
    extras.mkdir(parents=True)
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from test_native_crash import STANDIN
    finally:
        sys.path.pop(0)
    (extras / "ncu_report.py").write_text(STANDIN)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(extras), str(ROOT)])}
    out = subprocess.run([sys.executable, "-m", "nsightwrap", "doctor"], env=env, capture_output=True, text=True, timeout=120)
    line = _line(out.stdout, "ncu-report")
    assert out.returncode == 2
    assert line.startswith("warn  ncu-report")
    assert (
        f"Python imports ncu_report 2025.3.1 from Nsight Compute's extras/python ({extras / 'ncu_report.py'}), "
        "which segfaults in metric.unit() in any process that has imported pandas"
    ) in line
    assert "fix: pip install ncu-report and take Nsight Compute's extras/python off PYTHONPATH" in line
    crash = _line(out.stdout, "ncu-report reads ncu")
    assert crash.startswith("fail") and "crashed while reading it (SIGSEGV in unit() at ncu_report.py:" in crash


def test_nvtx_without_message_keyword(tmp_path: Path) -> None:
    """An nvtx whose Domain.push_range has no message= (0.2.14): nsightwrap.bench would raise."""
    pkg = tmp_path / "old" / "nvtx"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(textwrap.dedent(
        """
        class Domain:
            def push_range(self, attributes=None):
                pass

            def pop_range(self):
                pass


        def get_domain(name):
            return Domain()
        """
    ))  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(pkg.parent), str(ROOT)])}
    out = subprocess.run([sys.executable, "-m", "nsightwrap", "doctor", "--quick"], env=env, capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    line = _line(out.stdout, "nvtx")
    assert line.startswith("fail  nvtx")
    assert "Domain.push_range(message=) is missing, so nsightwrap.bench raises TypeError" in line
    assert "fix: pip install 'nvtx>=0.2.15'" in line


def test_floors_match_pyproject() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        from lowest_constraints import floors
    finally:
        sys.path.pop(0)
    declared = dict(floors((ROOT / "pyproject.toml").read_text()))
    assert {d: declared[d] for d in doctor.FLOORS} == doctor.FLOORS


def test_preflight_shows_only_what_is_not_ok(fakes: Path) -> None:
    _edit(fakes, "persistence_mode", "Disabled")
    got = doctor.preflight()
    assert [c.name for c in got] == ["persistence mode"] or all(c.status is not doctor.Status.OK for c in got)
    assert "persistence mode" in [c.name for c in got] and all(c.name not in ("ncu", "nsys") for c in got)


def test_profile_shows_the_quick_checks_that_are_not_ok(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """profile runs doctor's quick checks first and prints only what is not ok (here: the fake
    GPU's power limit is 500 W of 700 W); --no-checks skips them."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from fake_tools.harness import TARGET, profile, use_fakes
    finally:
        sys.path.pop(0)
    use_fakes(monkeypatch, tmp_path)
    monkeypatch.setenv("FAKE_GPUS", "1")
    monkeypatch.setenv("FAKE_SLOW_GPU", "0")
    r = profile(capsys, "-o", str(tmp_path / "run"), "--passes", "plain", "--no-analyze", str(TARGET))
    assert r.code == 0, r.err
    shown = [ln for ln in r.err.splitlines() if "doctor:" in ln]
    assert "warning: doctor: warn power limit: 500 W, below the default 700 W: clocks drop earlier under load" \
        " (fix: sudo nvidia-smi -i 0 -pl 700)" in shown
    assert not any(" ok " in ln for ln in shown)
    r = profile(capsys, "-o", str(tmp_path / "run2"), "--passes", "plain", "--no-analyze", "--no-checks", str(TARGET))
    assert r.code == 0 and "doctor:" not in r.err


def test_output_file_holds_what_stdout_would(fakes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, "--quick")
    table = tmp_path / "doctor.txt"
    code_o, out_o, err_o = _cli(capsys, "--quick", "-o", str(table))
    assert (code_o, out_o) == (code, "") and table.read_text() == out and f"written to {table}" in err_o
    assert "\x1b[" not in table.read_text()  # plain text, no terminal colours
    _, out_j, _ = _cli(capsys, "--quick", "--format", "json")
    doc = tmp_path / "doctor.json"
    code_j, _, _ = _cli(capsys, "--quick", "--format", "json", "--output", str(doc))
    shown, written = json.loads(out_j), json.loads(doc.read_text())
    assert code_j == code and [(c["name"], c["status"]) for c in written["checks"]] == [
        (c["name"], c["status"]) for c in shown["checks"]
    ]
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary left


def test_output_into_a_missing_folder_is_one_line_exit_2(
    fakes: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, "--quick", "-o", str(tmp_path / "nowhere" / "doctor.txt"))
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        f"error: cannot write {tmp_path / 'nowhere' / 'doctor.txt'}: No such file or directory; choose another -o path"
    ]
