// Optimized `matmul` for the vulkan backend: c = a (m x k) * b (k x n), a 4 x 4 block of c per
// invocation. b is read as vec4 (binding 3 views it so) when n is a multiple of 4, else as floats.
#version 450
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(set = 0, binding = 3) readonly buffer B4 { vec4 b4[]; };
layout(push_constant) uniform Push { uint m; uint k; uint n; float scale; } p;

vec4 BRow(uint q, uint j0) {
  if (p.n % 4u == 0u) return b4[(q * p.n + j0) / 4u];
  vec4 v = vec4(0.0);
  for (uint d = 0u; d < 4u; ++d) v[d] = j0 + d < p.n ? b[q * p.n + j0 + d] : 0.0;
  return v;
}

void main() {
  uint j0 = 4u * gl_GlobalInvocationID.x, i0 = 4u * gl_GlobalInvocationID.y;
  if (j0 >= p.n || i0 >= p.m) return;
  uint rows = min(4u, p.m - i0);
  vec4 acc[4] = vec4[4](vec4(0.0), vec4(0.0), vec4(0.0), vec4(0.0));
  for (uint q = 0u; q < p.k; ++q) {
    vec4 bv = BRow(q, j0);
    for (uint r = 0u; r < 4u; ++r)
      if (r < rows) acc[r] += a[(i0 + r) * p.k + q] * bv;
  }
  for (uint r = 0u; r < rows; ++r)
    for (uint d = 0u; d < 4u; ++d)
      if (j0 + d < p.n) c[(i0 + r) * p.n + j0 + d] = acc[r][d];
}
