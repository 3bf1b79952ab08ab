#include "hardware/gpu_profile.hpp"

#include "hardware/detail/embedded_profiles.hpp"
#include "hardware/detail/profile_check.hpp"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace trainsim::hardware {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::TextFormat;
using detail::FieldStep;
using detail::ProfilePart;
using detail::ProfileProblem;

// Collects every syntax error, 1-based, as "origin:line:col: message" (protobuf reports
// zero-based positions).
class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  explicit CollectErrors(const std::string& origin) : origin_(origin) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    errors_.push_back(origin_ + ":" + std::to_string(line + 1) + ":" + std::to_string(column + 1) + ": " + message);
  }
  std::vector<std::string>& errors() { return errors_; }

 private:
  const std::string& origin_;
  std::vector<std::string> errors_;
};

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) {
    if (!out.empty()) out += '\n';
    out += line;
  }
  return out;
}

std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

enum class Rule : std::uint8_t { NON_NEGATIVE, POSITIVE, FRACTION };

struct CitedRule {
  const char* field;
  Rule rule;
  ProfilePart part;  // ALL: only a profile file needs it (no cost computation reads it)
};

// Documented zeros: a peak of 0 means the GPU has no such tensor cores (the cost model
// refuses to time a kernel in that dtype); latencies and the kernel overhead may be 0
// ("not modelled").
constexpr CitedRule CITED_RULES[] = {
    {"peak_bf16_flops", Rule::NON_NEGATIVE, ProfilePart::COMPUTE},
    {"peak_fp16_flops", Rule::NON_NEGATIVE, ProfilePart::COMPUTE},
    {"peak_fp8_flops", Rule::NON_NEGATIVE, ProfilePart::COMPUTE},
    {"peak_tf32_flops", Rule::NON_NEGATIVE, ProfilePart::COMPUTE},
    {"peak_fp32_flops", Rule::NON_NEGATIVE, ProfilePart::COMPUTE},
    {"hbm_bytes_per_s", Rule::POSITIVE, ProfilePart::COMPUTE},
    {"hbm_capacity_bytes", Rule::POSITIVE, ProfilePart::ALL},
    {"memory_efficiency", Rule::FRACTION, ProfilePart::COMPUTE},
    {"kernel_overhead_s", Rule::NON_NEGATIVE, ProfilePart::COMPUTE},
    {"gemm_accumulate_bytes_per_s", Rule::POSITIVE, ProfilePart::COMPUTE},
    {"board_power_w", Rule::POSITIVE, ProfilePart::ALL},
    {"nvlink_bytes_per_s", Rule::POSITIVE, ProfilePart::NETWORK},
    {"nvlink_latency_s", Rule::NON_NEGATIVE, ProfilePart::NETWORK},
    {"network_latency_s", Rule::NON_NEGATIVE, ProfilePart::NETWORK},
    {"nic_efficiency", Rule::FRACTION, ProfilePart::NETWORK},
    {"pcie_bytes_per_s", Rule::POSITIVE, ProfilePart::ALL},
    {"comm_overlap_slowdown", Rule::NON_NEGATIVE, ProfilePart::ALL},
    {"compute_capability", Rule::POSITIVE, ProfilePart::NETWORK},
    {"cuda_context_bytes", Rule::NON_NEGATIVE, ProfilePart::ALL},
    {"cublas_workspace_bytes", Rule::NON_NEGATIVE, ProfilePart::ALL},
    {"nccl_buffer_bytes_per_communicator", Rule::NON_NEGATIVE, ProfilePart::ALL},
    {"fp8_gemm_efficiency", Rule::NON_NEGATIVE, ProfilePart::ALL},
    // A profile built in code may leave the tiling out (0: the curve as it is).
    {"sm_count", Rule::NON_NEGATIVE, ProfilePart::ALL},
    {"gemm_tile_rows", Rule::NON_NEGATIVE, ProfilePart::ALL},
    {"gemm_tile_cols", Rule::NON_NEGATIVE, ProfilePart::ALL},
    {"gemm_curve_sm_count", Rule::NON_NEGATIVE, ProfilePart::ALL},
};

struct CurveRule {
  const char* field;
  const char* variable;
};
constexpr CurveRule CURVE_RULES[] = {
    {"gemm_efficiency", detail::GEMM_VARIABLE},
    {"batched_gemm_efficiency", detail::BATCHED_GEMM_VARIABLE},
};
constexpr CurveRule OPTIONAL_CURVE_RULES[] = {
    {"causal_attention_efficiency", detail::BATCHED_GEMM_VARIABLE},
    {"dropout_attention_efficiency", detail::BATCHED_GEMM_VARIABLE},
};

bool wanted(ProfilePart rule_part, ProfilePart asked) { return asked == ProfilePart::ALL || rule_part == asked; }

