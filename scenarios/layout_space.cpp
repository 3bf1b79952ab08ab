#include "scenarios/layout_space.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "strategies/layout_rules.hpp"

namespace trainsim::scenarios {
namespace {

using Int = std::int64_t;

std::vector<Int> divisors(Int n) {
  std::vector<Int> out;
  for (Int d = 1; d <= n; ++d)
    if (n % d == 0) out.push_back(d);
  return out;
}

// Megatron's uneven split gives the first and last stage fewer layers (they hold the
// embedding and the head): the same count f on both, the middle stages splitting the rest
// evenly with at least f each.
std::vector<std::pair<Int, Int>> splits(Int layers, Int pipeline) {
  std::vector<std::pair<Int, Int>> out;
  if (layers % pipeline == 0) out.emplace_back(0, 0);
  if (pipeline < 3) return out;
  for (Int f = 1; 2 * f < layers; ++f) {
    const Int rest = layers - 2 * f;
    if (rest % (pipeline - 2) != 0 || rest / (pipeline - 2) <= f) continue;
    if (!strategies::uneven_split(layers, pipeline, 1, f, f).empty()) continue;
    out.emplace_back(f, f);
  }
  return out;
}

// The recompute policies of a layout whose chunks hold at most `chunk_layers` layers: none,
// selective, full, and full in segments of k layers (every-k) for each count of segments a
// chunk can be cut into, with the least k that gives that count (a larger k keeps no fewer
// segment inputs and recomputes more layers at once, for the same work).
std::vector<std::pair<strategies::Recompute, Int>> recompute_choices(Int chunk_layers) {
  std::vector<std::pair<strategies::Recompute, Int>> out = {
      {strategies::Recompute::NONE, 0}, {strategies::Recompute::SELECTIVE, 0}, {strategies::Recompute::FULL, 0}};
  Int previous = 1;  // k = 1 is full recompute
  for (Int segments = chunk_layers - 1; segments >= 1; --segments) {
    const Int k = (chunk_layers + segments - 1) / segments;
    if (k != previous) out.emplace_back(strategies::Recompute::EVERY_K, previous = k);
  }
  return out;
}

}  // namespace

const char* schedule_name(Schedule s) {
  return s == Schedule::GPIPE ? "gpipe" : s == Schedule::INTERLEAVED ? "interleaved-1f1b" : "1f1b";
}

const char* recompute_name(strategies::Recompute r) {
  switch (r) {
    case strategies::Recompute::NONE: return "none";
    case strategies::Recompute::SELECTIVE: return "selective";
    case strategies::Recompute::FULL: return "full";
    case strategies::Recompute::EVERY_K: return "every-k";
  }
  return "?";
}

std::vector<LayoutCandidate> enumerate_layouts(const strategies::TrainingSpec& base, Int gpus,
                                               const LayoutSpaceOptions& options) {
  std::vector<LayoutCandidate> out;
  const auto& m = base.model;
  for (Int t : divisors(m.heads)) {
    if (t > options.gpus_per_node || gpus % t != 0) continue;
    if (!strategies::tensor_divides_kv_heads(t, m.kv_heads).empty()) continue;
    if (!strategies::tensor_divides_ffn(t, m.ffn_hidden).empty()) continue;
    for (Int p = 1; p <= std::min<Int>(m.layers, gpus / t); ++p) {
      if ((gpus / t) % p != 0) continue;
      const Int d = gpus / (t * p);
      for (const auto& [first, last] : splits(m.layers, p)) {
        for (Int mb = 1; mb <= options.max_micro_batch; ++mb) {
          if (!strategies::batch_divides(base.global_batch, mb, d).empty()) continue;
          // (schedule, virtual stages): without a pipeline the schedule is moot (1F1B).
          std::vector<std::pair<Schedule, Int>> schedules = {{Schedule::ONE_F_ONE_B, 1}};
          if (p > 1) {
            schedules.emplace_back(Schedule::GPIPE, 1);
            if (first == 0) {
              for (Int v : divisors(m.layers / p)) {
                if (v < 2 || !strategies::interleaved_micro_batches(base.global_batch, mb, d, p, v).empty()) continue;
                schedules.emplace_back(Schedule::INTERLEAVED, v);
              }
            }
          }
          for (const auto& [schedule, v] : schedules) {
            const Int chunk_layers =
                first == 0 ? m.layers / (p * v) : std::max(first, (m.layers - first - last) / (p - 2));
            const auto recomputes = recompute_choices(chunk_layers);
            for (int zero = 0; zero <= (d > 1 ? 1 : 0); ++zero) {
              for (const auto& [recompute, k] : recomputes) {
                for (int sp = 0; sp <= (t > 1 ? 1 : 0); ++sp) {
                  if (sp && !strategies::sequence_parallel_divides_sequence(true, t, base.sequence).empty()) continue;
                  for (int ogr = 0; ogr <= (d > 1 ? 1 : 0); ++ogr) {
                    for (int opg = 0; opg <= zero; ++opg) {
                      for (int otp = 0; otp <= sp; ++otp) {
                        LayoutCandidate c;
                        c.tensor = static_cast<std::int32_t>(t);
                        c.pipeline = static_cast<std::int32_t>(p);
                        c.data = static_cast<std::int32_t>(d);
                        c.virtual_stages = static_cast<std::int32_t>(v);
                        c.first_stage_layers = static_cast<std::int32_t>(first);
                        c.last_stage_layers = static_cast<std::int32_t>(last);
                        c.micro_batch = static_cast<std::int32_t>(mb);
                        c.schedule = schedule;
                        c.zero_stage = static_cast<std::uint8_t>(zero);
                        c.recompute = recompute;
                        c.recompute_k = static_cast<std::int32_t>(k);
                        c.sequence_parallel = sp;
                        c.overlap_grad_reduce = ogr;
                        c.overlap_param_gather = opg;
                        c.overlap_tp_comm = otp;
                        out.push_back(c);
                      }
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

strategies::TrainingSpec apply_layout(const strategies::TrainingSpec& base, const LayoutCandidate& c) {
  strategies::TrainingSpec s = base;
  s.passes = {};
  s.micro_batch = c.micro_batch;
  s.layout.tensor = c.tensor;
  s.layout.pipeline = c.pipeline;
  s.layout.data = c.data;
  s.layout.virtual_stages = c.virtual_stages;
  s.layout.first_stage_layers = c.first_stage_layers;
  s.layout.last_stage_layers = c.last_stage_layers;
  s.layout.sequence_parallel = c.sequence_parallel;
  s.pipeline_schedule = schedule_name(c.schedule);
  s.zero_stage = c.zero_stage;
  s.recompute = c.recompute;
  s.recompute_k = c.recompute_k;
  s.overlap_grad_reduce = c.overlap_grad_reduce;
  s.overlap_param_gather = c.overlap_param_gather;
  s.overlap_tp_comm = c.overlap_tp_comm;
  return s;
}

std::string describe(const LayoutCandidate& c) {
  std::string out = fmt::format("t{} p{} d{}", c.tensor, c.pipeline, c.data);
  if (c.first_stage_layers > 0) out += fmt::format(" (first/last {}/{})", c.first_stage_layers, c.last_stage_layers);
  out += fmt::format(" mb{} ", c.micro_batch);
  out += c.schedule == Schedule::GPIPE ? "gpipe"
         : c.schedule == Schedule::INTERLEAVED ? fmt::format("interleaved v{}", c.virtual_stages)
                                                 : "1f1b";
  out += fmt::format(" zero{}", c.zero_stage);
  out += fmt::format(" recompute={}", recompute_name(c.recompute));
  if (c.recompute == strategies::Recompute::EVERY_K) out += fmt::format("({})", c.recompute_k);
  if (c.sequence_parallel) out += " sp";
  std::string overlaps;
  if (c.overlap_grad_reduce) overlaps += "grad";
  if (c.overlap_param_gather) overlaps += std::string(overlaps.empty() ? "" : ",") + "param";
  if (c.overlap_tp_comm) overlaps += std::string(overlaps.empty() ? "" : ",") + "tp";
  if (!overlaps.empty()) out += " overlap=" + overlaps;
  return out;
}

}  // namespace trainsim::scenarios
