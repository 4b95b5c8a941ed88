"""How often to rewrite a file that is rewritten whole and grows (the sidecars).

Standard library only, and light: the capture layer loads it into every process it boots in.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class RewriteSpacing:
    """When to rewrite a JSON file that is rewritten whole and grows with every entry (the timer's
    and the capture layer's sidecars): no sooner than ``min_s`` seconds, or ``factor`` times what
    the last rewrite took, after the end of the last one. Rewriting after every entry costs time
    that grows with the file, so a long script would spend ever more of it rewriting (with the
    GPU idle); spaced this way the rewrites take at most about ``1 / factor`` of it. The writer
    forces a last rewrite at exit."""

    min_s: float = 0.25
    factor: float = 20.0
    last_end: float = 0.0  # time.monotonic() when the last rewrite ended
    cost_s: float = 0.0  # what the last rewrite took

    def interval_s(self) -> float:
        return max(self.min_s, self.factor * self.cost_s)

    def due(self) -> bool:
        return time.monotonic() - self.last_end >= self.interval_s()

    def wrote(self, started: float) -> None:
        """Record a rewrite that began at ``started`` (``time.monotonic()``) and has just ended."""
        self.last_end = time.monotonic()
        self.cost_s = self.last_end - started
