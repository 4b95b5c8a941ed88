"""Exporters: result data to text (terminal tables, Markdown, JSON, HTML, JUnit); they never compute.

One module per format (``terminal``, ``markdown``, ``html``, ``jsonio``, ``junit``) holds every
result kind's exporter for it, each registered by (kind, format) in ``registry``, where the
protocol is: ``render(result) -> str | bytes``. The words they share live in ``reportfmt`` (the
verdict vocabulary among them), ``gap_text``, ``power_fmt``, ``compare_text``, ``device_text`` and
``roofline_text``. Each is a pure function of ``analysis.model``, ``compare.verdicts`` or
``device.result`` data; nothing is imported from ``run`` or ``parsers``.
"""
