"""Stand-in torch.nn: only what benchmarks/capture_overhead.py's worker calls."""
from torch.nn import functional  # noqa: F401