const FieldDescriptor* field_of(const google::protobuf::Descriptor* d, const char* name) {
  const FieldDescriptor* f = d->FindFieldByName(name);
  if (f == nullptr) throw std::logic_error(std::string("profile.proto has no field ") + name);
  return f;
}

void check_cited(const GpuProfile& profile, const CitedRule& rule, bool require_sources,
                 std::vector<ProfileProblem>& problems) {
  const FieldDescriptor* field = field_of(GpuProfile::descriptor(), rule.field);
  const auto* reflection = profile.GetReflection();
  if (!reflection->HasField(profile, field)) {
    problems.push_back({{{field, -1}}, "missing (every constant needs a value and its source)"});
    return;
  }
  const auto& cited = static_cast<const Cited&>(reflection->GetMessage(profile, field));
  const double v = cited.value();
  const FieldStep value_step{field_of(Cited::descriptor(), "value"), -1};
  if (!std::isfinite(v)) {
    problems.push_back({{{field, -1}, value_step}, "must be a finite number"});
  } else if (rule.rule == Rule::NON_NEGATIVE && v < 0) {
    problems.push_back({{{field, -1}, value_step}, "must be >= 0, got " + format_number(v)});
  } else if (rule.rule == Rule::POSITIVE && !(v > 0)) {
    problems.push_back({{{field, -1}, value_step}, "must be > 0, got " + format_number(v)});
  } else if (rule.rule == Rule::FRACTION && !(v > 0 && v <= 1)) {
    problems.push_back({{{field, -1}, value_step}, "must be a fraction in (0, 1], got " + format_number(v)});
  }
  if (require_sources && cited.source().empty()) {
    problems.push_back({{{field, -1}}, "has no source (cite the datasheet, measurement or calibration)"});
  }
}

// One curve's points, variable and source; `here` is the path to the curve.
void check_curve_points(const EfficiencyCurve& curve, const std::vector<FieldStep>& here, const char* variable,
                        bool require_sources, std::vector<ProfileProblem>& problems) {
  auto at = [&](std::initializer_list<FieldStep> tail) {
    std::vector<FieldStep> path = here;
    path.insert(path.end(), tail.begin(), tail.end());
    return path;
  };
  if (curve.variable() != variable) {
    problems.push_back({at({{field_of(EfficiencyCurve::descriptor(), "variable"), -1}}),
                        "variable is '" + curve.variable() + "', expected '" + variable + "'"});
  }
  if (curve.point_size() == 0) {
    problems.push_back({here, "has no points (an empty curve has no efficiency to give)"});
  }
  const FieldDescriptor* point_field = field_of(EfficiencyCurve::descriptor(), "point");
  const FieldDescriptor* x_field = field_of(EfficiencyCurve::Point::descriptor(), "x");
  const FieldDescriptor* eff_field = field_of(EfficiencyCurve::Point::descriptor(), "efficiency");
  for (int i = 0; i < curve.point_size(); ++i) {
    const auto& p = curve.point(i);
    const FieldStep point{point_field, i};
    if (!(std::isfinite(p.x()) && p.x() > 0)) {
      problems.push_back({at({point, {x_field, -1}}), "x must be > 0 (the curve is in log2 x), got " + format_number(p.x())});
    } else if (i > 0 && !(p.x() > curve.point(i - 1).x())) {
      problems.push_back({at({point, {x_field, -1}}),
                          "x must increase from point to point: " + format_number(p.x()) + " after " +
                              format_number(curve.point(i - 1).x())});
    }
    if (!(std::isfinite(p.efficiency()) && p.efficiency() > 0 && p.efficiency() <= 1)) {
      problems.push_back({at({point, {eff_field, -1}}),
                          "efficiency must be a fraction in (0, 1], got " + format_number(p.efficiency())});
    }
  }
  if (require_sources && curve.source().empty()) {
    problems.push_back({here, "has no source (cite the measurement or calibration)"});
  }
}

void check_curve(const GpuProfile& profile, const CurveRule& rule, bool require_sources,
                 std::vector<ProfileProblem>& problems) {
  const FieldDescriptor* field = field_of(GpuProfile::descriptor(), rule.field);
  const auto* reflection = profile.GetReflection();
  if (!reflection->HasField(profile, field)) {
    problems.push_back({{{field, -1}}, "missing (needs at least one point and a source)"});
    return;
  }
  const auto& curve = static_cast<const EfficiencyCurve&>(reflection->GetMessage(profile, field));
  check_curve_points(curve, {{field, -1}}, rule.variable, require_sources, problems);
}

// Optional curves: checked like the others where the profile has them.
void check_optional_curve(const GpuProfile& profile, const CurveRule& rule, bool require_sources,
                          std::vector<ProfileProblem>& problems) {
  const FieldDescriptor* field = field_of(GpuProfile::descriptor(), rule.field);
  if (profile.GetReflection()->HasField(profile, field)) check_curve(profile, rule, require_sources, problems);
}

