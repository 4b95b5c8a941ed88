"""Stand-in triton.testing: do_bench and do_bench_cudagraph as triton 3.6 structures them
(estimate window of 5 calls; repeats each after a flush, all queued before one synchronize;
graph of n_repeat calls replayed 10 times)."""
import math
import statistics

from triton import runtime


def _quantile(a, q):
    n = len(a)
    a = sorted(a)

    def get(q):
        point = q * (n - 1)
        lower, upper = math.floor(point), math.ceil(point)
        t = point - lower
        return (1 - t) * a[lower] + t * a[upper]

    return [get(x) for x in q]


def _summarize_statistics(times, quantiles, return_mode):
    if quantiles is not None:
        ret = _quantile(times, quantiles)
        if len(ret) == 1:
            ret = ret[0]
        return ret
    if return_mode == "all":
        return times
    if return_mode == "min":
        return min(times)
    if return_mode == "max":
        return max(times)
    if return_mode == "mean":
        return statistics.mean(times)
    return statistics.median(times)


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    assert return_mode in ["min", "max", "mean", "median", "all"]
    di = runtime.driver.active.get_device_interface()
    fn()
    di.synchronize()
    cache = runtime.driver.active.get_empty_cache_for_benchmark()
    start_event = di.Event(enable_timing=True)
    end_event = di.Event(enable_timing=True)
    start_event.record()
    for _ in range(5):
        runtime.driver.active.clear_cache(cache)
        fn()
    end_event.record()
    di.synchronize()
    estimate_ms = start_event.elapsed_time(end_event) / 5
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = max(1, int(rep / estimate_ms))
    start_event = [di.Event(enable_timing=True) for i in range(n_repeat)]
    end_event = [di.Event(enable_timing=True) for i in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    for i in range(n_repeat):
        if grad_to_none is not None:
            for x in grad_to_none:
                x.grad = None
        runtime.driver.active.clear_cache(cache)
        start_event[i].record()
        fn()
        end_event[i].record()
    di.synchronize()
    times = [s.elapsed_time(e) for s, e in zip(start_event, end_event, strict=True)]
    return _summarize_statistics(times, quantiles, return_mode)


def do_bench_cudagraph(fn, rep=20, grad_to_none=None, quantiles=None, return_mode="mean"):
    import torch

    assert return_mode in ["min", "max", "mean", "median", "all"]
    with torch.cuda.stream(torch.cuda.Stream()):
        fn()
        start_event = torch.cuda.Event(enable_timing=True)
        end_event = torch.cuda.Event(enable_timing=True)
        start_event.record()
        for _ in range(5):
            fn()
        end_event.record()
        torch.cuda.synchronize()
        estimate_ms = start_event.elapsed_time(end_event) / 5
        n_repeat = 1000 if estimate_ms == 0 else max(1, int(rep / estimate_ms))
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            for _ in range(n_repeat):
                fn()
        torch.cuda.synchronize()
        ret = []
        for _ in range(10):
            start_event = torch.cuda.Event(enable_timing=True)
            end_event = torch.cuda.Event(enable_timing=True)
            start_event.record()
            g.replay()
            end_event.record()
            torch.cuda.synchronize()
            ret += [start_event.elapsed_time(end_event) / n_repeat]
        return _summarize_statistics(ret, quantiles, return_mode)


class Benchmark:
    """triton.testing.Benchmark: the sweep of a perf_report."""

    def __init__(self, x_names, x_vals, line_arg, line_vals, line_names, plot_name, args, xlabel="", ylabel="",
                 x_log=False, y_log=False, styles=None):
        self.x_names = x_names
        self.x_vals = x_vals
        self.x_log = x_log
        self.line_arg = line_arg
        self.line_vals = line_vals
        self.line_names = line_names
        self.y_log = y_log
        self.styles = styles
        self.xlabel = xlabel
        self.ylabel = ylabel
        self.plot_name = plot_name
        self.args = args


class Mark:
    """triton.testing.Mark as triton 3.6 structures it: run() -> _run(bench) per Benchmark, which calls
    self.fn once per (x, line) point with keyword arguments (no pandas or matplotlib here: the
    rows are printed)."""

    def __init__(self, fn, benchmarks):
        self.fn = fn
        self.benchmarks = benchmarks

    def _run(self, bench, save_path, show_plots, print_data, diff_col=False, save_precision=6, **kwrags):
        rows = []
        for x in bench.x_vals:
            if not isinstance(x, (list, tuple)):
                x = [x for _ in bench.x_names]
            x_args = dict(zip(bench.x_names, x, strict=True))
            row = []
            for y in bench.line_vals:
                ret = self.fn(**x_args, **{bench.line_arg: y}, **bench.args, **kwrags)
                row.append(ret[0] if isinstance(ret, (list, tuple)) else ret)
            rows.append((x, row))
        if print_data:
            print(bench.plot_name + ":")
            for x, row in rows:
                print(x, row)
        return rows

    def run(self, show_plots=False, print_data=False, save_path="", return_df=False, **kwargs):
        has_single_bench = isinstance(self.benchmarks, Benchmark)
        benchmarks = [self.benchmarks] if has_single_bench else self.benchmarks
        result = [self._run(bench, save_path, show_plots, print_data, **kwargs) for bench in benchmarks]
        if return_df:
            return result[0] if has_single_bench else result


def perf_report(benchmarks):
    return lambda fn: Mark(fn, benchmarks)
