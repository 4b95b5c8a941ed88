"""Every command's --help: exits 0, no ``<bool>`` metavar, an example, the exit codes named, and
plain text as written (no reST double backticks; nothing in [brackets] taken as rich markup)."""

from __future__ import annotations

import re

import pytest
import typer
import typer.core
import typer.main
from typer.testing import CliRunner

import nsightwrap.cli.compare_cmd  # noqa: F401  (each module registers its command on the app)
import nsightwrap.cli.device_cmd  # noqa: F401
import nsightwrap.cli.doctor_cmd  # noqa: F401
import nsightwrap.cli.inspect_cmd  # noqa: F401
import nsightwrap.cli.merge_cmd  # noqa: F401
import nsightwrap.cli.profile_cmd  # noqa: F401
import nsightwrap.cli.report_cmd  # noqa: F401
from nsightwrap.cli import app


def _paths() -> list[list[str]]:
    out: list[list[str]] = [[]]

    def walk(t: typer.Typer, path: list[str]) -> None:
        for c in t.registered_commands:
            name = c.name or (c.callback.__name__.replace("_", "-") if c.callback else "")
            out.append([*path, name])
        for g in t.registered_groups:
            if g.typer_instance is not None and g.name:
                out.append([*path, g.name])
                walk(g.typer_instance, [*path, g.name])

    walk(app, [])
    return out


@pytest.mark.parametrize("path", _paths(), ids=lambda p: " ".join(p) or "nsightwrap")
def test_help(path: list[str]) -> None:
    r = CliRunner().invoke(app, [*path, "--help"], terminal_width=120)
    assert r.exit_code == 0, r.output
    assert "<bool>" not in r.output and "Traceback" not in r.output
    if path:  # every command shows how it is used
        assert "nsightwrap " + path[0] in r.output
    assert "``" not in r.output  # reST markup reads as noise in a terminal: plain text or single backticks


def test_profile_and_compare_name_their_exit_codes() -> None:
    for cmd, code in (("profile", "6 nothing was measured"), ("compare", "7 no benchmark in common")):
        r = CliRunner().invoke(app, [cmd, "--help"], terminal_width=400)
        assert code in " ".join(r.output.split()), r.output


# -- one grammar: docs/cli.md -------------------------------------------------------------------

#: One idea, one option name, in every command that has the idea (keyed by the parameter's name
#: in the code). A new command reusing an idea under another name fails here.
IDEAS = {
    "fmt": ("--format",),  # the output format
    "output": ("--output", "-o"),  # the file or run directory written
    "tolerance": ("--tolerance",),  # a percentage under which a difference says nothing
    "gpu": ("--gpu",),  # one GPU, by the index every command reads the same way
    "verbose": ("--verbose", "-v"),  # more output
    "quiet": ("--quiet", "-q"),  # only errors and the final line
    "device_file": ("--device-file",),
    "ncu": ("--ncu",),
    "nsys": ("--nsys",),
    "input_file": ("--input", "-i"),
    "limit": ("--limit",),  # at most N rows of a table
}
#: Names the same ideas went by elsewhere: never shown (a hidden alias may still read them).
SYNONYMS = {"--threshold", "--tol", "--out", "--fmt", "--output-format", "--device", "--gpu-index", "--verbosity",
            "--silent", "--ncu-path", "--nsys-path"}  # fmt: skip
#: Short options nsightwrap shows, and what each means; ``-f`` is ncu's and nsys's
#: --force-overwrite, so it is not among them (``-o`` is the output and ``-i`` an input there too).
SHORT = {"-o": "--output", "-q": "--quiet", "-v": "--verbose", "-i": "--input", "-h": "--help"}


def _commands() -> list[tuple[str, typer.core.TyperCommand]]:
    group = typer.main.get_command(app)
    out = []

    def walk(c: object, path: list[str]) -> None:
        subs = getattr(c, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, [*path, name])
        elif path:
            out.append((" ".join(path), c))

    walk(group, [])
    return out


COMMANDS = _commands()


def test_the_walk_finds_every_command() -> None:
    assert {name for name, _ in COMMANDS} >= {"profile", "report", "compare", "inspect", "doctor", "device", "merge"}


