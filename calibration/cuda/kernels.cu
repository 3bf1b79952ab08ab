#include "calibration/cuda/detail/kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace trainsim::calibration::cuda::detail {
namespace {

constexpr int kThreads = 256;

__device__ float hash_uniform(std::uint64_t i, std::uint32_t seed) {
  // SplitMix64 finaliser: a well-mixed 64-bit hash of the index.
  std::uint64_t z = i + 0x9E3779B97F4A7C15ull * (seed + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

template <typename T>
__device__ T from_float(float v);
template <>
__device__ float from_float<float>(float v) { return v; }
template <>
__device__ __half from_float<__half>(float v) { return __float2half(v); }
template <>
__device__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <>
__device__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float v) { return __nv_fp8_e4m3(v); }

template <typename T>
__global__ void fill_kernel(T* data, std::size_t count, std::uint32_t seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < count;
       i += std::size_t{gridDim.x} * blockDim.x)
    data[i] = from_float<T>(hash_uniform(i, seed));
}

__global__ void empty_kernel() {}

// Eight BF16 values per 16-byte access, as PyTorch's vectorized elementwise kernels load
// them: with one 2-byte access per element, too few bytes are in flight to reach the HBM
// bandwidth that framework kernels reach (on an H100 the scalar form moved 2.28 TB/s).
__global__ void add_kernel(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* c, std::size_t n) {
  const std::size_t stride = std::size_t{gridDim.x} * blockDim.x, first = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x;
  const std::size_t vectors = n / 8;
  const auto* a8 = reinterpret_cast<const uint4*>(a);
  const auto* b8 = reinterpret_cast<const uint4*>(b);
  auto* c8 = reinterpret_cast<uint4*>(c);
  for (std::size_t i = first; i < vectors; i += stride) {
    const uint4 x = a8[i], y = b8[i];
    uint4 z;
    const auto* x2 = reinterpret_cast<const __nv_bfloat162*>(&x);
    const auto* y2 = reinterpret_cast<const __nv_bfloat162*>(&y);
    auto* z2 = reinterpret_cast<__nv_bfloat162*>(&z);
    for (int j = 0; j < 4; ++j) {
      const float2 u = __bfloat1622float2(x2[j]), v = __bfloat1622float2(y2[j]);
      z2[j] = __floats2bfloat162_rn(u.x + v.x, u.y + v.y);
    }
    c8[i] = z;
  }
  for (std::size_t i = vectors * 8 + first; i < n; i += stride)
    c[i] = __float2bfloat16(__bfloat162float(a[i]) + __bfloat162float(b[i]));
}

// Sum over the block; every thread gets the result.
__device__ float block_sum(float v) {
  __shared__ float partial[kThreads / 32];
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // partial[] may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  float s = 0;
  for (int w = 0; w < kThreads / 32; ++w) s += partial[w];
  return s;
}

__device__ float block_max(float v) {
  __shared__ float partial[kThreads / 32];
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  float s = partial[0];
  for (int w = 1; w < kThreads / 32; ++w) s = fmaxf(s, partial[w]);
  return s;
}

__global__ void layer_norm_kernel(const __nv_bfloat16* x, const float* gamma, const float* beta, __nv_bfloat16* y,
                                  std::int64_t cols, bool rms) {
  const __nv_bfloat16* row = x + blockIdx.x * cols;
  __nv_bfloat16* out = y + blockIdx.x * cols;
  float sum = 0, sq = 0;
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = __bfloat162float(row[c]);
    sum += v;
    sq += v * v;
  }
  const float mean = rms ? 0.0f : block_sum(sum) / cols;
  const float var = block_sum(sq) / cols - mean * mean;
  const float inv = rsqrtf(var + 1e-5f);
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = (__bfloat162float(row[c]) - mean) * inv * gamma[c] + (rms ? 0.0f : beta[c]);
    out[c] = __float2bfloat16(v);
  }
}

__global__ void softmax_forward_kernel(const __nv_bfloat16* x, __nv_bfloat16* y, std::int64_t cols, bool causal,
                                       float scale) {
  const __nv_bfloat16* row = x + blockIdx.x * cols;
  __nv_bfloat16* out = y + blockIdx.x * cols;
  const std::int64_t last = causal ? static_cast<std::int64_t>(blockIdx.x % cols) : cols - 1;
  float mx = -INFINITY;
  for (std::int64_t c = threadIdx.x; c <= last; c += blockDim.x) mx = fmaxf(mx, scale * __bfloat162float(row[c]));
  mx = block_max(mx);
  float sum = 0;
  for (std::int64_t c = threadIdx.x; c <= last; c += blockDim.x) sum += __expf(scale * __bfloat162float(row[c]) - mx);
  const float inv = 1.0f / block_sum(sum);
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    out[c] = __float2bfloat16(c <= last ? __expf(scale * __bfloat162float(row[c]) - mx) * inv : 0.0f);
}

