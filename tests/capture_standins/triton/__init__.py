"""Stand-in triton: testing.do_bench / do_bench_cudagraph in the structure of triton 3.6."""
__version__ = "0.0+standin"
from triton import runtime  # noqa: E402,F401
