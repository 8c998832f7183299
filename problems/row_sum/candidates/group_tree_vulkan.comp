// Optimized `row_sum` for the vulkan backend: a work-group per row, four independent
// accumulators per invocation, then a tree reduction in shared memory.
#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint LOCAL = 64;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; } p;

shared float partial[LOCAL];

void main() {
  uint r = gl_WorkGroupID.x, t = gl_LocalInvocationID.x;
  uint base = r * p.cols;
  float s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  uint c = t;
  for (; c + 3u * LOCAL < p.cols; c += 4u * LOCAL) {
    s0 += x[base + c];
    s1 += x[base + c + LOCAL];
    s2 += x[base + c + 2u * LOCAL];
    s3 += x[base + c + 3u * LOCAL];
  }
  for (; c < p.cols; c += LOCAL) s0 += x[base + c];
  partial[t] = (s0 + s1) + (s2 + s3);
  barrier();
  for (uint half_ = LOCAL / 2u; half_ > 0u; half_ /= 2u) {
    if (t < half_) partial[t] += partial[t + half_];
    barrier();
  }
  if (t == 0u) y[r] = partial[0];
}
