// Optimized `layernorm` for the vulkan backend: a work-group per row, lanes on consecutive
// elements; the mean and then the variance (two passes, as stable as the reference) are
// subgroup reductions.
#version 450
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
layout(local_size_x_id = 0) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer W { float weight[]; };
layout(set = 0, binding = 2) readonly buffer B { float bias[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
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
  float s = 0.0;
  for (uint c = t; c < p.cols; c += L) s += x[base + c];
  float mean = GroupSum(s) / float(p.cols);
  float q = 0.0;
  for (uint c = t; c < p.cols; c += L) q += (x[base + c] - mean) * (x[base + c] - mean);
  float inv = 1.0 / sqrt(GroupSum(q) / float(p.cols) + p.eps);
  for (uint c = t; c < p.cols; c += L) y[base + c] = (x[base + c] - mean) * inv * weight[c] + bias[c];
}
