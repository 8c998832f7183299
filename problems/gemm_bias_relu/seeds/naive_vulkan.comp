// Naive `gemm_bias_relu` for the vulkan backend: one invocation per output element.
#version 450
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer W { float weight[]; };
layout(set = 0, binding = 2) readonly buffer Bias { float bias[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint m; uint k; uint n; float scale; } p;

void main() {
  uint j = gl_GlobalInvocationID.x, i = gl_GlobalInvocationID.y;
  if (i >= p.m || j >= p.n) return;
  float s = 0.0;
  for (uint q = 0; q < p.k; ++q) s += x[i * p.k + q] * weight[j * p.k + q];
  y[i * p.n + j] = max(s + bias[j], 0.0);
}
