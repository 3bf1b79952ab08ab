#pragma once
// Recorded measurements under tests/data/calibration (see its README for their sources).
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace trainsim::calibration::testing {

inline std::string data_path(const std::string& relative) {
  const char* root = std::getenv("TRAINSIM_SOURCE_DIR");
  return std::string(root ? root : ".") + "/tests/data/calibration/" + relative;
}

inline std::string read_data(const std::string& relative) {
  std::ifstream in(data_path(relative), std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + data_path(relative) + " (set TRAINSIM_SOURCE_DIR)");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace trainsim::calibration::testing
