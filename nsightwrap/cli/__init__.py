"""The ``nsightwrap`` command line (Typer). Commands live one per module in this package.

Every NsightwrapError ends as one red line on stderr and its exit code; ``--debug`` shows the
traceback instead. Any other exception is a fault of nsightwrap's: one line naming it and the
file its traceback was saved to, exit 3 (never 1, the exit code of findings and regressions).
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

import typer
from rich.console import Console
from rich.markup import escape

from nsightwrap import __version__
from nsightwrap.core.errors import (
    EXIT_INTERRUPTED,
    EXIT_TOOL_FAILED,
    DiskFull,
    NsightwrapError,
    UsageError,
    is_no_space,
)


def _no_flag_metavar() -> None:
    """Flags take no value, so --help shows none: some typer versions print ``<bool>`` for them;
    and an argument named by its metavar shows no type beside it."""
    try:
        from typer.core import TyperOption
    except ImportError:  # another typer layout: nothing to fix
        return
    shown = getattr(TyperOption, "display_type_rich", None)
    if shown is None:
        return

    def display_type_rich(self: TyperOption, ctx: object) -> str | None:
        if getattr(self, "is_flag", False) and getattr(self, "metavar", None) is None:
            return None
        return shown(self, ctx)  # type: ignore[no-any-return]

    TyperOption.display_type_rich = display_type_rich  # type: ignore[method-assign]
    try:
        from typer.core import TyperArgument
    except ImportError:
        return
    shown_arg = getattr(TyperArgument, "display_type_rich", None)
    if shown_arg is None:
        return

    def argument_type_rich(self: TyperArgument, ctx: object) -> str | None:
        # An argument's metavar (RUN_DIR, REPORT) names its value; ``<list[Path]>`` beside it adds noise.
        if getattr(self, "metavar", None) is not None:
            return None
        return shown_arg(self, ctx)  # type: ignore[no-any-return]

    TyperArgument.display_type_rich = argument_type_rich  # type: ignore[method-assign,assignment]


_no_flag_metavar()


def _exit_codes_epilog() -> str:
    """The exit codes (core/errors.py's one list)."""
    from nsightwrap.core.errors import exit_code_lines

    return "Exit codes:\n\n" + "\n\n".join(ln.strip() for ln in exit_code_lines())

app = typer.Typer(
    name="nsightwrap",
    help=(
        "GPU kernel timings you can trust.\n\n"
        "Runs your benchmark plain, under Nsight Compute (ncu --clock-control none) and under "
        "Nsight Systems, ties every kernel to its benchmark through NVTX ranges, brings all "
        "durations to one SM clock and explains every disagreement."
    ),
    epilog=_exit_codes_epilog(),
    # Help texts are plain text: no rich markup, so that `[html]` shows as written with every
    # typer (typer 0.16 prints an escaped `\\[html]` as it is; newer ones read `[html]` as a tag).
    rich_markup_mode=None,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

#: ``-f``, the old short form of ``--format``: still read, no longer shown (ncu and nsys read
#: ``-f`` as --force-overwrite; docs/cli.md).
OLD_FORMAT_HELP = "Old short form of --format."
#: What a GPU index means in every command (``doctor --gpu``, ``device --gpu``, ``profile --gpus``).
GPU_INDEX = "its nvidia-smi index, or its position in CUDA_VISIBLE_DEVICES when that is set (as for profile --gpus)"

_state = {"debug": False}
#: The command line ``main`` was called with (``profile --gpus`` hands it on to each shard).
invoked: list[str] = []
err_console = Console(stderr=True, highlight=False, soft_wrap=True)


def tool_lines() -> list[str]:
    """One line per profiler ``profile`` would use: ``ncu VERSION at PATH``, or ``ncu: not found``."""
    from nsightwrap.core.errors import ToolNotFound
    from nsightwrap.run.tools import TOOL_ENV, find_tool, with_version

    lines = []
    for name in ("ncu", "nsys"):
        try:
            tool = with_version(find_tool(name))
        except ToolNotFound:
            given = os.environ.get(TOOL_ENV[name])
            # A NSIGHTWRAP_NCU that points nowhere is named; otherwise say how to point at one.
            where = f"at {given}, given by {TOOL_ENV[name]}" if given else f"put it on PATH or set {TOOL_ENV[name]}"
            lines.append(f"{name}: not found ({where})")
            continue
        lines.append(f"{name} {tool.version or '(version unknown)'} at {tool.path}")
    return lines


def _version(value: bool) -> None:
    if value:
        print(f"nsightwrap {__version__}")
        for line in tool_lines():
            print(line)
        raise typer.Exit()


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show the full traceback of an error."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True,
        help="Print nsightwrap's version and the ncu and nsys it finds, and exit.",
    ),
) -> None:
    _state["debug"] = debug


