"""Stand-in triton: testing.do_bench / do_bench_cudagraph in the structure of triton 3.6;
``triton.autotune``, ``triton.Config`` and ``triton.jit`` from the stand-in autotuner (imported
when first used: the stand-in's driver imports the stand-in torch)."""
__version__ = "0.0+standin"
from triton import runtime  # noqa: E402,F401


def __getattr__(name):
    if name in ("autotune", "Config", "jit", "Autotuner"):
        from triton.runtime import autotuner

        return getattr(autotuner, name)
    raise AttributeError(name)
