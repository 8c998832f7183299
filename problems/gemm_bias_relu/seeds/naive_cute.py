# cute seed for gemm_bias_relu: y = relu(x @ weight^T + bias), one thread per output element
# (docs/abi-cute.md).
import cutlass
import cutlass.cute as cute
import cutlass.torch as cutlass_torch
from cutlass.cute.runtime import from_dlpack

TILE = 16


@cute.kernel
def gemm_bias_relu_kernel(x: cute.Tensor, w: cute.Tensor, bias: cute.Tensor, y: cute.Tensor,
                          batch: cutlass.Int32, in_features: cutlass.Int32, out_features: cutlass.Int32):
    tx, ty, _ = cute.arch.thread_idx()
    bx, by, _ = cute.arch.block_idx()
    i = by * TILE + ty
    j = bx * TILE + tx
    if i < batch and j < out_features:
        s = cutlass.Float32(0.0)
        for p in range(in_features):
            s += x[i, p] * w[j, p]
        y[i, j] = cute.math.max(s + bias[j], cutlass.Float32(0.0))


@cute.jit
def gemm_bias_relu(x: cute.Tensor, w: cute.Tensor, bias: cute.Tensor, y: cute.Tensor, batch: cutlass.Int32,
                   in_features: cutlass.Int32, out_features: cutlass.Int32, stream):
    grid = ((out_features + TILE - 1) // TILE, (batch + TILE - 1) // TILE, 1)
    gemm_bias_relu_kernel(x, w, bias, y, batch, in_features, out_features).launch(
        grid=grid, block=(TILE, TILE, 1), stream=stream)


_compiled = {}  # one compiled kernel per shape (the tensors' layouts are compile-time constants)


def kf_run(inputs, outputs, attrs):
    x, w, bias = from_dlpack(inputs["x"]), from_dlpack(inputs["weight"]), from_dlpack(inputs["bias"])
    y = from_dlpack(outputs["y"])
    sizes = (attrs["batch"], attrs["in_features"], attrs["out_features"])
    stream = cutlass_torch.current_stream()
    if sizes not in _compiled:
        _compiled[sizes] = cute.compile(gemm_bias_relu, x, w, bias, y, *sizes, stream)
    _compiled[sizes](x, w, bias, y, *sizes, stream)
