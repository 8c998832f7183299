// Optimized `matmul` for the vulkan backend: each 16 x 16 work-group computes a 16 x 16 tile of c,
// walking k in steps of 16 with the a and b tiles in shared memory.
#version 450
layout(local_size_x = 16, local_size_y = 16) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Push { uint m; uint k; uint n; float scale; } p;

const uint T = 16;
shared float ta[T][T + 1];
shared float tb[T][T + 1];

void main() {
  uint tx = gl_LocalInvocationID.x, ty = gl_LocalInvocationID.y;
  uint j = gl_WorkGroupID.x * T + tx, i = gl_WorkGroupID.y * T + ty;
  float s = 0.0;
  for (uint q0 = 0; q0 < p.k; q0 += T) {
    ta[ty][tx] = i < p.m && q0 + tx < p.k ? a[i * p.k + q0 + tx] : 0.0;
    tb[ty][tx] = q0 + ty < p.k && j < p.n ? b[(q0 + ty) * p.n + j] : 0.0;
    barrier();
    for (uint q = 0; q < T; ++q) s += ta[ty][q] * tb[q][tx];
    barrier();
  }
  if (i < p.m && j < p.n) c[i * p.n + j] = s;
}
