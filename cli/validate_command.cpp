#include "cli/validate_command.hpp"

#include <cctype>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <ostream>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/detail/output_file.hpp"
#include "cli/detail/text.hpp"
#include "cli/memory_budget.hpp"
#include "hardware/cost_model.hpp"
#include "hardware/gpu_profile.hpp"
#include "sim/simulate.hpp"
#include "report/run_report.hpp"
#include "sim/time.hpp"
#include "strategies/layout_rules.hpp"
#include "strategies/plan_size.hpp"
#include "strategies/registry.hpp"

namespace trainsim::cli {

namespace {

using detail::join;

// The first four-digit year (1900–2099) in a provenance string, 0 if none.
int source_year(const std::string& source) {
  for (std::size_t i = 0; i + 4 <= source.size(); ++i) {
    const bool start = i == 0 || !std::isdigit(static_cast<unsigned char>(source[i - 1]));
    const bool end = i + 4 == source.size() || !std::isdigit(static_cast<unsigned char>(source[i + 4]));
    if (!start || !end) continue;
    bool digits = true;
    for (std::size_t j = i; j < i + 4; ++j) digits = digits && std::isdigit(static_cast<unsigned char>(source[j]));
    if (!digits) continue;
    const int y = std::stoi(source.substr(i, 4));
    if (y >= 1900 && y < 2100) return y;
  }
  return 0;
}

constexpr double GIB = 1024.0 * 1024.0 * 1024.0;

// The fabric the table does not describe: a non-blocking fat tree with the leaf size of
// the shipped node presets. The table's sources ran on such clusters (DGX SuperPODs).
constexpr double OVERSUBSCRIPTION = 1.0;
constexpr std::int64_t NODES_PER_LEAF = 32;


// Products of table numbers can overflow on hostile input; nullopt when they do.
std::optional<std::int64_t> multiply(std::int64_t a, std::int64_t b) {
  std::int64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

const char* recompute_name(strategies::Recompute r) {
  switch (r) {
    case strategies::Recompute::NONE: return "none";
    case strategies::Recompute::SELECTIVE: return "selective";
    case strategies::Recompute::FULL: return "full";
  }
  return "?";
}

// The shape rules the model and layout passes rely on, checked here so that a row that
// breaks one is reported as such instead of reaching code that assumes them.
void check_layout(const RunRow& row, std::int64_t cp, std::int64_t micro_batch, std::int64_t vpp,
                  std::optional<std::int64_t> dp, std::vector<std::string>& invalid) {
  auto bad = [&](std::string what) { invalid.push_back(std::move(what)); };
  if (row.hidden % row.heads != 0) bad(fmt::format("heads={} does not divide hidden={}", row.heads, row.hidden));
  if (row.heads % row.kv_heads != 0)
    bad(fmt::format("kv_heads={} does not divide heads={}", row.kv_heads, row.heads));
  if (row.gpus % row.gpus_per_node != 0)
    bad(fmt::format("gpus={} is not a multiple of gpus_per_node={}", row.gpus, row.gpus_per_node));
  const auto& w = strategies::RUNS_TABLE_WORDS;
  auto check = [&](std::string message) {
    if (message.empty()) return true;
    bad(std::move(message));
    return false;
  };
  if (check(strategies::tensor_divides_heads(row.tp, row.heads, w))) check(strategies::tensor_divides_kv_heads(row.tp, row.kv_heads, w));
  if (check(strategies::pipeline_divides_layers(row.pp, row.layers, w)) &&
      check(strategies::virtual_stages_need_pipeline(vpp, row.pp, w)))
    check(strategies::virtual_stages_divide_layers(vpp, row.pp, row.layers, w));
  if (!dp) return;  // not derivable: already reported
  const std::string world =
      strategies::layout_product_mismatch({{"tp", row.tp}, {"pp", row.pp}, {"cp", cp}, {"dp", *dp}}, row.gpus);
  if (!world.empty()) bad(fmt::format("{}, but gpus={}", world, row.gpus));
  check(strategies::batch_divides(row.global_batch, micro_batch, *dp, w));
}

}  // namespace

std::string DefaultUsed::str() const {
  return why.empty() ? fmt::format("{}={}", column, value) : fmt::format("{}={} ({})", column, value, why);
}

MappedRow map_row(const RunRow& row) {
  MappedRow m;
  std::vector<std::string> not_built;  // what trainsim cannot model yet
  std::vector<std::string> invalid;    // what the row gets wrong
  auto defaulted = [&](const char* column, std::string value, std::string why = "") {
    m.defaults.push_back({column, std::move(value), std::move(why)});
  };

  // read_runs_table gives only positive sizes; a RunRow built by other code may not, and
  // the checks below divide by them.
  const std::vector<std::pair<const char*, std::int64_t>> sizes = {
      {"layers", row.layers}, {"hidden", row.hidden}, {"heads", row.heads}, {"kv_heads", row.kv_heads},
      {"ffn", row.ffn},       {"vocab", row.vocab},   {"seq", row.seq},     {"gpus", row.gpus},
      {"gpus_per_node", row.gpus_per_node}, {"tp", row.tp}, {"pp", row.pp}, {"global_batch", row.global_batch},
      {"dp", row.dp.value_or(1)}, {"cp", row.cp.value_or(1)}, {"ep", row.ep.value_or(1)},
      {"vpp", row.vpp.value_or(1)}, {"micro_batch", row.micro_batch.value_or(1)}};
  for (const auto& [column, value] : sizes)
    if (value < 1) invalid.push_back(fmt::format("{}={} (valid: ≥ 1)", column, value));
  if (!(std::isfinite(row.nic_gbps) && row.nic_gbps > 0))
    invalid.push_back(fmt::format("nic_gbps={} (valid: > 0)", row.nic_gbps));
  if (!(std::isfinite(row.value) && row.value > 0)) invalid.push_back(fmt::format("value={} (valid: > 0)", row.value));
  if (!invalid.empty()) {
    m.skip_reasons.push_back("inconsistent row: " + join(invalid, "; "));
    return m;
  }

  models::ModelConfig& model = m.training.model;
  model.name = row.name;
  model.family = row.family;
  model.layers = row.layers;
  model.hidden = row.hidden;
  model.heads = row.heads;
  model.kv_heads = row.kv_heads;
  model.ffn_hidden = row.ffn;
  model.vocab = row.vocab;
  // The format's families: GPT learns a position table as long as the sequence and ties
  // its output head to the embedding; Llama uses RoPE (no table) and an untied head.
  const bool gpt = row.family == models::Family::GPT;
  model.max_positions = gpt ? row.seq : 0;
  model.tied_embedding = gpt;

  m.gpu = hardware::find_profile(row.gpu);
  if (!m.gpu) {
    not_built.push_back(fmt::format("no GPU profile for {} yet (profiles: {})", row.gpu,
                                    join(hardware::profile_names())));
  }
  m.cluster.gpu = row.gpu;
  m.cluster.gpus_per_node = row.gpus_per_node;
  m.cluster.nodes = row.gpus / row.gpus_per_node;
  m.cluster.nic_gbps = row.nic_gbps;
  m.cluster.oversubscription = OVERSUBSCRIPTION;
  m.cluster.nodes_per_leaf = NODES_PER_LEAF;

  // Defaults, in column order.
  const std::int64_t cp = row.cp.value_or(1);
  std::optional<std::int64_t> dp = row.dp;
  if (!dp) {
    const auto tp_pp = multiply(row.tp, row.pp);
    const auto model_parallel = tp_pp ? multiply(*tp_pp, cp) : std::nullopt;
    if (model_parallel && row.gpus % *model_parallel == 0) {
      dp = row.gpus / *model_parallel;
      defaulted("dp", std::to_string(*dp),
                cp == 1 ? fmt::format("derived: gpus / (tp × pp) = {} / ({} × {})", row.gpus, row.tp, row.pp)
                        : fmt::format("derived: gpus / (tp × pp × cp) = {} / ({} × {} × {})", row.gpus, row.tp,
                                      row.pp, cp));
    } else {
      invalid.push_back(fmt::format("dp cannot be derived: gpus={} is not divisible by tp × pp × cp = {} × {} × {}",
                                    row.gpus, row.tp, row.pp, cp));
    }
  }
  if (!row.cp) defaulted("cp", "1");
  if (cp != 1) not_built.push_back(fmt::format("context parallelism not built yet (cp={})", cp));
  const std::int64_t ep = row.ep.value_or(1);
  if (!row.ep) defaulted("ep", "1");
  if (ep != 1) not_built.push_back(fmt::format("expert parallelism not built yet (ep={})", ep));
  const std::int64_t vpp = row.vpp.value_or(1);
  if (!row.vpp) defaulted("vpp", "1");
  const std::int64_t micro_batch = row.micro_batch.value_or(1);
  if (!row.micro_batch) defaulted("micro_batch", "1");
  const strategies::Recompute recompute = row.recompute.value_or(strategies::Recompute::NONE);
  if (!row.recompute) defaulted("recompute", recompute_name(recompute));
  const Overlap overlap = row.overlap.value_or(Overlap{});
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
  // The table has no column for the attention kernel: it follows what existed when the
  // source ran. FlashAttention (Dao et al.) appeared in 2022; Megatron-LM before it ran
  // the attention core as separate kernels.
  const int year = source_year(row.source);
  const bool flash = year == 0 || year >= 2022;
  defaulted("attention", flash ? "flash" : "unfused",
            year == 0 ? "the source names no year: a fused attention kernel, as current frameworks use"
                      : fmt::format("the source is from {}; FlashAttention appeared in 2022", year));
  std::int64_t zero_stage = 0;
  if (row.zero_stage) {
    zero_stage = *row.zero_stage;
    if (overlap.param_gather && zero_stage == 0) {
      invalid.push_back("overlap has param_gather, which needs the distributed optimizer "
                        "(zero_stage ≥ 1), but zero_stage=0");
    }
  } else if (overlap.param_gather) {
    zero_stage = 1;
    defaulted("zero_stage", "1",
              "overlap has param_gather: the parameter all-gather exists only with the distributed optimizer, "
              "which is ZeRO stage 1");
  } else {
    defaulted("zero_stage", "0");
  }
  const hardware::Dtype dtype = row.precision.value_or(hardware::Dtype::BF16);
  if (!row.precision) defaulted("precision", hardware::to_string(dtype));
  if (!row.overlap) defaulted("overlap", "none");

  if (dtype == hardware::Dtype::FP8 && m.gpu && !(m.gpu->peak_fp8_flops().value() > 0)) {
    invalid.push_back(fmt::format("precision fp8 needs FP8 tensor cores, which {} lacks", row.gpu));
  }
  check_layout(row, cp, micro_batch, vpp, dp, invalid);

  strategies::TrainingSpec& spec = m.training;
  spec.sequence = row.seq;
  spec.global_batch = row.global_batch;
  spec.micro_batch = micro_batch;
  spec.dtype = dtype;
  spec.layout.tensor = row.tp;
  spec.layout.pipeline = row.pp;
  spec.layout.data = dp.value_or(1);
  spec.layout.sequence_parallel = sequence_parallel;
  spec.layout.virtual_stages = vpp;
  spec.pipeline_schedule = vpp > 1 ? "interleaved-1f1b" : "1f1b";
  spec.zero_stage = zero_stage;
  spec.recompute = recompute;
  spec.overlap_grad_reduce = overlap.grad_reduce;
  spec.overlap_param_gather = overlap.param_gather;
  spec.overlap_tp_comm = overlap.tp_comm;
  spec.flash_attention = flash;

  m.skip_reasons = std::move(not_built);
  if (!invalid.empty()) m.skip_reasons.push_back("inconsistent row: " + join(invalid, "; "));
  return m;
}

RowOutcome validate_row(const RunRow& row, strategies::Fidelity fidelity, double max_memory_bytes) {
  RowOutcome o;
  o.name = row.name;
  o.line = row.line;
  o.measured_s = row.value;
  const MappedRow m = map_row(row);
  o.defaults = m.defaults;
  if (!m.skip_reasons.empty()) {
    o.skip_reason = join(m.skip_reasons, "; ");
    return o;
  }
  try {
    const hardware::Cluster cluster(m.cluster, *m.gpu);
    const hardware::CostModel cost(*m.gpu);
    const double budget = max_memory_bytes > 0 ? max_memory_bytes : default_memory_budget();
    strategies::check_plan_size(strategies::estimate_program(m.training), nullptr, fidelity, budget);
    const strategies::Program program = strategies::build_program(m.training);
    const strategies::PlanSize fast = strategies::estimate_plan(program, strategies::Fidelity::FAST);
    strategies::check_plan_size(strategies::estimate_plan(program, fidelity), &fast, fidelity, budget);
    const strategies::Lowered lowered = strategies::lower(program, cluster, cost, fidelity);
    const sim::Timeline timeline = sim::simulate(lowered.plan, lowered.network);
    const report::RunReport report = report::analyze(program, lowered, timeline, cluster, cost);
    if (!(std::isfinite(report.iteration_s) && report.iteration_s > 0)) {
      o.skip_reason = fmt::format("the simulation gave no usable iteration time ({})", report.iteration_s);
      return o;
    }
    o.ran = true;
    o.predicted_s = report.iteration_s;
    o.error_pct = (report.iteration_s - row.value) / row.value * 100.0;
    o.out_of_memory = report.memory.out_of_memory;
    o.peak_gib = report.memory.peak_bytes / GIB;
    o.capacity_gib = report.memory.capacity_bytes / GIB;
    o.pipeline = report.pipeline;
  } catch (const sim::TimeRangeError& e) {
    o.skip_reason = fmt::format("the iteration lasts longer than the engine's time range: {}", e.what());
  } catch (const std::invalid_argument& e) {
    // The run is valid but asks for something the strategies cannot build yet (or does
    // not fit the memory budget: strategies::PlanTooLarge).
    o.skip_reason = e.what();
  } catch (const std::exception& e) {
    // Anything else is a simulator bug; it stops this row only.
    o.skip_reason = fmt::format("simulator failure (a trainsim bug; please report it with this row): {}", e.what());
  }
  return o;
}

ValidationResult validate_table(const RunsTable& table, strategies::Fidelity fidelity, double max_memory_bytes) {
  ValidationResult r;
  r.file = table.file;
  r.fidelity = fidelity;
  double sum = 0;
  for (const RunRow& row : table.rows) {
    r.rows.push_back(validate_row(row, fidelity, max_memory_bytes));
    const RowOutcome& o = r.rows.back();
    if (!o.ran) {
      ++r.skipped;
      continue;
    }
    ++r.run;
    sum += std::abs(o.error_pct);
    // Strictly larger: the first of equal errors, in table order, is the worst.
    if (!r.worst || std::abs(o.error_pct) > std::abs(r.rows[*r.worst].error_pct)) r.worst = r.rows.size() - 1;
  }
  if (r.run > 0) r.mape_pct = sum / static_cast<double>(r.run);
  return r;
}

std::string validation_text(const ValidationResult& r) {
  std::size_t width = 4;
  for (const auto& row : r.rows) width = std::max(width, row.name.size());
  std::string o = fmt::format("trainsim validate: {} ({} rows, fidelity {})\n\n", r.file, r.rows.size(),
                              strategies::to_string(r.fidelity));
  o += fmt::format("{:<{}}  {:>10}  {:>11}  {:>8}\n", "name", width, "measured s", "predicted s", "error");
  for (const auto& row : r.rows) {
    if (row.ran) {
      o += fmt::format("{:<{}}  {:>10.4f}  {:>11.4f}  {:>+7.2f}%", row.name, width, row.measured_s, row.predicted_s,
                       row.error_pct);
      if (row.out_of_memory)
        o += fmt::format("  (predicted out of memory: {:.1f} of {:.1f} GiB)", row.peak_gib, row.capacity_gib);
      o += "\n";
    } else {
      o += fmt::format("{:<{}}  {:>10.4f}  SKIPPED: {}\n", row.name, width, row.measured_s, row.skip_reason);
    }
    if (!row.defaults.empty()) {
      std::vector<std::string> used;
      for (const auto& d : row.defaults) used.push_back(d.str());
      o += fmt::format("    defaults: {}\n", join(used));
    }
  }
  o += fmt::format("\nrows run: {}, skipped: {}\n", r.run, r.skipped);
  if (r.mape_pct) {
    const RowOutcome& worst = r.rows[*r.worst];
    o += fmt::format("mean absolute percentage error: {:.2f}% over the {} rows run\n", *r.mape_pct, r.run);
    o += fmt::format("worst row: {} ({:+.2f}%)\n", worst.name, worst.error_pct);
  } else {
    o += "mean absolute percentage error: n/a (no row ran)\n";
  }
  return o;
}

std::string validation_json(const ValidationResult& r) {
  using Json = nlohmann::ordered_json;
  Json rows = Json::array();
  for (const auto& row : r.rows) {
    Json j;
    j["name"] = row.name;
    j["line"] = row.line;
    j["measured_s"] = row.measured_s;
    j["status"] = row.ran ? "run" : "skipped";
    if (row.ran) {
      j["predicted_s"] = row.predicted_s;
      j["error_pct"] = row.error_pct;
      j["pipeline"] = row.pipeline;
      j["out_of_memory"] = row.out_of_memory;
    } else {
      j["skip_reason"] = row.skip_reason;
    }
    Json defaults = Json::array();
    for (const auto& d : row.defaults) defaults.push_back({{"column", d.column}, {"value", d.value}, {"why", d.why}});
    j["defaults"] = std::move(defaults);
    rows.push_back(std::move(j));
  }
  Json summary;
  summary["rows_run"] = r.run;
  summary["rows_skipped"] = r.skipped;
  summary["mape_pct"] = r.mape_pct ? Json(*r.mape_pct) : Json(nullptr);
  summary["worst"] = r.worst ? Json{{"name", r.rows[*r.worst].name}, {"error_pct", r.rows[*r.worst].error_pct}}
                             : Json(nullptr);
  Json out;
  out["schema_version"] = VALIDATION_SCHEMA_VERSION;
  out["file"] = r.file;
  out["fidelity"] = strategies::to_string(r.fidelity);
  out["rows"] = std::move(rows);
  out["summary"] = std::move(summary);
  // Row names and paths need not be UTF-8: invalid bytes become U+FFFD instead of a throw.
  return out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string defaults_help() {
  return "An empty cell means the source did not state the value; it takes this default, and the\n"
         "output names every default each row used:\n"
         "  column             default\n"
         "  dp                 derived: gpus / (tp x pp x cp)\n"
         "  cp, ep             1\n"
         "  vpp                1 (schedule 1f1b; vpp > 1 asks for interleaved-1f1b)\n"
         "  micro_batch        1\n"
         "  recompute          none\n"
         "  sequence_parallel  0, or 1 when overlap has tp_comm and tp > 1 (Megatron-LM refuses\n"
         "                     --tp-comm-overlap without --sequence-parallel)\n"
         "  zero_stage         0, or 1 when overlap has param_gather (that overlap exists only with\n"
         "                     the distributed optimizer, which is ZeRO stage 1)\n"
         "  precision          bf16\n"
         "  overlap            none\n"
         "  attention          (no column) unfused when the first year in `source` is before 2022,\n"
         "                     when FlashAttention appeared; a fused (flash) kernel otherwise\n"
         "Every other column needs a value. The fabric is a non-blocking fat tree (oversubscription 1,\n"
         "32 nodes per leaf). A row whose GPU has no profile, whose cp or ep is not 1, or whose run\n"
         "needs a strategy pass that is not implemented is listed as SKIPPED with the reason.\n";
}

int validate_command(const ValidateOptions& options, std::ostream& out, std::ostream& err) {
  const TableResult read = read_runs_table_file(options.table_path);
  if (const auto* errors = std::get_if<std::vector<TableError>>(&read)) {
    for (const auto& e : *errors) err << e.str() << '\n';
    return 1;
  }
  const auto& table = std::get<RunsTable>(read);
  for (const auto& w : table.warnings) err << w.str() << '\n';
  if (auto refused = detail::refuse_overwriting_inputs({{"--json", options.json_path}}, {options.table_path})) {
    err << *refused << '\n';
    return 1;
  }
  const ValidationResult result = validate_table(table, options.fidelity, options.max_memory_bytes);
  out << validation_text(result);
  if (!options.json_path.empty()) {
    detail::OutputFile json(options.json_path);
    json.stream() << validation_json(result);
    if (!json.commit()) {
      err << json.error() << '\n';
      return 1;
    }
  }
  return 0;
}

}  // namespace trainsim::cli
