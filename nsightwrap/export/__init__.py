"""Exporters: turn result data into text (terminal tables, Markdown, JSON, HTML); they never compute."""
