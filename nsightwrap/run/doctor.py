"""``nsightwrap doctor``: what on this machine will make the numbers wrong, found before a run.

Every check ends ``ok``, ``warn`` (numbers may be off, or a pass will be skipped) or ``fail``
(nsightwrap cannot do its job, or the numbers will be wrong), with the evidence and the fix.
Checks that start ncu on a GPU take seconds (``slow``); ``profile`` runs the fast ones first
(``preflight``) and shows only what is not ok. docs/doctor.md lists every check.

This module starts processes (ncu, nsys's importer, nvidia-smi, a torch probe) through
``run.launch``; the command line and its formats are ``cli/doctor_cmd.py``.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from enum import Enum
from importlib import metadata
from pathlib import Path
from typing import Any

from nsightwrap.core.errors import EXIT_BAD_INPUT, EXIT_FINDINGS, EXIT_OK, NsightwrapError, UsageError
from nsightwrap.parsers import ncu_native
from nsightwrap.parsers.smi_state import GpuState, parse_gpu_states
from nsightwrap.run.launch import probe
from nsightwrap.run.tools import (
    KNOWN_LOCATIONS,
    Tool,
    find_optional,
    find_qdstrm_importer,
    find_tool,
    qdstrm_importer_candidates,
    with_version,
)

#: Lowest versions nsightwrap works with (the floors of pyproject.toml, proven by
#: ``make test-lowest``), and the versions it was tested with on a GPU (docs/doctor.md).
FLOORS = {
    "nvtx": "0.2.15",
    "ncu-report": "2026.3.1",
    "nvidia-ml-py": "12.535.77",
}
TESTED = {
    "nvtx": "0.2.17",
    "ncu-report": "2026.3.1",
    "nvidia-ml-py": "13.610.43",
    "torch": "2.11.0+cu130",
    "triton": "3.6.0",
}
#: ncu_report builds seen to crash on reports they should read: (origin, version) -> what was seen.
#: The copy in Nsight Compute 2025.3.1's extras/python read every report
#: alone, and segfaulted in metric.unit() on each of them once pandas had been imported in the
#: same process (fixtures/power/h200-evidence/ncu_report_extras_crash.txt).
KNOWN_BAD_NCU_REPORT = {
    ("nsight-compute", "2025.3.1"): "segfaults in metric.unit() in any process that has imported pandas",
}
#: Degrees from the slowdown temperature below which long runs throttle.
HOT_MARGIN_C = 10.0
_PERM = "ERR_NVGPUCTRPERM"
_PERM_FIX = (
    "run as root, or have an admin set the nvidia driver option NVreg_RestrictProfilingToAdminUsers=0 "
    "(see https://developer.nvidia.com/ERR_NVGPUCTRPERM)"
)
NVML_THROTTLES = {
    "sw_power_cap": "power cap",
    "hw_slowdown": "hardware slowdown",
    "hw_thermal_slowdown": "hardware thermal slowdown",
    "sw_thermal_slowdown": "software thermal slowdown",
    "hw_power_brake_slowdown": "power brake",
}


class Status(str, Enum):
    """A check's outcome, worst last."""

    OK = "ok"
    WARN = "warn"
    FAIL = "fail"


_RANK = {Status.OK: 0, Status.WARN: 1, Status.FAIL: 2}


@dataclass(frozen=True)
class Check:
    """One finding: what was checked, its status, one line on what was found, the evidence and
    what to do (None when there is nothing to do)."""

    name: str
    status: Status
    message: str
    evidence: Mapping[str, Any] = field(default_factory=dict)
    fix: str | None = None
    group: str = ""


