"""The run with ncu's figures moved: what the clock sweep's passes could change, asked before
they run (analysis/basepass.py).

The duration pass replaces each kernel's ncu-pass duration with ncu's reading of the duration
alone; the base pass replaces each kernel's guessed clock elasticity (0 or 1 from its throughput
counters) with a measured one in [0, 1]. Moving the durations by what the duration pass can move
them, or the guessed elasticities to either end of [0, 1], and analysing again tells whether any
benchmark's verdict or causes depend on what the pass would measure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from nsightwrap.analysis.clocks import clamp_elasticity


@dataclass(frozen=True)
class WhatIf:
    """``duration_scale``: every ncu duration times this; ``elasticity``: every kernel whose
    elasticity was not measured given this one, within [0, 1] (None: the heuristic's)."""

    duration_scale: float = 1.0
    elasticity: float | None = None

    def apply(self, ncu: pd.DataFrame) -> pd.DataFrame:
        """A copy of ncu's kernel frame (after the clock sweep's columns) with the move made."""
        out = ncu.copy()
        if self.duration_scale != 1.0 and "duration_ns" in out:
            out["duration_ns"] = pd.to_numeric(out["duration_ns"], errors="coerce") * self.duration_scale
        if self.elasticity is not None:
            given = out["elasticity"] if "elasticity" in out else pd.Series(np.nan, index=out.index)
            out["elasticity"] = pd.to_numeric(given, errors="coerce").astype(float).fillna(clamp_elasticity(self.elasticity))
        return out
