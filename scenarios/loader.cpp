#include "scenarios/loader.hpp"

#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <google/protobuf/text_format.h>

#include "scenarios/detail/parse.hpp"
#include "scenarios/input_file.hpp"
#include "scenarios/detail/validate.hpp"

namespace trainsim::scenarios {

std::string Diagnostic::str() const {
  std::string out = file;
  if (line > 0) {
    out += fmt::format(":{}", line);
    if (column > 0) out += fmt::format(":{}", column);
  }
  out += ": error: ";
  if (!field.empty()) out += field + ": ";
  out += message;
  return out;
}

namespace {

// Clears the fields LayoutFields::SEARCHED sets aside and returns the paths of those that
// were written. The parallel block's context, expert and rank order stay: the search does
// not choose them.
std::vector<std::string> set_aside_layout_fields(Scenario& scenario) {
  std::vector<std::string> written;
  const auto clear = [&](google::protobuf::Message& message, const std::string& prefix,
                         std::initializer_list<const char*> names) {
    const auto* descriptor = message.GetDescriptor();
    const auto* reflection = message.GetReflection();
    for (const char* name : names) {
      const auto* field = descriptor->FindFieldByName(name);
      if (!reflection->HasField(message, field)) continue;
      written.push_back(prefix + name);
      reflection->ClearField(&message, field);
    }
  };
  if (scenario.has_parallel())
    clear(*scenario.mutable_parallel(), "parallel.",
          {"tensor", "pipeline", "data", "virtual_stages", "first_stage_layers", "last_stage_layers",
           "sequence_parallel"});
  if (scenario.has_training()) clear(*scenario.mutable_training(), "training.", {"micro_batch_size"});
  if (scenario.has_strategy())
    clear(*scenario.mutable_strategy(), "strategy.",
          {"pipeline_schedule", "zero_stage", "recompute", "recompute_every_k", "overlap_grad_reduce",
           "overlap_param_gather", "overlap_tp_comm", "passes"});
  return written;
}

// The validation of a parsed scenario, with the layout fields set aside when searched.
LoadResult validate_as(Scenario scenario, const std::string& file,
                       const google::protobuf::TextFormat::ParseInfoTree* tree, std::string_view text,
                       LayoutFields layout) {
  std::vector<std::string> set_aside;
  if (layout == LayoutFields::SEARCHED) set_aside = set_aside_layout_fields(scenario);
  LoadResult result = detail::validate(scenario, file, tree, text, layout);
  if (auto* loaded = std::get_if<LoadedScenario>(&result)) loaded->set_aside = std::move(set_aside);
  return result;
}

}  // namespace

LoadResult load_file(const std::string& path, LayoutFields layout) {
  // The extension is checked first: reading a file whose format is unknown is wasted work.
  if (!detail::format_for(path)) {
    return std::vector<Diagnostic>{{path, 0, 0, "",
                                    fmt::format("unknown scenario file extension (valid: {})",
                                                detail::valid_extensions())}};
  }
  const InputFile read = read_input_file(path, MAX_SCENARIO_BYTES);
  if (!read.ok()) return std::vector<Diagnostic>{{path, 0, 0, "", "cannot read file: " + read.error}};
  LoadResult result = load_text(read.text, path, layout);
  if (auto* scenario = std::get_if<LoadedScenario>(&result)) scenario->inputs.insert(scenario->inputs.begin(), path);
  return result;
}

LoadResult load_text(const std::string& text, const std::string& file, LayoutFields layout) {
  std::optional<detail::Format> format = detail::format_for(file);
  if (!format) {
    return std::vector<Diagnostic>{{file, 0, 0, "",
                                    fmt::format("unknown scenario file extension (valid: {})",
                                                detail::valid_extensions())}};
  }
  std::vector<Diagnostic> diagnostics;
  Scenario scenario;
  // A sweep block describes many scenarios; running the base alone would silently ignore it.
  const auto refuse_sweep = [&](int line, int column) {
    return std::vector<Diagnostic>{{file, line, column, "sweep",
                                    "the file has a sweep block: run its variants with `trainsim sweep " + file +
                                        "`, or remove the block to run the base scenario"}};
  };
  if (*format == detail::Format::JSON) {
    if (!detail::parse_json(text, file, scenario, diagnostics)) return diagnostics;
    if (scenario.has_sweep()) return refuse_sweep(0, 0);
    return validate_as(std::move(scenario), file, nullptr, {}, layout);
  }
  google::protobuf::TextFormat::ParseInfoTree tree;
  if (!detail::parse_text(text, file, scenario, tree, diagnostics)) return diagnostics;
  if (scenario.has_sweep()) {
    const auto [line, column] = detail::Locator(&tree).locate("sweep");
    return refuse_sweep(line, column);
  }
  LoadResult result = validate_as(std::move(scenario), file, &tree, text, layout);
  auto* loaded = std::get_if<LoadedScenario>(&result);
  if (loaded && layout == LayoutFields::WRITTEN) {
    const detail::Locator locator(&tree);
    for (const char* field : {"parallel.tensor", "parallel.pipeline", "parallel.data", "strategy.pipeline_schedule",
                              "strategy.zero_stage", "strategy.recompute", "strategy.overlap_grad_reduce",
                              "strategy.overlap_param_gather", "strategy.overlap_tp_comm", "strategy.passes"}) {
      const auto [line, column] = locator.locate(field);
      if (line > 0) loaded->field_positions[field] = {line, column};
    }
  }
  return result;
}

LoadResult load_message(const Scenario& scenario, const std::string& file) {
  return detail::validate(scenario, file, nullptr);
}

}  // namespace trainsim::scenarios