@dataclass(frozen=True)
class Report:
    """All checks of one ``doctor`` run, in the order they were listed."""

    checks: tuple[Check, ...]
    gpu: int | None

    @property
    def status(self) -> Status:
        return max((c.status for c in self.checks), key=_RANK.__getitem__, default=Status.OK)

    @property
    def exit_code(self) -> int:
        """0 all ok, 1 warnings, 2 failures."""
        return {Status.OK: EXIT_OK, Status.WARN: EXIT_FINDINGS, Status.FAIL: EXIT_BAD_INPUT}[self.status]

    def to_dict(self) -> dict[str, Any]:
        """The report as the ``--format json`` document (``"format": "nsightwrap-doctor"``)."""
        return {
            "format": "nsightwrap-doctor",
            "version": 1,
            "status": self.status.value,
            "exit_code": self.exit_code,
            "gpu": self.gpu,
            "checks": [
                {"group": c.group, "name": c.name, "status": c.status.value, "message": c.message,
                 "evidence": dict(c.evidence), "fix": c.fix}  # fmt: skip
                for c in self.checks
            ],
        }


# ----------------------------------------------------------------------------- versions


def version_tuple(v: str) -> tuple[int, ...]:
    """``"2.11.0+cu130"`` -> ``(2, 11, 0)``: the leading numeric release, for comparisons."""
    out = []
    for part in re.split(r"[.+\-]", v):
        m = re.match(r"\d+", part)
        if not m:
            break
        out.append(int(m.group()))
        if m.group() != part:
            break
    return tuple(out)


