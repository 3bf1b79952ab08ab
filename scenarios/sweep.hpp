#pragma once
// A scenario's sweep block expanded into variants. The base scenario (the file without its
// sweep block) takes one value of every axis per variant; variant i is the mixed-radix
// number i over the axes, the first axis varying slowest, so the order is fixed by the
// file alone. A variant that breaks a constraint is dropped before it is validated.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "scenarios/loader.hpp"
#include "scenarios/scenario.pb.h"

namespace trainsim::scenarios {

namespace detail {
class Constraint;
}

struct SweepAxisSpec {
  std::string field;                // dotted path, e.g. "parallel.tensor"
  std::vector<std::string> values;  // as written
};

class SweepPlan {
 public:
  SweepPlan();
  ~SweepPlan();
  SweepPlan(SweepPlan&&) noexcept;
  SweepPlan& operator=(SweepPlan&&) noexcept;

  const std::string& file() const { return file_; }
  const Scenario& base() const { return base_; }
  const std::vector<SweepAxisSpec>& axes() const { return axes_; }
  const std::vector<std::string>& constraints() const;
  // Every variant, kept or not: the product of the axes' value counts (1 without axes).
  std::uint64_t size() const { return size_; }
  // FNV-1a of the file's bytes: a table written for another sweep file is not resumed.
  std::uint64_t fingerprint() const { return fingerprint_; }

  // Variant `index` (< size()): the base with each axis' value set.
  Scenario variant(std::uint64_t index) const;
  // The value of every axis in variant `index`, in axis order.
  std::vector<std::string> axis_values(std::uint64_t index) const;
  // The first constraint the variant breaks (its text), nullopt when it keeps them all.
  std::optional<std::string> broken_constraint(const Scenario& variant) const;
  // Validates the variant as the loader validates a scenario file (presets, defaults,
  // every rule), relative paths read from the sweep file's folder. Diagnostics carry the
  // sweep file and the field path, no line: the variant was not written anywhere.
  [[nodiscard]] LoadResult load(const Scenario& variant) const;

 private:
  friend std::variant<SweepPlan, std::vector<Diagnostic>> load_sweep_text(const std::string&, const std::string&);
  std::string file_;
  Scenario base_;
  std::vector<SweepAxisSpec> axes_;
  std::vector<std::unique_ptr<detail::Constraint>> constraints_;
  std::vector<std::string> constraint_text_;
  std::uint64_t size_ = 1;
  std::uint64_t fingerprint_ = 0;
};

// More variants than this are refused: at thousands per second it is days of work, and a
// sweep file that asks for it is more likely a mistake.
inline constexpr std::uint64_t MAX_SWEEP_VARIANTS = std::uint64_t{1} << 32;

using SweepLoadResult = std::variant<SweepPlan, std::vector<Diagnostic>>;

// Reads a scenario file with a sweep block; every problem of the block (an unknown or
// non-scalar field, a value the field cannot take, a constraint that does not parse) is a
// Diagnostic at file:line:column. The base scenario is not validated on its own: the
// axes may be what makes it valid.
[[nodiscard]] SweepLoadResult load_sweep(const std::string& path);
[[nodiscard]] SweepLoadResult load_sweep_text(const std::string& text, const std::string& file);

}  // namespace trainsim::scenarios
