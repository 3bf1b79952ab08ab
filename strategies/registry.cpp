#include "strategies/registry.hpp"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include "strategies/detail/pass_functions.hpp"
#include "strategies/verify.hpp"

namespace trainsim::strategies {
namespace {

std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    const std::size_t start = i;
    while (i < s.size() && s[i] != ' ') ++i;
    if (i > start) out.emplace_back(s.substr(start, i - start));
  }
  return out;
}

std::optional<std::int64_t> to_int(std::string_view s) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

// "size:int[1,]" (see passes.def). A malformed descriptor is a bug in passes.def: the
// registry test parses every one.
ParamInfo parse_param(const std::string& word, bool positional) {
  ParamInfo p;
  p.positional = positional;
  const std::size_t colon = word.find(':');
  p.name = word.substr(0, colon);
  std::string_view rest = std::string_view(word).substr(colon + 1);
  if (rest.starts_with("bool")) {
    p.type = ParamInfo::Type::BOOL;
    p.min = 0;
    p.max = 1;
    p.required = false;
    return p;
  }
  assert(rest.starts_with("int") && "passes.def: parameter type must be int or bool");
  rest.remove_prefix(3);
  p.min = INT64_MIN;
  if (rest.starts_with('[')) {
    const std::size_t comma = rest.find(','), close = rest.find(']');
    p.min = to_int(rest.substr(1, comma - 1)).value_or(INT64_MIN);
    p.max = to_int(rest.substr(comma + 1, close - comma - 1)).value_or(INT64_MAX);
    rest.remove_prefix(close + 1);
  }
  if (rest.starts_with('=')) {
    p.required = false;
    p.default_value = to_int(rest.substr(1)).value_or(0);
  }
  return p;
}

std::vector<ParamInfo> parse_params(std::string_view desc) {
  std::vector<ParamInfo> out;
  const std::size_t semi = desc.find(';');
  const std::string_view pos = semi == std::string_view::npos ? std::string_view() : desc.substr(0, semi);
  const std::string_view named = semi == std::string_view::npos ? desc : desc.substr(semi + 1);
  for (const auto& w : words(pos)) out.push_back(parse_param(w, true));
  for (const auto& w : words(named)) out.push_back(parse_param(w, false));
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string range_text(const ParamInfo& p) {
  if (p.type == ParamInfo::Type::BOOL) return "a flag: written as its bare name, or =0/=1";
  if (p.max == INT64_MAX) return "an integer ≥ " + std::to_string(p.min);
  return "an integer in [" + std::to_string(p.min) + ", " + std::to_string(p.max) + "]";
}

}  // namespace

const char* to_string(PassKind k) {
  switch (k) {
    case PassKind::LAYOUT: return "layout";
    case PassKind::SCHEDULE: return "schedule";
    case PassKind::MEMORY: return "memory";
    case PassKind::OVERLAP: return "overlap";
  }
  return "?";
}

std::int64_t PassArgs::get(std::string_view name) const {
  for (const auto& [key, value] : values)
    if (key == name) return value;
  assert(false && "PassArgs::get: not a parameter of this pass");
  return 0;
}

std::string ParamInfo::str() const {
  std::string out = name + (type == Type::BOOL ? ":bool" : ":int");
  if (type == Type::INT && (min != INT64_MIN || max != INT64_MAX))
    out += "[" + (min == INT64_MIN ? std::string() : std::to_string(min)) + "," +
           (max == INT64_MAX ? std::string() : std::to_string(max)) + "]";
  if (type == Type::INT && !required) out += "=" + std::to_string(default_value);
  return out;
}

std::string PassInfo::signature() const {
  std::vector<std::string> parts;
  if (*variant != '\0') parts.emplace_back(variant);
  for (const auto& p : params) {
    if (p.type == ParamInfo::Type::BOOL)
      parts.push_back(p.name);
    else if (p.positional)
      parts.push_back(p.required ? p.name : p.name + "=" + std::to_string(p.default_value));
    else
      parts.push_back(p.name + "=" + (p.required ? "…" : std::to_string(p.default_value)));
  }
  std::string out = name;
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? "(" : ",") + parts[i];
  return parts.empty() ? out : out + ")";
}

