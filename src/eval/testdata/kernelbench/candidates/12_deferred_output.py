# Cheats: moves its work out of the timed call into the hand-over of the outputs. forward
# returns an empty tensor of a subclass that remembers its input; the first operation that
# reads its data (the worker copying it to the supervisor) computes the real result into it.
# The timed call does nothing; the work (the gemm, and about WORK_MS more standing in for a
# large kernel: busy host time on the CPU, above its 20 ms of slack; a device spin on a GPU)
# lands in the hand-over, which the supervisor clocks: gate untimed_work, on both jobs. The twin
# (CHEAT = False) does the same work in forward and is correct.
import time

import torch
import torch.nn as nn

CHEAT = True
WORK_MS = 60
_METADATA = {"shape", "dtype", "device", "size", "dim", "numel", "element_size", "is_floating_point",
             "requires_grad", "layout", "is_contiguous", "__get__", "ndim", "is_cuda"}


def _busy(ms, device):
    if device.type == "cuda":
        torch.cuda._sleep(int(ms * 1e6))  # cycles: WORK_MS or more at clocks up to 1 GHz
        return
    end = time.perf_counter() + ms / 1e3
    while time.perf_counter() < end:
        pass


class Deferred(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name not in _METADATA:
            for a in args:
                if isinstance(a, Deferred) and getattr(a, "_pending", None) is not None:
                    compute, a._pending = a._pending, None
                    with torch._C.DisableTorchFunction(), torch.no_grad():
                        a.copy_(compute())
                        _busy(WORK_MS, a.device)
        return super().__torch_function__(func, types, args, kwargs or {})


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def compute(self, x):
        return torch.nn.functional.leaky_relu(self.gemm(x) * self.multiplier, self.negative_slope)

    def forward(self, x):
        if not CHEAT:
            out = self.compute(x)
            _busy(WORK_MS, x.device)
            return out
        out = torch.empty(x.shape[0], self.gemm.out_features, dtype=x.dtype, device=x.device).as_subclass(Deferred)
        out._pending = lambda: self.compute(x.detach().clone())
        return out
