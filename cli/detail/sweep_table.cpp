#include "cli/detail/sweep_table.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "scenarios/field_path.hpp"
#include "scenarios/input_file.hpp"
#include "strategies/program.hpp"

namespace trainsim::cli::detail {
namespace {

// The run's figures after the inputs: names a spreadsheet or pandas user reads directly.
// Between the two lists, one column per memory class ("memory.<class>_bytes", every class
// the report's at_peak holds, so that a class added to the model gets its column).
const char* const OUTPUT_COLUMNS_BEFORE_CLASSES[] = {
    "memory_lower_bound_bytes", "iteration_s", "tokens_per_s", "samples_per_s", "model_tflops_per_gpu", "mfu", "hfu",
    "time.compute_s", "time.recompute_s", "time.optimizer_s", "time.exposed_tp_s", "time.exposed_dp_s",
    "time.exposed_pp_s", "time.bubble_s", "memory.peak_bytes"};
const char* const OUTPUT_COLUMNS_AFTER_CLASSES[] = {
    "memory.capacity_bytes", "memory.out_of_memory", "planning.iterations", "planning.time_s",
    "planning.gpu_hours", "planning.utilization", "planning.energy_kwh", "planning.cost"};
// What validation made of the variant: defaults applied, presets resolved.
const char* const RESOLVED_COLUMNS[] = {
    "resolved.model", "resolved.layers", "resolved.hidden", "resolved.heads", "resolved.gpu", "resolved.nodes",
    "resolved.gpus", "resolved.nic_gbps", "resolved.oversubscription", "resolved.tensor", "resolved.pipeline",
    "resolved.data", "resolved.virtual_stages", "resolved.sequence_parallel", "resolved.sequence",
    "resolved.micro_batch", "resolved.global_batch", "resolved.micro_batches", "resolved.passes"};

std::string sweep_id(std::uint64_t fingerprint) { return fmt::format("{:016x}", fingerprint); }

// The first `n` cells of a CSV line (RFC 4180 quoting, no line breaks inside).
std::vector<std::string> first_cells(const std::string& line, std::size_t n) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (out.size() < n && i <= line.size()) {
    std::string cell;
    if (i < line.size() && line[i] == '"') {
      ++i;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            cell += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        cell += line[i++];
      }
    } else {
      while (i < line.size() && line[i] != ',') cell += line[i++];
    }
    out.push_back(std::move(cell));
    ++i;  // the comma
  }
  return out;
}

}  // namespace

const char* to_string(VariantStatus s) {
  switch (s) {
    case VariantStatus::OK: return "ok";
    case VariantStatus::CONSTRAINT: return "constraint";
    case VariantStatus::INVALID: return "invalid";
    case VariantStatus::MEMORY_BOUND: return "memory_bound";
    case VariantStatus::ERROR: return "error";
  }
  return "?";
}

const std::vector<std::string>& sweep_columns() {
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> c = {"variant", "sweep_id", "status", "reason"};
    for (const auto& f : scenarios::scalar_fields()) c.push_back(f.text);
    for (const char* name : RESOLVED_COLUMNS) c.emplace_back(name);
    for (const char* name : OUTPUT_COLUMNS_BEFORE_CLASSES) c.emplace_back(name);
    for (int m = 0; m < static_cast<int>(strategies::MemClass::COUNT); ++m)
      c.push_back(std::string("memory.") + strategies::to_string(static_cast<strategies::MemClass>(m)) + "_bytes");
    for (const char* name : OUTPUT_COLUMNS_AFTER_CLASSES) c.emplace_back(name);
    return c;
  }();
  return columns;
}

