// The digest of a device buffer computed where it lives (the worker's input hashes,
// Device::Digest). Compiled to PTX at build time and embedded in kforge-worker, as peaks.cu is,
// but on its own: the driver JIT-compiles the PTX for the GPU in every worker process (no JIT
// cache is shared with candidates), and this kernel alone compiles in milliseconds.

// kf_digest: kforge_pychild.py's device_digest, for kforge-worker. Word i of the bytes (32 bits,
// little-endian, the last one padded with zeros) becomes x = (i << 32) | w, which splitmix64's
// finalizer (a bijection) mixes; the mixed values are summed modulo 2^64 in two lanes, the
// second mixing x ^ 0x9e3779b97f4a7c15. A change of any one word changes both sums. Each warp
// adds its partial sums into sums[0..1] (zeroed before the launch); the order does not matter.
__device__ __forceinline__ unsigned long long kf_mix(unsigned long long x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

extern "C" __global__ void kf_digest(const unsigned char* __restrict__ bytes, unsigned long long n,
                                     unsigned long long* sums) {
  const unsigned long long words = (n + 3) / 4, full = n / 4;
  const unsigned* w32 = reinterpret_cast<const unsigned*>(bytes);
  unsigned long long s1 = 0, s2 = 0;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < words;
       i += stride) {
    unsigned w = 0;
    if (i < full) {
      w = w32[i];
    } else {
      for (unsigned k = 0; k < 4 && 4 * i + k < n; ++k) w |= (unsigned)bytes[4 * i + k] << (8 * k);
    }
    const unsigned long long x = (i << 32) | w;
    s1 += kf_mix(x);
    s2 += kf_mix(x ^ 0x9e3779b97f4a7c15ull);
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    s1 += __shfl_down_sync(0xffffffffu, s1, offset);
    s2 += __shfl_down_sync(0xffffffffu, s2, offset);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&sums[0], s1);
    atomicAdd(&sums[1], s2);
  }
}
