// Naive `layernorm` for the vulkan backend: one invocation per row, three plain passes.
#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer W { float weight[]; };
layout(set = 0, binding = 2) readonly buffer B { float bias[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; float eps; } p;

void main() {
  uint r = gl_GlobalInvocationID.x;
  if (r >= p.rows) return;
  uint base = r * p.cols;
  float sum = 0.0;
  for (uint c = 0; c < p.cols; ++c) sum += x[base + c];
  float mean = sum / float(p.cols);
  float sq = 0.0;
  for (uint c = 0; c < p.cols; ++c) sq += (x[base + c] - mean) * (x[base + c] - mean);
  float denom = sqrt(sq / float(p.cols) + p.eps);
  for (uint c = 0; c < p.cols; ++c) y[base + c] = (x[base + c] - mean) / denom * weight[c] + bias[c];
}
