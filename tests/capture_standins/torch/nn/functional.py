"""Stand-in torch.nn.functional.linear: an 18 us GEMM."""
import torch


def linear(x, w):
    torch.cuda.launch("gemm", 18.0)
    return torch.Tensor(1, x.dtype)