__global__ void softmax_backward_kernel(const __nv_bfloat16* y, const __nv_bfloat16* dy, __nv_bfloat16* dx,
                                        std::int64_t cols, bool causal) {
  const std::int64_t base = blockIdx.x * cols;
  const std::int64_t last = causal ? static_cast<std::int64_t>(blockIdx.x % cols) : cols - 1;
  float dot = 0;
  for (std::int64_t c = threadIdx.x; c <= last; c += blockDim.x)
    dot += __bfloat162float(y[base + c]) * __bfloat162float(dy[base + c]);
  dot = block_sum(dot);
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = c <= last ? __bfloat162float(y[base + c]) * (__bfloat162float(dy[base + c]) - dot) : 0.0f;
    dx[base + c] = __float2bfloat16(v);
  }
}

__global__ void adam_kernel(float* p, const float* g, float* m, float* v, std::size_t n, float c1, float c2) {
  // Hyper-parameters of Megatron-LM's defaults: lr 1e-4, β = (0.9, 0.999), ε = 1e-8.
  constexpr float lr = 1e-4f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    const float gi = g[i];
    const float mi = b1 * m[i] + (1 - b1) * gi;
    const float vi = b2 * v[i] + (1 - b2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] -= lr * (mi / c1) / (sqrtf(vi / c2) + eps);
  }
}

// Grid-stride kernels: enough blocks to fill any GPU of this generation several times over.
unsigned grid_for(std::size_t n) {
  const std::size_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 65536 ? (blocks == 0 ? 1 : blocks) : 65536);
}

}  // namespace

std::size_t elem_bytes(Elem e) {
  switch (e) {
    case Elem::F32: return 4;
    case Elem::F16:
    case Elem::BF16: return 2;
    case Elem::E4M3: return 1;
  }
  return 1;
}

void fill_uniform(Elem e, void* data, std::size_t count, std::uint32_t seed, cudaStream_t stream) {
  const unsigned g = grid_for(count);
  switch (e) {
    case Elem::F32: fill_kernel<<<g, kThreads, 0, stream>>>(static_cast<float*>(data), count, seed); break;
    case Elem::F16: fill_kernel<<<g, kThreads, 0, stream>>>(static_cast<__half*>(data), count, seed); break;
    case Elem::BF16: fill_kernel<<<g, kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(data), count, seed); break;
    case Elem::E4M3: fill_kernel<<<g, kThreads, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(data), count, seed); break;
  }
}

void launch_empty(cudaStream_t stream) { empty_kernel<<<1, 1, 0, stream>>>(); }

void elementwise_add(const void* a, const void* b, void* c, std::size_t n, cudaStream_t stream) {
  add_kernel<<<grid_for((n + 7) / 8), kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(a),
                                                   static_cast<const __nv_bfloat16*>(b),
                                                   static_cast<__nv_bfloat16*>(c), n);
}

void layer_norm(const void* x, const float* gamma, const float* beta, void* y, std::int64_t rows, std::int64_t cols,
                cudaStream_t stream) {
  layer_norm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(x), gamma, beta, static_cast<__nv_bfloat16*>(y), cols, false);
}

void rms_norm(const void* x, const float* gamma, void* y, std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  layer_norm_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(x), gamma, nullptr, static_cast<__nv_bfloat16*>(y), cols, true);
}

void softmax_forward(const void* x, void* y, std::int64_t rows, std::int64_t cols, bool causal, float scale,
                     cudaStream_t stream) {
  softmax_forward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(x), static_cast<__nv_bfloat16*>(y), cols, causal, scale);
}

void softmax_backward(const void* y, const void* dy, void* dx, std::int64_t rows, std::int64_t cols, bool causal,
                      cudaStream_t stream) {
  softmax_backward_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      static_cast<const __nv_bfloat16*>(y), static_cast<const __nv_bfloat16*>(dy), static_cast<__nv_bfloat16*>(dx),
      cols, causal);
}

void adam_step(float* p, const float* g, float* m, float* v, std::size_t n, int step, cudaStream_t stream) {
  const float c1 = 1.0f - powf(0.9f, static_cast<float>(step));
  const float c2 = 1.0f - powf(0.999f, static_cast<float>(step));
  adam_kernel<<<grid_for(n), kThreads, 0, stream>>>(p, g, m, v, n, c1, c2);
}

}  // namespace trainsim::calibration::cuda::detail