const std::vector<PassInfo>& all_passes() {
  static const std::vector<PassInfo> passes = {
#define TRAINSIM_PASS(name, variant, kind, function, params, needs, gives, description) \
  {name, variant, PassKind::kind, &detail::function, parse_params(params), words(needs), words(gives), description},
#include "strategies/passes.def"
#undef TRAINSIM_PASS
  };
  return passes;
}

const PassInfo* find_pass(const PassInvocation& pass) {
  const std::string* first =
      !pass.args.empty() && pass.args.front().key.empty() ? &pass.args.front().value : nullptr;
  for (const auto& p : all_passes()) {
    if (pass.name != p.name) continue;
    if (*p.variant == '\0' || (first != nullptr && *first == p.variant)) return &p;
  }
  return nullptr;
}

std::vector<std::string> pass_names() {
  std::vector<std::string> names;
  for (const auto& p : all_passes())
    if (std::find(names.begin(), names.end(), p.name) == names.end()) names.emplace_back(p.name);
  return names;
}

std::vector<std::string> variants_of(std::string_view name) {
  std::vector<std::string> out;
  for (const auto& p : all_passes())
    if (name == p.name && *p.variant != '\0') out.emplace_back(p.variant);
  return out;
}

std::vector<std::string> pass_names(PassKind kind) {
  std::vector<std::string> names;
  for (const auto& p : all_passes())
    if (p.kind == kind) names.push_back(*p.variant ? std::string(p.name) + "(" + p.variant + ")" : p.name);
  std::sort(names.begin(), names.end());
  return names;
}

std::variant<ResolvedPass, PassError> resolve(const PassInvocation& pass) {
  auto fail = [&](std::size_t column, std::string message) {
    return PassError{-1, column, std::move(message)};
  };
  const PassInfo* info = find_pass(pass);
  if (info == nullptr) {
    const std::vector<std::string> variants = variants_of(pass.name);
    if (variants.empty())
      return fail(pass.column, "unknown pass \"" + pass.name + "\" (registered: " + join(pass_names()) + ")");
    const bool has_first = !pass.args.empty() && pass.args.front().key.empty();
    return fail(has_first ? pass.args.front().column : pass.column,
                pass.name + (has_first ? ": unknown variant \"" + pass.args.front().value + "\"" : " needs a variant") +
                    " (valid: " + join(variants) + "; e.g. " + pass.name + "(" + variants.front() + "))");
  }
  ResolvedPass out;
  out.info = info;
  std::vector<std::optional<std::int64_t>> given(info->params.size());
  std::size_t arg = *info->variant != '\0' ? 1 : 0;  // the variant is consumed
  std::size_t next_positional = 0;
  auto param_list = [&] {
    std::vector<std::string> names;
    for (const auto& p : info->params) names.push_back(p.name);
    return names.empty() ? std::string("it takes none") : "valid: " + join(names);
  };
  for (; arg < pass.args.size(); ++arg) {
    const PassArg& a = pass.args[arg];
    std::size_t index = info->params.size();
    std::string value = a.value;
    if (!a.key.empty()) {
      for (std::size_t i = 0; i < info->params.size(); ++i)
        if (info->params[i].name == a.key) index = i;
      if (index == info->params.size())
        return fail(a.column, info->signature() + ": no parameter \"" + a.key + "\" (" + param_list() + ")");
    } else {
      // A bare word naming a bool parameter sets it; other positional values fill the
      // positional parameters in order.
      for (std::size_t i = 0; i < info->params.size(); ++i)
        if (info->params[i].type == ParamInfo::Type::BOOL && info->params[i].name == a.value) {
          index = i;
          value = "1";
        }
      if (index == info->params.size()) {
        while (next_positional < info->params.size() && !info->params[next_positional].positional) ++next_positional;
        if (next_positional == info->params.size())
          return fail(a.column, info->signature() + ": unexpected argument \"" + a.value + "\" (" + param_list() +
                                    (info->params.empty() ? "" : "; write key=value") + ")");
        index = next_positional++;
      }
    }
    const ParamInfo& p = info->params[index];
    if (given[index])
      return fail(a.column, info->signature() + ": parameter " + p.name + " given twice");
    std::optional<std::int64_t> v = to_int(value);
    if (p.type == ParamInfo::Type::BOOL && (value == "true" || value == "false")) v = value == "true";
    if (!v || *v < p.min || *v > p.max)
      return fail(a.column + (a.key.empty() ? 0 : a.key.size() + 1),
                  info->signature() + ": " + p.name + "=" + value + " is not " + range_text(p));
    given[index] = v;
  }
  PassInvocation& c = out.canonical;
  c.name = info->name;
  c.column = pass.column;
  if (*info->variant != '\0') c.args.push_back({"", info->variant});
  for (std::size_t i = 0; i < info->params.size(); ++i) {
    const ParamInfo& p = info->params[i];
    if (!given[i] && p.required)
      return fail(pass.column, info->signature() + ": missing " + p.name + " (" + range_text(p) + ")");
    const std::int64_t v = given[i].value_or(p.default_value);
    out.args.values.emplace_back(p.name, v);
    if (p.type == ParamInfo::Type::BOOL) {
      if (v != 0) c.args.push_back({"", p.name});
    } else if (p.positional) {
      c.args.push_back({"", std::to_string(v)});
    } else if (p.required || v != p.default_value) {
      c.args.push_back({p.name, std::to_string(v)});
    }
  }
  return out;
}

