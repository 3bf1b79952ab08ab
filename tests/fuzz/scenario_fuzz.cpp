// libFuzzer target: the scenario reader, text format and JSON mapping, from parse through
// validation (and the Program size estimate a loaded scenario gets next). Any input must
// give a scenario or diagnostics — never a crash, a sanitizer report or a hang.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "scenarios/loader.hpp"
#include "strategies/plan_size.hpp"

namespace {

void load(const std::string& text, const char* file) {
  const trainsim::scenarios::LoadResult r = trainsim::scenarios::load_text(text, file);
  if (const auto* s = std::get_if<trainsim::scenarios::LoadedScenario>(&r)) {
    (void)trainsim::strategies::estimate_program(s->training);
  } else {
    for (const auto& d : std::get<std::vector<trainsim::scenarios::Diagnostic>>(r)) (void)d.str();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  load(text, "fuzz.textproto");
  load(text, "fuzz.json");
  return 0;
}
