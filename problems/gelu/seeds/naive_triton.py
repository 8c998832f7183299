# triton seed for gelu: one program per BLOCK elements, exact erf GELU (docs/abi-triton.md).
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def gelu_kernel(x, y, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x + offs, mask=mask)
    tl.store(y + offs, 0.5 * v * (1.0 + tl.math.erf(v * 0.7071067811865476)), mask=mask)


def kf_run(inputs, outputs, attrs):
    n = attrs["n"]
    gelu_kernel[(triton.cdiv(n, BLOCK),)](inputs["x"], outputs["y"], n, BLOCK=BLOCK)
