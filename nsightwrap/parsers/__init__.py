"""Readers of the reports the NVIDIA tools and the timer write: each turns one file into tidy frames.

``ncu`` (``.ncu-rep`` and ncu CSV), ``nsys`` (nsys SQLite exports), ``smi`` (nvidia-smi XML and
sample CSV), ``sidecar`` (the timer sidecar), ``kind`` (what a file is). Parsers never start a
process: a ``.nsys-rep`` is exported to SQLite by ``nsightwrap.run.nsys_export``. They import
``core`` and the timer's result type, nothing from ``run``, ``analysis`` or ``export``.
"""
