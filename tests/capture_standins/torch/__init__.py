"""Stand-in torch: a simulated GPU (see tests/capture_standins/README.md)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import _log  # noqa: E402,F401 - the shared log, importable by the other stand-ins

__version__ = "0.0+standin"
float32, int32, int8, bfloat16 = "float32", "int32", "int8", "bfloat16"
int = int32  # noqa: A001 - torch.int


class Tensor:
    def __init__(self, numel, dtype="float32"):
        self._n = numel
        self.dtype = dtype
        self.grad = None

    def numel(self):
        return self._n

    def element_size(self):
        return {"int8": 1, "bfloat16": 2}.get(self.dtype, 4)

    def zero_(self):
        cuda.launch("FillFunctor_zero", self._n * self.element_size() / 4e12 * 1e6)  # 4 TB/s
        return self

    def fill_(self, v):
        return self.zero_()

    def __add__(self, other):  # an elementwise add: read two, write one, at 4 TB/s plus 2 us
        cuda.launch("add", 2.0 + 3 * self._n * self.element_size() / 4e12 * 1e6)
        return Tensor(self._n, self.dtype)

    def copy_(self, src):  # read and write, at 4 TB/s
        cuda.launch("copy", 2 * self._n * self.element_size() / 4e12 * 1e6)
        return self


def empty(n, dtype="float32", device=None):
    return Tensor(n, dtype)


def empty_like(t):
    return Tensor(t.numel(), t.dtype)


def randn(*shape, dtype="float32", device=None):
    n = 1
    for s in shape:
        n *= s
    return Tensor(n, dtype)


def matmul(a, b):
    cuda.launch("gemm", float(os.environ.get("STANDIN_MATMUL_US", "100")))
    return Tensor(1)


from torch import cuda, nn, utils  # noqa: E402,F401 - as torch does, after the names they use
