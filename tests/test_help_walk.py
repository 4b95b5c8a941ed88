"""Every command's --help: exits 0, no ``<bool>`` metavar, an example, and the exit codes named."""

from __future__ import annotations

import pytest
import typer
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


def test_profile_and_compare_name_their_exit_codes() -> None:
    for cmd, code in (("profile", "6 nothing was measured"), ("compare", "7 no benchmark in common")):
        r = CliRunner().invoke(app, [cmd, "--help"], terminal_width=400)
        assert code in " ".join(r.output.split()), r.output
