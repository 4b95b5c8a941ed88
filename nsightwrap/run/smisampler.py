"""Clock sampling beside the plain pass: ``nvidia-smi --query-gpu=... -lms 50`` into
``plain/smi_samples.csv``.

The SM clock drops under load and recovers at once, so a reading taken after the work says
little; samples taken every 50 ms during the run show the clocks the kernels really ran at,
and the clock-event reasons (power cap, thermal, ...) that pushed them there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from nsightwrap.run.launch import Background

#: Columns of the sample log (read back by parsers.smi.read_smi_samples).
#: nvidia-smi samples every GPU of the host: the uuid says which row is which (the analysis keeps
#: the GPU the timer ran on).
SMI_QUERY = "timestamp,uuid,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_event_reasons.active"
DEFAULT_INTERVAL_MS = 50
#: How long a stop waits for the first sample of a pass shorter than nvidia-smi's start-up.
FIRST_SAMPLE_WAIT_S = 2.0


def sampler_argv(nvidia_smi: str, interval_ms: int = DEFAULT_INTERVAL_MS) -> list[str]:
    """The nvidia-smi command line that samples clocks every ``interval_ms`` ms as CSV."""
    return [nvidia_smi, f"--query-gpu={SMI_QUERY}", "--format=csv", "-lms", str(interval_ms)]


@dataclass(frozen=True)
class SamplerRecord:
    """How the sampler went: ``ok``, ``empty`` (no sample), ``failed`` (it died) or ``skipped``."""

    status: str
    argv: tuple[str, ...]
    file: str | None
    samples: int
    message: str | None = None


class SmiSampler:
    """Context manager: samples the GPU clocks while the block runs; ``record`` says how it went.

    With no nvidia-smi it does nothing and records ``skipped``."""

    def __init__(self, nvidia_smi: str | None, out: Path, interval_ms: int = DEFAULT_INTERVAL_MS) -> None:
        self.out = out
        self.argv = tuple(sampler_argv(nvidia_smi, interval_ms)) if nvidia_smi else ()
        self._bg = Background(self.argv, out, out.with_suffix(".stderr.log")) if nvidia_smi else None
        self.record = SamplerRecord("skipped", self.argv, None, 0, "nvidia-smi not found: no clock samples")

    def __enter__(self) -> SmiSampler:
        if self._bg is not None and not self._bg.start():
            self.record = SamplerRecord(
                "failed", self.argv, None, 0, f"cannot start nvidia-smi: {self._bg.error}"
            )
            self._bg = None
        return self

    def _wait_first_sample(self, limit_s: float = FIRST_SAMPLE_WAIT_S) -> None:
        """Give a pass shorter than nvidia-smi's start-up its first sample: wait (at most
        ``limit_s``) until the log holds a row past the header, or the sampler has died."""
        proc = self._bg.proc if self._bg else None
        end = time.monotonic() + limit_s
        while proc is not None and proc.poll() is None and time.monotonic() < end:
            try:
                if self.out.read_bytes().count(b"\n") >= 2:
                    return
            except OSError:
                pass
            time.sleep(0.02)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._bg is None:
            return
        self._wait_first_sample()
        self._bg.stop()
        lines = [
            ln
            for ln in (self.out.read_text(errors="replace").splitlines() if self.out.exists() else [])
            if ln.strip()
        ]
        # nvidia-smi prints its own failures ("NVIDIA-SMI has failed ...") on stdout, not stderr.
        has_header = bool(lines) and lines[0].startswith("timestamp")
        samples = len(lines) - 1 if has_header else 0
        if self._bg.error or (lines and not has_header):
            msg = lines[-1] if lines and not has_header else str(self._bg.error)
            self.record = SamplerRecord("failed", self.argv, str(self.out), samples, msg)
        elif samples == 0:
            msg = "nvidia-smi wrote no samples (the pass may be shorter than its start-up)"
            self.record = SamplerRecord("empty", self.argv, str(self.out), 0, msg)
        else:
            self.record = SamplerRecord("ok", self.argv, str(self.out), samples)
