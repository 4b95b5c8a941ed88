"""Running a script in a real subprocess with the capture layer loaded the way ``nsightwrap
profile`` loads it, over the stand-in torch / triton / nvtx of tests/capture_standins."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nsightwrap
from nsightwrap.core.contract import capture_boot_dir

STANDINS = Path(__file__).resolve().parent / "capture_standins"
#: The tree of the nsightwrap under test: last on the targets' PYTHONPATH, so that their layer is
#: this tree's even where the interpreter has another nsightwrap installed (an editable install
#: of another checkout).
TREE = str(Path(nsightwrap.__file__).resolve().parent.parent)


@dataclass
class Ran:
    code: int
    out: str
    err: str
    run_dir: Path
    log: Path

    def sidecars(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text()) for p in sorted((self.run_dir / "plain").glob("timer-*-capture.json"))]

    def sidecar(self) -> dict[str, Any]:
        docs = self.sidecars()
        assert len(docs) == 1, [d.get("pid") for d in docs]
        return docs[0]

    def events(self) -> list[dict[str, Any]]:
        """The stand-ins' log: kernels, event records, NVTX pushes and pops, in order."""
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []

    def trace(self) -> list[str]:
        """The log as short tokens: K:name, R (timing record), r, +domain:name, -domain, D:domain (made)."""
        out = []
        for e in self.events():
            op = e["op"]
            if op == "kernel":
                out.append(f"K:{e['name']}")
            elif op == "record":
                out.append("R" if e["timing"] else "r")
            elif op in ("push", "start"):
                out.append(f"+{e.get('domain')}:{e['name']}")
            elif op in ("pop", "end"):
                out.append(f"-{e.get('domain')}")
            elif op == "domain":
                out.append(f"D:{e.get('domain')}")
        return out


def standins(tmp: Path) -> Path:
    dst = tmp / "standins"
    if not dst.exists():
        shutil.copytree(STANDINS, dst, ignore=shutil.ignore_patterns("__pycache__", "README.md"))
    return dst


def layer_env(tmp: Path, pass_name: str | None = "plain", *, capture: bool = True, **extra: str) -> dict[str, str]:
    """The environment of a pass: the stand-ins on PYTHONPATH, and the layer's boot folder first."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NSIGHTWRAP_")}
    parts = [str(standins(tmp))]
    if capture:
        parts.insert(0, capture_boot_dir())
        env["NSIGHTWRAP_CAPTURE"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(parts + ([extra.pop("PYTHONPATH")] if "PYTHONPATH" in extra else []) + [TREE])
    run_dir = tmp / "run"
    (run_dir / "plain").mkdir(parents=True, exist_ok=True)
    if pass_name is not None:
        env["NSIGHTWRAP_PASS"] = pass_name
        env["NSIGHTWRAP_RUN_DIR"] = str(run_dir)
    env["STANDIN_LOG"] = str(tmp / f"log-{pass_name}.jsonl")
    env.update(extra)
    return env


def run(tmp: Path, body: str | None = None, *, pass_name: str | None = "plain", capture: bool = True,
        argv: list[str] | None = None, name: str = "script.py", **extra: str) -> Ran:  # fmt: skip
    """Write ``body`` to ``name`` (unless None) and run it (or ``argv``) in ``tmp``."""
    if body is not None:
        (tmp / name).write_text(textwrap.dedent(body))
    env = layer_env(tmp, pass_name, capture=capture, **extra)
    log = Path(env["STANDIN_LOG"])
    log.unlink(missing_ok=True)
    cmd = argv if argv is not None else [sys.executable, name]
    p = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=60)
    return Ran(p.returncode, p.stdout, p.stderr, tmp / "run", log)


def frames(stderr: str) -> list[str]:
    """The ``File "...", line N, in f`` lines of a printed traceback."""
    return [ln.strip() for ln in stderr.splitlines() if ln.strip().startswith("File ")]


def line(body: str, needle: str, nth: int = 1) -> int:
    """1-based line of the ``nth`` line holding ``needle`` in ``body`` as ``run`` writes it."""
    hits = [i + 1 for i, ln in enumerate(textwrap.dedent(body).splitlines()) if needle in ln]
    return hits[nth - 1]
