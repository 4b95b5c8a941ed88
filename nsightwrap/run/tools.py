"""Find the external tools (ncu, nsys, QdstrmImporter, nvidia-smi, git), their versions and what
they support. Lookup order: an explicit path (``--ncu``), its environment variable
(``NSIGHTWRAP_NCU``), PATH, then the places NVIDIA installers put them."""

from __future__ import annotations

import glob
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nsightwrap.core.errors import ToolNotFound
from nsightwrap.run.launch import probe

#: Environment variables naming a tool explicitly.
TOOL_ENV = {"ncu": "NSIGHTWRAP_NCU", "nsys": "NSIGHTWRAP_NSYS"}
TOOL_FLAG = {"ncu": "--ncu", "nsys": "--nsys"}

#: Where installers put the tools, newest version first after sorting. nsys also ships inside
#: Nsight Compute's host directory (not on PATH there).
KNOWN_LOCATIONS: dict[str, tuple[str, ...]] = {
    "ncu": (
        "/usr/local/cuda/bin/ncu",
        "/usr/local/cuda-*/bin/ncu",
        "/opt/nvidia/nsight-compute/*/ncu",
    ),
    "nsys": (
        "/usr/local/cuda/bin/nsys",
        "/opt/nvidia/nsight-systems/*/bin/nsys",
        "/usr/local/cuda/nsight-systems-*/bin/nsys",
        "/opt/nvidia/nsight-compute/*/host/target-linux-x64/nsys",
    ),
    "nvidia-smi": ("/usr/bin/nvidia-smi",),
}

_VERSION_RE = re.compile(r"[Vv]ersion\s+v?(\d[\w.\-]*)")


@dataclass(frozen=True)
class Tool:
    """A tool that was found: absolute path, how it was found, its version string (or None)."""

    name: str
    path: str
    found_by: str  # the flag, the environment variable, "PATH" or "known location"
    version: str | None = None


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def known_locations(name: str) -> list[str]:
    """Existing executables at the usual install places of ``name``, newest first."""
    found: list[str] = []
    for pattern in KNOWN_LOCATIONS.get(name, ()):
        for p in sorted(glob.glob(pattern), reverse=True):
            if _executable(p) and p not in found:
                found.append(p)
    return found


def find_tool(name: str, explicit: str | None = None) -> Tool:
    """Find ``name`` or raise ToolNotFound naming where it looked and how to point at it."""
    env_var = TOOL_ENV.get(name)
    flag = TOOL_FLAG.get(name)
    how = f"point at it with {flag} PATH or {env_var}=PATH" if flag else "put it on PATH"
    for value, source in ((explicit, flag), (os.environ.get(env_var, "") if env_var else "", env_var)):
        if value:
            path = shutil.which(value) if "/" not in value else value
            if path is None or not _executable(path):
                raise ToolNotFound(
                    f"{name} not found at {value} (given by {source})", hint=f"fix the path, or {how}"
                )
            return Tool(name, os.path.abspath(path), str(source))
    on_path = shutil.which(name)
    if on_path:
        return Tool(name, os.path.abspath(on_path), "PATH")
    known = known_locations(name)
    if known:
        return Tool(name, known[0], "known location")
    looked = ", ".join(["PATH", *KNOWN_LOCATIONS.get(name, ())])
    raise ToolNotFound(f"{name} not found (looked in {looked})", hint=f"install it, or {how}")


def with_version(tool: Tool) -> Tool:
    """The tool with its version read from ``TOOL --version`` (None if it does not answer)."""
    p = probe([tool.path, "--version"], timeout_s=60)
    m = _VERSION_RE.search(p.stdout + "\n" + p.stderr) if p.returncode is not None else None
    return Tool(tool.name, tool.path, tool.found_by, m.group(1) if m else None)


def nsys_profile_options(nsys: str) -> str:
    """The text of ``nsys profile --help`` (probed once per run to learn which flags exist)."""
    p = probe([nsys, "profile", "--help"], timeout_s=60)
    return p.stdout + p.stderr


def supports_flag(help_text: str, flag: str) -> bool:
    """Whether a help text lists ``flag`` (``--cuda-event-trace``) as an option."""
    return re.search(re.escape(flag) + r"(?![\w-])", help_text) is not None


def qdstrm_importer_candidates(nsys: str) -> list[Path]:
    """Where QdstrmImporter may sit relative to an nsys executable, in order of preference:
    beside it, then in a sibling host directory (``../linux-desktop-glibc_2_11_3-x64``,
    ``../host-linux-x64``)."""
    here = Path(os.path.realpath(nsys)).parent
    cands = [here / "QdstrmImporter"]
    cands += [
        here.parent / d / "QdstrmImporter" for d in ("linux-desktop-glibc_2_11_3-x64", "host-linux-x64")
    ]
    cands += sorted(here.parent.glob("*/QdstrmImporter"))
    out: list[Path] = []
    for c in cands:
        if c not in out:
            out.append(c)
    return out


def find_qdstrm_importer(nsys: str) -> Path | None:
    """The QdstrmImporter that belongs to ``nsys``, or None."""
    for c in qdstrm_importer_candidates(nsys):
        if _executable(str(c)):
            return c
    return None


def find_optional(name: str) -> Tool | None:
    """A tool that is nice to have (nvidia-smi, git): None when it is missing."""
    try:
        return find_tool(name)
    except ToolNotFound:
        return None


@dataclass(frozen=True)
class GitState:
    """The commit of the repository a target lives in, and whether its work tree has changes."""

    root: str
    commit: str
    dirty: bool


def git_state(directory: Path) -> GitState | None:
    """Commit and dirty flag of the git work tree containing ``directory`` (None if none)."""
    git = shutil.which("git")
    if git is None:
        return None
    top = probe([git, "-C", str(directory), "rev-parse", "--show-toplevel", "HEAD"], timeout_s=20)
    lines = top.stdout.split()
    if not top.ok or len(lines) != 2:
        return None
    status = probe([git, "-C", str(directory), "status", "--porcelain", "--untracked-files=no"], timeout_s=60)
    return GitState(root=lines[0], commit=lines[1], dirty=bool(status.stdout.strip()) if status.ok else True)


def describe(tools: Sequence[Tool]) -> dict[str, dict[str, str | None]]:
    """Tools as JSON-ready dicts keyed by name (for env/tools.json and the manifest)."""
    return {t.name: {"path": t.path, "version": t.version, "found_by": t.found_by} for t in tools}
