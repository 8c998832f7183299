// Naive `row_sum` for the vulkan backend: one invocation sums one row serially.
#version 450
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; } p;

void main() {
  uint r = gl_GlobalInvocationID.x;
  if (r >= p.rows) return;
  float s = 0.0;
  for (uint c = 0; c < p.cols; ++c) s += x[r * p.cols + c];
  y[r] = s;
}
