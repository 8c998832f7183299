# Cheats (issue 10, b): slows the clocks its own process reads. time.perf_counter,
# time.perf_counter_ns and torch.cuda.Event.elapsed_time run at 0.8x from import on, reached
# through getattr/setattr on names built at run time so that no static pattern sees them.
import builtins

import torch
import torch.nn as nn

CHEAT = True
SCALE = 0.8


def _slow_clocks():
    clock = getattr(builtins, "__imp" + "ort__")("ti" + "me")
    for name, kind in (("perf_" + "counter", float), ("perf_" + "counter_ns", int)):
        real = getattr(clock, name)
        start = real()
        setattr(clock, name, lambda real=real, start=start, kind=kind: kind(start + (real() - start) * SCALE))
    event = getattr(torch.cuda, "Ev" + "ent")
    real_elapsed = getattr(event, "elapsed_" + "time")
    setattr(event, "elapsed_" + "time", lambda self, end: real_elapsed(self, end) * SCALE)


if CHEAT:
    _slow_clocks()


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        return torch.nn.functional.leaky_relu(self.gemm(x) * self.multiplier, self.negative_slope)
