// Naive `matmul` for the vulkan backend: c = a (m x k) * b (k x n), one invocation per element.
#version 450
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Push { uint m; uint k; uint n; float scale; } p;

void main() {
  uint j = gl_GlobalInvocationID.x, i = gl_GlobalInvocationID.y;
  if (i >= p.m || j >= p.n) return;
  float s = 0.0;
  for (uint q = 0; q < p.k; ++q) s += a[i * p.k + q] * b[q * p.n + j];
  c[i * p.n + j] = s;
}
