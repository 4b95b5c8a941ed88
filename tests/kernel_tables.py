"""Shipped run directories whose ncu reports travel as nsightwrap's kernel tables
(``kernels.json.gz``, written by fixtures/captures/*/make_fixture.py from the real reports):
the reader the tests hand to the analysis in place of ``parsers.ncu.read_ncu_rep``."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd


def read_kernels(report: str | Path) -> pd.DataFrame:
    """The kernel table ``parsers.ncu.read_ncu_rep`` made of the report beside ``report``."""
    with gzip.open(Path(report).with_name("kernels.json.gz"), "rt", encoding="utf-8") as fh:
        doc = json.load(fh)
    frame = pd.DataFrame(doc["data"], columns=doc["columns"])
    for col, dtype in doc["dtypes"].items():
        if col == "nvtx_ranges":
            frame[col] = [tuple(v) if isinstance(v, list) else v for v in frame[col]]
        elif dtype != "object":
            frame[col] = frame[col].astype(dtype)
    return frame


def stand_in_reports(run: Path) -> None:
    """An empty ``report.ncu-rep.gz`` beside each kernel table, where the analysis looks for
    the report (read through ``read_kernels``, never opened)."""
    for k in run.glob("ncu*/kernels.json.gz"):
        (k.parent / "report.ncu-rep.gz").write_bytes(b"")
