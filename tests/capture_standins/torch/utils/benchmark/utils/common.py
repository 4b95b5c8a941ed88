"""Stand-in of torch.utils.benchmark.utils.common: TaskSpec and Measurement."""
import statistics


class TaskSpec:
    def __init__(self, stmt, setup, global_setup=None, label=None, sub_label=None, description=None,
                 env=None, num_threads=1):
        self.stmt, self.setup, self.global_setup = stmt, setup, global_setup
        self.label, self.sub_label, self.description = label, sub_label, description
        self.env, self.num_threads = env, num_threads


class Measurement:
    def __init__(self, number_per_run, raw_times, task_spec, metadata=None):
        self.number_per_run = number_per_run
        self.raw_times = list(raw_times)
        self.task_spec = task_spec
        self.metadata = metadata

    @property
    def times(self):
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def median(self):
        return statistics.median(self.times)

    @property
    def mean(self):
        return statistics.mean(self.times)

    @property
    def title(self):
        return self.task_spec.label or self.task_spec.stmt

    def __repr__(self):
        return f"<Measurement {self.title}: median {self.median * 1e6:.3f} us, {len(self.raw_times)} blocks>"
