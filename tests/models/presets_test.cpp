// Model presets: names, lookups, and every GPT shape cross-checked against the validation
// table (../shared/validation/runs-dev.csv) that the presets exist to serve.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "models/presets.hpp"

#include <gtest/gtest.h>

namespace trainsim::models {
namespace {

TEST(Presets, NamesSortedAndUnique) {
  const std::vector<std::string> names = preset_names();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  for (const std::string& name : names) {
    const auto m = find_preset(name);
    ASSERT_TRUE(m.has_value()) << name;
    EXPECT_EQ(m->name, name);
  }
  for (const char* name : {"gpt3-175b", "gpt-1.7b", "gpt-1t", "mcore-gpt-462b", "llama3-70b"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
}

TEST(Presets, UnknownIsNullopt) {
  EXPECT_FALSE(find_preset("gpt-2").has_value());
  EXPECT_FALSE(find_preset("").has_value());
  EXPECT_FALSE(find_preset("GPT3-175B").has_value());
}

TEST(Presets, Gpt3) {
  const ModelConfig m = *find_preset("gpt3-175b");
  EXPECT_EQ(m.family, Family::GPT);
  EXPECT_EQ(m.layers, 96);
  EXPECT_EQ(m.hidden, 12288);
  EXPECT_EQ(m.heads, 96);
  EXPECT_EQ(m.kv_heads, 96);
  EXPECT_EQ(m.ffn_hidden, 4 * 12288);
  EXPECT_EQ(m.vocab, 51200);
  EXPECT_EQ(m.max_positions, 2048);
  EXPECT_TRUE(m.tied_embedding);
}

std::string shared_dir() {
  if (const char* dir = std::getenv("TRAINSIM_SHARED_DIR")) return dir;
  return TRAINSIM_SHARED_DIR_DEFAULT;
}

// Splits one CSV line, honouring double quotes (the notes column has commas).
std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return fields;
}

TEST(Presets, MatchValidationRuns) {
  const std::string path = shared_dir() + "/validation/runs-dev.csv";
  std::ifstream in(path);
  if (!in) GTEST_SKIP() << "no " << path;
  std::string line;
  std::getline(in, line);
  const std::vector<std::string> header = split_csv(line);
  std::map<std::string, std::size_t> column;
  for (std::size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
  for (const char* name : {"name", "family", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq"}) {
    ASSERT_TRUE(column.count(name)) << "runs-dev.csv lacks column " << name;
  }

  // Run name → preset. The A100 rows are Narayanan et al. Table 1, the H100 rows the
  // Megatron-LM README weak-scaling table.
  const std::map<std::string, std::string> preset_of = {
      {"gpt-1.7b-a100x32", "gpt-1.7b"},          {"gpt-3.6b-a100x64", "gpt-3.6b"},
      {"gpt-7.5b-a100x128", "gpt-7.5b"},         {"gpt-18.4b-a100x256", "gpt-18.4b"},
      {"gpt-39.1b-a100x512", "gpt-39.1b"},       {"gpt-76.1b-a100x1024", "gpt-76.1b"},
      {"gpt-145.6b-a100x1536", "gpt-145.6b"},    {"gpt-310.1b-a100x1920", "gpt-310.1b"},
      {"gpt-529.6b-a100x2520", "gpt-529.6b"},    {"gpt-1008.0b-a100x3072", "gpt-1t"},
      {"gpt-1.7b-h100x48", "mcore-gpt-1.7b"},    {"gpt-7.1b-h100x96", "mcore-gpt-7.1b"},
      {"gpt-16b-h100x192", "mcore-gpt-16b"},     {"gpt-32b-h100x384", "mcore-gpt-32b"},
      {"gpt-70b-h100x768", "mcore-gpt-70b"},     {"gpt-119b-h100x1536", "mcore-gpt-119b"},
      {"gpt-177b-h100x2304", "mcore-gpt-177b"},  {"gpt-314b-h100x3072", "mcore-gpt-314b"},
      {"gpt-462b-h100x6144", "mcore-gpt-462b"},
  };
  std::size_t matched = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const std::vector<std::string> row = split_csv(line);
    const auto it = preset_of.find(row[column["name"]]);
    if (it == preset_of.end()) continue;
    ++matched;
    const auto m = find_preset(it->second);
    ASSERT_TRUE(m.has_value()) << it->second;
    const auto number = [&](const char* col) { return std::stoll(row[column[col]]); };
    EXPECT_EQ(row[column["family"]], "gpt") << it->first;
    EXPECT_EQ(m->layers, number("layers")) << it->first;
    EXPECT_EQ(m->hidden, number("hidden")) << it->first;
    EXPECT_EQ(m->heads, number("heads")) << it->first;
    EXPECT_EQ(m->kv_heads, number("kv_heads")) << it->first;
    EXPECT_EQ(m->ffn_hidden, number("ffn")) << it->first;
    EXPECT_EQ(m->vocab, number("vocab")) << it->first;
    EXPECT_EQ(m->max_positions, number("seq")) << it->first;
  }
  EXPECT_EQ(matched, preset_of.size());
}

}  // namespace
}  // namespace trainsim::models