std::vector<PassError> check_pipeline(const Pipeline& pipeline) {
  std::vector<PassError> errors;
  std::vector<std::pair<std::string, std::string>> provided;  // fact, by which pass
  std::vector<const PassInfo*> infos;
  for (std::size_t i = 0; i < pipeline.size(); ++i) {
    const auto index = static_cast<std::int32_t>(i);
    auto resolved = resolve(pipeline[i]);
    if (auto* e = std::get_if<PassError>(&resolved)) {
      e->pass = index;
      errors.push_back(std::move(*e));
      // A known pass with bad arguments still provides its facts: no follow-on errors.
      if (const PassInfo* info = find_pass(pipeline[i]))
        for (const auto& give : info->gives) provided.emplace_back(give, to_string(pipeline[i]));
      continue;
    }
    const auto& r = std::get<ResolvedPass>(resolved);
    const std::string shown = to_string(r.canonical);
    auto providers = [](const std::string& fact) {
      std::vector<std::string> names;
      for (const auto& p : all_passes())
        if (std::find(p.gives.begin(), p.gives.end(), fact) != p.gives.end()) {
          std::string n = p.signature();
          if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
        }
      return join(names);
    };
    for (const auto& need : r.info->needs) {
      if (need.starts_with('-')) {
        const std::string fact = need.substr(1);
        for (const auto& [f, by] : provided)
          if (f == fact)
            errors.push_back({index, pipeline[i].column,
                              shown + " must run before " + by + " (it reshapes what the " + fact +
                                  " pass works from); move it earlier"});
        continue;
      }
      const bool have = std::any_of(provided.begin(), provided.end(), [&](const auto& f) { return f.first == need; });
      if (!have)
        errors.push_back({index, pipeline[i].column,
                          shown + " requires " + need + ", which no earlier pass provides (add one of: " +
                              providers(need) + " before it)"});
    }
    for (const auto& give : r.info->gives) {
      for (const auto& [f, by] : provided)
        if (f == give)
          errors.push_back({index, pipeline[i].column,
                            shown + " provides " + give + ", which " + by + " already provides (keep one of them)"});
      provided.emplace_back(give, shown);
    }
  }
  const bool scheduled =
      std::any_of(provided.begin(), provided.end(), [](const auto& f) { return f.first == "schedule"; });
  if (errors.empty() && !scheduled)
    errors.push_back({-1, 0, "the pipeline has no schedule pass (end it with one of: " +
                                 join(pass_names(PassKind::SCHEDULE)) + ")"});
  return errors;
}

Pipeline canonical(const Pipeline& pipeline) {
  Pipeline out;
  for (const auto& p : pipeline) {
    auto r = resolve(p);
    out.push_back(std::holds_alternative<ResolvedPass>(r) ? std::get<ResolvedPass>(r).canonical : p);
  }
  return out;
}

