// Naive `softmax` for the vulkan backend: one invocation per row, three passes over the row.
#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; float eps; } p;

void main() {
  uint r = gl_GlobalInvocationID.x;
  if (r >= p.rows) return;
  uint base = r * p.cols;
  float m = x[base];
  for (uint c = 1; c < p.cols; ++c) m = max(m, x[base + c]);
  float s = 0.0;
  for (uint c = 0; c < p.cols; ++c) s += exp(x[base + c] - m);
  for (uint c = 0; c < p.cols; ++c) y[base + c] = exp(x[base + c] - m) / s;
}