def stdout_piped() -> bool:
    """Whether stdout is a pipe or file (a CI log) with no ``COLUMNS`` to size tables by."""
    return not sys.stdout.isatty() and not os.environ.get("COLUMNS")


def piped_width(fits: int) -> int | None:
    """The width a table is laid out at on stdout: None (rich's choice) on a terminal or where
    ``COLUMNS`` says, else ``fits``. Piped output is never squeezed to rich's 80 columns, which
    folds words mid-way (``SAM/E``)."""
    return fits if stdout_piped() else None


@contextmanager
def output_file(path: Path) -> Iterator[TextIO]:
    """A command's ``-o`` file as a stream, written atomically (core/jsonfile.py: a reader never sees
    half of it, and a failed command leaves no file); one clear error when it cannot be written: a
    full disk is DiskFull (exit 3) and leaves an old file as it was, any other failure a UsageError
    (exit 2). A path that exists and is no regular file (a FIFO, ``/dev/stdout``) is written in place."""
    from nsightwrap.core.jsonfile import atomic_text_file

    hint = "free space there, or choose another -o path"
    try:
        if path.exists() and not path.is_file():
            with path.open("w", encoding="utf-8") as f:
                yield f
            return
        with atomic_text_file(path) as f:
            yield f
    except DiskFull as exc:
        raise DiskFull(exc.message, hint=hint) from None
    except OSError as exc:
        if is_no_space(exc):
            raise DiskFull.writing(path, exc, hint=hint) from None
        raise UsageError(f"cannot write {path}: {exc.strerror}", hint="choose another -o path") from None


class _GuardedStdout:
    """``sys.stdout`` while a command runs: a write or flush that fails for want of space (a
    report printed to a full disk, ``> /dev/full``) raises DiskFull naming standard output,
    one line and exit 3, and what is left goes nowhere (so the exit does not fail again)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        #: The first failure for want of space, kept: a library that swallows it (a probe of
        #: the stream) cannot make the command end as if its output had been written.
        self.error: DiskFull | None = None

    def _full(self, exc: OSError) -> DiskFull:
        if self.error is not None:
            return self.error
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass
        self.error = DiskFull.writing(
            "standard output", exc, hint="free space where the output goes, or write it with -o elsewhere"
        )
        return self.error

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except OSError as exc:
            if is_no_space(exc):
                raise self._full(exc) from None
            raise

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as exc:
            if is_no_space(exc):
                raise self._full(exc) from None
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def write_output(path: Path, text: str | bytes) -> None:
    """Write a command's output to its ``-o`` file (``output_file``)."""
    with output_file(path) as f:
        f.write(text.decode("utf-8") if isinstance(text, bytes) else text)


class UnexpectedError(NsightwrapError):
    """An exception nsightwrap did not expect: a fault of its own, with its traceback saved."""

    exit_code = EXIT_TOOL_FAILED


