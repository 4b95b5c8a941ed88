"""Stand-in of triton's active CUDA driver: the benchmark cache and its flush."""
import torch


class CudaDriver:
    def get_device_interface(self):
        return torch.cuda

    def get_empty_cache_for_benchmark(self):
        cache_size = 256 * 1024 * 1024
        return torch.empty(int(cache_size // 4), dtype=torch.int, device="cuda")

    def clear_cache(self, cache):
        cache.zero_()

    def get_benchmarker(self):
        from triton.testing import do_bench

        return do_bench


active = CudaDriver()
