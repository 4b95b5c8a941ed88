"""Stand-in torch.cuda.streams: Event on the simulated timeline."""
from _log import log


class Stream:
    def wait_stream(self, other):
        pass

    def synchronize(self):
        pass


class _CudaEventBase:  # stands for the C base class torch.cuda.Event derives from
    def __new__(cls, enable_timing=False, blocking=False, interprocess=False):
        obj = object.__new__(cls)
        obj._timing = enable_timing
        obj._t = None
        return obj


class Event(_CudaEventBase):
    def __new__(cls, enable_timing=False, blocking=False, interprocess=False):
        return super().__new__(cls, enable_timing=enable_timing, blocking=blocking, interprocess=interprocess)

    def record(self, stream=None):
        import torch

        self._t = torch.cuda._state["now_us"]
        log(op="record", event=id(self), timing=self._timing)

    def elapsed_time(self, end_event):
        if self._t is None or end_event._t is None:
            raise RuntimeError("CUDA error: device not ready (an event was not recorded)")
        if not (self._timing and end_event._timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        return (end_event._t - self._t) / 1e3

    def synchronize(self):
        pass

    def query(self):
        return True
