// Optimized `row_sum` for the vulkan backend: a work-group per row, lanes on consecutive
// elements (four independent accumulators each), then a subgroup reduction.
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
  float s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
  uint c = t;
  for (; c + 3u * L < p.cols; c += 4u * L) {
    s0 += x[base + c];
    s1 += x[base + c + L];
    s2 += x[base + c + 2u * L];
    s3 += x[base + c + 3u * L];
  }
  for (; c < p.cols; c += L) s0 += x[base + c];
  float total = GroupSum((s0 + s1) + (s2 + s3));
  if (t == 0u) y[gl_WorkGroupID.x] = total;
}