@pytest.mark.parametrize(("name", "cmd"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_one_grammar(name: str, cmd: typer.core.TyperCommand) -> None:
    for p in cmd.params:
        opts = [*p.opts, *getattr(p, "secondary_opts", [])]
        if p.param_type_name == "argument":
            assert p.metavar and p.metavar.upper() == p.metavar, (name, p.name)  # RUN_DIR, REPORT, ...
            continue
        if p.hidden:
            continue
        if p.name in IDEAS:
            assert sorted(opts) == sorted(IDEAS[p.name]), (name, p.name, opts)
        assert not SYNONYMS & set(opts), (name, opts)
        for o in opts:
            if not o.startswith("--"):
                assert SHORT.get(o) in opts, (name, o, opts)
        if not p.is_flag:  # every value is named: PCT, FILE, DIR, INDEX, table|md|json|html, ...
            assert p.metavar, (name, opts)


@pytest.mark.parametrize(("name", "cmd"), COMMANDS, ids=[n for n, _ in COMMANDS])
def test_every_command_has_examples(name: str, cmd: typer.core.TyperCommand) -> None:
    r = CliRunner().invoke(app, [*name.split(), "--help"], terminal_width=200)
    assert r.exit_code == 0, r.output
    lines = [ln.strip(" │") for ln in r.output.splitlines()]
    at = lines.index("Examples:")
    examples = [ln for ln in lines[at + 1 :] if ln.startswith(f"nsightwrap {name}")]
    assert examples, r.output
    assert not any(" -f " in ln for ln in examples)  # the examples spell --format out
    for bad in ("<bool>", "<str>", "<float", "<int", "<path>", "<list["):
        assert bad not in r.output, (name, bad)


def test_old_spellings_still_work_but_are_not_shown(tmp_path, capsys) -> None:
    import json
    from pathlib import Path

    from nsightwrap.cli import main

    run = Path(__file__).resolve().parent.parent / "fixtures" / "runs" / "h200-example"
    out = tmp_path / "r.json"
    with pytest.raises(SystemExit) as exc:
        main(["report", str(run), "-f", "json", "-o", str(out)])
    assert exc.value.code in (0, None) and json.loads(out.read_text())["benchmarks"]
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(["compare", str(out), str(out), "--threshold", "250", "--format", "json"])
    assert exc.value.code == 2 and "--tolerance 250 is out of range" in capsys.readouterr().err
    for cmd in ("report", "compare", "inspect", "doctor", "device"):
        text = CliRunner().invoke(app, [cmd, "--help"], terminal_width=200).output
        assert "-f " not in text.replace("--format", "") and "--threshold" not in text, cmd


def test_gpu_means_one_thing_in_every_command(monkeypatch) -> None:
    from nsightwrap.cli import GPU_INDEX
    from nsightwrap.cli.doctor_cmd import smi_index
    from nsightwrap.core.errors import UsageError

    gpu_help = {name: p.help for name, cmd in COMMANDS for p in cmd.params if p.name == "gpu"}
    assert set(gpu_help) == {"doctor", "device"} and all(GPU_INDEX in h for h in gpu_help.values())
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert smi_index(1) == 1 and smi_index(None) is None
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")  # a position in the list, as in CUDA and profile --gpus
    assert smi_index(0) == 2 and smi_index(1) == 3
    with pytest.raises(UsageError, match=r"--gpu 2: CUDA_VISIBLE_DEVICES=2,3 holds 2 GPU\(s\)"):
        smi_index(2)


def _written_helps(cmd: object) -> list[str]:
    """The help texts as written in the code: the command's own, its epilog and every option's."""
    texts = [getattr(cmd, "help", None) or "", getattr(cmd, "epilog", None) or ""]
    texts += [getattr(p, "help", None) or "" for p in getattr(cmd, "params", [])]
    return [t for t in texts if t]


@pytest.mark.parametrize(
    ("name", "cmd"), [("", typer.main.get_command(app)), *COMMANDS], ids=["nsightwrap", *(n for n, _ in COMMANDS)]
)
def test_bracketed_text_survives_rich_markup(name: str, cmd: object) -> None:
    """rich reads ``[html]`` as a style tag and drops it unless it is escaped (``\\[html]``): every
    bracketed word written in a help is shown as written."""
    r = CliRunner().invoke(app, [*name.split(), "--help"], terminal_width=400)
    shown = " ".join(r.output.split())
    written = [m.lstrip("\\") for t in _written_helps(cmd) for m in re.findall(r"\\?\[[^\]\s]+\]", t)]
    for token in written:
        assert token in shown, (name, token)


def test_html_reports_ask_for_no_extra() -> None:
    """The HTML report draws its charts itself (export/svgplot.py): report's help offers the
    format without sending the user to install anything; the exit-code table names the extra
    the device page needs in full."""
    r = CliRunner().invoke(app, ["report", "--help"], terminal_width=400)
    shown = " ".join(r.output.split())
    assert "html" in shown and "pip install" not in shown
    top = " ".join(CliRunner().invoke(app, ["--help"], terminal_width=400).output.split())
    assert "device page's HTML: pip install 'nsightwrap[html]'" in top


def test_report_and_compare_say_which_fails_by_default() -> None:
    """report exits 1 only with --strict, compare on a regression unless --no-fail: each help says both."""
    for cmd, own, other in (("report", "--strict", "--no-fail"), ("compare", "--no-fail", "--strict")):
        r = CliRunner().invoke(app, [cmd, "--help"], terminal_width=400)
        help_of = {p.opts[0]: p.help or "" for p in dict(COMMANDS)[cmd].params}
        assert other in help_of[own], (cmd, help_of[own])
        assert "by contrast" in " ".join(r.output.split()), cmd


def test_metric_and_metrics_point_at_each_other() -> None:
    helps = {(n, p.opts[0]): p.help or "" for n, c in COMMANDS for p in c.params}
    assert "profile --metrics" in helps[("compare", "--metric")]
    assert "compare --metric" in helps[("profile", "--metrics")]
