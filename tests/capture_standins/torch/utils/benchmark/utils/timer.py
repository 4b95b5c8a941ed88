"""Stand-in of torch.utils.benchmark.utils.timer: the structure of torch's Timer (inner
timeit.Timer with a synchronizing timer; timeit, blocked_autorange, adaptive_autorange,
_estimate_block_size). The timer reads the simulated GPU timeline, so block times are exact."""
import timeit as _timeit

import torch
from torch.utils.benchmark.utils import common


def timer():
    torch.cuda.synchronize()
    return torch.cuda._now_s()


class Timer:
    _timer_cls = _timeit.Timer

    def __init__(self, stmt="pass", setup="pass", global_setup=None, timer=timer, globals=None,
                 label=None, sub_label=None, description=None, env=None, num_threads=1, language="python"):
        self._globals = dict(globals or {})
        self._globals.setdefault("torch", torch)
        self._language = language
        self._timer = self._timer_cls(stmt=stmt, setup=setup, timer=timer, globals=self._globals)
        self._task_spec = common.TaskSpec(stmt, setup, global_setup, label, sub_label, description, env, num_threads)

    def _timeit(self, number):
        return max(self._timer.timeit(number), 1e-9)

    def timeit(self, number=1000000):
        self._timeit(number=max(int(number // 100), 2))
        return common.Measurement(number_per_run=number, raw_times=[self._timeit(number=number)],
                                  task_spec=self._task_spec)

    def _threaded_measurement_loop(self, number, time_hook, stop_hook, min_run_time, max_run_time=None):
        total, can_stop, times = 0.0, False, []
        while total < min_run_time or not can_stop:
            t = time_hook()
            times.append(t)
            total += t
            can_stop = stop_hook(times)
            if max_run_time and total > max_run_time:
                break
        return times

    def _estimate_block_size(self, min_run_time):
        overhead = sorted(self._timeit(0) for _ in range(5))[2]
        number = 1
        while True:
            taken = self._timeit(number)
            if overhead / taken <= 1e-4 and taken >= min_run_time / 1000:
                break
            if taken > min_run_time:
                break
            number *= 10
        return number

    def blocked_autorange(self, callback=None, min_run_time=0.2):
        number = self._estimate_block_size(min_run_time)
        times = self._threaded_measurement_loop(number, lambda: self._timeit(number), lambda t: True, min_run_time)
        return common.Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)

    def adaptive_autorange(self, threshold=0.1, *, min_run_time=0.01, max_run_time=10.0, callback=None):
        number = self._estimate_block_size(min_run_time=0.05)
        times = self._threaded_measurement_loop(number, lambda: self._timeit(number), lambda t: len(t) > 3,
                                                min_run_time, max_run_time)
        return common.Measurement(number_per_run=number, raw_times=times, task_spec=self._task_spec)