def save_traceback(exc: BaseException) -> Path | None:
    """Write ``exc``'s traceback to a new file in the temporary directory; None if that fails."""
    try:
        fd, name = tempfile.mkstemp(prefix=f"nsightwrap-traceback-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(f"nsightwrap {__version__}\nargv: {invoked!r}\n\n")
            f.write("".join(traceback.format_exception(exc)))
        return Path(name)
    except OSError:
        return None


def unexpected(exc: BaseException) -> UnexpectedError:
    """One line for an exception nsightwrap did not expect (its traceback saved to a file)."""
    saved = save_traceback(exc)
    text = " ".join(str(exc).split())
    text = f"{type(exc).__name__}: {text[:200]}{'...' if len(text) > 200 else ''}" if text else type(exc).__name__
    where = f"its traceback is in {saved}" if saved else "run again with --debug for its traceback"
    return UnexpectedError(f"unexpected error in nsightwrap ({text}); {where}")


def _passes_through(exc: BaseException) -> bool:
    # Ours, Ctrl-C, exits, and Typer's (click's) own exceptions: usage errors, typer.Exit.
    if isinstance(exc, (NsightwrapError, KeyboardInterrupt, SystemExit, GeneratorExit)):
        return True
    return type(exc).__module__.split(".")[0] in ("typer", "click")


def _guarded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` (a command) with any exception nsightwrap did not expect made an ``UnexpectedError``
    inside Typer's call: Typer itself would turn an EOFError (a truncated gzip stream) into
    "Aborted!" and exit 1."""
    if getattr(fn, "_nsightwrap_guarded", False):
        return fn

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BrokenPipeError:
            # The reader went away (``inspect ... | head``): what it read was what it wanted. Exit 0
            # quietly (click would say exit 1, the code for findings); the rest goes nowhere.
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ else 1)
                os.close(devnull)
            except (OSError, ValueError):
                pass
            raise SystemExit(0) from None
        except BaseException as exc:
            if _passes_through(exc) or _state["debug"]:
                raise
            raise unexpected(exc) from exc

    run._nsightwrap_guarded = True  # type: ignore[attr-defined]
    return run


def _register() -> None:
    # Each module adds its command to ``app`` on import.
    import importlib

    for mod in ("inspect_cmd", "profile_cmd", "report_cmd", "compare_cmd", "device_cmd", "doctor_cmd", "merge_cmd"):
        importlib.import_module(f"nsightwrap.cli.{mod}")
    for info in app.registered_commands:
        if info.callback is not None:
            info.callback = _guarded(info.callback)


def _print_error(exc: NsightwrapError) -> None:
    from nsightwrap.export.escape import terminal_safe

    # Messages hold paths and kernel names: printed as text, never as rich markup, with control
    # characters shown escaped; one line whatever the message holds.
    text = terminal_safe(" ".join(str(exc).splitlines()))
    err_console.print(f"[bold red]error:[/] {escape(text)}", markup=True, highlight=False)


def main(argv: list[str] | None = None) -> None:
    """Entry point of the console script and of ``python -m nsightwrap``."""
    _register()
    invoked[:] = list(sys.argv[1:] if argv is None else argv)
    real_stdout = sys.stdout
    sys.stdout = guarded = _GuardedStdout(real_stdout)  # type: ignore[assignment]
    try:
        try:
            # standalone mode: Typer prints usage errors itself and exits 2.
            app(args=argv, prog_name="nsightwrap")
        except SystemExit:
            guarded.flush()  # what is still buffered goes out where its failure can be told
            if guarded.error is not None:
                raise guarded.error from None
            raise
        except OSError as exc:
            # A full disk under a write that names no file of its own: one line, exit 3.
            if not is_no_space(exc):
                raise
            raise DiskFull.writing(exc.filename or "an output file", exc) from None
        finally:
            sys.stdout = real_stdout
    except NsightwrapError as exc:
        if _state["debug"]:  # set by the root callback: the target's own --debug does not count
            raise
        _print_error(exc)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("[bold red]interrupted[/]")
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:  # outside a command (an option's callback): still one line, exit 3
        if _state["debug"]:
            raise
        error = unexpected(exc)
        _print_error(error)
        sys.exit(error.exit_code)
