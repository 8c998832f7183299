// kforge's own Vulkan shader for measuring a device's peaks; MODE (specialization constant 0)
// picks the probe, the work-group size is specialization constant 1.
#version 450

layout(local_size_x_id = 1) in;
layout(constant_id = 0) const int MODE = 0;  // 0: copy, 1: fma, 2: read

layout(set = 0, binding = 0) readonly buffer Src { vec4 src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { vec4 dst[]; };
layout(set = 0, binding = 2) writeonly buffer Sums { float sums[]; };

layout(push_constant) uniform Push {
  uint n;      // vec4 elements in src (copy, read)
  int iters;   // fma iterations
  float a, b;  // fma operands
} p;

void main() {
  uint g = gl_GlobalInvocationID.x;
  uint threads = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  if (MODE == 0) {
    // Copy, one vec4 per invocation and grid-stride: the bandwidth probe (read + write bytes).
    for (uint k = g; k < p.n; k += threads) dst[k] = src[k];
  } else if (MODE == 1) {
    // Sixteen independent vec4 FMA chains: each invocation does 16 * 4 * iters FMAs.
    vec4 acc[16];
    for (int k = 0; k < 16; ++k) acc[k] = vec4(float(g) * 1e-6 + float(k));
    for (int it = 0; it < p.iters; ++it)
      for (int k = 0; k < 16; ++k) acc[k] = fma(acc[k], vec4(p.a), vec4(p.b));
    vec4 s = vec4(0.0);
    for (int k = 0; k < 16; ++k) s += acc[k];
    sums[g] = s.x + s.y + s.z + s.w;
  } else {
    // Read-only stream, grid-stride: a copy pays for the destination too.
    vec4 acc = vec4(0.0);
    for (uint k = g; k < p.n; k += threads) acc += src[k];
    sums[g] = acc.x + acc.y + acc.z + acc.w;
  }
}
