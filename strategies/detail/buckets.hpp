#pragma once
// Gradient and parameter buckets as Megatron-LM forms them for overlapped communication:
// parameters are packed in the order the backward produces their gradients into buckets of
// at least `bucket_params` parameters, a layer never split (a bucket closes after the layer
// that fills it). Megatron's default bucket size when overlapping is max(40 M, 1 M × data)
// parameters (megatron/core/distributed/distributed_data_parallel.py).
#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

namespace trainsim::strategies::detail {

inline std::int64_t default_bucket_params(std::int64_t data) { return std::max<std::int64_t>(40'000'000, 1'000'000 * data); }

struct Bucket {
  std::vector<std::int32_t> layers;  // in the order given
  std::int64_t params = 0;
};

// `layers`: layer groups in the order their gradients complete (or their parameters are
// needed); groups without parameters join the bucket being filled.
inline std::vector<Bucket> make_buckets(const std::vector<std::int32_t>& layers,
                                        const std::map<std::int32_t, std::int64_t>& params, std::int64_t bucket_params) {
  std::vector<Bucket> out;
  Bucket current;
  for (const std::int32_t l : layers) {
    const auto it = params.find(l);
    current.layers.push_back(l);
    current.params += it == params.end() ? 0 : it->second;
    if (current.params >= bucket_params) {
      out.push_back(std::move(current));
      current = Bucket{};
    }
  }
  if (!current.layers.empty()) out.push_back(std::move(current));
  return out;
}

}  // namespace trainsim::strategies::detail
