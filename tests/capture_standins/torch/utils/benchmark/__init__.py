from torch.utils.benchmark.utils.common import Measurement  # noqa: F401
from torch.utils.benchmark.utils.timer import Timer  # noqa: F401
