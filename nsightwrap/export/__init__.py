"""Exporters: result data to text (terminal tables, Markdown, JSON, HTML, JUnit); they never compute.

Each is a pure function of ``analysis.model`` or ``compare.verdicts`` data. They import ``core``,
``analysis.model`` and ``compare.verdicts``; nothing from ``run`` or ``parsers``.
"""