Row make_row(const VariantOutcome& o, std::uint64_t fingerprint) {
  Row row;
  auto& c = row.cells;
  c.reserve(sweep_columns().size());
  c.emplace_back(static_cast<std::int64_t>(o.index));
  c.emplace_back(sweep_id(fingerprint));
  c.emplace_back(std::string(to_string(o.status)));
  c.emplace_back(o.reason);
  for (const auto& f : scenarios::scalar_fields()) {
    if (o.written == nullptr) {
      c.emplace_back();
      continue;
    }
    std::string text = scenarios::field_text(*o.written, f);
    using FD = google::protobuf::FieldDescriptor;
    if (text.empty()) {
      c.emplace_back();
      continue;
    }
    // Numbers and booleans stay numbers and booleans in JSON; enums and strings are text.
    switch (f.leaf()->cpp_type()) {
      case FD::CPPTYPE_INT32:
      case FD::CPPTYPE_INT64:
      case FD::CPPTYPE_UINT32:
      case FD::CPPTYPE_UINT64: c.emplace_back(static_cast<std::int64_t>(std::stoll(text))); break;
      case FD::CPPTYPE_DOUBLE:
      case FD::CPPTYPE_FLOAT: c.emplace_back(std::stod(text)); break;
      case FD::CPPTYPE_BOOL: c.emplace_back(text == "true"); break;
      default: c.emplace_back(std::move(text));
    }
  }
  if (o.loaded != nullptr) {
    const auto& s = *o.loaded;
    const auto& t = s.training;
    const auto& l = t.layout;
    c.emplace_back(t.model.name);
    c.emplace_back(t.model.layers);
    c.emplace_back(t.model.hidden);
    c.emplace_back(t.model.heads);
    c.emplace_back(s.cluster.gpu);
    c.emplace_back(s.cluster.nodes);
    c.emplace_back(l.gpus());
    c.emplace_back(s.cluster.nic_gbps);
    c.emplace_back(s.cluster.oversubscription);
    c.emplace_back(l.tensor);
    c.emplace_back(l.pipeline);
    c.emplace_back(l.data);
    c.emplace_back(l.virtual_stages);
    c.emplace_back(l.sequence_parallel);
    c.emplace_back(t.sequence);
    c.emplace_back(t.micro_batch);
    c.emplace_back(t.global_batch);
    c.emplace_back(t.micro_batches());
    if (o.report != nullptr) c.emplace_back(o.report->pipeline);
    else c.emplace_back();
  } else {
    for (std::size_t i = 0; i < std::size(RESOLVED_COLUMNS); ++i) c.emplace_back();
  }
  if (o.memory_lower_bound_bytes > 0) c.emplace_back(o.memory_lower_bound_bytes);
  else c.emplace_back();
  if (o.report != nullptr) {
    const auto& r = *o.report;
    for (double v : {r.iteration_s, r.tokens_per_s, r.samples_per_s, r.model_tflops_per_gpu, r.mfu, r.hfu})
      c.emplace_back(v);
    if (r.has_breakdown) {
      for (double v : {r.time.compute_s, r.time.recompute_s, r.time.optimizer_s, r.time.exposed_tp_s,
                       r.time.exposed_dp_s, r.time.exposed_pp_s, r.time.bubble_s})
        c.emplace_back(v);
    } else {
      for (int i = 0; i < 7; ++i) c.emplace_back();
    }
    c.emplace_back(r.memory.peak_bytes);
    for (double v : r.memory.at_peak) c.emplace_back(v);
    c.emplace_back(r.memory.capacity_bytes);
    c.emplace_back(r.memory.out_of_memory);
    const auto& p = r.planning;
    for (double v : {p.iterations, p.time_s, p.gpu_hours, p.utilization, p.energy_kwh}) c.emplace_back(v);
    if (p.price_per_gpu_hour > 0) c.emplace_back(p.cost);
    else c.emplace_back();
  }
  // A row longer than the header would shift every later figure under another's name.
  if (c.size() > sweep_columns().size())
    throw std::logic_error("sweep table: a row of " + std::to_string(c.size()) + " cells for " +
                           std::to_string(sweep_columns().size()) + " columns");
  c.resize(sweep_columns().size());  // dropped variants: the figures stay empty
  return row;
}

std::string csv_header() { return csv_header(sweep_columns()); }

std::string jsonl_line(const Row& row) { return jsonl_line(row, sweep_columns()); }

std::variant<ExistingTable, std::string> scan_table(const std::string& path, bool csv, std::uint64_t fingerprint) {
  // A sweep's table can be large: read it whole but only up to a generous cap.
  const scenarios::InputFile read = scenarios::read_input_file(path, std::size_t{1} << 34);
  if (!read.ok()) return "cannot read file: " + read.error;
  const std::string& text = read.text;
  ExistingTable out;
  std::size_t at = 0;
  const std::string not_ours = "is not a table of this sweep file (written for another sweep, or another file): "
                               "remove it or choose another output";
  if (csv) {
    const std::string header = csv_header();
    if (text.size() < header.size()) {
      // A header cut short by a kill is rewritten.
      if (header.compare(0, text.size(), text) != 0) return "its header differs from this version's columns: " + not_ours;
      return out;
    }
    if (text.compare(0, header.size(), header) != 0) return "its header differs from this version's columns: " + not_ours;
    at = header.size();
    out.header_end = at;
  }
  const std::string id = sweep_id(fingerprint);
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    if (end == std::string::npos) break;  // cut short: resumed from here
    const std::string line = text.substr(at, end - at);
    const std::uint64_t expected = out.rows;
    std::string status, reason;
    if (csv) {
      const auto cells = first_cells(line, 4);
      if (cells.size() < 4 || cells[0] != std::to_string(expected) || cells[1] != id)
        return fmt::format("line {}: expected variant {} of sweep {}: {}", out.rows + 2, expected, id, not_ours);
      status = cells[2];
      reason = cells[3];
    } else {
      const std::string prefix = fmt::format("{{\"variant\":{},\"sweep_id\":\"{}\",", expected, id);
      if (line.compare(0, prefix.size(), prefix) != 0)
        return fmt::format("line {}: expected variant {} of sweep {}: {}", out.rows + 1, expected, id, not_ours);
      try {
        const auto j = nlohmann::json::parse(line);
        status = j.at("status").get<std::string>();
        reason = j.at("reason").get<std::string>();
      } catch (const std::exception& e) {
        return fmt::format("line {}: not a row of this sweep ({}): {}", out.rows + 1, e.what(), not_ours);
      }
    }
    out.outcomes.emplace_back(std::move(status), std::move(reason));
    ++out.rows;
    at = end + 1;
    out.row_end.push_back(at);
  }
  return out;
}

}  // namespace trainsim::cli::detail
