"""A crash in the native ncu_report never takes a run down: a REAL segfault, through the CLI.

The stand-in ``ncu_report`` below sits where Nsight Compute 2025.3.1 keeps its own copy
(``<prefix>/nsight-compute/2025.3.1/extras/python/ncu_report.py``) and, like that copy, dies of
SIGSEGV in ``metric.unit()``. ``report``, ``inspect`` and ``profile`` must each turn that into
one error line (module, version, file, what to install), exit 5, keep every file, and still
produce the report from what can be read.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nsightwrap.core.errors import EXIT_NATIVE_CRASH

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "fixtures" / "runs" / "h200-example"
FAKES = ROOT / "tests" / "fake_tools"

STANDIN = textwrap.dedent(
    """
    # Stand-in for the ncu_report of Nsight Compute 2025.3.1: metric.unit() segfaults.
    import ctypes


    class IAction:
        NameBase_DEMANGLED = 1


    class IMetric:
        ValueKind_STRING = 5


    class _Metric:
        def kind(self):
            return 0

        def as_double(self):
            return 1.0

        def unit(self):
            ctypes.string_at(0)  # reads address 0: SIGSEGV, as the real one does here


    class _Action:
        def metric_names(self):
            return ["gpu__time_duration.sum"]

        def metric_by_name(self, name):
            return _Metric()

        def name(self, base=None):
            return "kernel"

        def nvtx_state(self):
            return None


    class _Range:
        def num_actions(self):
            return 1

        def action_by_idx(self, i):
            return _Action()


    class _Context:
        def num_ranges(self):
            return 1

        def range_by_idx(self, i):
            return _Range()


    def load_report(path):
        return _Context()
    """
)


@pytest.fixture
def standin(tmp_path: Path) -> Path:
    extras = tmp_path / "opt" / "nvidia" / "nsight-compute" / "2025.3.1" / "extras" / "python"
    extras.mkdir(parents=True)
    (extras / "ncu_report.py").write_text(STANDIN)
    return extras


def _env(extras: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NSIGHTWRAP_", "FAKE_TOOLS"))}
    # What NVIDIA's docs tell users to do: extras/python first on the module search path.
    env["PYTHONPATH"] = os.pathsep.join([str(extras), str(ROOT)])
    env["COLUMNS"] = "200"
    env["NSIGHTWRAP_ANALYSIS_STORE"] = "off"  # the test checks the run directory is left as it was
    env.update(extra)
    return env


def _digest(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha1(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _nsightwrap(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nsightwrap", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )


def _crash_line(stderr: str, report: str) -> str:
    errors = [ln for ln in stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, stderr
    line = errors[0]
    assert report in line
    assert "ncu_report 2025.3.1 from Nsight Compute's extras/python" in line
    assert "extras/python/ncu_report.py" in line
    assert "crashed while reading it (SIGSEGV in unit() at ncu_report.py:" in line
    assert "pip install ncu-report" in line
    assert "Traceback" not in stderr and "Fatal Python error" not in stderr
    return line


def test_report_survives_a_segfault_in_ncu_report(tmp_path: Path, standin: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(RUN, run)
    before = _digest(run)
    out = _nsightwrap(["report", str(run), "--format", "md"], _env(standin), tmp_path)
    assert out.returncode == EXIT_NATIVE_CRASH, out.stderr
    _crash_line(out.stderr, "report.ncu-rep")
    # The report is still there, made from the timer and nsys; the ncu part says why it is missing.
    assert out.stdout.startswith("# nsightwrap report")
    assert "ncu numbers missing:" in out.stdout
    assert "no ncu" in out.stdout  # verdict of a benchmark with no ncu numbers
    assert _digest(run) == before  # nothing written, nothing lost


def test_inspect_of_a_report_that_crashes_the_reader(tmp_path: Path, standin: Path) -> None:
    rep = RUN / "ncu" / "report.ncu-rep.gz"
    out = _nsightwrap(["inspect", str(rep)], _env(standin), tmp_path)
    assert out.returncode == EXIT_NATIVE_CRASH, out.stderr
    _crash_line(out.stderr, "report.ncu-rep")
    assert out.stdout == ""


def test_profile_keeps_its_run_directory_when_the_reader_crashes(tmp_path: Path, standin: Path) -> None:
    env = _env(standin, PATH=os.pathsep.join([str(FAKES / "bin"), str(FAKES / "target-linux-x64"), os.environ["PATH"]]))
    run = tmp_path / "run"
    out = _nsightwrap(["profile", "-o", str(run), str(ROOT / "tests" / "profile_target.py")], env, tmp_path)
    assert out.returncode == EXIT_NATIVE_CRASH, out.stdout + out.stderr
    _crash_line(out.stderr, "report.ncu-rep")
    # Every pass ran and kept its files; the manifest says the run itself completed.
    assert (run / "manifest.json").is_file() and (run / "ncu" / "report.ncu-rep").is_file()
    assert (run / "nsys" / "report.sqlite").is_file()
    # The manifest records what the process returned: the reader's crash (exit 5).
    assert '"status": "reader-crashed"' in (run / "manifest.json").read_text()
    assert "run directory:" in out.stdout


def test_the_child_reads_what_the_process_reads(tmp_path: Path) -> None:
    """A report read in the child process is the same frame as one read in-process (its cost is a
    benchmark's question, not a unit test's: a timed assertion here failed under load)."""
    from nsightwrap.parsers.ncu import read_ncu_rep
    from nsightwrap.run import ncu_isolated
    from nsightwrap.run.ncu_isolated import read_ncu_rep_isolated

    rep = RUN / "ncu" / "report.ncu-rep.gz"
    direct = read_ncu_rep(rep)
    ncu_isolated._CACHE.clear()  # a real child read, not one kept from an earlier test
    child = read_ncu_rep_isolated(rep)
    assert child.equals(direct) and len(child) > 0


def test_a_missing_module_in_the_child_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nsightwrap.core.errors import ReportParseError
    from nsightwrap.run.ncu_isolated import read_ncu_rep_isolated

    # A package named ncu_report that fails to import stands for "not installed".
    broken = tmp_path / "broken" / "ncu_report"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ImportError('No module named _ncu_report')\n")
    monkeypatch.syspath_prepend(str(broken.parent))
    with pytest.raises(ReportParseError, match="the ncu_report module is missing.*pip install ncu-report"):
        read_ncu_rep_isolated(RUN / "ncu" / "report.ncu-rep.gz")


def test_a_report_read_twice_starts_one_child(monkeypatch: pytest.MonkeyPatch) -> None:
    from nsightwrap.run import ncu_isolated

    ncu_isolated._CACHE.clear()
    started: list[list[str]] = []
    real = ncu_isolated.probe

    def counting(argv, **kw):  # type: ignore[no-untyped-def]
        started.append(list(argv))
        return real(argv, **kw)

    monkeypatch.setattr(ncu_isolated, "probe", counting)
    rep = RUN / "ncu" / "report.ncu-rep.gz"
    a = ncu_isolated.read_ncu_rep_isolated(rep)
    b = ncu_isolated.read_ncu_rep_isolated(rep)
    assert a.equals(b) and len(started) == 1
