"""Running things: the only package that starts processes.

``launch`` (argv, env, timeouts, process-group kill), ``profiling`` (one ``profile`` run: passes in
order, faults recognised, manifest written last), ``rundir`` (run-directory layout and the
versioned manifest), ``tools`` (finding ncu, nsys, nvidia-smi and their versions),
``smisampler`` (the nvidia-smi clock sampler beside the plain pass), ``nsys_export`` (``nsys
export`` of a ``.nsys-rep`` to SQLite). May import ``core`` and ``parsers``; nothing above.
"""
