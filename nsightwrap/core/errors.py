"""Errors a user can cause or meet, each with an exit code and a one-line message.

The CLI prints ``str(error)`` as one red line and exits with ``error.exit_code``; ``--debug``
shows the traceback. A message names what failed, where, and what to do about it.

Exit codes (the CLI contract): 0 ok, 1 findings that fail (``--strict``, regressions),
2 usage or bad input, 3 a tool or the profiled program failed, 4 a pass ran past its timeout,
5 a native library crashed while reading a report (the rest of the report is still produced),
6 nothing was measured (no pass produced a figure for any benchmark), 7 ``compare`` found no
benchmark in common (or, with ``--require-all``, a baseline benchmark is missing), 8 an output
asked for needs an optional extra that is not installed (the device page's HTML: ``pip install 'nsightwrap[html]'``),
130 interrupted by Ctrl-C.
"""

from __future__ import annotations

import errno

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

#: Every exit code and what it means: the one list the README's table and ``--help`` are made
#: from (``exit_code_lines``; tests/test_exit_codes.py checks the README against it).
EXIT_MEANINGS: tuple[tuple[int, str], ...] = (
    (EXIT_OK, "ok"),
    (EXIT_FINDINGS, "findings that fail, and nothing else: report --strict discrepancies, compare regressions, doctor warnings"),
    (EXIT_BAD_INPUT, "usage error or bad input (a missing, damaged or unknown file), raw files kept"),
    (EXIT_TOOL_FAILED, "a tool or the profiled program failed, or an unexpected error (one line, traceback saved)"),
    (EXIT_TIMEOUT, "a pass timed out (--timeout); the run goes on with the next pass"),
    (EXIT_NATIVE_CRASH, "the native ncu report reader (ncu_report) crashed; the rest of the report is still produced"),
    (EXIT_NOTHING_MEASURED, "nothing measured: no timing and no profiled kernel (no GPU, no ncu, no nsys?)"),
    (EXIT_NO_COMMON, "compare: no benchmark in common (or, with --require-all, a baseline benchmark is missing)"),
    (EXIT_MISSING_EXTRA, "an output needs an optional extra that is not installed (the device page's HTML: pip install 'nsightwrap[html]')"),
    (EXIT_INTERRUPTED, "interrupted (Ctrl-C)"),
)


def exit_code_lines(markdown: bool = False) -> list[str]:
    """The exit codes, one per line (``markdown``: as a table)."""
    if not markdown:
        return [f"{code:>3}  {what}" for code, what in EXIT_MEANINGS]
    return ["| exit code | meaning |", "| ---: | --- |", *(f"| {code} | {what} |" for code, what in EXIT_MEANINGS)]


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


#: errno values that mean "the disk is full" for a writer: no space, the user's quota, or the
#: process's file size limit (RLIMIT_FSIZE, where SIGXFSZ is ignored).
NO_SPACE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def is_no_space(exc: BaseException) -> bool:
    """Whether ``exc`` is a write that failed for want of space (``NO_SPACE_ERRNOS``)."""
    return isinstance(exc, OSError) and exc.errno in NO_SPACE_ERRNOS


class DiskFull(NsightwrapError):
    """A file could not be written: no space left on the device (or the quota, or the file size
    limit). Exit 3, like a tool that failed: the machine, not the input, is at fault."""

    exit_code = EXIT_TOOL_FAILED

    @classmethod
    def writing(cls, path: object, exc: OSError | None = None, *, hint: str | None = None) -> DiskFull:
        """``cannot write PATH: no space left on device`` (with the quota or size limit named)."""
        code = None if exc is None else exc.errno
        why = " (disk quota exceeded)" if code == errno.EDQUOT else " (file size limit reached)" if code == errno.EFBIG else ""
        return cls(
            f"cannot write {path}: no space left on device{why}",
            hint=hint or "free space on that file system and try again",
        )


if __name__ == "__main__":  # prints the README's exit-code table
    print("\n".join(exit_code_lines(markdown=True)))
