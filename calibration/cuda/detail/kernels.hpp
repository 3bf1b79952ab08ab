#pragma once
// The device kernels of the harness (kernels.cu, the one file nvcc compiles): operand
// fills, and the memory-bound kernels of a transformer layer written plainly, one thread
// block per row where a row is reduced, so that what they achieve is the HBM bandwidth a
// straightforward kernel gets (as the unfused Megatron path's kernels do).
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace trainsim::calibration::cuda::detail {

enum class Elem : std::uint8_t { F32, F16, BF16, E4M3 };
std::size_t elem_bytes(Elem e);

// Values uniform in [-1, 1) from a hash of the index: random enough that no kernel sees
// zeros (which lower power and can raise clocks), reproducible run to run.
void fill_uniform(Elem e, void* data, std::size_t count, std::uint32_t seed, cudaStream_t stream);

// An empty kernel of one thread: what a launch costs when the kernel does nothing.
void launch_empty(cudaStream_t stream);

// c = a + b over `n` BF16 values (a residual add): reads 2n, writes n elements.
void elementwise_add(const void* a, const void* b, void* c, std::size_t n, cudaStream_t stream);
// LayerNorm / RMSNorm forward over `rows` rows of `cols` BF16 values, FP32 weights.
void layer_norm(const void* x, const float* gamma, const float* beta, void* y, std::int64_t rows, std::int64_t cols,
                cudaStream_t stream);
void rms_norm(const void* x, const float* gamma, void* y, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
// Row softmax of attention scores (BF16, `rows` rows of `cols`); with `causal`, row r is
// query position r mod cols, and the scores past it are masked to probability 0.
void softmax_forward(const void* x, void* y, std::int64_t rows, std::int64_t cols, bool causal, float scale,
                     cudaStream_t stream);
// dx = y ⊙ (dy − Σ y·dy) per row.
void softmax_backward(const void* y, const void* dy, void* dx, std::int64_t rows, std::int64_t cols, bool causal,
                      cudaStream_t stream);
// One Adam step over `n` FP32 parameters (Kingma & Ba 2015): reads p, g, m, v; writes p, m, v.
void adam_step(float* p, const float* g, float* m, float* v, std::size_t n, int step, cudaStream_t stream);

}  // namespace trainsim::calibration::cuda::detail
