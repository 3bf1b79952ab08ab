#pragma once
// Loading a scenario file: parse (text format or JSON), resolve presets, validate every
// rule, and turn it into the specs the lower layers take. Errors are collected, not
// stopped at the first, and each names file:line:column (JSON: file and field path),
// the field, and what would be valid.
#include <map>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "hardware/cluster.hpp"
#include "hardware/profile.pb.h"
#include "scenarios/scenario.pb.h"
#include "strategies/spec.hpp"

namespace trainsim::scenarios {

struct Diagnostic {
  std::string file;
  int line = 0;    // 1-based; 0 when unknown (JSON, or a field that was not written)
  int column = 0;  // 1-based; 0 when unknown
  std::string field;  // dotted path, e.g. "parallel.tensor"
  std::string message;
  // "file:line:col: error: field: message" (line/col left out when unknown)
  std::string str() const;
};

struct LoadedScenario {
  std::string file;
  Scenario proto;  // as written, presets not yet applied
  strategies::TrainingSpec training;
  hardware::ClusterSpec cluster;
  hardware::GpuProfile gpu;
  double train_tokens = 1e12;          // planning.train_tokens
  double price_per_gpu_hour = 0;       // planning.price_per_gpu_hour; 0: not given
  std::vector<std::string> notes;  // defaults that were applied, e.g. "parallel.data derived as 16"
  // Every file the scenario was read from: itself (when loaded from a file) and the
  // model.hf_config it names. An output written over one of them would destroy it.
  std::vector<std::string> inputs;
  // Where the fields that ask for strategy passes were written (text format only), so that
  // an error a pass raises later points at its line: "strategy.zero_stage" → (line, column).
  std::map<std::string, std::pair<int, int>> field_positions;
  // LayoutFields::SEARCHED: the layout fields the file wrote, which the loader set aside.
  std::vector<std::string> set_aside;
};

// What the loader makes of the fields that give the parallel layout: the parallel sizes
// and split, sequence parallelism, the micro-batch and every strategy field.
enum class LayoutFields {
  WRITTEN,  // a run's: taken as written, every rule checked
  // `trainsim search`'s, which chooses them itself: set aside unread (a layout that no run
  // could take does not stop it), and the specs hold a stand-in (tensor 1, pipeline 1,
  // data = the GPUs, micro-batch 1, the default strategies) that is not checked against
  // the global batch. Every other field is checked as for a run.
  SEARCHED,
};

using LoadResult = std::variant<LoadedScenario, std::vector<Diagnostic>>;

// Reads `path`; the format follows the extension (.textproto/.txtpb/.pbtxt or .json).
[[nodiscard]] LoadResult load_file(const std::string& path, LayoutFields layout = LayoutFields::WRITTEN);
// Parses `text` as if read from `file` (the extension picks the format).
[[nodiscard]] LoadResult load_text(const std::string& text, const std::string& file,
                                   LayoutFields layout = LayoutFields::WRITTEN);
// Validates a Scenario message built in memory (a runs-table row, a sweep variant) by the
// same rules as a file; diagnostics name `file` and the field path, without a line.
[[nodiscard]] LoadResult load_message(const Scenario& scenario, const std::string& file);

}  // namespace trainsim::scenarios
