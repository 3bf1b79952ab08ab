#include "cli/import_command.hpp"

#include <ostream>
#include <variant>

#include <google/protobuf/text_format.h>

#include "cli/detail/output_file.hpp"
#include "scenarios/framework_import.hpp"
#include "scenarios/input_file.hpp"
#include "scenarios/loader.hpp"

namespace trainsim::cli {

int import_command(const ImportOptions& options, std::ostream& out, std::ostream& err) {
  scenarios::Scenario base;
  base.set_name("imported");
  if (!options.model.empty()) base.mutable_model()->set_preset(options.model);
  if (!options.node.empty()) base.mutable_cluster()->set_preset(options.node);
  if (options.nodes > 0) base.mutable_cluster()->set_nodes(options.nodes);
  if (options.sequence > 0) base.mutable_training()->set_sequence_length(options.sequence);
  scenarios::ImportResult result;
  if (!options.deepspeed_path.empty()) {
    if (!options.megatron_args.empty()) {
      err << "import: error: give Megatron arguments or --deepspeed, not both\n";
      return 1;
    }
    const scenarios::InputFile read = scenarios::read_input_file(options.deepspeed_path, scenarios::MAX_SCENARIO_BYTES);
    if (!read.ok()) {
      err << options.deepspeed_path << ": error: cannot read file: " << read.error << '\n';
      return 1;
    }
    result = scenarios::import_deepspeed(read.text, base);
    for (auto& e : result.errors) e = options.deepspeed_path + ": error: " + e;
  } else {
    result = scenarios::import_megatron(options.megatron_args, base);
    for (auto& e : result.errors) e = "import: error: " + e;
  }
  for (const auto& e : result.errors) err << e << '\n';
  if (!result.errors.empty()) return 1;
  std::string text;
  google::protobuf::TextFormat::PrintToString(result.scenario, &text);
  std::string header = "# written by trainsim import\n";
  for (const auto& n : result.notes) header += "# " + n + '\n';
  text = header + text;
  // The scenario must load as it is written: the loader's errors name what is missing.
  const std::string name = options.output_path.empty() ? "imported.textproto" : options.output_path;
  auto loaded = scenarios::load_text(text, name);
  if (auto* errors = std::get_if<std::vector<scenarios::Diagnostic>>(&loaded)) {
    err << "import: error: the imported scenario does not validate:\n";
    for (const auto& d : *errors) err << "  " << d.str() << '\n';
    return 1;
  }
  if (options.output_path.empty()) {
    out << text;
    return 0;
  }
  detail::OutputFile file(options.output_path);
  file.stream() << text;
  if (!file.commit()) {
    err << file.error() << '\n';
    return 1;
  }
  return 0;
}

}  // namespace trainsim::cli
