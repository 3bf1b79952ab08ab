#pragma once
// `trainsim import`: a Megatron-LM / NeMo command line, or a DeepSpeed config JSON, as a
// scenario file.
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace trainsim::cli {

struct ImportOptions {
  std::vector<std::string> megatron_args;  // after "--"
  std::string deepspeed_path;              // a DeepSpeed config JSON instead
  std::string model;                       // a model preset ("gpt3-175b"); Megatron args may give the shape
  std::string node;                        // node preset ("dgx-h100")
  std::int64_t nodes = 0;
  std::int64_t sequence = 0;               // DeepSpeed: the sequence length (its config has none)
  std::string output_path;                 // empty: stdout
};

// Writes the scenario (text format) when every argument maps and the result validates;
// otherwise one error line per argument that cannot be mapped, or the loader's errors.
int import_command(const ImportOptions& options, std::ostream& out, std::ostream& err);

}  // namespace trainsim::cli
