// Optimized `softmax` for the vulkan backend: a work-group per row; the row's maximum and sum
// are tree reductions in shared memory, each invocation striding along the row.
#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; float eps; } p;

shared float red[gl_WorkGroupSize.x];

void main() {
  const uint L = gl_WorkGroupSize.x;
  uint t = gl_LocalInvocationID.x, base = gl_WorkGroupID.x * p.cols;
  float m = -3.402823466e38;
  for (uint c = t; c < p.cols; c += L) m = max(m, x[base + c]);
  red[t] = m;
  barrier();
  for (uint h = L / 2u; h > 0u; h /= 2u) {
    if (t < h) red[t] = max(red[t], red[t + h]);
    barrier();
  }
  m = red[0];
  barrier();
  float s = 0.0;
  for (uint c = t; c < p.cols; c += L) s += exp(x[base + c] - m);
  red[t] = s;
  barrier();
  for (uint h = L / 2u; h > 0u; h /= 2u) {
    if (t < h) red[t] += red[t + h];
    barrier();
  }
  float inv = 1.0 / red[0];
  for (uint c = t; c < p.cols; c += L) y[base + c] = exp(x[base + c] - m) * inv;
}
