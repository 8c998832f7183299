// Optimized `softmax` for the vulkan backend: a work-group per row, lanes on consecutive
// elements; the row's maximum and sum are subgroup reductions (the row stays in cache).
#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Push { uint rows; uint cols; float eps; } p;

// A work-group is KF_SUBGROUPS subgroups (one on lavapipe: 8 lanes; a warp on NVIDIA): lanes
// combine with subgroup arithmetic, and subgroups through shared memory only when there are several.
shared float partial[32];

float GroupSum(float v) {
  float s = subgroupAdd(v);
  if (gl_NumSubgroups == 1u) return s;
  if (subgroupElect()) partial[gl_SubgroupID] = s;
  barrier();
  float total = 0.0;
  for (uint k = 0u; k < gl_NumSubgroups; ++k) total += partial[k];
  barrier();
  return total;
}

float GroupMax(float v) {
  float s = subgroupMax(v);
  if (gl_NumSubgroups == 1u) return s;
  if (subgroupElect()) partial[gl_SubgroupID] = s;
  barrier();
  float m = partial[0];
  for (uint k = 1u; k < gl_NumSubgroups; ++k) m = max(m, partial[k]);
  barrier();
  return m;
}

void main() {
  const uint L = gl_WorkGroupSize.x;
  uint t = gl_LocalInvocationID.x, base = gl_WorkGroupID.x * p.cols;
  float m = -3.402823466e38;
  for (uint c = t; c < p.cols; c += L) m = max(m, x[base + c]);
  m = GroupMax(m);
  float s = 0.0;
  for (uint c = t; c < p.cols; c += L) s += exp(x[base + c] - m);
  float inv = 1.0 / GroupSum(s);
  for (uint c = t; c < p.cols; c += L) y[base + c] = exp(x[base + c] - m) * inv;
}
