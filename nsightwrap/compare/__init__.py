"""Baseline against current: reading each side (``sides``) and the verdicts (``verdicts``).

May import ``core``, ``parsers`` and ``analysis.model``; a run directory compared by ncu or nsys is
analysed by a function the caller passes in, so nothing here imports ``export``.
"""
