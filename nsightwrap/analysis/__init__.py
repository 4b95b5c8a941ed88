"""From parsed frames to result data: clock normalization, reconciliation, the decomposition of
each gap, and the result model.

``load`` (``analyze``: a run directory to a ``RunResult``), ``clocks`` (clock model and
normalization), ``reconcile`` (per benchmark: timer vs ncu vs nsys, causes), ``model`` (the frozen
result dataclasses every exporter reads), ``inspection`` (what ``inspect`` shows of one report).
May import ``core``, ``timer.stats``, ``parsers`` and ``run`` (the run-directory layout, and
``nsys export`` for ``inspect``); never ``compare``, ``export`` or ``cli``.
"""
