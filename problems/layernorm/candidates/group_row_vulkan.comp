// Optimized `layernorm` for the vulkan backend: a work-group per row; the mean and then the
// variance (two-pass, as stable as the reference) are tree reductions in shared memory.
#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer W { float weight[]; };
layout(set = 0, binding = 2) readonly buffer B { float bias[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; float eps; } p;

shared float red[gl_WorkGroupSize.x];

float GroupSum(float v) {
  const uint L = gl_WorkGroupSize.x;
  uint t = gl_LocalInvocationID.x;
  red[t] = v;
  barrier();
  for (uint h = L / 2u; h > 0u; h /= 2u) {
    if (t < h) red[t] += red[t + h];
    barrier();
  }
  float total = red[0];
  barrier();
  return total;
}

void main() {
  const uint L = gl_WorkGroupSize.x;
  uint t = gl_LocalInvocationID.x, base = gl_WorkGroupID.x * p.cols;
  float s = 0.0;
  for (uint c = t; c < p.cols; c += L) s += x[base + c];
  float mean = GroupSum(s) / float(p.cols);
  float q = 0.0;
  for (uint c = t; c < p.cols; c += L) q += (x[base + c] - mean) * (x[base + c] - mean);
  float inv = 1.0 / sqrt(GroupSum(q) / float(p.cols) + p.eps);
  for (uint c = t; c < p.cols; c += L) y[base + c] = (x[base + c] - mean) * inv * weight[c] + bias[c];
}