// Measured GEMM curves of other dtypes: one per dtype among those the cost model has a
// peak for besides BF16 (whose curve is gemm_efficiency), each a valid GEMM curve with the
// tiles and SM count it was evaluated with.
void check_dtype_gemm_curves(const GpuProfile& profile, bool require_sources, std::vector<ProfileProblem>& problems) {
  const FieldDescriptor* field = field_of(GpuProfile::descriptor(), "dtype_gemm_efficiency");
  const auto* d = DtypeGemmEfficiency::descriptor();
  std::vector<std::string> seen;
  for (int i = 0; i < profile.dtype_gemm_efficiency_size(); ++i) {
    const DtypeGemmEfficiency& e = profile.dtype_gemm_efficiency(i);
    const FieldStep here{field, i};
    if (e.dtype() != "fp16" && e.dtype() != "fp8" && e.dtype() != "tf32") {
      problems.push_back({{here, {field_of(d, "dtype"), -1}},
                          "dtype is '" + e.dtype() + "'; valid: fp16, fp8, tf32 (BF16's curve is gemm_efficiency)"});
    } else if (std::find(seen.begin(), seen.end(), e.dtype()) != seen.end()) {
      problems.push_back({{here, {field_of(d, "dtype"), -1}}, "a second curve for dtype '" + e.dtype() + "' (one per dtype)"});
    }
    seen.push_back(e.dtype());
    if (!e.has_curve()) {
      problems.push_back({{here, {field_of(d, "curve"), -1}}, "missing (needs at least one point and a source)"});
    } else {
      check_curve_points(e.curve(), {here, {field_of(d, "curve"), -1}}, detail::GEMM_VARIABLE, require_sources,
                         problems);
    }
    for (const char* name : {"tile_rows", "tile_cols", "curve_sm_count"}) {
      const FieldDescriptor* f = field_of(d, name);
      const std::int32_t v = e.GetReflection()->GetInt32(e, f);
      if (v <= 0 || v > 1048576) {
        problems.push_back({{here, {f, -1}}, std::string("must be a whole number from 1 to 1048576, got ") +
                                                 std::to_string(v)});
      }
    }
  }
}

// The GEMM tiling's four numbers are counts (whole, at most 2^20) and come together: the
// cost model uses all of them or none.
void check_tiling(const GpuProfile& profile, std::vector<ProfileProblem>& problems) {
  static constexpr const char* FIELDS[] = {"sm_count", "gemm_tile_rows", "gemm_tile_cols", "gemm_curve_sm_count"};
  const FieldStep value_step{field_of(Cited::descriptor(), "value"), -1};
  int positive = 0;
  for (const char* name : FIELDS) {
    const FieldDescriptor* field = field_of(GpuProfile::descriptor(), name);
    const double v = static_cast<const Cited&>(profile.GetReflection()->GetMessage(profile, field)).value();
    if (!std::isfinite(v) || v < 0) continue;  // check_cited reports it
    if (v != std::floor(v) || v > 1048576) {
      problems.push_back({{{field, -1}, value_step}, "must be a whole number from 0 to 1048576, got " + format_number(v)});
    }
    if (v > 0) ++positive;
  }
  if (positive != 0 && positive != 4) {
    problems.push_back({{{field_of(GpuProfile::descriptor(), "sm_count"), -1}},
                        "sm_count, gemm_tile_rows, gemm_tile_cols and gemm_curve_sm_count must be all 0 (no GEMM "
                        "tiling: the curve as it is) or all > 0"});
  }
}

// Where a problem points: the deepest step of its path that the text mentions (a missing
// field points at its enclosing message), or the start of the text.
std::pair<int, int> locate(const TextFormat::ParseInfoTree& root, const std::vector<FieldStep>& path) {
  std::pair<int, int> best{0, 0};
  const TextFormat::ParseInfoTree* tree = &root;
  for (const auto& step : path) {
    if (tree == nullptr) break;
    const auto loc = tree->GetLocation(step.field, step.index);
    if (loc.line < 0) break;
    best = {loc.line, loc.column};
    if (step.field->type() != FieldDescriptor::TYPE_MESSAGE) break;
    tree = tree->GetTreeForNested(step.field, step.index);
  }
  return best;
}

struct Shipped {
  std::map<std::string, GpuProfile> profiles;  // sorted by name
};

