"""Iteration range paths split as the regular expression ``^(.*?)(\\d+)$`` splits them: the fast
split by trailing ASCII digits, and the paths where the expression is used instead."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from nsightwrap.analysis.iterations import _split_paths

HEADS = {"nsightwrap:a/iter": 0, "nsightwrap:b2/iter": 1, "x/iter": 2, "nsightwrap:a/iter\u0661": 3}
PATHS = [
    "nsightwrap:a/iter12", "nsightwrap:a/iter", "nsightwrap:a/iter\u06612", "x/iter3\n", "nsightwrap:a/iter007",
    "foo", "", "nan", "nsightwrap:b2/iter5", "nsightwrap:a/iter12x", "nsightwrap:b2/iter", "x/it\ner3",
]  # fmt: skip


def test_split_paths_matches_the_regular_expression() -> None:
    parts = pd.Series(PATHS).str.extract(r"^(.*?)(\d+)$")
    spec = parts[0].map(HEADS)
    ok = spec.notna().to_numpy()
    got_spec, got_index = _split_paths(PATHS, HEADS)
    assert [None if math.isnan(v) else v for v in got_spec] == [None if pd.isna(v) else v for v in spec]
    assert np.asarray(got_index)[ok].tolist() == parts.loc[ok, 1].astype(np.int64).tolist()
    # the benchmark and index of the plain paths, the Arabic-Indic digit and the trailing newline
    assert got_spec[:5] == [0.0, got_spec[1], 0.0, 2.0, 0.0] and math.isnan(got_spec[1])
    assert [got_index[i] for i in (0, 2, 3, 4, 8)] == [12, 12, 3, 7, 5]
