#include "scenarios/run_row.hpp"

#include <array>
#include <utility>

#include <fmt/format.h>

#include "scenarios/layout_space.hpp"
#include "scenarios/message_text.hpp"

namespace trainsim::scenarios {

namespace {

struct ColumnField {
  std::string_view column;
  std::string_view field;
};

// Every column that becomes a scenario field. `gpus` has no field of its own: it becomes
// cluster.nodes = gpus / gpus_per_node.
constexpr std::array<ColumnField, 27> COLUMN_FIELDS = {{
    {"family", "model.family"},
    {"layers", "model.num_layers"},
    {"hidden", "model.hidden_size"},
    {"heads", "model.num_attention_heads"},
    {"kv_heads", "model.num_query_groups"},
    {"ffn", "model.ffn_hidden_size"},
    {"vocab", "model.vocab_size"},
    {"seq", "training.sequence_length"},
    {"gpu", "cluster.gpu"},
    {"gpus", "cluster.nodes"},
    {"gpus_per_node", "cluster.gpus_per_node"},
    {"nic_gbps", "cluster.fabric.fat_tree.nic_gbps"},
    {"tp", "parallel.tensor"},
    {"pp", "parallel.pipeline"},
    {"dp", "parallel.data"},
    {"cp", "parallel.context"},
    {"ep", "parallel.expert"},
    {"vpp", "parallel.virtual_stages"},
    {"first_stage_layers", "parallel.first_stage_layers"},
    {"last_stage_layers", "parallel.last_stage_layers"},
    {"micro_batch", "training.micro_batch_size"},
    {"global_batch", "training.global_batch_size"},
    {"recompute", "strategy.recompute"},
    {"sequence_parallel", "parallel.sequence_parallel"},
    {"zero_stage", "strategy.zero_stage"},
    {"precision", "training.precision"},
    {"attention", "training.attention"},
}};

Precision precision_of(hardware::Dtype d) {
  switch (d) {
    case hardware::Dtype::FP16: return FP16;
    case hardware::Dtype::FP8: return FP8;
    default: return BF16;
  }
}

}  // namespace

std::string DefaultUsed::str() const {
  return why.empty() ? fmt::format("{}={}", column, value) : fmt::format("{}={} ({})", column, value, why);
}

std::string_view column_of_field(std::string_view field) {
  for (const auto& [column, f] : COLUMN_FIELDS)
    if (f == field) return column;
  if (field.starts_with("strategy.overlap_")) return "overlap";
  return {};
}

RowScenario row_scenario(const RunRow& row) {
  RowScenario out;
  Scenario& s = out.scenario;
  auto defaulted = [&](const char* column, std::string value, std::string why = "") {
    out.defaults.push_back({column, std::move(value), std::move(why)});
  };
  s.set_name(row.name);

  Model& model = *s.mutable_model();
  model.set_family(row.family == models::Family::LLAMA ? LLAMA : GPT);
  model.set_num_layers(row.layers);
  model.set_hidden_size(row.hidden);
  model.set_num_attention_heads(row.heads);
  model.set_num_query_groups(row.kv_heads);
  model.set_ffn_hidden_size(row.ffn);
  model.set_vocab_size(row.vocab);
  // The format's families say the rest: GPT's position table is as long as the sequence
  // (the scenario default), Llama has none; GPT ties its head, Llama does not (both follow
  // the family when no preset is named).

  Cluster& cluster = *s.mutable_cluster();
  cluster.set_gpu(row.gpu);
  cluster.set_gpus_per_node(row.gpus_per_node);
  if (row.gpus_per_node > 0 && row.gpus % row.gpus_per_node == 0) {
    cluster.set_nodes(row.gpus / row.gpus_per_node);
  } else {
    out.problems.push_back(
        fmt::format("column \"gpus\": gpus={} is not a multiple of gpus_per_node={}", row.gpus, row.gpus_per_node));
  }
  // The table describes no fabric beyond the NIC rate: the scenario's default fat tree
  // (non-blocking, 32 nodes per leaf), as the sources' DGX SuperPODs are built.
  cluster.mutable_fabric()->mutable_fat_tree()->set_nic_gbps(row.nic_gbps);

  Training& training = *s.mutable_training();
  training.set_sequence_length(row.seq);
  training.set_global_batch_size(row.global_batch);
  training.set_micro_batch_size(row.micro_batch.value_or(1));
  training.set_precision(precision_of(row.precision.value_or(hardware::Dtype::BF16)));
  training.set_attention(row.flash_attention.value_or(true) ? FLASH : UNFUSED);

  Parallel& parallel = *s.mutable_parallel();
  parallel.set_tensor(row.tp);
  parallel.set_pipeline(row.pp);
  if (row.dp) parallel.set_data(*row.dp);
  parallel.set_context(row.cp.value_or(1));
  parallel.set_expert(row.ep.value_or(1));
  parallel.set_virtual_stages(row.vpp.value_or(1));
  if (row.first_stage_layers) parallel.set_first_stage_layers(*row.first_stage_layers);
  if (row.last_stage_layers) parallel.set_last_stage_layers(*row.last_stage_layers);

  Strategy& strategy = *s.mutable_strategy();
  const Overlap overlap = row.overlap.value_or(Overlap{});
  strategy.set_pipeline_schedule(row.vpp.value_or(1) > 1 ? "interleaved-1f1b" : "1f1b");
  strategy.set_recompute(recompute_name(row.recompute.value_or(strategies::Recompute::NONE)));
  strategy.set_overlap_grad_reduce(overlap.grad_reduce);
  strategy.set_overlap_param_gather(overlap.param_gather);
  strategy.set_overlap_tp_comm(overlap.tp_comm);

  // Defaults, in column order.
  if (!row.dp) {
    const std::int64_t model_parallel = row.tp * row.pp * row.cp.value_or(1);  // each ≤ limits::GPUS: no overflow
    if (model_parallel > 0 && row.gpus % model_parallel == 0)
      defaulted("dp", std::to_string(row.gpus / model_parallel),
                fmt::format("derived: gpus / (tp × pp × cp) = {} / ({} × {} × {})", row.gpus, row.tp, row.pp,
                            row.cp.value_or(1)));
  }
  if (!row.cp) defaulted("cp", "1");
  if (!row.ep) defaulted("ep", "1");
  if (!row.vpp) defaulted("vpp", "1");
  if (!row.first_stage_layers && !row.last_stage_layers && row.pp > 1) defaulted("first/last_stage_layers", "even");
  if (!row.micro_batch) defaulted("micro_batch", "1");
  if (!row.recompute) defaulted("recompute", "none");
  bool sequence_parallel = row.sequence_parallel.value_or(false);
  if (!row.sequence_parallel) {
    if (overlap.tp_comm && row.tp > 1) {
      sequence_parallel = true;
      defaulted("sequence_parallel", "1",
                "overlap has tp_comm: Megatron-LM refuses --tp-comm-overlap without --sequence-parallel");
    } else {
      defaulted("sequence_parallel", "0");
    }
  }
  parallel.set_sequence_parallel(sequence_parallel);
  if (row.zero_stage) {
    strategy.set_zero_stage(*row.zero_stage);
  } else if (overlap.param_gather) {
    strategy.set_zero_stage(1);
    defaulted("zero_stage", "1",
              "overlap has param_gather: the parameter all-gather exists only with the distributed optimizer, "
              "which is ZeRO stage 1");
  } else {
    strategy.set_zero_stage(0);
    defaulted("zero_stage", "0");
  }
  if (!row.precision) defaulted("precision", "bf16");
  if (!row.flash_attention) defaulted("attention", "flash", "a fused attention kernel, as current frameworks run");
  if (!row.overlap) defaulted("overlap", "none");
  return out;
}

LoadedRow load_row(const RunRow& row, const std::string& file) {
  RowScenario mapped = row_scenario(row);
  LoadedRow out{std::move(mapped.defaults), std::vector<Diagnostic>{}};
  LoadResult loaded = load_message(mapped.scenario, file);
  std::vector<Diagnostic> problems;
  for (auto& p : mapped.problems) problems.push_back({file, row.line, 0, "", std::move(p)});
  if (auto* diagnostics = std::get_if<std::vector<Diagnostic>>(&loaded)) {
    for (Diagnostic d : *diagnostics) {
      d.line = row.line;
      d.column = 0;
      if (const std::string_view column = column_of_field(d.field); !column.empty())
        d.field = fmt::format("column \"{}\" ({})", column, d.field);
      problems.push_back(std::move(d));
    }
  }
  if (problems.empty()) {
    out.scenario = std::move(loaded);
  } else {
    out.scenario = std::move(problems);
  }
  return out;
}

std::string row_defaults_help() {
  return "An empty cell means the source did not state the value; it takes this default, and the\n"
         "output names every default each row used:\n"
         "  column             default\n"
         "  dp                 derived: gpus / (tp x pp x cp)\n"
         "  cp, ep             1\n"
         "  vpp                1 (schedule 1f1b; vpp > 1 asks for interleaved-1f1b)\n"
         "  first_stage_layers, last_stage_layers\n"
         "                     even split of the layers over the pipeline stages\n"
         "  micro_batch        1\n"
         "  recompute          none\n"
         "  sequence_parallel  0, or 1 when overlap has tp_comm and tp > 1 (Megatron-LM refuses\n"
         "                     --tp-comm-overlap without --sequence-parallel)\n"
         "  zero_stage         0, or 1 when overlap has param_gather (that overlap exists only with\n"
         "                     the distributed optimizer, which is ZeRO stage 1)\n"
         "  precision          bf16\n"
         "  attention          flash (a fused attention kernel)\n"
         "  overlap            none\n"
         "Every other column needs a value. The fabric is the scenario default: a non-blocking fat\n"
         "tree (oversubscription 1, 32 nodes per leaf). Each row becomes a scenario and is checked\n"
         "by the scenario rules; a row that breaks one, or asks for what trainsim cannot build yet\n"
         "(a GPU without a profile, cp or ep above 1), is listed as SKIPPED with the reason.\n";
}

}  // namespace trainsim::scenarios
