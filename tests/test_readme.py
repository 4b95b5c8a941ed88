"""The README tells the truth: its report excerpt is what the command prints, ``make demo`` installs
the ``[html]`` extra only, and no figure in it is one that no test or ``make`` target makes again."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MAKEFILE = ROOT / "Makefile"


def _excerpt() -> tuple[list[str], list[str]]:
    """The command the README's worked example shows (its indented line), and the lines of the
    excerpt under the ``report-excerpt`` marker."""
    text = README.read_text()
    at = text.index("<!-- report-excerpt:")
    command = re.findall(r"^    (nsightwrap report \S+ .*)$", text[:at], re.M)[-1]
    body = text[text.index("```text\n", at) + len("```text\n") :]
    return shlex.split(command), body[: body.index("```")].splitlines()


def test_report_excerpt_is_what_the_command_prints() -> None:
    argv, lines = _excerpt()
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # into a pipe, as a user pastes it
    r = subprocess.run([sys.executable, "-m", "nsightwrap", *argv[1:]], cwd=ROOT, env=env, capture_output=True,
                       text=True, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr
    printed = [ln.rstrip() for ln in r.stdout.splitlines()]
    shown = [ln.rstrip() for ln in lines if ln.strip()]
    # The table's header as printed (the nsys kernel column's words, whatever lines they wrap to).
    assert len(shown) >= 10 and any("nsys" in ln for ln in shown) and any("kernel" in ln for ln in shown)
    missing = [ln for ln in shown if ln not in printed]
    assert not missing, f"README excerpt lines the command no longer prints (paste them again): {missing}"
    # In the order printed: the excerpt is a run of the output, not a collage.
    at = [printed.index(ln) for ln in shown]
    assert at == sorted(at)


def _make_vars(text: str) -> dict[str, str]:
    return dict(re.findall(r"^(\w+)\s*[:?]?=\s*(.*?)\s*$", text, re.M))


def _expand(s: str, env: dict[str, str]) -> str:
    for _ in range(5):  # variables made of variables: $(BIN) is $(VENV)/bin
        s = re.sub(r"\$\((\w+)\)", lambda m: env.get(m.group(1), m.group(0)), s)
    return s


def _recipes(target: str) -> list[str]:
    """Every recipe line ``make TARGET`` can run on a fresh clone: the target's own and those of its
    prerequisites (normal and order-only), expanded, as the Makefile writes them."""
    text = MAKEFILE.read_text()
    env = _make_vars(text)
    rules: dict[str, tuple[list[str], list[str]]] = {}
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        m = re.match(r"^([^\s#=:][^=:]*):(?!=)(.*)$", ln)
        if not m:
            continue
        body = []
        for nxt in lines[i + 1 :]:
            if not nxt.startswith("\t"):
                break
            body.append(_expand(nxt.strip(), env))
        prereqs = _expand(m.group(2).replace("|", " "), env).split()
        for t in _expand(m.group(1), env).split():
            rules[t] = (prereqs, body)
    out: list[str] = []
    seen: set[str] = set()

    def walk(t: str) -> None:
        if t in seen or t not in rules:
            return
        seen.add(t)
        prereqs, body = rules[t]
        for p in prereqs:
            walk(p)
        out.extend(body)

    walk(target)
    return out


def test_demo_installs_the_html_extra_only() -> None:
    demo = [ln for ln in _recipes("demo") if "pip install" in ln]
    assert any("-e '.[html]'" in ln for ln in demo), demo
    assert not any("[dev]" in ln for ln in demo), demo
    test = [ln for ln in _recipes("test") if "pip install" in ln]
    assert any("-e '.[dev]'" in ln for ln in test), test
    # One venv for both: the demo's stamp and the tests' stamp live in it.
    env = _make_vars(MAKEFILE.read_text())
    assert _expand(env["DEMO_STAMP"], env).startswith(".venv/") and _expand(env["STAMP"], env).startswith(".venv/")


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_make_itself_reads_the_demo_so(tmp_path: Path) -> None:
    """``make -n`` (print, run nothing) on a fresh copy: what make demo would run, as make reads it."""
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    demo = subprocess.run(["make", "-n", "demo"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert demo.returncode == 0, demo.stderr
    pips = [ln for ln in demo.stdout.splitlines() if "pip install" in ln and "--upgrade pip" not in ln]
    assert pips == [".venv/bin/python -m pip install -q -e '.[html]'"]
    (tmp_path / ".venv" / "bin").mkdir(parents=True)  # a venv make demo made: make test adds [dev] to it
    (tmp_path / ".venv" / "bin" / "python").touch()
    (tmp_path / ".venv" / ".installed-html").touch()
    test = subprocess.run(["make", "-n", "test"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert test.returncode == 0, test.stderr
    assert "python3 -m venv .venv" not in test.stdout
    assert ".venv/bin/python -m pip install -q -e '.[dev]'" in test.stdout.splitlines()


def test_the_readme_command_is_the_one_make_demo_runs() -> None:
    argv, _ = _excerpt()
    demo = [ln.split(None, 1)[1] for ln in _recipes("demo") if ln.startswith(".venv/bin/nsightwrap ")]
    assert shlex.join(argv[1:]) in demo


def test_no_test_count_or_suite_time_in_the_readme() -> None:
    """Counts and times of the suite change with every commit: the README names none."""
    text = README.read_text()
    assert not re.search(r"\b\d[\d,]* tests\b", text)
    assert not re.search(r"make test`? (took|takes|runs in) \d", text)
