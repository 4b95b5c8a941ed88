"""Errors a user can cause or meet, each with an exit code and a one-line message.

The CLI prints ``str(error)`` as one red line and exits with ``error.exit_code``; ``--debug``
shows the traceback. A message names what failed, where, and what to do about it.

Exit codes (the CLI contract): 0 ok, 1 findings that fail (``--strict``, regressions),
2 usage or bad input, 3 a tool or the profiled program failed, 4 a pass ran past its timeout,
5 a native library crashed while reading a report (the rest of the report is still produced),
6 nothing was measured (no pass produced a figure for any benchmark), 7 ``compare`` found no
benchmark in common (or, with ``--require-all``, a baseline benchmark is missing), 8 an output
asked for needs an optional extra that is not installed (HTML: ``pip install 'nsightwrap[html]'``),
130 interrupted by Ctrl-C.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_BAD_INPUT = 2
EXIT_TOOL_FAILED = 3
EXIT_TIMEOUT = 4
EXIT_NATIVE_CRASH = 5
EXIT_NOTHING_MEASURED = 6
EXIT_NO_COMMON = 7
EXIT_MISSING_EXTRA = 8
EXIT_INTERRUPTED = 130


class NsightwrapError(Exception):
    """Base of every error nsightwrap reports to a user."""

    exit_code: int = EXIT_BAD_INPUT

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        self.message = message
        self.hint = hint
        super().__init__(f"{message}; {hint}" if hint else message)


class UsageError(NsightwrapError):
    """The command line asks for something that cannot be done."""


class InputNotFound(NsightwrapError):
    """A file or directory given by the user does not exist or cannot be read."""


class ReportParseError(NsightwrapError):
    """A report exists but is of the wrong kind, truncated, corrupt or empty."""


class BadField(ReportParseError):
    """A JSON file of nsightwrap's holds a field of the wrong type (its shipped JSON Schema)."""


class FormatVersionError(NsightwrapError):
    """A JSON result or manifest carries a format version this nsightwrap does not know."""


class NoCudaError(NsightwrapError):
    """The in-process timer needs torch with a CUDA device and found none."""


class ToolNotFound(NsightwrapError):
    """ncu, nsys or another external tool could not be found."""

    exit_code = EXIT_TOOL_FAILED


class ProfilerFailed(NsightwrapError):
    """ncu or nsys ran but failed or produced no usable report."""

    exit_code = EXIT_TOOL_FAILED


class TargetFailed(NsightwrapError):
    """The profiled program exited non-zero or was killed by a signal."""

    exit_code = EXIT_TOOL_FAILED


class PassTimeout(NsightwrapError):
    """A pass ran longer than ``--timeout``."""

    exit_code = EXIT_TIMEOUT


class Interrupted(NsightwrapError):
    """The user pressed Ctrl-C."""

    exit_code = EXIT_INTERRUPTED


class NativeReaderCrashed(NsightwrapError):
    """A native report reader (``ncu_report``) crashed; the report file itself is kept."""

    exit_code = EXIT_NATIVE_CRASH


class NothingMeasured(NsightwrapError):
    """A run finished but no benchmark got a figure from any pass (a silent green in CI)."""

    exit_code = EXIT_NOTHING_MEASURED


class NoCommonBenchmarks(NsightwrapError):
    """``compare``: the two sides share no benchmark, or a required baseline benchmark is missing."""

    exit_code = EXIT_NO_COMMON


class PathEscape(ReportParseError):
    """A path read from a run's files points outside the run directory (absolute or ``..``)."""


class MissingExtra(NsightwrapError):
    """An output needs an optional dependency (an extra of the package) that is not installed."""

    exit_code = EXIT_MISSING_EXTRA
