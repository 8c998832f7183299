# cute seed for conv2d_relu: one thread per output element (b, o, i, j), the sum over input
# channels and the kernel window, + bias, ReLU (docs/abi-cute.md).
import cutlass
import cutlass.cute as cute
import cutlass.torch as cutlass_torch
from cutlass.cute.runtime import from_dlpack

THREADS = 256


@cute.kernel
def conv2d_relu_kernel(x: cute.Tensor, w: cute.Tensor, bias: cute.Tensor, y: cute.Tensor, batch: cutlass.Int32,
                       cin: cutlass.Int32, cout: cutlass.Int32, ho: cutlass.Int32, wo: cutlass.Int32,
                       ks: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    idx = bidx * THREADS + tidx
    if idx < batch * cout * ho * wo:
        j = idx % wo
        i = (idx // wo) % ho
        o = (idx // (wo * ho)) % cout
        b = idx // (wo * ho * cout)
        s = bias[o]
        for c in range(cin):
            for u in range(ks):
                for v in range(ks):
                    s += x[b, c, i + u, j + v] * w[o, c, u, v]
        y[b, o, i, j] = cute.math.max(s, cutlass.Float32(0.0))


@cute.jit
def conv2d_relu(x: cute.Tensor, w: cute.Tensor, bias: cute.Tensor, y: cute.Tensor, batch: cutlass.Int32,
                cin: cutlass.Int32, cout: cutlass.Int32, ho: cutlass.Int32, wo: cutlass.Int32, ks: cutlass.Int32,
                stream):
    blocks = (batch * cout * ho * wo + THREADS - 1) // THREADS
    conv2d_relu_kernel(x, w, bias, y, batch, cin, cout, ho, wo, ks).launch(
        grid=(blocks, 1, 1), block=(THREADS, 1, 1), stream=stream)


_compiled = {}  # one compiled kernel per shape (the tensors' layouts are compile-time constants)


def kf_run(inputs, outputs, attrs):
    x, w, bias = from_dlpack(inputs["x"]), from_dlpack(inputs["weight"]), from_dlpack(inputs["bias"])
    y = from_dlpack(outputs["y"])
    ks = attrs["kernel"]
    sizes = (attrs["batch"], attrs["in_channels"], attrs["out_channels"], attrs["height"] - ks + 1,
             attrs["width"] - ks + 1, ks)
    stream = cutlass_torch.current_stream()
    if sizes not in _compiled:
        _compiled[sizes] = cute.compile(conv2d_relu, x, w, bias, y, *sizes, stream)
    _compiled[sizes](x, w, bias, y, *sizes, stream)