const Shipped& shipped() {
  static const Shipped instance = [] {
    Shipped s;
    for (const auto& e : detail::embedded_profiles()) {
      GpuProfile p;
      const std::string error = parse_profile(e.text, e.origin, p);
      // A shipped profile that does not load is a defect of the build, not of the input.
      if (!error.empty()) throw std::logic_error("shipped GPU profile is invalid:\n" + error);
      if (p.name() != e.name) {
        throw std::logic_error(std::string(e.origin) + ": name '" + p.name() + "' differs from the file name '" +
                               e.name + "'");
      }
      s.profiles.emplace(p.name(), std::move(p));
    }
    return s;
  }();
  return instance;
}

}  // namespace

namespace detail {

std::vector<ProfileProblem> check_profile(const GpuProfile& profile, ProfilePart part, bool require_sources) {
  std::vector<ProfileProblem> problems;
  if (part == ProfilePart::ALL && profile.name().empty()) {
    problems.push_back({{{field_of(GpuProfile::descriptor(), "name"), -1}}, "name is empty"});
  }
  // Walk the fields in declaration order so that the messages come out in the order a
  // profile file lists them.
  const auto* descriptor = GpuProfile::descriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const std::string& name = descriptor->field(i)->name();
    for (const auto& rule : CITED_RULES) {
      if (name == rule.field && wanted(rule.part, part)) check_cited(profile, rule, require_sources, problems);
    }
    for (const auto& rule : CURVE_RULES) {
      if (name == rule.field && wanted(ProfilePart::COMPUTE, part)) check_curve(profile, rule, require_sources, problems);
    }
    for (const auto& rule : OPTIONAL_CURVE_RULES) {
      if (name == rule.field && wanted(ProfilePart::COMPUTE, part))
        check_optional_curve(profile, rule, require_sources, problems);
    }
  }
  if (wanted(ProfilePart::COMPUTE, part)) {
    check_tiling(profile, problems);
    check_dtype_gemm_curves(profile, require_sources, problems);
  }
  return problems;
}

std::string path_string(const std::vector<FieldStep>& path) {
  std::string out;
  for (const auto& step : path) {
    if (!out.empty()) out += '.';
    out += step.field->name();
    if (step.index >= 0) out += "[" + std::to_string(step.index) + "]";
  }
  return out;
}

void require_valid_profile(const GpuProfile& profile, ProfilePart part, const char* who) {
  const auto problems = check_profile(profile, part, /*require_sources=*/false);
  if (problems.empty()) return;
  std::string message = std::string(who) + ": GPU profile '" + profile.name() + "' cannot be used:";
  for (const auto& p : problems) message += "\n  " + path_string(p.path) + ": " + p.message;
  throw std::invalid_argument(message);
}

}  // namespace detail

std::optional<GpuProfile> find_profile(const std::string& name) {
  const auto& profiles = shipped().profiles;
  const auto it = profiles.find(name);
  if (it == profiles.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> profile_names() {
  std::vector<std::string> names;
  for (const auto& [name, profile] : shipped().profiles) names.push_back(name);
  return names;  // std::map keeps them sorted
}

std::string parse_profile(const std::string& text, const std::string& origin, GpuProfile& out) {
  CollectErrors errors(origin);
  TextFormat::ParseInfoTree tree;
  TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&tree);
  GpuProfile parsed;
  if (!parser.ParseFromString(text, &parsed)) {
    if (errors.errors().empty()) errors.errors().push_back(origin + ":1:1: could not parse the profile");
    return join_lines(errors.errors());
  }
  std::vector<std::string> messages;
  for (const auto& problem : detail::check_profile(parsed, ProfilePart::ALL, /*require_sources=*/true)) {
    const auto [line, col] = locate(tree, problem.path);
    messages.push_back(origin + ":" + std::to_string(line + 1) + ":" + std::to_string(col + 1) + ": " +
                       detail::path_string(problem.path) + ": " + problem.message);
  }
  if (!messages.empty()) return join_lines(messages);
  out = std::move(parsed);
  return {};
}

double evaluate(const EfficiencyCurve& curve, double x) {
  const int n = curve.point_size();
  if (n == 0) {
    throw std::invalid_argument("efficiency curve '" + curve.variable() + "' has no points");
  }
  // Flat beyond the measured range: extrapolating a fitted slope would invent efficiencies
  // nobody measured. (!(x > ...) also sends NaN and x <= 0 to the first point.)
  if (!(x > curve.point(0).x())) return curve.point(0).efficiency();
  if (x >= curve.point(n - 1).x()) return curve.point(n - 1).efficiency();
  int hi = 1;
  while (curve.point(hi).x() < x) ++hi;  // x < last x, so this stops inside the curve
  const auto& a = curve.point(hi - 1);
  const auto& b = curve.point(hi);
  const double t = (std::log2(x) - std::log2(a.x())) / (std::log2(b.x()) - std::log2(a.x()));
  return a.efficiency() + t * (b.efficiency() - a.efficiency());
}

}  // namespace trainsim::hardware
