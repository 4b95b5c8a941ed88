"""Readers of the reports the NVIDIA tools write: each turns one file into tidy frames.

Parsers never start a process themselves: ``nsys_export``, which turns a ``.nsys-rep`` into the
SQLite export the ``nsys`` parser reads, runs ``nsys export`` through ``nsightwrap.launch``.
"""