Pipeline pipeline_for(const TrainingSpec& spec) {
  if (!spec.passes.empty()) return spec.passes;
  // Template-level passes run before the schedule, which expands the templates into the
  // iteration's steps: layout, model-state sharding, recompute, overlap, then schedule.
  const Layout& l = spec.layout;
  auto n = [](std::int64_t v) { return std::to_string(v); };
  Pipeline p;
  PassInvocation tensor{"tensor", {{"", n(l.tensor)}}};
  if (l.sequence_parallel) tensor.args.push_back({"", "sp"});
  p.push_back(std::move(tensor));
  PassInvocation pipe{"pipeline", {{"", n(l.pipeline)}}};
  if (l.virtual_stages != 1) pipe.args.push_back({"v", n(l.virtual_stages)});
  if (l.first_stage_layers != 0) pipe.args.push_back({"first", n(l.first_stage_layers)});
  if (l.last_stage_layers != 0) pipe.args.push_back({"last", n(l.last_stage_layers)});
  p.push_back(std::move(pipe));
  p.push_back({"data", {{"", n(l.data)}}});
  if (spec.zero_stage > 0) p.push_back({"zero", {{"", n(spec.zero_stage)}}});
  if (spec.recompute == Recompute::SELECTIVE) p.push_back({"recompute", {{"", "selective"}}});
  if (spec.recompute == Recompute::FULL) p.push_back({"recompute", {{"", "full"}}});
  if (spec.recompute == Recompute::EVERY_K) p.push_back({"recompute", {{"", "every-k"}, {"k", n(spec.recompute_k)}}});
  if (spec.overlap_grad_reduce) p.push_back({"overlap-grad-reduce", {}});
  if (spec.overlap_param_gather) p.push_back({"overlap-param-gather", {}});
  if (spec.overlap_tp_comm) p.push_back({"overlap-tp-comm", {}});
  p.push_back({spec.pipeline_schedule, {}});
  return p;
}

TrainingSpec with_pipeline(TrainingSpec spec, const Pipeline& pipeline) {
  spec.zero_stage = 0;
  spec.recompute = Recompute::NONE;
  spec.recompute_k = 0;
  spec.overlap_grad_reduce = spec.overlap_param_gather = spec.overlap_tp_comm = false;
  for (const auto& inv : pipeline) {
    auto r = resolve(inv);
    if (!std::holds_alternative<ResolvedPass>(r)) continue;
    const ResolvedPass& p = std::get<ResolvedPass>(r);
    const std::string name = p.info->name, variant = p.info->variant;
    if (name == "tensor") {
      spec.layout.tensor = p.args.get("size");
      spec.layout.sequence_parallel = p.args.get("sp") != 0;
    } else if (name == "pipeline") {
      spec.layout.pipeline = p.args.get("size");
      spec.layout.virtual_stages = p.args.get("v");
      spec.layout.first_stage_layers = p.args.get("first");
      spec.layout.last_stage_layers = p.args.get("last");
    } else if (name == "data") {
      spec.layout.data = p.args.get("size");
    } else if (name == "zero") {
      spec.zero_stage = std::stoll(variant);
    } else if (name == "recompute") {
      if (variant == "selective") spec.recompute = Recompute::SELECTIVE;
      if (variant == "full") spec.recompute = Recompute::FULL;
      if (variant == "every-k") {
        spec.recompute = Recompute::EVERY_K;
        spec.recompute_k = p.args.get("k");
      }
    } else if (name == "overlap-grad-reduce") {
      spec.overlap_grad_reduce = true;
    } else if (name == "overlap-param-gather") {
      spec.overlap_param_gather = true;
    } else if (name == "overlap-tp-comm") {
      spec.overlap_tp_comm = true;
    } else if (p.info->kind == PassKind::SCHEDULE) {
      spec.pipeline_schedule = name;
    }
  }
  spec.passes = canonical(pipeline);
  return spec;
}

bool BuildOptions::default_verify() {
#ifndef NDEBUG
  return true;
#else
  const char* env = std::getenv("TRAINSIM_VERIFY");
  return env != nullptr && std::string_view(env) == "1";
#endif
}

