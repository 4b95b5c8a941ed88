"""Stand-in torch.cuda: one simulated GPU timeline (microseconds) that kernels advance."""
import contextlib

from _log import log

from torch.cuda import nvtx  # noqa: F401
from torch.cuda.streams import Event, Stream  # noqa: F401

_state = {"now_us": 0.0, "capturing": None, "initialized": False}


def launch(name, us):
    """A kernel of ``us`` microseconds on the simulated GPU (recorded into a graph if capturing)."""
    _state["initialized"] = True
    g = _state["capturing"]
    if g is not None:
        g.kernels.append((name, us))
        return
    _state["now_us"] += float(us)
    log(op="kernel", name=name, us=float(us))


def _now_s():
    return _state["now_us"] / 1e6


def synchronize(device=None):
    log(op="sync")


def is_available():
    return True


def is_initialized():
    return _state["initialized"]


def current_device():
    return 0


class _Props:
    name = "Stand-in GPU"
    multi_processor_count = 4
    L2_cache_size = 1 << 20
    uuid = "standin-0000"


def get_device_properties(i=0):
    return _Props()


_default = Stream()
_current = [_default]


def current_stream(device=None):
    return _current[-1]


def default_stream(device=None):
    return _default


@contextlib.contextmanager
def stream(s):
    _current.append(s if s is not None else _current[-1])
    try:
        yield
    finally:
        _current.pop()


def is_current_stream_capturing():
    return _state["capturing"] is not None


class CUDAGraph:
    def __init__(self):
        self.kernels = []

    def replay(self):
        for name, us in self.kernels:
            launch(name, us)


@contextlib.contextmanager
def graph(g):
    _state["capturing"] = g
    try:
        yield
    finally:
        _state["capturing"] = None


def _sleep(cycles):
    launch("sleep", cycles / 1e3)
