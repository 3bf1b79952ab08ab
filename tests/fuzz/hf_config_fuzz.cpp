// libFuzzer target: the Hugging Face config.json reader. Any input must give a model or a
// message — never a crash or a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "models/hf_config.hpp"
#include "models/model.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto r = trainsim::models::parse_hf_config(text, "config.json");
  (void)r;
  return 0;
}
