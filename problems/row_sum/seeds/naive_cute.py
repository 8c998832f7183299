# cute seed for row_sum: one thread per row, a float32 sum in column order (docs/abi-cute.md).
import cutlass
import cutlass.cute as cute
import cutlass.torch as cutlass_torch
from cutlass.cute.runtime import from_dlpack

THREADS = 128


@cute.kernel
def row_sum_kernel(x: cute.Tensor, y: cute.Tensor, rows: cutlass.Int32, cols: cutlass.Int32):
    tidx, _, _ = cute.arch.thread_idx()
    bidx, _, _ = cute.arch.block_idx()
    r = bidx * THREADS + tidx
    if r < rows:
        s = cutlass.Float32(0.0)
        for c in range(cols):
            s += x[r, c]
        y[r] = s


@cute.jit
def row_sum(x: cute.Tensor, y: cute.Tensor, rows: cutlass.Int32, cols: cutlass.Int32, stream):
    blocks = (rows + THREADS - 1) // THREADS
    row_sum_kernel(x, y, rows, cols).launch(grid=(blocks, 1, 1), block=(THREADS, 1, 1), stream=stream)


_compiled = {}  # one compiled kernel per shape (the tensors' layouts are compile-time constants)


def kf_run(inputs, outputs, attrs):
    x, y = from_dlpack(inputs["x"]), from_dlpack(outputs["y"])
    rows, cols = attrs["rows"], attrs["cols"]
    stream = cutlass_torch.current_stream()
    key = tuple(inputs["x"].shape)
    if key not in _compiled:
        _compiled[key] = cute.compile(row_sum, x, y, rows, cols, stream)
    _compiled[key](x, y, rows, cols, stream)
