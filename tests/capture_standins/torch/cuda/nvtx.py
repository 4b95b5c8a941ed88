"""Stand-in torch.cuda.nvtx (the default NVTX domain), logging each call."""
from _log import log

_depth = [0]
_next = [0]


def range_push(msg):
    _depth[0] += 1
    log(op="push", domain=None, name=msg, via="torch")
    return _depth[0] - 1


def range_pop():
    _depth[0] -= 1
    log(op="pop", domain=None, via="torch")
    return _depth[0]


def range_start(msg):
    _next[0] += 1
    log(op="start", domain=None, name=msg, id=_next[0], via="torch")
    return _next[0]


def range_end(range_id):
    log(op="end", domain=None, id=range_id, via="torch")


def mark(msg):
    log(op="mark", name=msg)


import contextlib  # noqa: E402


@contextlib.contextmanager
def range(msg, *args, **kwargs):  # noqa: A001 - torch's name
    range_push(msg.format(*args, **kwargs))
    try:
        yield
    finally:
        range_pop()
