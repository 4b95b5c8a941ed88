"""From parsed frames to result data: clock normalization, reconciliation, the decomposition of
each gap, and the result model.

``load`` (``analyze``: a run directory to a ``RunResult``), ``clocks`` (clock model and
normalization), ``reconcile`` (per benchmark: timer vs ncu vs nsys, causes), ``model`` (the frozen
result dataclasses every exporter reads), ``merged`` (a run merged from shards, joined from each
shard's analysis), ``inspection`` (what ``inspect`` shows of one report), ``ncucount`` (whether an
ncu report holds every kernel its pass profiled, by the run's manifest). May import ``core`` (the
run directory's read side is ``core.rundir``), ``timer``, ``parsers`` and ``device``; never
``run`` (what needs a tool or a child process, ``nsys export`` and the isolated ncu reader, is
passed in by the CLI), ``compare``, ``export`` or ``cli``.
"""