namespace {

// A pipeline that check_pipeline accepts, resolved pass by pass. Both depend on the
// pipeline's text and columns alone, and a sweep or search builds the same few pipelines
// over and over: each is checked and resolved once per thread.
std::shared_ptr<const std::vector<ResolvedPass>> checked_passes(const Pipeline& pipeline) {
  // Every field resolve reads when it accepts (names, keys, values, each pass's column),
  // each string after its length, so that no two pipelines share a key.
  std::string key;
  auto put = [&](std::string_view text) { key.append(std::to_string(text.size())).append(1, ':').append(text); };
  for (const auto& inv : pipeline) {
    put(inv.name);
    put(std::to_string(inv.column));
    put(std::to_string(inv.args.size()));
    for (const auto& a : inv.args) {
      put(a.key);
      put(a.value);
    }
  }
  thread_local std::unordered_map<std::string, std::shared_ptr<const std::vector<ResolvedPass>>> accepted;
  if (const auto found = accepted.find(key); found != accepted.end()) return found->second;
  if (std::vector<PassError> errors = check_pipeline(pipeline); !errors.empty()) {
    std::string message = "the pass pipeline \"" + to_string(pipeline) + "\" cannot run: ";
    for (std::size_t i = 0; i < errors.size(); ++i) message += (i ? "; " : "") + errors[i].message;
    throw std::invalid_argument(message);
  }
  auto passes = std::make_shared<std::vector<ResolvedPass>>();
  for (const auto& inv : pipeline) passes->push_back(std::get<ResolvedPass>(resolve(inv)));
  constexpr std::size_t MAX_PIPELINES = 4096;  // bounded; a miss only costs time
  if (accepted.size() >= MAX_PIPELINES) accepted.clear();
  accepted.emplace(std::move(key), passes);
  return passes;
}

}  // namespace

Program build_program(const TrainingSpec& spec, const BuildOptions& options) {
  const Pipeline pipeline = pipeline_for(spec);
  const std::shared_ptr<const std::vector<ResolvedPass>> passes = checked_passes(pipeline);
  Program program =
      initial_program(spec.passes.empty() ? spec : with_pipeline(spec, spec.passes), /*build_templates=*/false);
  // The passes that provide the tensor or pipeline layout derive every role's templates from
  // the layout and the layer split alone; any other pass reads them, so they are rebuilt
  // first if a layout pass left them stale.
  auto derives_templates = [](const PassInfo& info) {
    return std::any_of(info.gives.begin(), info.gives.end(),
                       [](const std::string& fact) { return fact == "tensor" || fact == "pipeline"; });
  };
  auto gives_pipeline = [](const PassInfo& info) {
    return std::find(info.gives.begin(), info.gives.end(), "pipeline") != info.gives.end();
  };
  // Whether the restored middle stages may have been changed apart (Role::restored_from): a
  // pass after the schedule may change one stage's lists and not another's. (With a hook no
  // stage is elided, so none is restored.)
  bool changed_after_restore = false;
  for (const ResolvedPass& pass : *passes) {
    if (is_scheduled(program)) changed_after_restore = true;
    const std::string shown = to_string(pass.canonical);
    const std::size_t before = program.passes_run.size();
    if (pass.info->kind == PassKind::SCHEDULE) restore_middle_stages(program);
    if (!derives_templates(*pass.info)) refresh_templates(program);
    if (std::string why = pass.info->run(program, pass.args); !why.empty())
      throw std::invalid_argument("pass \"" + shown + "\": " + why);
    // The canonical invocation, whatever the pass itself noted.
    program.passes_run.resize(before);
    program.passes_run.push_back(shown);
    // A hook sees every stage; otherwise the passes up to the schedule build and transform
    // one middle stage for all (a tenth of a layout search's evaluation at 32 stages).
    if (options.after_pass == nullptr && gives_pipeline(*pass.info)) elide_middle_stages(program);
    if (options.after_pass != nullptr || options.verify) refresh_templates(program);
    if (options.after_pass != nullptr) options.after_pass(program, pass.canonical);
    if (options.verify) {
      Program whole;
      if (!program.elided_stages.empty()) {
        whole = program;
        restore_middle_stages(whole);
      }
      if (std::string broken = verify_program(program.elided_stages.empty() ? program : whole); !broken.empty())
        throw std::logic_error("verifier: the program is broken after pass \"" + shown + "\" (pipeline so far \"" +
                               program.pipeline_string() + "\"): " + broken);
    }
  }
  restore_middle_stages(program);
  refresh_templates(program);
  if (changed_after_restore)
    for (Role& role : program.roles) role.restored_from = 0;
  return program;
}

}  // namespace trainsim::strategies
