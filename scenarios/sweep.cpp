#include "scenarios/sweep.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <google/protobuf/text_format.h>

#include "scenarios/detail/constraint.hpp"
#include "scenarios/field_path.hpp"
#include "scenarios/detail/parse.hpp"
#include "scenarios/detail/validate.hpp"
#include "scenarios/input_file.hpp"

namespace trainsim::scenarios {
namespace {

namespace pb = google::protobuf;

std::uint64_t fnv1a(const std::string& bytes) {
  std::uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

// Where element `index` of sweep.<field> (and, for an axis, its sub-field) was written;
// {0, 0} without a tree (JSON).
std::pair<int, int> sweep_position(const pb::TextFormat::ParseInfoTree* tree, const char* field, int index,
                                   const char* sub = nullptr, int sub_index = -1) {
  if (tree == nullptr) return {0, 0};
  const pb::FieldDescriptor* sweep_field = Scenario::descriptor()->FindFieldByName("sweep");
  const pb::TextFormat::ParseInfoTree* in_sweep = tree->GetTreeForNested(sweep_field, -1);
  if (in_sweep == nullptr) return {0, 0};
  const pb::FieldDescriptor* f = Sweep::descriptor()->FindFieldByName(field);
  pb::TextFormat::ParseLocation at = in_sweep->GetLocation(f, index);
  if (sub != nullptr) {
    const pb::TextFormat::ParseInfoTree* in_axis = in_sweep->GetTreeForNested(f, index);
    const pb::FieldDescriptor* s = SweepAxis::descriptor()->FindFieldByName(sub);
    if (in_axis != nullptr) {
      const pb::TextFormat::ParseLocation sub_at = in_axis->GetLocation(s, sub_index);
      if (sub_at.line >= 0) at = sub_at;
    }
  }
  return at.line < 0 ? std::pair{0, 0} : std::pair{at.line + 1, at.column + 1};
}

}  // namespace

SweepPlan::SweepPlan() = default;
SweepPlan::~SweepPlan() = default;
SweepPlan::SweepPlan(SweepPlan&&) noexcept = default;
SweepPlan& SweepPlan::operator=(SweepPlan&&) noexcept = default;

const std::vector<std::string>& SweepPlan::constraints() const { return constraint_text_; }

Scenario SweepPlan::variant(std::uint64_t index) const {
  Scenario out = base_;
  std::uint64_t rest = index;
  // The last axis varies fastest.
  for (std::size_t a = axes_.size(); a-- > 0;) {
    const auto& axis = axes_[a];
    const std::uint64_t n = axis.values.size();
    const std::string& value = axis.values[rest % n];
    rest /= n;
    auto resolved = resolve_field(axis.field);
    // Both were checked at load: a failure here is a bug, not bad input.
    const std::string problem = set_field(out, std::get<FieldPath>(resolved), value);
    if (!problem.empty()) throw std::logic_error("sweep axis " + axis.field + ": " + problem);
  }
  return out;
}

std::vector<std::string> SweepPlan::axis_values(std::uint64_t index) const {
  std::vector<std::string> out(axes_.size());
  std::uint64_t rest = index;
  for (std::size_t a = axes_.size(); a-- > 0;) {
    const std::uint64_t n = axes_[a].values.size();
    out[a] = axes_[a].values[rest % n];
    rest /= n;
  }
  return out;
}

std::optional<std::string> SweepPlan::broken_constraint(const Scenario& variant) const {
  for (std::size_t i = 0; i < constraints_.size(); ++i)
    if (!constraints_[i]->holds(variant)) return constraint_text_[i];
  return std::nullopt;
}

LoadResult SweepPlan::load(const Scenario& variant) const { return detail::validate(variant, file_, nullptr); }

SweepLoadResult load_sweep(const std::string& path) {
  if (!detail::format_for(path)) {
    return std::vector<Diagnostic>{
        {path, 0, 0, "", fmt::format("unknown scenario file extension (valid: {})", detail::valid_extensions())}};
  }
  const InputFile read = read_input_file(path, MAX_SCENARIO_BYTES);
  if (!read.ok()) return std::vector<Diagnostic>{{path, 0, 0, "", "cannot read file: " + read.error}};
  return load_sweep_text(read.text, path);
}

SweepLoadResult load_sweep_text(const std::string& text, const std::string& file) {
  const std::optional<detail::Format> format = detail::format_for(file);
  if (!format) {
    return std::vector<Diagnostic>{
        {file, 0, 0, "", fmt::format("unknown scenario file extension (valid: {})", detail::valid_extensions())}};
  }
  std::vector<Diagnostic> diagnostics;
  Scenario scenario;
  pb::TextFormat::ParseInfoTree tree;
  const pb::TextFormat::ParseInfoTree* where = nullptr;
  if (*format == detail::Format::JSON) {
    if (!detail::parse_json(text, file, scenario, diagnostics)) return diagnostics;
  } else {
    if (!detail::parse_text(text, file, scenario, tree, diagnostics)) return diagnostics;
    where = &tree;
  }
  SweepPlan plan;
  plan.file_ = file;
  plan.fingerprint_ = fnv1a(text);
  const Sweep& sweep = scenario.sweep();
  auto error = [&](std::pair<int, int> at, std::string field, std::string message) {
    diagnostics.push_back({file, at.first, at.second, std::move(field), std::move(message)});
  };
  if (!scenario.has_sweep()) {
    error({0, 0}, "sweep", "the scenario has no sweep block (scenario.proto: Sweep): nothing to sweep over");
    return diagnostics;
  }
  std::set<std::string> seen;
  std::uint64_t size = 1;  // capped at MAX_SWEEP_VARIANTS + 1
  for (int a = 0; a < sweep.axis_size(); ++a) {
    const SweepAxis& axis = sweep.axis(a);
    const std::string name = fmt::format("sweep.axis[{}]", a);
    auto resolved = resolve_field(axis.field());
    if (auto* message = std::get_if<std::string>(&resolved)) {
      error(sweep_position(where, "axis", a, "field"), name + ".field", *message);
      continue;
    }
    const auto& path = std::get<FieldPath>(resolved);
    if (!seen.insert(path.text).second) {
      error(sweep_position(where, "axis", a, "field"), name + ".field",
            fmt::format("{} has an axis already: one axis per field", path.text));
      continue;
    }
    if (axis.values_size() == 0) {
      error(sweep_position(where, "axis", a), name + ".values", fmt::format("the axis over {} has no values", path.text));
      continue;
    }
    SweepAxisSpec spec{path.text, {}};
    std::set<std::string> distinct;
    for (int v = 0; v < axis.values_size(); ++v) {
      Scenario scratch;
      const std::string problem = set_field(scratch, path, axis.values(v));
      if (!problem.empty()) {
        error(sweep_position(where, "axis", a, "values", v), fmt::format("{}.values[{}]", name, v), problem);
      } else if (!distinct.insert(axis.values(v)).second) {
        error(sweep_position(where, "axis", a, "values", v), fmt::format("{}.values[{}]", name, v),
              fmt::format("\"{}\" is listed twice: every variant would be repeated", axis.values(v)));
      }
      spec.values.push_back(axis.values(v));
    }
    if (!spec.values.empty() && size > (MAX_SWEEP_VARIANTS + 1) / spec.values.size()) size = MAX_SWEEP_VARIANTS + 1;
    else size = std::min<std::uint64_t>(size * spec.values.size(), MAX_SWEEP_VARIANTS + 1);
    plan.axes_.push_back(std::move(spec));
  }
  for (int c = 0; c < sweep.constraint_size(); ++c) {
    auto parsed = detail::Constraint::parse(sweep.constraint(c));
    if (auto* problem = std::get_if<detail::Constraint::ParseError>(&parsed)) {
      const std::pair<int, int> at = sweep_position(where, "constraint", c);
      error(at, fmt::format("sweep.constraint[{}]", c),
            fmt::format("{} (at character {} of \"{}\")", problem->message, problem->offset + 1, sweep.constraint(c)));
      continue;
    }
    plan.constraints_.push_back(std::move(std::get<std::unique_ptr<detail::Constraint>>(parsed)));
    plan.constraint_text_.push_back(sweep.constraint(c));
  }
  if (size > MAX_SWEEP_VARIANTS) {
    error(sweep_position(where, "axis", 0), "sweep.axis",
          fmt::format("the axes make more than {} variants: split the sweep", MAX_SWEEP_VARIANTS));
  }
  if (!diagnostics.empty()) return diagnostics;
  plan.size_ = static_cast<std::uint64_t>(size);
  plan.base_ = scenario;
  plan.base_.clear_sweep();
  return plan;
}

}  // namespace trainsim::scenarios
