"""The run with ncu's figures moved: what the clock sweep's passes could change, asked before
they run (analysis/sweepcheck.py).

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

from nsightwrap.analysis.clocks import ELASTICITY_RANGE


@dataclass(frozen=True)
class WhatIf:
    """``duration_scale``: every ncu duration (and its cycles) times this; ``elasticity``: every
    kernel whose elasticity was not measured given this one (None: the heuristic's)."""

    duration_scale: float = 1.0
    elasticity: float | None = None

    def apply(self, ncu: pd.DataFrame) -> pd.DataFrame:
        """A copy of ncu's kernel frame (after the clock sweep's columns) with the move made."""
        out = ncu.copy()
        if self.duration_scale != 1.0 and "duration_ns" in out:
            out["duration_ns"] = pd.to_numeric(out["duration_ns"], errors="coerce") * self.duration_scale
        if self.elasticity is not None:
            lo, hi = ELASTICITY_RANGE
            e = min(hi, max(lo, self.elasticity))
            given = pd.to_numeric(out["elasticity"], errors="coerce") if "elasticity" in out else None
            missing = given.isna() if given is not None else pd.Series(True, index=out.index)
            col = given.astype(float) if given is not None else pd.Series(np.nan, index=out.index)
            out["elasticity"] = col.where(~missing, e)
        return out

