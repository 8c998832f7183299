# Cheats (issue 10, c), the late variant of 12_atexit_rewrite.py (LATE = True): leaves a process
# of its own behind, in a new session outside the worker's process groups, that keeps rewriting
# result.json (every timing divided by 100) after the worker has finished.
import builtins

import torch
import torch.nn as nn

CHEAT = True
LATE = True


def _rewrite():
    json = getattr(builtins, "__imp" + "ort__")("js" + "on")
    opener = getattr(builtins, "op" + "en")
    with opener("result.json") as f:
        data = json.load(f)
    for key in ("device_ms", "host_ms", "wall_ms"):
        if key in data.get("timing", {}):
            data["timing"][key] = [x / 100 for x in data["timing"][key]]
    with opener("result.json", "w") as f:
        json.dump(data, f)


def _rewrite_late():
    osm = getattr(builtins, "__imp" + "ort__")("o" + "s")
    clock = getattr(builtins, "__imp" + "ort__")("ti" + "me")
    if getattr(osm, "fo" + "rk")() != 0:
        return
    getattr(osm, "set" + "sid")()
    for fd in (0, 1, 2):
        osm.close(fd)
    end = clock.monotonic() + 8
    while clock.monotonic() < end and osm.path.exists("job.json"):
        try:
            with getattr(builtins, "op" + "en")("result.json") as f:
                done = '"done": true' in f.read()
            if done:
                _rewrite()
        except Exception:
            pass
        clock.sleep(0.0005)
    getattr(osm, "_ex" + "it")(0)


if CHEAT and not LATE:
    getattr(builtins, "__imp" + "ort__")("ate" + "xit").register(_rewrite)
if CHEAT and LATE:
    _rewrite_late()


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        return torch.nn.functional.leaky_relu(self.gemm(x) * self.multiplier, self.negative_slope)
