// Golden reports: the text report of every example scenario is checked in
// (tests/golden/<example file>.<fidelity>.txt) and compared byte for byte, so that any change in a
// figure shows in review as a diff of these files. After a change that is meant to move a
// figure, regenerate them with TRAINSIM_UPDATE_GOLDEN=1 and review the diff:
//   TRAINSIM_UPDATE_GOLDEN=1 build/tests/cli/trainsim_cli_tests --gtest_filter='Golden*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <variant>

#include "cli/run_command.hpp"

namespace trainsim::cli {
namespace {

namespace fs = std::filesystem;

std::string source_dir() {
  const char* src = std::getenv("TRAINSIM_SOURCE_DIR");
  return src != nullptr ? src : ".";
}

std::string read(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The first line where two texts differ, as "line N: expected … / got …".
std::string first_difference(const std::string& want, const std::string& got) {
  std::istringstream a(want), b(got);
  std::string la, lb;
  for (int line = 1;; ++line) {
    const bool ra = static_cast<bool>(std::getline(a, la)), rb = static_cast<bool>(std::getline(b, lb));
    if (!ra && !rb) return "no difference";
    if (!ra || !rb || la != lb)
      return "line " + std::to_string(line) + ":\n  golden: " + (ra ? la : "<end>") + "\n  now:    " + (rb ? lb : "<end>");
  }
}

void check(const std::string& example, strategies::Fidelity fidelity) {
  const std::string rel = "scenarios/examples/" + example;
  const fs::path src = source_dir();
  auto loaded = scenarios::load_file((src / rel).string());
  ASSERT_TRUE(std::holds_alternative<scenarios::LoadedScenario>(loaded)) << rel << " does not load";
  std::string text = simulate_scenario(std::get<scenarios::LoadedScenario>(loaded), fidelity).text;
  // The report names files by the paths it was given: make them relative to the repository.
  const std::string prefix = (src / "").string();
  for (std::size_t at; (at = text.find(prefix)) != std::string::npos;) text.erase(at, prefix.size());
  const fs::path golden = src / "tests" / "golden" / (fs::path(example).filename().string() + "." +
                                                      strategies::to_string(fidelity) + ".txt");
  if (std::getenv("TRAINSIM_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden, std::ios::binary) << text;
    GTEST_SKIP() << "wrote " << golden.string();
  }
  ASSERT_TRUE(fs::exists(golden)) << "no golden report " << golden.string()
                                  << " (write it with TRAINSIM_UPDATE_GOLDEN=1 and review it)";
  const std::string want = read(golden);
  EXPECT_EQ(want, text) << rel << " (" << strategies::to_string(fidelity)
                        << ") differs from its golden report at " << first_difference(want, text);
}

TEST(Golden, GptThreeExampleFast) { check("gpt3-175b-a100-1024.textproto", strategies::Fidelity::FAST); }
TEST(Golden, GptThreeJsonExampleFast) { check("gpt3-175b-a100-1024.json", strategies::Fidelity::FAST); }
TEST(Golden, SmallGptExampleFast) { check("gpt-1.7b-a100-32.textproto", strategies::Fidelity::FAST); }
TEST(Golden, SmallGptExampleFull) { check("gpt-1.7b-a100-32.textproto", strategies::Fidelity::FULL); }
TEST(Golden, LlamaExampleFast) { check("llama3-70b-h100-512.textproto", strategies::Fidelity::FAST); }

// Every example has a golden report: a new example without one fails here.
TEST(Golden, EveryExampleIsCovered) {
  for (const auto& e : fs::directory_iterator(fs::path(source_dir()) / "scenarios" / "examples")) {
    if (!e.is_regular_file()) continue;
    const auto ext = e.path().extension();
    if (ext != ".textproto" && ext != ".json") continue;
    const fs::path golden = fs::path(source_dir()) / "tests" / "golden" / (e.path().filename().string() + ".fast.txt");
    EXPECT_TRUE(fs::exists(golden)) << e.path().filename().string() << " has no golden report";
  }
}

}  // namespace
}  // namespace trainsim::cli
