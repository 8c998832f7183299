# A CuTe DSL candidate for gelu whose kernel does not compile (a tensor added to a missing
# name): cute_compile_check.py must fail on it.
import cutlass.cute as cute
import cutlass.torch as cutlass_torch
from cutlass.cute.runtime import from_dlpack


@cute.kernel
def broken_kernel(x: cute.Tensor, y: cute.Tensor):
    tidx, _, _ = cute.arch.thread_idx()
    y[tidx] = x[tidx] + undefined_name


@cute.jit
def broken(x: cute.Tensor, y: cute.Tensor, stream):
    broken_kernel(x, y).launch(grid=(1, 1, 1), block=(32, 1, 1), stream=stream)


def kf_run(inputs, outputs, attrs):
    x, y = from_dlpack(inputs["x"]), from_dlpack(outputs["y"])
    stream = cutlass_torch.current_stream()
    cute.compile(broken, x, y, stream)(x, y, stream)
