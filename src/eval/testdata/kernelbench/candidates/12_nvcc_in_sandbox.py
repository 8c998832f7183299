# Fails to import unless the nvcc that load_inline would use (PYTORCH_NVCC, which the Python
# worker sets to kforge-nvcc for candidate jobs) compiles a CUDA source inside the sandbox with
# its two lanes (KFORGE_NVCC_VERBOSE says when it hands a compile to plain nvcc instead). Needs
# nvcc, no GPU; the model itself is plain PyTorch. Uses subprocess: judged with the static
# pattern check off.
import os
import subprocess

import torch
import torch.nn as nn

nvcc = os.environ.get("PYTORCH_NVCC", "")
if os.path.basename(nvcc) != "kforge-nvcc":
    raise RuntimeError("PYTORCH_NVCC is %r, not kforge-nvcc" % nvcc)
work = os.environ["TMPDIR"]
with open(os.path.join(work, "k.cu"), "w") as f:
    f.write("namespace { __device__ float bias = 1.0f; }\n"
            "__global__ void scale(const float* x, float* y, int n) {\n"
            "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            "  if (i < n) y[i] = 2.0f * x[i] + bias;\n}\n")
run = subprocess.run([nvcc, "--generate-dependencies-with-compile", "--dependency-output", "k.o.d", "-c", "k.cu",
                      "-o", "k.o"], cwd=work, capture_output=True, text=True,
                     env=dict(os.environ, KFORGE_NVCC_VERBOSE="1"))
if run.returncode != 0 or "plain nvcc" in run.stderr:
    raise RuntimeError("kforge-nvcc in the sandbox: exit %d\n%s" % (run.returncode, run.stderr[-2000:]))
for out in ("k.o", "k.o.d"):
    if not os.path.getsize(os.path.join(work, out)):
        raise RuntimeError("kforge-nvcc wrote no " + out)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, multiplier, negative_slope):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x):
        y = torch.addmm(self.gemm.bias, x, self.gemm.weight.t()) * self.multiplier
        return torch.where(y > 0, y, y * self.negative_slope)
