#include "cli/validate_command.hpp"

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
#include "cli/run_command.hpp"
#include "report/run_report.hpp"
#include "sim/time.hpp"

namespace trainsim::cli {

namespace {

using detail::join;

constexpr double GIB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

RowOutcome validate_row(const scenarios::RunRow& row, const std::string& file, strategies::Fidelity fidelity,
                        double max_memory_bytes) {
  RowOutcome o;
  o.name = row.name;
  o.line = row.line;
  o.measured_s = row.value;
  scenarios::LoadedRow loaded = scenarios::load_row(row, file);
  o.defaults = std::move(loaded.defaults);
  if (const auto* problems = std::get_if<std::vector<scenarios::Diagnostic>>(&loaded.scenario)) {
    std::vector<std::string> reasons;
    for (const auto& d : *problems) reasons.push_back(d.field.empty() ? d.message : d.field + ": " + d.message);
    o.skip_reason = join(reasons, "; ");
    return o;
  }
  const auto& scenario = std::get<scenarios::LoadedScenario>(loaded.scenario);
  try {
    // The row runs exactly as `trainsim run` would run its scenario.
    const RunResult run = simulate_scenario(scenario, fidelity, nullptr, max_memory_bytes);
    const report::RunReport& report = run.report;
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
    o.report_json = run.json;
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

std::vector<UnstatedAlternative> unstated_alternatives(const scenarios::RunRow& row, const std::string& file,
                                                       strategies::Fidelity fidelity, double max_memory_bytes) {
  std::vector<UnstatedAlternative> out;
  const scenarios::LoadedRow loaded = scenarios::load_row(row, file);
  const auto* scenario = std::get_if<scenarios::LoadedScenario>(&loaded.scenario);
  if (scenario == nullptr) return out;  // the row itself does not build: nothing to vary
  const strategies::TrainingSpec& spec = scenario->training;
  auto attempt = [&](const char* column, std::string value, scenarios::RunRow changed) {
    UnstatedAlternative a;
    a.column = column;
    a.value = std::move(value);
    const RowOutcome o = validate_row(changed, file, fidelity, max_memory_bytes);
    a.ran = o.ran;
    a.predicted_s = o.predicted_s;
    a.error_pct = o.error_pct;
    a.out_of_memory = o.out_of_memory;
    a.skip_reason = o.skip_reason;
    out.push_back(std::move(a));
  };
  if (!row.micro_batch) {
    const std::int64_t replica_batch = spec.global_batch / std::max<std::int64_t>(1, spec.layout.data);
    for (std::int64_t m = 2; m <= replica_batch; m *= 2) {
      if (replica_batch % m != 0) continue;
      scenarios::RunRow changed = row;
      changed.micro_batch = m;
      attempt("micro_batch", std::to_string(m), std::move(changed));
      // A larger micro-batch only holds more activations: past the first that does not fit,
      // none would.
      if (out.back().out_of_memory) break;
    }
  }
  const bool even_split = !row.first_stage_layers && !row.last_stage_layers;
  if (!row.vpp && even_split && spec.layout.pipeline > 1 && spec.model.layers % spec.layout.pipeline == 0) {
    const std::int64_t stage_layers = spec.model.layers / spec.layout.pipeline;
    for (std::int64_t v = 2; v <= stage_layers; ++v) {
      if (stage_layers % v != 0) continue;
      scenarios::RunRow changed = row;
      changed.vpp = v;
      attempt("vpp", std::to_string(v), std::move(changed));
    }
  }
  if (!row.recompute) {
    for (const auto& [name, policy] : {std::pair{"selective", strategies::Recompute::SELECTIVE},
                                       std::pair{"full", strategies::Recompute::FULL}}) {
      scenarios::RunRow changed = row;
      changed.recompute = policy;
      attempt("recompute", name, std::move(changed));
    }
  }
  if (!row.sequence_parallel && spec.layout.tensor > 1 && !spec.layout.sequence_parallel) {
    scenarios::RunRow changed = row;
    changed.sequence_parallel = true;
    attempt("sequence_parallel", "1", std::move(changed));
  }
  return out;
}

ValidationResult validate_table(const scenarios::RunsTable& table, strategies::Fidelity fidelity, double max_memory_bytes,
                                bool unstated) {
  ValidationResult r;
  r.file = table.file;
  r.fidelity = fidelity;
  double sum = 0;
  for (const scenarios::RunRow& row : table.rows) {
    r.rows.push_back(validate_row(row, table.file, fidelity, max_memory_bytes));
    if (unstated && r.rows.back().ran)
      r.rows.back().unstated = unstated_alternatives(row, table.file, fidelity, max_memory_bytes);
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

namespace {

// "    unstated micro_batch: 2 → 0.9544 s (+7.04%), 4 → 0.7977 s (-10.54%)", a line per
// column varied; values the rules refuse are counted, their reasons are in the JSON.
std::string unstated_text(const RowOutcome& row) {
  std::string o;
  for (const char* column : {"micro_batch", "vpp", "recompute", "sequence_parallel"}) {
    std::vector<std::string> ran;
    std::size_t refused = 0;
    for (const UnstatedAlternative& a : row.unstated) {
      if (a.column != column) continue;
      if (!a.ran) {
        ++refused;
        continue;
      }
      ran.push_back(fmt::format("{} → {:.4f} s ({:+.2f}%){}", a.value, a.predicted_s, a.error_pct,
                                a.out_of_memory ? " out of memory" : ""));
    }
    if (ran.empty() && refused == 0) continue;
    o += fmt::format("    unstated {}: {}", column, ran.empty() ? std::string("none runs") : join(ran));
    if (refused > 0) o += fmt::format(" ({} other value{} refused by the scenario rules)", refused, refused == 1 ? "" : "s");
    o += "\n";
  }
  return o;
}

}  // namespace

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
    o += unstated_text(row);
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
      // The whole run report, so that a reader can see which term of the prediction is off.
      j["report"] = Json::parse(row.report_json);
    } else {
      j["skip_reason"] = row.skip_reason;
    }
    Json defaults = Json::array();
    for (const auto& d : row.defaults) defaults.push_back({{"column", d.column}, {"value", d.value}, {"why", d.why}});
    j["defaults"] = std::move(defaults);
    if (!row.unstated.empty()) {
      Json unstated = Json::array();
      for (const UnstatedAlternative& a : row.unstated) {
        Json u{{"column", a.column}, {"value", a.value}, {"status", a.ran ? "run" : "skipped"}};
        if (a.ran) {
          u["predicted_s"] = a.predicted_s;
          u["error_pct"] = a.error_pct;
          u["out_of_memory"] = a.out_of_memory;
        } else {
          u["skip_reason"] = a.skip_reason;
        }
        unstated.push_back(std::move(u));
      }
      j["unstated"] = std::move(unstated);
    }
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

int validate_command(const ValidateOptions& options, std::ostream& out, std::ostream& err) {
  const scenarios::TableResult read = scenarios::read_runs_table_file(options.table_path);
  if (const auto* errors = std::get_if<std::vector<scenarios::TableError>>(&read)) {
    for (const auto& e : *errors) err << e.str() << '\n';
    return 1;
  }
  const auto& table = std::get<scenarios::RunsTable>(read);
  for (const auto& w : table.warnings) err << w.str() << '\n';
  if (auto refused = detail::refuse_overwriting_inputs({{"--json", options.json_path}}, {options.table_path})) {
    err << *refused << '\n';
    return 1;
  }
  const ValidationResult result = validate_table(table, options.fidelity, options.max_memory_bytes, options.unstated);
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