def _installed(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _version_check(name: str, dist: str, version: str | None, *, needed: bool, why: str) -> Check | None:
    """Missing or below the floor: a failing Check (or a warning when not ``needed``)."""
    if version is None:
        status = Status.FAIL if needed else Status.WARN
        return Check(name, status, f"not installed ({why})", {"dist": dist}, f"pip install {dist}", "python")
    floor = FLOORS.get(dist)
    if floor and version_tuple(version) < version_tuple(floor):
        return Check(
            name, Status.FAIL, f"{version} is older than {floor}, the oldest nsightwrap works with ({why})",
            {"version": version, "floor": floor}, f"pip install '{dist}>={floor}'", "python",
        )  # fmt: skip
    return None


def _tested(dist: str, version: str) -> str:
    t = TESTED.get(dist)
    return f"{version} (tested with {t})" if t and t != version else f"{version} (tested)"


# ----------------------------------------------------------------------------- python packages


def check_nvtx() -> Check:
    version = _installed("nvtx")
    bad = _version_check("nvtx", "nvtx", version, needed=True, why="the timer's NVTX ranges")
    try:
        import nvtx

        dom = nvtx.get_domain("nsightwrap-doctor")
        dom.push_range(message="doctor")
        dom.pop_range()
    except ImportError as exc:
        return bad or Check("nvtx", Status.FAIL, f"cannot be imported: {exc}", {}, "pip install nvtx", "python")
    except TypeError as exc:
        return Check(
            "nvtx", Status.FAIL,
            f"{version}: Domain.push_range(message=) is missing, so nsightwrap.bench raises TypeError ({exc})",
            {"version": version, "module": getattr(nvtx, "__file__", None)},
            f"pip install 'nvtx>={FLOORS['nvtx']}'", "python",
        )  # fmt: skip
    if bad:
        return bad
    assert version is not None
    return Check("nvtx", Status.OK, _tested("nvtx", version), {"version": version, "module": nvtx.__file__}, None, "python")


def check_ncu_report() -> Check:
    info = ncu_native.module_info()
    pip_version = _installed("ncu-report")
    ev: dict[str, Any] = {"module": info.path, "version": info.version, "origin": info.origin,
                          "pip_ncu_report": pip_version}  # fmt: skip
    if info.path is None:
        return Check("ncu-report", Status.FAIL, "no ncu_report module: .ncu-rep files cannot be read", ev,
                     "pip install ncu-report", "python")  # fmt: skip
    bad = KNOWN_BAD_NCU_REPORT.get((info.origin, info.version or ""))
    shadow = f"; it hides the ncu-report {pip_version} package" if pip_version and info.origin != "pip" else ""
    if bad:
        return Check(
            "ncu-report", Status.WARN,
            f"Python imports {info.describe()}, which {bad}{shadow} (nsightwrap reads reports in a child "
            "process that imports neither, where it works; your own scripts may crash)", ev,
            "pip install ncu-report and take Nsight Compute's extras/python off PYTHONPATH", "python",
        )  # fmt: skip
    if info.origin != "pip":
        return Check("ncu-report", Status.WARN, f"Python imports {info.describe()}{shadow}, not the tested package", ev,
                     "pip install ncu-report, and keep other copies off PYTHONPATH", "python")  # fmt: skip
    assert info.version is not None
    floor_bad = _version_check("ncu-report", "ncu-report", info.version, needed=True, why="reading .ncu-rep")
    return floor_bad or Check("ncu-report", Status.OK, f"{_tested('ncu-report', info.version)}, {info.path}", ev, None, "python")


def check_nvml() -> Check:
    version = _installed("nvidia-ml-py")
    bad = _version_check("nvidia-ml-py", "nvidia-ml-py", version, needed=True, why="clock, power and energy readings")
    if bad:
        return bad
    assert version is not None
    try:
        import pynvml
    except ImportError as exc:
        return Check("nvidia-ml-py", Status.FAIL, f"pynvml cannot be imported: {exc}", {"version": version},
                     "pip install --force-reinstall nvidia-ml-py", "python")  # fmt: skip
    where = getattr(pynvml, "__file__", "")
    return Check("nvidia-ml-py", Status.OK, _tested("nvidia-ml-py", version), {"version": version, "module": where}, None, "python")


_TORCH_PROBE = (
    "import json, torch; c = torch.cuda.is_available(); "
    "print(json.dumps({'version': torch.__version__, 'cuda': torch.version.cuda, 'available': c, "
    "'devices': torch.cuda.device_count() if c else 0}))"
)


def check_torch(deep: bool) -> Check:
    """torch's version and CUDA build; ``deep`` imports it (in a child: seconds) to ask CUDA."""
    version = _installed("torch")
    if version is None:
        return Check("torch", Status.WARN, "not installed: nsightwrap.bench needs it (profiling an executable does not)",
                     {}, "install a CUDA build of torch (pytorch.org)", "python")  # fmt: skip
    if version.endswith("+cpu"):
        return Check("torch", Status.FAIL, f"{version} is a CPU-only build: nsightwrap.bench cannot time anything",
                     {"version": version}, "install a CUDA build of torch (pytorch.org)", "python")  # fmt: skip
    if not deep:
        return Check("torch", Status.OK, _tested("torch", version), {"version": version}, None, "python")
    p = probe([sys.executable, "-c", _TORCH_PROBE], timeout_s=120)
    try:
        info = json.loads(p.stdout.strip().splitlines()[-1]) if p.ok else None
    except (ValueError, IndexError):
        info = None
    if info is None:
        last = (p.stderr.strip().splitlines() or [p.error or f"exit {p.returncode}"])[-1]
        return Check("torch", Status.FAIL, f"{version} cannot be imported: {last}", {"version": version}, "reinstall torch", "python")
    ev = {"version": info["version"], "cuda": info["cuda"], "cuda_available": info["available"], "devices": info["devices"]}
    if not info["cuda"]:
        return Check("torch", Status.FAIL, f"{version} is a CPU-only build", ev, "install a CUDA build of torch", "python")
    if not info["available"]:
        return Check("torch", Status.FAIL, f"{version} (CUDA {info['cuda']}) sees no GPU", ev,
                     "check the driver and CUDA_VISIBLE_DEVICES", "python")  # fmt: skip
    return Check("torch", Status.OK, f"{_tested('torch', str(info['version']))}, CUDA {info['cuda']}, {info['devices']} GPU(s)", ev, None, "python")


def check_triton() -> Check:
    version = _installed("triton")
    if version is None:
        return Check("triton", Status.OK, "not installed (only triton kernels need it)", {}, None, "python")
    return Check("triton", Status.OK, _tested("triton", version), {"version": version}, None, "python")


# ----------------------------------------------------------------------------- tools


def check_tool(name: str, needed: bool, version: bool = True) -> tuple[Check, Tool | None]:
    """Where ``name`` is and its version (``version=False``: found only, no process started)."""
    try:
        tool = find_tool(name)
        tool = with_version(tool) if version else tool
    except NsightwrapError as exc:
        what = "profile cannot run its ncu pass" if name == "ncu" else "profile skips its nsys pass"
        found = exc.message.removeprefix(f"{name} ")
        return Check(name, Status.FAIL if needed else Status.WARN, f"{found}: {what}", {},
                     exc.hint, "tools"), None  # fmt: skip
    ev = {"path": tool.path, "version": tool.version, "found_by": tool.found_by}
    what = tool.version or ("version unknown" if version else "found (version not asked with --quick)")
    return Check(name, Status.OK, f"{what} at {tool.path} ({tool.found_by})", ev, None, "tools"), tool


def check_importer(nsys: Tool | None) -> Check:
    """nsys converts its capture with QdstrmImporter, which needs libdw.so.1: run it to see."""
    if nsys is None:
        return Check("nsys importer", Status.WARN, "not checked: no nsys", {}, None, "tools")
    importer = find_qdstrm_importer(nsys.path)
    if importer is None:
        looked = ", ".join(str(c) for c in qdstrm_importer_candidates(nsys.path)[:3])
        return Check("nsys importer", Status.WARN, f"no QdstrmImporter beside nsys (looked at {looked})",
                     {}, "reinstall Nsight Systems", "tools")  # fmt: skip
    p = probe([str(importer), "--help"], timeout_s=30)
    text = p.stdout + p.stderr
    m = re.search(r"(\S+\.so[\w.]*): cannot open shared object file", text)
    ev = {"path": str(importer), "returncode": p.returncode}
    if m:
        lib = m.group(1)
        pkg = "libdw1 (Debian/Ubuntu) or elfutils-libs (Fedora/RHEL)" if lib.startswith("libdw.") else f"the package with {lib}"
        return Check(
            "nsys importer", Status.FAIL,
            f"QdstrmImporter cannot start: {lib} is missing, so nsys leaves only a .qdstrm and no report",
            {**ev, "library": lib}, f"install {pkg}, or put {lib} on LD_LIBRARY_PATH", "tools",
        )  # fmt: skip
    if p.returncode is None:
        return Check("nsys importer", Status.WARN, f"QdstrmImporter did not answer: {p.error}", ev, None, "tools")
    return Check("nsys importer", Status.OK, f"QdstrmImporter starts ({importer})", ev, None, "tools")


def _ncu_run(ncu: Tool, clock_control: str, ordinal: int, out_base: Path) -> tuple[Any, str]:
    argv = [
        ncu.path, "--clock-control", clock_control, "--metrics",
        "gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second", "-o", str(out_base), "-f",
        sys.executable, "-m", "nsightwrap.run._tiny_kernel", str(ordinal),
    ]  # fmt: skip
    p = probe(argv, timeout_s=180, env={"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    return p, p.stdout + "\n" + p.stderr


def _error_line(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith("==ERROR==") or line.startswith("tiny kernel:") and "ran" not in line:
            return line.strip()
    return None


def check_ncu_on_gpu(ncu: Tool | None, gpu: int, gpu_error: str | None) -> list[Check]:
    """ncu on a tiny kernel: counters readable, the report readable by ncu_report, clocks lockable."""
    names = ("gpu counters", "ncu-report reads ncu", "ncu clock lock")
    if gpu_error:
        return [Check(n, Status.FAIL, "not checked: no NVIDIA GPU", {}, None, "ncu") for n in names]
    if ncu is None:
        return [Check(n, Status.FAIL, "not checked: no ncu", {}, None, "ncu") for n in names]
    from nsightwrap.run.ncu_isolated import read_ncu_rep_isolated

    out: list[Check] = []
    with tempfile.TemporaryDirectory(prefix="nsightwrap-doctor-") as tmp:
        base = Path(tmp) / "tiny"
        p, text = _ncu_run(ncu, "none", gpu, base)
        rep = base.with_suffix(".ncu-rep")
        ev: dict[str, Any] = {"argv": list(p.argv), "returncode": p.returncode}
        if _PERM in text:
            out.append(Check("gpu counters", Status.FAIL, "no permission to read the GPU performance counters (ERR_NVGPUCTRPERM)",
                             ev, _PERM_FIX, "ncu"))  # fmt: skip
        elif "==PROF== Profiling" not in text or not rep.is_file():
            why = _error_line(text) or p.error or f"ncu exited {p.returncode} without profiling the kernel"
            out.append(Check("gpu counters", Status.FAIL, f"ncu could not profile a tiny kernel: {why}", ev,
                             "see the line above; try the ncu command in the evidence by hand", "ncu"))  # fmt: skip
        else:
            out.append(Check("gpu counters", Status.OK, "ncu profiled a tiny kernel", ev, None, "ncu"))
        if rep.is_file():
            try:
                k = read_ncu_rep_isolated(rep)
                out.append(Check("ncu-report reads ncu", Status.OK, f"read the report of this ncu ({len(k)} kernel)",
                                 {"kernels": len(k)}, None, "ncu"))  # fmt: skip
            except NsightwrapError as exc:
                out.append(Check("ncu-report reads ncu", Status.FAIL, exc.message, {}, exc.hint, "ncu"))
        else:
            out.append(Check("ncu-report reads ncu", Status.WARN, "not checked: ncu wrote no report", {}, None, "ncu"))
        if out[0].status is Status.FAIL:
            out.append(Check("ncu clock lock", Status.WARN, "not checked: ncu cannot profile", {}, None, "ncu"))
            return out
        p2, text2 = _ncu_run(ncu, "base", gpu, Path(tmp) / "base")
        rep2 = (Path(tmp) / "base").with_suffix(".ncu-rep")
        ev2: dict[str, Any] = {"argv": list(p2.argv), "returncode": p2.returncode}
        err = _error_line(text2)
        if p2.ok and rep2.is_file() and not err:
            clock = None
            try:
                k2 = read_ncu_rep_isolated(rep2)
                clock = float(k2["sm_clock_hz"].iloc[0])
                ev2["sm_clock_hz"] = clock
            except (NsightwrapError, KeyError, IndexError, ValueError):
                pass
            at = f": the kernel ran at {clock / 1e9:.2f} GHz" if clock and clock == clock else ""
            out.append(Check("ncu clock lock", Status.OK, f"ncu --clock-control base works{at}", ev2, None, "ncu"))
        else:
            why = err or p2.error or f"ncu exited {p2.returncode}"
            out.append(Check("ncu clock lock", Status.WARN, f"ncu --clock-control base fails: {why}", ev2,
                             "the profile's ncu pass does not lock clocks (--clock-control none); only a clock sweep "
                             "needs it: run with admin rights or on a machine that allows it", "ncu"))  # fmt: skip
    return out


# ----------------------------------------------------------------------------- GPU state


def _mhz(hz: float | None) -> str:
    return "?" if hz is None else f"{hz / 1e6:.0f} MHz"


GPU_CHECK_NAMES = (
    "gpu", "persistence mode", "application clocks", "locked clocks", "throttle reasons", "temperature",
    "mig", "ecc", "other processes", "CUDA_VISIBLE_DEVICES", "power limit",
)  # fmt: skip


def read_gpu_states() -> tuple[list[GpuState], str | None]:
    """The GPUs as ``nvidia-smi -q -x`` lists them, or ``([], why there is no GPU)``."""
    smi = find_optional("nvidia-smi")
    if smi is None:
        return [], "no NVIDIA GPU: nvidia-smi not found (looked in PATH, " + ", ".join(KNOWN_LOCATIONS["nvidia-smi"]) + ")"
    p = probe([smi.path, "-q", "-x"], timeout_s=60)
    if not p.ok:
        why = (p.stdout.strip().splitlines() or p.stderr.strip().splitlines() or [p.error or f"exit {p.returncode}"])[-1]
        return [], f"no NVIDIA GPU: nvidia-smi failed: {why}"
    try:
        states = parse_gpu_states(p.stdout)
    except NsightwrapError as exc:
        return [], f"nvidia-smi -q -x gave no usable XML: {exc.message}"
    if not states:
        return [], "no NVIDIA GPU: nvidia-smi lists none"
    return states, None


def default_gpu(states: Sequence[GpuState]) -> int:
    """The GPU a CUDA program sees first: CUDA_VISIBLE_DEVICES' first entry, else index 0."""
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    if first.isdigit():
        return int(first)
    for s in states:
        if first and s.uuid and s.uuid.lower().startswith(first.lower()):
            return s.index
    return 0


def check_gpu_state(s: GpuState, all_states: Sequence[GpuState]) -> list[Check]:
    g = "gpu"
    out = [Check("gpu", Status.OK, f"GPU {s.index}: {s.name}, driver {s.driver_version}, CUDA {s.cuda_version}",
                 {"index": s.index, "name": s.name, "uuid": s.uuid, "pci_bus_id": s.pci_bus_id,
                  "driver": s.driver_version, "cuda": s.cuda_version}, None, g)]  # fmt: skip
    if s.persistence_mode == "Disabled":
        out.append(Check("persistence mode", Status.WARN, "disabled: the driver unloads between runs, so each run starts cold "
                         "(seconds of start-up, clocks reset)", {"persistence_mode": s.persistence_mode},
                         f"sudo nvidia-smi -i {s.index} -pm 1", g))  # fmt: skip
    else:
        out.append(Check("persistence mode", Status.OK, (s.persistence_mode or "not reported").lower(), {"persistence_mode": s.persistence_mode}, None, g))
    app, dflt = s.app_graphics_clock_hz, s.default_app_graphics_clock_hz
    if app is not None and dflt is not None and abs(app - dflt) > 1e6:
        out.append(Check("application clocks", Status.WARN, f"set to {_mhz(app)}, default {_mhz(dflt)}: kernels run at a clock users do not see",
                         {"applications_hz": app, "default_hz": dflt}, f"sudo nvidia-smi -i {s.index} -rac", g))  # fmt: skip
    else:
        out.append(Check("application clocks", Status.OK, f"default ({_mhz(dflt)})", {"applications_hz": app, "default_hz": dflt}, None, g))
    held = "applications_clocks_setting" in s.active_reasons
    others = [r for r in s.active_reasons if r not in ("gpu_idle", "applications_clocks_setting")]
    # An idle GPU drops its clock far below its maximum (docs/doctor.md): only a busy or non-idle
    # one below its maximum with no other reason says the clocks are held down by a setting.
    low_idle = (
        "gpu_idle" not in s.active_reasons and s.performance_state == "P0" and s.sm_clock_hz is not None
        and s.max_sm_clock_hz is not None and s.sm_clock_hz < 0.97 * s.max_sm_clock_hz and not others
    )  # fmt: skip
    ev = {"sm_clock_hz": s.sm_clock_hz, "max_sm_clock_hz": s.max_sm_clock_hz, "reasons": list(s.active_reasons)}
    if held or low_idle:
        why = "a clock setting holds it (clock event reason: applications clocks setting)" if held else "below its maximum in P0 with no throttle reason"
        out.append(Check("locked clocks", Status.WARN, f"SM clock {_mhz(s.sm_clock_hz)} of {_mhz(s.max_sm_clock_hz)}: {why}; "
                         "timings are for that clock", ev,
                         f"sudo nvidia-smi -i {s.index} -rgc (or keep it and compare with --clock-ref)", g))  # fmt: skip
    else:
        out.append(Check("locked clocks", Status.OK, f"not locked (SM {_mhz(s.sm_clock_hz)}, max {_mhz(s.max_sm_clock_hz)})", ev, None, g))
    throttles = [NVML_THROTTLES.get(r, r.replace("_", " ")) for r in others]
    if throttles:
        out.append(Check("throttle reasons", Status.WARN, f"active now: {', '.join(throttles)}: clocks are being held down",
                         {"active": list(s.active_reasons)}, "let the GPU cool and idle, check its cooling and power limit", g))  # fmt: skip
    else:
        out.append(Check("throttle reasons", Status.OK, f"none active ({', '.join(s.active_reasons) or 'none'})", {"active": list(s.active_reasons)}, None, g))
    ev_t = {"temperature_c": s.temperature_c, "slowdown_margin_c": s.slowdown_margin_c}
    if s.slowdown_margin_c is not None and s.slowdown_margin_c < HOT_MARGIN_C:
        out.append(Check("temperature", Status.WARN, f"{s.temperature_c:.0f} C, {s.slowdown_margin_c:.0f} C from the slowdown "
                         "temperature: long runs will throttle", ev_t,
                         "let it cool; nsightwrap.bench(..., thermal_margin_c=10) waits before each benchmark", g))  # fmt: skip
    else:
        margin = f", {s.slowdown_margin_c:.0f} C below slowdown" if s.slowdown_margin_c is not None else ""
        temp = "not reported" if s.temperature_c is None else f"{s.temperature_c:.0f} C"
        out.append(Check("temperature", Status.OK, temp + margin, ev_t, None, g))
    if s.mig_mode == "Enabled":
        out.append(Check("mig", Status.WARN, "MIG is enabled: a MIG slice has a fraction of the SMs, L2 and bandwidth; "
                         "ncu profiles slices in a limited way", {"mig_mode": s.mig_mode},
                         f"sudo nvidia-smi -i {s.index} -mig 0 (or accept numbers for the slice)", g))  # fmt: skip
    else:
        out.append(Check("mig", Status.OK, (s.mig_mode or "not supported").lower(), {"mig_mode": s.mig_mode}, None, g))
    ev_e = {"ecc": s.ecc_mode, "pending": s.ecc_pending}
    if s.ecc_mode and s.ecc_pending and s.ecc_mode != s.ecc_pending:
        out.append(Check("ecc", Status.WARN, f"{s.ecc_mode.lower()}, {s.ecc_pending.lower()} after the next reboot", ev_e,
                         "reboot, or set it back with nvidia-smi -e", g))  # fmt: skip
    elif s.ecc_mode == "Disabled":
        out.append(Check("ecc", Status.WARN, "disabled: memory bandwidth differs from the ECC-enabled machines most "
                         "data-center GPUs run as", ev_e, f"sudo nvidia-smi -i {s.index} -e 1 (then reboot)", g))  # fmt: skip
    else:
        out.append(Check("ecc", Status.OK, (s.ecc_mode or "not supported").lower(), ev_e, None, g))
    procs = [p for p in s.processes if p.pid != os.getpid()]
    if procs:
        shown = ", ".join(f"{p.name or '?'} (pid {p.pid}, {(p.used_memory_bytes or 0) / 2**20:.0f} MiB)" for p in procs[:4])
        out.append(Check("other processes", Status.WARN, f"{len(procs)} on the GPU: {shown}: a noisy neighbour makes every "
                         "number wrong", {"processes": [p.__dict__ for p in procs]},
                         "stop them, or use an idle GPU (--gpu N, CUDA_VISIBLE_DEVICES)", g))  # fmt: skip
    else:
        out.append(Check("other processes", Status.OK, "none", {}, None, g))
    out.append(_visible_devices(s, all_states))
    lim, dl = s.power_limit_w, s.default_power_limit_w
    ev_p = {"power_limit_w": lim, "default_power_limit_w": dl, "power_draw_w": s.power_draw_w}
    if lim is not None and dl is not None and lim < dl - 0.5:
        out.append(Check("power limit", Status.WARN, f"{lim:.0f} W, below the default {dl:.0f} W: clocks drop earlier under load",
                         ev_p, f"sudo nvidia-smi -i {s.index} -pl {dl:.0f}", g))  # fmt: skip
    else:
        out.append(Check("power limit", Status.OK, "not reported" if lim is None else f"{lim:.0f} W (default)", ev_p, None, g))
    return out


def _visible_devices(s: GpuState, all_states: Sequence[GpuState]) -> Check:
    raw = os.environ.get("CUDA_VISIBLE_DEVICES")
    ev = {"CUDA_VISIBLE_DEVICES": raw}
    if raw is None:
        return Check("CUDA_VISIBLE_DEVICES", Status.OK, f"unset: CUDA sees all {len(all_states)} GPU(s)", ev, None, "gpu")
    entries = [e.strip() for e in raw.split(",") if e.strip()]
    if not entries or entries[0] in ("-1", "none", "NoDevFiles"):
        return Check("CUDA_VISIBLE_DEVICES", Status.FAIL, f"{raw!r}: CUDA sees no GPU", ev, "unset CUDA_VISIBLE_DEVICES", "gpu")

    def is_this(e: str) -> bool:
        return e == str(s.index) or bool(s.uuid and s.uuid.lower().startswith(e.lower()) and e.lower().startswith("gpu-"))

    if not any(is_this(e) for e in entries):
        return Check("CUDA_VISIBLE_DEVICES", Status.WARN, f"{raw!r} hides GPU {s.index}: the benchmark runs elsewhere", ev,
                     f"export CUDA_VISIBLE_DEVICES={s.index}, or check another GPU with --gpu", "gpu")  # fmt: skip
    pos = next(i for i, e in enumerate(entries) if is_this(e))
    return Check("CUDA_VISIBLE_DEVICES", Status.OK, f"{raw!r}: GPU {s.index} is CUDA device {pos}", ev, None, "gpu")


# ----------------------------------------------------------------------------- the run


def _no_gpu(why: str) -> list[Check]:
    first = Check("gpu", Status.FAIL, why, {}, "run on a machine with an NVIDIA GPU and its driver", "gpu")
    return [first, *(Check(n, Status.FAIL, "no NVIDIA GPU", {}, None, "gpu") for n in GPU_CHECK_NAMES[1:])]


def run_checks(gpu: int | None = None, *, fast: bool = False, progress: Callable[[str], None] | None = None) -> Report:
    """Every check (``fast``: only those that take well under a second each, for ``profile``)."""
    say = progress or (lambda _text: None)
    # Every check that starts a process runs beside the others: the quick set costs about as
    # long as its slowest process (nvidia-smi -q -x).
    with ThreadPoolExecutor(max_workers=5) as pool:
        f_states = pool.submit(read_gpu_states)
        f_ncu = pool.submit(check_tool, "ncu", True, not fast)
        f_nsys = pool.submit(check_tool, "nsys", False, not fast)
        f_torch = pool.submit(check_torch, not fast)
        f_importer = pool.submit(lambda: check_importer(f_nsys.result()[1]))
        states, gpu_error = f_states.result()
        ncu_check, ncu = f_ncu.result()
        nsys_check, nsys = f_nsys.result()
        torch_check = f_torch.result()
        importer_check = f_importer.result()
    if gpu is not None and states and not any(s.index == gpu for s in states):
        raise UsageError(f"--gpu {gpu}: no such GPU; nvidia-smi lists {len(states)} (0-{len(states) - 1})",
                         hint="pick one of those indices")  # fmt: skip
    index = gpu if gpu is not None else (default_gpu(states) if states else None)
    checks: list[Check] = [ncu_check, nsys_check, importer_check]
    checks += [check_nvtx(), check_ncu_report(), check_nvml(), torch_check, check_triton()]
    if gpu_error:
        checks += _no_gpu(gpu_error)
    else:
        state = next((s for s in states if s.index == index), states[0])
        checks += check_gpu_state(state, states)
    if not fast:
        say("running ncu on a tiny kernel (a few seconds)")
        checks += check_ncu_on_gpu(ncu, index or 0, gpu_error)
    return Report(tuple(checks), index)


def preflight(gpu: int | None = None) -> list[Check]:
    """The fast checks that are not ok (what ``profile`` shows before its passes). ncu and nsys
    are left out: ``profile`` finds them itself and says what it skips."""
    report = run_checks(gpu, fast=True)
    return [c for c in report.checks if c.status is not Status.OK and c.name not in ("ncu", "nsys")]

