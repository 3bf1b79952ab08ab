#include "calibration/measure_plan.hpp"

#include "models/model.hpp"
#include "models/presets.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>
#include <tuple>

namespace trainsim::calibration {
namespace {

bool operator_less(const GemmShape& a, const GemmShape& b) {
  return std::tie(a.b, a.m, a.n, a.k) < std::tie(b.b, b.m, b.n, b.k);
}

std::vector<std::int64_t> powers_of_two(std::int64_t from, std::int64_t to, int step_log2) {
  std::vector<std::int64_t> v;
  for (std::int64_t x = from; x <= to; x <<= step_log2) v.push_back(x);
  if (v.back() != to) v.push_back(to);
  return v;
}

// A power-of-two cube of (m, n, k) around the model shapes: regular points between them,
// where wave and tile quantization and small-shape saturation show cleanly.
std::vector<GemmShape> gemm_grid(const std::vector<std::int64_t>& dims) {
  std::vector<GemmShape> g;
  for (auto m : dims)
    for (auto n : dims)
      for (auto k : dims) g.push_back({1, m, n, k});
  return g;
}

// Distinct attention head dimensions of the presets (hidden / heads).
std::vector<std::int64_t> preset_head_dims() {
  std::set<std::int64_t> dims;
  for (const auto& name : models::preset_names()) {
    auto m = models::find_preset(name);
    if (m && m->heads > 0) dims.insert(m->hidden / m->heads);
  }
  return {dims.begin(), dims.end()};
}

}  // namespace

namespace {

// Calls `each` with the GEMM dims of every linear layer (cls GEMM) of `presets`' transformer
// and head layers under each tensor degree, micro-batch and sequence they allow.
template <typename Each>
void for_each_linear_gemm(const std::vector<std::string>& presets, const std::vector<std::int64_t>& tensor,
                          const std::vector<std::int64_t>& micro_batches, const std::vector<std::int64_t>& sequences,
                          Each&& each) {
  for (const auto& name : presets) {
    auto model = models::find_preset(name);
    if (!model) throw std::invalid_argument("model_gemm_shapes: unknown preset \"" + name + "\"");
    for (auto t : tensor) {
      for (auto b : micro_batches) {
        for (auto s : sequences) {
          if (model->max_positions > 0 && s > model->max_positions) continue;  // past its learned positions
          models::ShardSpec shard;
          shard.micro_batch = b;
          shard.sequence = s;
          shard.tensor = t;
          std::vector<models::Layer> layers;
          try {  // a degree the model's shape does not allow, a sequence past its positions
            layers.push_back(models::transformer_layer(*model, shard));
            layers.push_back(models::head_layer(*model, shard));
          } catch (const std::invalid_argument&) {
            continue;
          }
          for (const auto& layer : layers)
            for (const auto& op : layer.ops)
              if (op.cls == models::ComputeClass::GEMM) each(op.gemm);
        }
      }
    }
  }
}

}  // namespace

std::vector<GemmShape> model_gemm_shapes(const std::vector<std::string>& presets, const std::vector<std::int64_t>& tensor,
                                         const std::vector<std::int64_t>& micro_batches,
                                         const std::vector<std::int64_t>& sequences) {
  auto less = [](const GemmShape& a, const GemmShape& b) { return operator_less(a, b); };
  std::set<GemmShape, decltype(less)> shapes(less);
  for_each_linear_gemm(presets, tensor, micro_batches, sequences, [&](const models::GemmDims& g) {
    shapes.insert({g.batch, g.m, g.n, g.k});  // forward: [m×k]·[k×n]
    shapes.insert({g.batch, g.m, g.k, g.n});  // input gradient: [m×n]·[n×k]
    shapes.insert({g.batch, g.k, g.n, g.m});  // weight gradient: [k×m]·[m×n]
  });
  return {shapes.begin(), shapes.end()};
}

std::vector<GemmShape> model_weight_gradient_shapes(const std::vector<std::string>& presets,
                                                    const std::vector<std::int64_t>& tensor,
                                                    const std::vector<std::int64_t>& micro_batches,
                                                    const std::vector<std::int64_t>& sequences) {
  auto less = [](const GemmShape& a, const GemmShape& b) { return operator_less(a, b); };
  std::set<GemmShape, decltype(less)> shapes(less);
  for_each_linear_gemm(presets, tensor, micro_batches, sequences, [&](const models::GemmDims& g) {
    shapes.insert({1, g.n, g.k, g.m});  // dW: output features × input features over the tokens
  });
  return {shapes.begin(), shapes.end()};
}

MeasurePlan make_measure_plan(bool quick) {
  MeasurePlan p;
  p.quick = quick;
  const std::vector<std::int64_t> tensor = {1, 2, 4, 8};
  const std::vector<std::int64_t> micro_batches =
      quick ? std::vector<std::int64_t>{1, 2, 4, 8} : std::vector<std::int64_t>{1, 2, 3, 4, 5, 6, 7, 8};
  const std::vector<std::int64_t> sequences(std::begin(kTrainingSequences), std::end(kTrainingSequences));
  std::vector<GemmShape> model = model_gemm_shapes(models::preset_names(), tensor, micro_batches, sequences);
  // Quick: an even sample of the model shapes (the sorted list runs from small to large
  // m, so an even sample keeps the range) and a coarse grid.
  if (quick) model = thin_out(model, 160);
  std::vector<GemmShape> grid = gemm_grid(quick ? std::vector<std::int64_t>{512, 2048, 8192}
                                                : powers_of_two(256, 16384, 1));
  // Alternate model shapes and grid points so that a budget cut leaves both.
  model = spread_order(model);
  grid = spread_order(grid);
  for (std::size_t i = 0, j = 0; i < model.size() || j < grid.size();) {
    if (i < model.size()) p.gemm_shapes.push_back(model[i++]);
    if (i < model.size()) p.gemm_shapes.push_back(model[i++]);
    if (j < grid.size()) p.gemm_shapes.push_back(grid[j++]);
  }

  // The weight gradients at micro-batch 1 and 2 (the reduction, tokens, is what sets how much
  // of the accumulating epilogue the main loop hides), an even sample spread over the range.
  p.accumulate_shapes = spread_order(
      thin_out(model_weight_gradient_shapes(models::preset_names(), tensor, {1, 2}, sequences), quick ? 32 : 128));

  const std::vector<std::int64_t> seqs =
      quick ? std::vector<std::int64_t>{1024, 2048, 4096, 8192} : powers_of_two(256, 16384, 1);
  std::vector<AttentionProblem> attention;
  for (auto d : preset_head_dims()) {
    for (auto s : seqs) {
      for (bool causal : {false, true}) {
        // 16 heads and 16k tokens (batch 16384 / s), as the flash-attention benchmark runs
        // them: one sample of 16 heads leaves most SMs idle at short sequences, which no
        // training step does. The unfused path's scores, b·16·s² 16-bit values, stay at
        // 8 GiB or less up to s = 16384.
        attention.push_back({std::max<std::int64_t>(1, 16384 / s), 16, s, d, causal});
      }
    }
  }
  p.attention = spread_order(attention);

  // Up to 4 GiB so that six sizes (128 MiB … 4 GiB) are above the memory fit's L2 cut
  // (memory_fit.hpp: 100 MB of traffic), the fewest its held-back check needs; Adam's
  // footprint at 4 GiB is 8 GiB, and larger sizes than free memory allows are skipped. Quick
  // runs the same sizes: 13 sizes of six kernels take seconds, and a memory fit is what the
  // cost model's memory-bound kernels read.
  p.memory_kernel_bytes = spread_order(powers_of_two(std::int64_t{1} << 20, std::int64_t{1} << 32, 1));
  p.copy_bytes = spread_order(powers_of_two(std::int64_t{4} << 10, std::int64_t{1} << 30, quick ? 2 : 1));
  // nccl-tests' default sweep (-b 8 -e 4G -f 2); quick: every other size. Collectives stay in
  // ascending order, as nccl-tests runs them and as the log table lists them.
  p.collective_bytes = powers_of_two(8, std::int64_t{4} << 30, quick ? 2 : 1);

  if (quick) {
    // 10 minutes on one GPU: 570 s of phases leave 30 s for start-up and the fits.
    p.total_s = 570;
    p.gemm_s_per_dtype = 75;  // 4 dtypes: 300 s
    p.attention_s = 80;
    p.memory_s = 40;
    p.copy_s = 40;
    p.accumulate_s = 30;
    p.collective_s = 80;  // only with 2 GPUs or more
  } else {
    p.total_s = 4 * 3600;
    p.gemm_s_per_dtype = 2700;
    p.accumulate_s = 600;
    p.attention_s = 1200;
    p.memory_s = 600;
    p.copy_s = 600;
    p.collective_s = 3600;
  }
  return p;
}

const char* measure_phase_name(MeasurePhase phase) {
  switch (phase) {
    case MeasurePhase::GemmBf16: return "gemm-bf16";
    case MeasurePhase::GemmFp16: return "gemm-fp16";
    case MeasurePhase::GemmFp8: return "gemm-fp8";
    case MeasurePhase::GemmTf32: return "gemm-tf32";
    case MeasurePhase::GemmAccumulate: return "gemm-accumulate";
    case MeasurePhase::AttentionFused: return "attention-fused";
    case MeasurePhase::AttentionUnfused: return "attention-unfused";
    case MeasurePhase::Memory: return "memory";
    case MeasurePhase::Copies: return "copies";
    case MeasurePhase::Collectives: return "collectives";
  }
  return "?";
}

MeasurePhases MeasurePhases::parse(const std::string& list) {
  std::string valid;
  for (MeasurePhase p : kMeasurePhases) valid += (valid.empty() ? "" : ", ") + std::string(measure_phase_name(p));
  MeasurePhases phases;
  phases.bits_ = 0;
  std::size_t begin = 0;
  while (begin <= list.size()) {
    const std::size_t end = std::min(list.find(',', begin), list.size());
    const std::string name = list.substr(begin, end - begin);
    const auto* found = std::find_if(std::begin(kMeasurePhases), std::end(kMeasurePhases),
                                     [&](MeasurePhase p) { return name == measure_phase_name(p); });
    if (found == std::end(kMeasurePhases))
      throw std::invalid_argument("unknown phase \"" + name + "\" (valid: " + valid + ")");
    const unsigned bit = 1u << static_cast<unsigned>(*found);
    if (phases.bits_ & bit) throw std::invalid_argument("phase \"" + name + "\" named twice");
    phases.bits_ |= bit;
    begin = end + 1;
  }
  return phases;
}

}  // namespace trainsim::calibration
