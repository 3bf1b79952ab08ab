#include "cli/report.hpp"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "strategies/registry.hpp"

namespace trainsim::cli {

namespace {

constexpr double GIB = 1024.0 * 1024.0 * 1024.0;

const char* family_name(models::Family f) { return f == models::Family::GPT ? "gpt" : "llama"; }

struct Row {
  const char* name;
  double seconds;
};

std::vector<Row> time_rows(const strategies::TimeBreakdown& t) {
  return {{"compute", t.compute_s},           {"recompute", t.recompute_s},
          {"optimizer step", t.optimizer_s},  {"exposed tensor-parallel comm", t.exposed_tp_s},
          {"exposed data-parallel comm", t.exposed_dp_s}, {"exposed pipeline comm", t.exposed_pp_s},
          {"pipeline bubble / idle", t.bubble_s}};
}

const char* dim_name(strategies::Dim d) {
  switch (d) {
    case strategies::Dim::TENSOR: return "tensor";
    case strategies::Dim::DATA: return "data";
    case strategies::Dim::PIPELINE: return "pipeline";
  }
  return "unknown";
}

}  // namespace

std::string report_text(const scenarios::LoadedScenario& s, const report::RunReport& r) {
  const auto& spec = s.training;
  const auto& m = spec.model;
  const auto& l = spec.layout;
  std::string o;
  o += fmt::format("trainsim report: {}\n\n", s.file);
  o += fmt::format("model     {} ({}): {} layers, hidden {}, {} heads, ffn {}, vocab {}, {:.2f} B parameters\n",
                   m.name, family_name(m.family), m.layers, m.hidden, m.heads, m.ffn_hidden, m.vocab,
                   static_cast<double>(models::total_params(m)) / 1e9);
  o += fmt::format("cluster   {} nodes × {} {} = {} GPUs; fabric {} Gb/s per GPU, oversubscription {}\n",
                   s.cluster.nodes, s.cluster.gpus_per_node, s.cluster.gpu, r.gpus, s.cluster.nic_gbps,
                   s.cluster.oversubscription);
  o += fmt::format("layout    tensor {} × pipeline {} × data {}{}; sequence {}, micro-batch {}, global batch {} "
                   "({} micro-batches per pipeline); {}, {} gradients{}\n",
                   l.tensor, l.pipeline, l.data, l.sequence_parallel ? " (sequence parallel)" : "", spec.sequence,
                   spec.micro_batch, spec.global_batch, r.micro_batches, hardware::to_string(spec.dtype),
                   hardware::to_string(strategies::gradient_dtype(spec)),
                   spec.gradient_accumulation_fusion ? ""
                                                     : " (added by a kernel of their own: no accumulation fusion)");
  o += fmt::format("passes    {}\n", r.pipeline);
  o += fmt::format("fidelity  {} ({} tasks, {} events, {} flows)\n\n", r.fidelity, r.tasks, r.events, r.flows);

  o += "Iteration\n";
  o += fmt::format("  time                {:>12.4f} s\n", r.iteration_s);
  o += fmt::format("  throughput          {:>12.0f} tokens/s   {:.2f} samples/s\n", r.tokens_per_s, r.samples_per_s);
  o += fmt::format("  model TFLOP/s/GPU   {:>12.1f}            MFU {:.1f}% of {:.0f} TFLOP/s ({}), HFU {:.1f}%\n\n",
                   r.model_tflops_per_gpu, 100 * r.mfu, r.peak_flops_per_gpu / 1e12, hardware::to_string(spec.dtype),
                   100 * r.hfu);

  o += fmt::format("Time breakdown (rank {}, the GPU that finishes last)\n", r.time.rank);
  for (const auto& row : time_rows(r.time))
    o += fmt::format("  {:<30}{:>10.4f} s {:>6.1f}%\n", row.name, row.seconds, 100 * row.seconds / r.iteration_s);
  {
    const auto& k = r.compute_classes;
    // The slowdown is a difference of simulated and priced time: below the printed digits it
    // is the engine's picosecond rounding, printed as 0 rather than −0.0000.
    const double slowdown = std::abs(k.slowdown_s) < 5e-5 ? 0.0 : k.slowdown_s;
    o += fmt::format("  compute + recompute by class: GEMM {:.4f} s, attention {:.4f} s, memory-bound {:.4f} s, "
                     "recompute {:.4f} s, overlap slowdown {:.4f} s\n",
                     k.gemm_s, k.attention_s, k.memory_bound_s, k.recompute_s, slowdown);
  }
  o += '\n';

  if (!r.collectives.empty()) {
    o += "Collectives (algorithm/protocol and channels as NCCL's tuning model picks them)\n";
    for (const auto& c : r.collectives)
      o += fmt::format("  {:<9}{:<16}{:>10.2f} MB   {}/{}, {} channel{}\n", dim_name(c.dim), hardware::to_string(c.op),
                       c.bytes / 1e6, hardware::to_string(c.choice.algorithm), hardware::to_string(c.choice.protocol),
                       c.choice.channels, c.choice.channels == 1 ? "" : "s");
    o += '\n';
  }

  o += fmt::format("Memory at peak (rank {}, the most loaded GPU)\n", r.memory.rank);
  for (int c = 0; c < static_cast<int>(strategies::MemClass::COUNT); ++c)
    o += fmt::format("  {:<30}{:>10.2f} GiB\n", strategies::to_string(static_cast<strategies::MemClass>(c)),
                     r.memory.at_peak[static_cast<std::size_t>(c)] / GIB);
  o += fmt::format("  {:<30}{:>10.2f} GiB of {:.2f} GiB: {}\n", "peak", r.memory.peak_bytes / GIB,
                   r.memory.capacity_bytes / GIB, r.memory.out_of_memory ? "OUT OF MEMORY" : "fits");
  if (!r.layer_ops.empty()) {
    o += "\nMost expensive ops of a transformer layer (forward + backward, one micro-batch)\n";
    for (const auto& op : r.layer_ops)
      o += fmt::format("  {:<30}{:>10.3f} ms {:>6.1f}%\n", op.name, op.seconds * 1e3, 100 * op.share);
  }
  const auto& p = r.planning;
  o += fmt::format("\nPlanning ({:.3g} tokens)\n", p.train_tokens);
  o += fmt::format("  {:<30}{:>10.2f} days ({:.0f} iterations)\n", "time to train", p.time_s / 86400, p.iterations);
  o += fmt::format("  {:<30}{:>10.0f}\n", "GPU-hours", p.gpu_hours);
  o += fmt::format("  {:<30}{:>10.1f} MWh (board power × {:.0f}% utilization; idle draw not modelled)\n", "energy",
                   p.energy_kwh / 1000, 100 * p.utilization);
  if (p.price_per_gpu_hour > 0)
    o += fmt::format("  {:<30}{:>10.0f} (at {} per GPU-hour)\n", "cost", p.cost, p.price_per_gpu_hour);
  else
    o += fmt::format("  {:<30}{:>10} (set planning.price_per_gpu_hour)\n", "cost", "-");
  if (!s.notes.empty()) {
    o += "\nDefaults applied\n";
    for (const auto& n : s.notes) o += "  " + n + '\n';
  }
  return o;
}

std::string report_json(const scenarios::LoadedScenario& s, const report::RunReport& r) {
  using nlohmann::ordered_json;
  const auto& spec = s.training;
  ordered_json j;
  j["schema_version"] = REPORT_SCHEMA_VERSION;
  j["scenario"] = s.file;
  j["model"] = {{"name", spec.model.name},
                {"family", family_name(spec.model.family)},
                {"layers", spec.model.layers},
                {"hidden", spec.model.hidden},
                {"heads", spec.model.heads},
                {"ffn_hidden", spec.model.ffn_hidden},
                {"vocab", spec.model.vocab},
                {"parameters", models::total_params(spec.model)}};
  j["cluster"] = {{"gpu", s.cluster.gpu},
                  {"nodes", s.cluster.nodes},
                  {"gpus_per_node", s.cluster.gpus_per_node},
                  {"nic_gbps", s.cluster.nic_gbps},
                  {"oversubscription", s.cluster.oversubscription}};
  j["layout"] = {{"tensor", spec.layout.tensor},
                 {"pipeline", spec.layout.pipeline},
                 {"data", spec.layout.data},
                 {"sequence_parallel", spec.layout.sequence_parallel},
                 {"sequence", spec.sequence},
                 {"micro_batch", spec.micro_batch},
                 {"global_batch", spec.global_batch},
                 {"micro_batches_per_pipeline", r.micro_batches},
                 {"precision", hardware::to_string(spec.dtype)},
                 {"gradients", hardware::to_string(strategies::gradient_dtype(spec))},
                 {"gradient_accumulation_fusion", spec.gradient_accumulation_fusion}};
  j["passes"] = r.pipeline;
  j["fidelity"] = r.fidelity;
  j["engine"] = {{"tasks", r.tasks}, {"events", r.events}, {"flows", r.flows}};
  j["iteration"] = {{"time_s", r.iteration_s},
                    {"tokens_per_s", r.tokens_per_s},
                    {"samples_per_s", r.samples_per_s},
                    {"model_flops", r.model_flops},
                    {"model_tflops_per_gpu", r.model_tflops_per_gpu},
                    {"mfu", r.mfu},
                    {"recompute_flops", r.recompute_flops},
                    {"hfu", r.hfu},
                    {"peak_flops_per_gpu", r.peak_flops_per_gpu}};
  ordered_json t = {{"rank", r.time.rank}};
  t["compute_s"] = r.time.compute_s;
  t["recompute_s"] = r.time.recompute_s;
  t["optimizer_s"] = r.time.optimizer_s;
  t["exposed_comm_s"] = {{"tensor_parallel", r.time.exposed_tp_s},
                         {"data_parallel", r.time.exposed_dp_s},
                         {"pipeline", r.time.exposed_pp_s}};
  t["bubble_s"] = r.time.bubble_s;
  // compute_s + recompute_s by kernel class (report/compute_classes.hpp).
  const auto& k = r.compute_classes;
  t["compute_by_class_s"] = {{"gemm", k.gemm_s},
                             {"attention", k.attention_s},
                             {"memory_bound", k.memory_bound_s},
                             {"recompute", k.recompute_s},
                             {"overlap_slowdown", k.slowdown_s}};
  j["time_breakdown"] = t;
  ordered_json colls = ordered_json::array();
  for (const auto& c : r.collectives)
    colls.push_back({{"dim", dim_name(c.dim)},
                     {"collective", hardware::to_string(c.op)},
                     {"bytes", c.bytes},
                     {"algorithm", hardware::to_string(c.choice.algorithm)},
                     {"protocol", hardware::to_string(c.choice.protocol)},
                     {"channels", c.choice.channels}});
  j["collectives"] = colls;
  ordered_json mem = {{"rank", r.memory.rank}, {"peak_bytes", r.memory.peak_bytes}};
  ordered_json by_class;
  for (int c = 0; c < static_cast<int>(strategies::MemClass::COUNT); ++c)
    by_class[strategies::to_string(static_cast<strategies::MemClass>(c))] = r.memory.at_peak[static_cast<std::size_t>(c)];
  mem["at_peak_bytes"] = by_class;
  mem["capacity_bytes"] = r.memory.capacity_bytes;
  mem["out_of_memory"] = r.memory.out_of_memory;
  j["memory"] = mem;
  ordered_json ops = ordered_json::array();
  for (const auto& op : r.layer_ops) ops.push_back({{"op", op.name}, {"seconds", op.seconds}, {"share", op.share}});
  j["layer_top_ops"] = ops;
  const auto& p = r.planning;
  ordered_json plan = {{"train_tokens", p.train_tokens}, {"iterations", p.iterations}, {"time_s", p.time_s},
                       {"gpu_hours", p.gpu_hours}, {"utilization", p.utilization}, {"energy_kwh", p.energy_kwh}};
  if (p.price_per_gpu_hour > 0) {
    plan["price_per_gpu_hour"] = p.price_per_gpu_hour;
    plan["cost"] = p.cost;
  }
  j["planning"] = plan;
  j["defaults_applied"] = s.notes;
  // Names come from files (a scenario path, a config.json folder) and need not be UTF-8;
  // nlohmann::json would throw at dump time, so invalid bytes become U+FFFD.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string passes_text() {
  std::string o =
      "Pipeline strings (strategy.passes, and the \"passes\" line of every report) are\n"
      "name(arg,key=value),… in order, without spaces: a variant first, then positional\n"
      "parameters (marked below) without their names, then key=value; a flag is written as its name.\n\n";
  for (const auto& p : strategies::all_passes()) {
    auto list = [](const std::vector<std::string>& v) {
      std::string s;
      for (const auto& x : v) s += (s.empty() ? "" : " ") + (x.starts_with('-') ? "before:" + x.substr(1) : x);
      return s.empty() ? std::string("-") : s;
    };
    o += fmt::format("{:<34} {:<8} requires: {:<24} provides: {}\n", p.signature(), strategies::to_string(p.kind),
                     list(p.needs), list(p.gives));
    o += fmt::format("    {}\n", p.description);
    for (const auto& param : p.params) {
      std::string range;
      if (param.type == strategies::ParamInfo::Type::BOOL) {
        range = "flag (write its name to set it)";
      } else {
        range = "integer";
        if (param.min != INT64_MIN) range += fmt::format(" ≥ {}", param.min);
        if (param.max != INT64_MAX) range += fmt::format(" ≤ {}", param.max);
        range += param.required ? ", required" : fmt::format(", default {}", param.default_value);
      }
      o += fmt::format("    {:<6} {}{}\n", param.name, range, param.positional ? " (positional)" : "");
    }
  }
  return o;
}

}  // namespace trainsim::cli
