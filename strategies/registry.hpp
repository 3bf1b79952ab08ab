#pragma once
// Strategy passes: each is a function Program → Program (in place) registered under the
// name pipeline strings use. strategies/passes.def lists every pass (LLVM PassRegistry.def)
// with its parameters and what it requires and provides; a pipeline (strategies/pipeline.hpp)
// is checked against it once, when assembled, then run.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "strategies/pipeline.hpp"
#include "strategies/program.hpp"

namespace trainsim::strategies {

enum class PassKind : std::uint8_t { LAYOUT, SCHEDULE, MEMORY, OVERLAP };
const char* to_string(PassKind k);

// A pass's arguments once checked against its parameters: every parameter has a value
// (bool: 0 or 1), in the order the parameters are declared.
struct PassArgs {
  std::vector<std::pair<std::string, std::int64_t>> values;
  // The value of a declared parameter (asserts it is one).
  std::int64_t get(std::string_view name) const;
};

// Why a pass cannot run on this program (empty: it ran).
using PassFn = std::string (*)(Program&, const PassArgs&);

struct ParamInfo {
  enum class Type : std::uint8_t { INT, BOOL };
  std::string name;
  Type type = Type::INT;
  std::int64_t min = 0, max = INT64_MAX;
  bool required = true;  // no default
  std::int64_t default_value = 0;
  bool positional = false;
  // "size:int[1,]", "v:int[1,]=1", "sp:bool"
  std::string str() const;
};

struct PassInfo {
  const char* name;
  const char* variant;  // "" or the first positional argument that picks this entry
  PassKind kind;
  PassFn run;
  std::vector<ParamInfo> params;
  std::vector<std::string> needs;  // facts required from earlier passes; "-fact": must run before its provider
  std::vector<std::string> gives;  // facts provided
  const char* description;  // one line, with its citation
  std::string signature() const;  // "pipeline(size,v=1,first=0,last=0)", "recompute(every-k,k)"
};

const std::vector<PassInfo>& all_passes();
// The entry a pipeline name (and, for passes with variants, its first positional argument) picks.
const PassInfo* find_pass(const PassInvocation& pass);
// Every distinct pass name; the variants of a name.
std::vector<std::string> pass_names();
std::vector<std::string> variants_of(std::string_view name);
std::vector<std::string> pass_names(PassKind kind);  // sorted; names as written, "recompute(full)" for variants

// A problem of a pipeline: which pass (index, −1: the whole pipeline), the 1-based column
// in the text it was parsed from (0 when it was not parsed), and what is wrong.
struct PassError {
  std::int32_t pass = -1;
  std::size_t column = 0;
  std::string message;
};

// A pass checked against its entry: the entry, its arguments with defaults filled in, and
// the canonical invocation (variant first, positional parameters, then key=value ones
// that differ from their default, bools as their bare name).
struct ResolvedPass {
  const PassInfo* info = nullptr;
  PassArgs args;
  PassInvocation canonical;
};

// Checks one invocation: a registered name and variant, every argument a declared
// parameter of the right type within its range, every required one given.
std::variant<ResolvedPass, PassError> resolve(const PassInvocation& pass);

// Checks a whole pipeline: each pass resolves; what each requires is provided by an
// earlier pass, nothing is provided twice, nothing runs after a pass it must precede, and
// the last pass provides a schedule. Returns every problem (empty: it can run).
std::vector<PassError> check_pipeline(const Pipeline& pipeline);

// The canonical form of a pipeline that check_pipeline accepts.
Pipeline canonical(const Pipeline& pipeline);

// The pipeline a spec's fields ask for, in order: layout (tensor, pipeline, data), then
// model-state sharding and recompute, then overlap, then the schedule; or spec.passes
// when set.
Pipeline pipeline_for(const TrainingSpec& spec);

// `spec` with the fields a pipeline determines set from it (layout sizes, zero stage,
// recompute, overlaps, schedule) and spec.passes = pipeline. The pipeline must pass
// check_pipeline.
TrainingSpec with_pipeline(TrainingSpec spec, const Pipeline& pipeline);

struct BuildOptions {
  // Runs verify_program (strategies/verify.hpp) after every pass. On in debug builds and
  // when the environment sets TRAINSIM_VERIFY=1; tests turn it on.
  bool verify = default_verify();
  // Called after each pass, before the verifier (tests break programs with it; dumps).
  void (*after_pass)(Program&, const PassInvocation&) = nullptr;
  static bool default_verify();
};

// Runs initial_program + every pass of pipeline_for(spec). Throws std::invalid_argument
// with a message naming the pass and the valid names when the pipeline does not check or
// a pass refuses, std::logic_error naming the pass when the verifier finds a broken
// invariant. program.passes_run holds the canonical invocations run.
Program build_program(const TrainingSpec& spec, const BuildOptions& options = {});

}  // namespace trainsim::strategies
