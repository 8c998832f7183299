# Wrong: the last block stores without a mask, past the end of y when n is not a multiple of
# the block (the hidden size is odd).
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x, y, n, scale, shift, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y + offs, tl.load(x + offs, mask=mask, other=0.0) * scale + shift)


def kf_run(inputs, outputs, attrs):
    n = attrs["n"]
    scale_kernel[(triton.cdiv(n, 1024),)](inputs["x"], outputs["y"], n, attrs["scale"], attrs["shift"], BLOCK=1024)
