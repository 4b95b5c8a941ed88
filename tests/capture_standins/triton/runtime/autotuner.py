"""Stand-in autotuner: ``pick`` benchmarks functions with the active driver's benchmarker
(do_bench); ``Autotuner`` / ``Config`` / ``autotune`` in the shape of triton 3.6's (``configs``
list, ``cache`` dict from tuning key to config, ``run`` that tunes a key it has not seen).

The stand-in's timings of the configs are noise: each config's time is drawn at random, seeded by
``STANDIN_AUTOTUNE_SEED`` (else the clock), the key and the config, so two processes with
different seeds pick different configs, as two passes of a real GPU can. A launch is the kernel
``<fn>[<config>]`` on the simulated GPU, so a test sees which config ran."""
import inspect
import os
import random
import time

from triton.runtime import driver


def pick(fns):
    bench = driver.active.get_benchmarker()
    times = [bench(f, quantiles=(0.5, 0.2, 0.8)) for f in fns]
    return min(range(len(fns)), key=lambda i: times[i][0])


class Config:
    def __init__(self, kwargs, num_warps=4, num_stages=3, num_ctas=1, maxnreg=None, pre_hook=None, ir_override=None):
        self.kwargs = kwargs
        self.num_warps = num_warps
        self.num_ctas = num_ctas
        self.num_stages = num_stages
        self.maxnreg = maxnreg
        self.pre_hook = pre_hook
        self.ir_override = ir_override

    def all_kwargs(self):
        return {**self.kwargs, "num_warps": self.num_warps, "num_ctas": self.num_ctas, "num_stages": self.num_stages}

    def __str__(self):
        res = [f"{k}: {v}" for k, v in self.kwargs.items()]
        res += [f"num_warps: {self.num_warps}", f"num_ctas: {self.num_ctas}", f"num_stages: {self.num_stages}",
                f"maxnreg: {self.maxnreg}", f"ir_override: {self.ir_override}"]
        return ", ".join(res)

    def __hash__(self):
        return hash((*self.all_kwargs().items(), self.pre_hook))

    def __eq__(self, other):
        return (*self.all_kwargs().items(), self.pre_hook) == (*other.all_kwargs().items(), other.pre_hook)


class JITFunction:
    """What triton.jit makes: ``fn`` the Python function; ``run`` launches it."""

    def __init__(self, fn):
        self.fn = fn
        self.arg_names = list(fn.__code__.co_varnames[: fn.__code__.co_argcount])

    def run(self, *args, **kwargs):
        import torch

        meta = ",".join(f"{k}={v}" for k, v in sorted(kwargs.items()) if k[:1].isupper() or k == "num_warps")
        torch.cuda.launch(f"{self.fn.__name__}[{meta}]", float(os.environ.get("STANDIN_KERNEL_US", "5")))


def jit(fn):
    return JITFunction(fn)


class Autotuner:
    def __init__(self, fn, arg_names, configs, key, reset_to_zero=None, restore_value=None, pre_hook=None,
                 post_hook=None, prune_configs_by=None, warmup=None, rep=None, use_cuda_graph=False, do_bench=None,
                 cache_results=False):
        self.configs = configs or [Config({}, num_warps=4, num_stages=3, num_ctas=1)]
        self.keys = key
        self._store = {}
        if not os.environ.get("STANDIN_OLD_AUTOTUNER"):  # an autotuner without `cache`
            self.cache = self._store
        self.arg_names = arg_names
        self.fn = fn
        self.base_fn = fn
        while not inspect.isfunction(self.base_fn):
            self.base_fn = self.base_fn.fn
        self.tunings = 0

    def _bench(self, key, config):
        seed = os.environ.get("STANDIN_AUTOTUNE_SEED") or str(time.time_ns())
        return random.Random(f"{seed}|{key}|{config}").random()

    def prune_configs(self, kwargs):
        return self.configs

    def run(self, *args, **kwargs):
        self.nargs = dict(zip(self.arg_names, args, strict=False))
        if len(self.configs) > 1:
            all_args = {**self.nargs, **kwargs}
            _args = {k: v for (k, v) in all_args.items() if k in self.arg_names}
            key = [_args[k] for k in self.keys if k in _args]
            for _, arg in _args.items():
                if hasattr(arg, "dtype"):
                    key.append(str(arg.dtype))
            key = tuple(key)
            if key not in self._store:
                self.tunings += 1
                pruned = self.prune_configs(kwargs)
                timings = {config: self._bench(key, config) for config in pruned}
                self._store[key] = min(timings, key=timings.get)
            config = self._store[key]
        else:
            config = self.configs[0]
        self.best_config = config
        ret = self.fn.run(*args, **kwargs, **config.all_kwargs())
        self.nargs = None
        return ret

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.run(*args, **kwargs)


def autotune(configs, key, prune_configs_by=None, reset_to_zero=None, restore_value=None, pre_hook=None,
             post_hook=None, warmup=None, rep=None, use_cuda_graph=False, do_bench=None, cache_results=False):
    def decorator(fn):
        return Autotuner(fn, fn.arg_names, configs, key, reset_to_zero, restore_value, pre_hook=pre_hook,
                         post_hook=post_hook, prune_configs_by=prune_configs_by, warmup=warmup, rep=rep,
                         use_cuda_graph=use_cuda_graph, do_bench=do_bench, cache_results=cache_results)

    return decorator
