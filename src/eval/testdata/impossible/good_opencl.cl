__kernel void scale(__global const float* x, __global float* y, float s, float b, long n) {
  long i = get_global_id(0);
  if (i < n) y[i] = s * x[i] + b;
}
