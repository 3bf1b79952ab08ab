// The pass pipeline as data: its grammar, the registry's checks, the verifier, and the
// every-k recompute pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/simulate.hpp"
#include "report/run_report.hpp"
#include "strategies/lower.hpp"
#include "strategies/registry.hpp"
#include "strategies/verify.hpp"
#include "tests/strategies/fixtures.hpp"

namespace trainsim::strategies {
namespace {

Pipeline parsed(const std::string& text) {
  auto r = parse_pipeline(text);
  if (auto* e = std::get_if<PipelineSyntaxError>(&r)) ADD_FAILURE() << text << ": " << e->column << ": " << e->message;
  return std::holds_alternative<Pipeline>(r) ? std::get<Pipeline>(r) : Pipeline{};
}

PipelineSyntaxError syntax_error(const std::string& text) {
  auto r = parse_pipeline(text);
  EXPECT_TRUE(std::holds_alternative<PipelineSyntaxError>(r)) << text;
  return std::holds_alternative<PipelineSyntaxError>(r) ? std::get<PipelineSyntaxError>(r) : PipelineSyntaxError{};
}

std::string check_errors(const std::string& text) {
  std::string out;
  for (const auto& e : check_pipeline(parsed(text))) out += std::to_string(e.column) + ": " + e.message + "\n";
  return out;
}

TEST(PipelineGrammar, PrintParsesBackAndParsePrintsBack) {
  for (const char* s : {"tensor(8),pipeline(16),data(8),zero(1),recompute(selective),1f1b",
                        "tensor(8,sp),pipeline(4,v=5),data(16),zero(1),overlap-grad-reduce,overlap-param-gather,"
                        "overlap-tp-comm,interleaved-1f1b",
                        "tensor(1),pipeline(4,first=2,last=3),data(1),recompute(every-k,k=2),gpipe", "1f1b"}) {
    const Pipeline p = parsed(s);
    EXPECT_EQ(to_string(p), s);
    EXPECT_EQ(parsed(to_string(p)), p);
    EXPECT_EQ(canonical(p), p) << s;  // these are canonical
  }
  const Pipeline p = parsed("pipeline(4,v=5)");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0].args, (std::vector<PassArg>{{"", "4"}, {"v", "5"}}));
}

TEST(PipelineGrammar, SyntaxErrorsNameTheColumn) {
  EXPECT_EQ(syntax_error("tensor(8),,1f1b").column, 11u);
  EXPECT_EQ(syntax_error("tensor(8) ,1f1b").column, 10u);
  EXPECT_NE(syntax_error("tensor(8) ,1f1b").message.find("space"), std::string::npos);
  EXPECT_EQ(syntax_error("tensor(8,1f1b").column, 14u);   // the end: ')' missing
  EXPECT_EQ(syntax_error("tensor()").column, 8u);
  EXPECT_EQ(syntax_error("Tensor(8)").column, 1u);
  EXPECT_EQ(syntax_error("pipeline(4,v=)").column, 14u);
  EXPECT_EQ(syntax_error("").column, 1u);
}

TEST(PipelineCheck, UnknownPassNamesTheColumnAndTheRegisteredPasses) {
  const std::string e = check_errors("tensor(1),pipeline(1),data(1),zb-h1");
  EXPECT_NE(e.find("31: unknown pass \"zb-h1\" (registered: tensor, pipeline, data, zero, recompute"), std::string::npos) << e;
  const std::string v = check_errors("tensor(1),pipeline(1),data(1),recompute(partial),1f1b");
  EXPECT_NE(v.find("41: recompute: unknown variant \"partial\" (valid: selective, full, every-k"), std::string::npos) << v;
}

TEST(PipelineCheck, ParametersAreCheckedAgainstTheirDeclaration) {
  EXPECT_EQ(check_errors("tensor(0),pipeline(1),data(1),1f1b"), "8: tensor(size,sp): size=0 is not an integer ≥ 1\n");
  EXPECT_NE(check_errors("tensor(1),pipeline(1,w=2),data(1),1f1b").find("no parameter \"w\" (valid: size, v, first, last)"),
            std::string::npos);
  EXPECT_NE(check_errors("tensor(1),pipeline(1),data(1),recompute(every-k),1f1b").find("missing k"), std::string::npos);
  EXPECT_NE(check_errors("tensor(1),pipeline(1),data(1),recompute(every-k,k=x),1f1b").find("51: recompute(every-k,k=…): k=x is not an integer ≥ 1"), std::string::npos);
  EXPECT_NE(check_errors("tensor(1),pipeline(1),data(1),1f1b(3)").find("unexpected argument \"3\" (it takes none)"),
            std::string::npos);
  EXPECT_EQ(check_errors("tensor(2,sp=1),pipeline(2,v=1),data(1),1f1b"), "");
  EXPECT_EQ(to_string(canonical(parsed("tensor(2,sp=1),pipeline(2,v=1),data(1),1f1b"))),
            "tensor(2,sp),pipeline(2),data(1),1f1b");
}

TEST(PipelineCheck, RequiresAndProvidesAreChecked) {
  EXPECT_NE(check_errors("tensor(1),pipeline(1),data(2),overlap-param-gather,1f1b")
                .find("overlap-param-gather requires zero, which no earlier pass provides (add one of: zero(1) before it)"),
            std::string::npos);
  EXPECT_NE(check_errors("tensor(1),pipeline(1),data(1),1f1b,recompute(full)")
                .find("recompute(full) must run before 1f1b"),
            std::string::npos);
  EXPECT_NE(check_errors("tensor(1),pipeline(1),data(1),recompute(full),recompute(selective),1f1b")
                .find("recompute(selective) provides recompute, which recompute(full) already provides"),
            std::string::npos);
  EXPECT_NE(check_errors("tensor(1),pipeline(1),data(1)").find("no schedule pass"), std::string::npos);
  // The order rules among the template passes (passes.def); the permutation test below is why.
  for (const auto& [first, then] : std::vector<std::pair<std::string, std::string>>{
           {"recompute(selective)", "overlap-tp-comm"},
           {"overlap-grad-reduce", "overlap-tp-comm"},
           {"overlap-param-gather", "overlap-tp-comm"},
           {"zero(1)", "overlap-grad-reduce"},
           {"recompute(full)", "overlap-param-gather"},
           {"recompute(every-k,k=2)", "overlap-param-gather"}}) {
    const std::string head = "tensor(2,sp),pipeline(1),data(2)" + std::string(first == "zero(1)" ? "" : ",zero(1)");
    const std::string e = check_errors(head + "," + then + "," + first + ",1f1b");
    EXPECT_NE(e.find(first + " must run before " + then), std::string::npos) << e;
    EXPECT_EQ(check_errors(head + "," + first + "," + then + ",1f1b"), "") << first << " then " << then;
  }
  EXPECT_NE(check_errors("pipeline(1),tensor(1),data(1),1f1b").find("pipeline(1) requires tensor"), std::string::npos);
}

TEST(PipelineCheck, EveryRegisteredPassHasParsableParametersAndDescription) {
  for (const auto& p : all_passes()) {
    EXPECT_FALSE(p.gives.empty()) << p.name;
    for (const auto& param : p.params) {
      EXPECT_FALSE(param.name.empty()) << p.name;
      EXPECT_LE(param.min, param.max) << p.name;
    }
  }
}

TEST(PipelineString, StrategyBlocksGiveStringsThatParseBackToThePipelineRun) {
  std::vector<TrainingSpec> specs;
  auto a = testing::gpt_spec(2, 2, 2, 16);
  a.recompute = Recompute::FULL;
  specs.push_back(a);
  auto b = testing::gpt_spec(2, 2, 2, 16);
  b.layout.virtual_stages = 2;
  b.layout.sequence_parallel = true;
  b.pipeline_schedule = "interleaved-1f1b";
  b.zero_stage = 1;
  b.overlap_grad_reduce = b.overlap_param_gather = b.overlap_tp_comm = true;
  b.recompute = Recompute::SELECTIVE;
  specs.push_back(b);
  auto c = testing::gpt_spec(1, 4, 1, 8);
  c.layout.first_stage_layers = 3;
  c.layout.last_stage_layers = 3;
  c.pipeline_schedule = "gpipe";
  specs.push_back(c);
  for (const auto& spec : specs) {
    const Program prog = build_program(spec, BuildOptions{true});
    const std::string s = prog.pipeline_string();
    SCOPED_TRACE(s);
    EXPECT_EQ(to_string(canonical(parsed(s))), s);
    EXPECT_EQ(parsed(s), canonical(pipeline_for(spec)));
    // The written-out pipeline builds the same program.
    TrainingSpec explicit_spec = spec;
    explicit_spec.passes = parsed(s);
    const Program again = build_program(explicit_spec, BuildOptions{true});
    EXPECT_EQ(again.pipeline_string(), s);
    ASSERT_EQ(again.roles.size(), prog.roles.size());
    for (std::size_t r = 0; r < prog.roles.size(); ++r) EXPECT_EQ(again.roles[r].steps.size(), prog.roles[r].steps.size());
  }
}

// build_program keeps each accepted pipeline's resolved passes per thread: pipelines that
// differ in one value, or in a key, build what each says, and a pipeline that cannot run is
// refused after one that could, however alike their text.
TEST(PipelineCheck, EachPipelineBuildsWhatItSaysAfterOthersWereBuilt) {
  auto spec = testing::gpt_spec(2, 2, 2, 16);
  for (int round = 0; round < 2; ++round) {
    spec.passes = parsed("tensor(2),pipeline(2),data(2),recompute(every-k,k=2),gpipe");
    EXPECT_EQ(build_program(spec).pipeline_string(), "tensor(2),pipeline(2),data(2),recompute(every-k,k=2),gpipe");
    spec.passes = parsed("tensor(2),pipeline(2),data(2),recompute(every-k,k=3),gpipe");
    EXPECT_EQ(build_program(spec).pipeline_string(), "tensor(2),pipeline(2),data(2),recompute(every-k,k=3),gpipe");
    spec.passes = parsed("tensor(2),pipeline(2,v=2),data(2),1f1b");
    EXPECT_THROW((void)build_program(spec), std::invalid_argument) << "1f1b with two virtual stages";
    spec.passes = parsed("tensor(2),pipeline(2),data(2),1f1b");
    EXPECT_EQ(build_program(spec).pipeline_string(), "tensor(2),pipeline(2),data(2),1f1b");
  }
}

TEST(Verifier, AcceptsWhatThePassesBuild) {
  auto spec = testing::gpt_spec(2, 2, 2, 16);
  for (const char* passes : {"tensor(2,sp),pipeline(2,v=3),data(2),zero(1),recompute(selective),overlap-grad-reduce,"
                             "overlap-param-gather,overlap-tp-comm,interleaved-1f1b",
                             "tensor(2),pipeline(2),data(2),recompute(every-k,k=5),gpipe",
                             "tensor(2),pipeline(2),data(2),recompute(full),1f1b"}) {
    SCOPED_TRACE(passes);
    spec.passes = parsed(passes);
    EXPECT_NO_THROW((void)build_program(spec, BuildOptions{true}));
  }
}

TEST(Verifier, NamesThePassAfterWhichTheProgramBroke) {
  auto spec = testing::gpt_spec(1, 2, 1, 4);
  spec.passes = parsed("tensor(1),pipeline(2),data(1),recompute(full),1f1b");
  BuildOptions o;
  o.verify = true;
  o.after_pass = [](Program& p, const PassInvocation& pass) {
    if (pass.name == "recompute") p.roles[1].chunks[0].backward.back().free_bytes += 1;  // a leak
  };
  try {
    (void)build_program(spec, o);
    FAIL() << "the verifier let a broken program through";
  } catch (const std::logic_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("after pass \"recompute(full)\""), std::string::npos) << m;
    EXPECT_NE(m.find("stage 1, chunk 0"), std::string::npos) << m;
    EXPECT_NE(m.find("activations are not balanced"), std::string::npos) << m;
  }
  Program p = build_program(spec, BuildOptions{true});
  EXPECT_EQ(verify_program(p), "");
  p.roles[0].chunks[0].forward[0].segment = 100000;
  EXPECT_NE(verify_program(p).find("segment 100000 is out of range"), std::string::npos);
  p = build_program(spec, BuildOptions{true});
  std::swap(p.roles[0].chunks[0].layers, p.roles[1].chunks[0].layers);
  EXPECT_NE(verify_program(p).find("chunks must hold disjoint runs of layers covering the model in order"), std::string::npos);
  p = build_program(spec, BuildOptions{true});
  p.roles[0].step_deps.push_back({static_cast<std::uint32_t>(p.roles[0].steps.size()), Dep::On::END});
  p.roles[0].steps.back().deps_end = static_cast<std::uint32_t>(p.roles[0].step_deps.size());
  p.roles[0].steps.back().deps_begin = p.roles[0].steps.back().deps_end - 1;
  EXPECT_NE(verify_program(p).find("which is itself or not in the role"), std::string::npos);
  p = build_program(spec, BuildOptions{true});
  p.roles[0].tail.front().collective.bytes = -1;
  EXPECT_NE(verify_program(p).find("-1"), std::string::npos) << verify_program(p);
}

// --- every-k -------------------------------------------------------------------------------

Program every_k(TrainingSpec spec, const std::string& recompute) {
  spec.passes = parsed(to_string(Pipeline{{"tensor", {{"", std::to_string(spec.layout.tensor)}}},
                                          {"pipeline", {{"", std::to_string(spec.layout.pipeline)}}},
                                          {"data", {{"", std::to_string(spec.layout.data)}}}}) +
                       "," + recompute + ",1f1b");
  return build_program(spec, BuildOptions{true});
}

struct Outcome {
  report::RunReport report;
  std::int64_t peak_activations = 0;
};

Outcome simulate(const Program& prog, std::int64_t gpus, Fidelity fidelity = Fidelity::FAST) {
  auto cluster = testing::a100_cluster(gpus);
  auto cost = testing::a100_cost();
  Lowered low = lower(prog, cluster, cost, fidelity);
  const sim::Timeline tl = sim::simulate(low.plan, low.network);
  Outcome o;
  o.report = report::analyze(prog, low, tl, cluster, cost);
  for (const auto& m : tl.memory) o.peak_activations = std::max(o.peak_activations, m.at_peak[static_cast<int>(MemClass::ACTIVATIONS)]);
  return o;
}

// Every order of the template passes that the registry accepts predicts the same iteration
// and the same memory as the order a strategy block writes: before the order rules, some
// orders failed inside the plan (negative sizes) and others gave other times.
TEST(PipelineCheck, EveryAcceptedOrderOfTheTemplatePassesPredictsTheSame) {
  const auto spec = testing::gpt_spec(2, 2, 2, 16);
  for (const std::string recompute : {"recompute(selective)", "recompute(full)", "recompute(every-k,k=2)"}) {
    std::vector<std::string> passes = {"zero(1)", recompute, "overlap-grad-reduce", "overlap-param-gather",
                                       "overlap-tp-comm"};
    auto pipeline_text = [](const std::vector<std::string>& order) {
      std::string text = "tensor(2,sp),pipeline(2),data(2)";
      for (const auto& p : order) text += "," + p;
      return text + ",1f1b";
    };
    auto run = [&](const std::vector<std::string>& order) {
      TrainingSpec s = spec;
      const std::string text = pipeline_text(order);
      s.passes = parsed(text);
      try {
        return simulate(build_program(s), 8).report;
      } catch (const std::exception& e) {
        ADD_FAILURE() << text << ": " << e.what();
        return report::RunReport{};
      }
    };
    const report::RunReport canonical = run(passes);
    int accepted = 0, refused = 0;
    std::sort(passes.begin(), passes.end());
    do {
      const std::string text = pipeline_text(passes);
      if (!check_pipeline(parsed(text)).empty()) {
        ++refused;
        continue;
      }
      ++accepted;
      SCOPED_TRACE(text);
      const report::RunReport r = run(passes);
      EXPECT_EQ(r.iteration_s, canonical.iteration_s);
      EXPECT_EQ(r.memory.peak_bytes, canonical.memory.peak_bytes);
    } while (std::next_permutation(passes.begin(), passes.end()));
    EXPECT_GT(accepted, 1) << recompute;
    EXPECT_GT(refused, 0) << recompute;
  }
}

TEST(RecomputeEveryK, KOneIsFullRecompute) {
  const auto spec = testing::gpt_spec(2, 2, 1, 8);
  const Program full = every_k(spec, "recompute(full)");
  const Program one = every_k(spec, "recompute(every-k,k=1)");
  for (std::size_t r = 0; r < full.roles.size(); ++r)
    for (std::size_t c = 0; c < full.roles[r].chunks.size(); ++c) {
      const Chunk& a = full.roles[r].chunks[c];
      const Chunk& b = one.roles[r].chunks[c];
      for (auto [x, y] : {std::pair(&a.forward, &b.forward), std::pair(&a.backward, &b.backward)}) {
        ASSERT_EQ(x->size(), y->size());
        for (std::size_t i = 0; i < x->size(); ++i) {
          EXPECT_EQ((*x)[i].segment, (*y)[i].segment);
          EXPECT_EQ((*x)[i].alloc_bytes, (*y)[i].alloc_bytes);
          EXPECT_EQ((*x)[i].free_bytes, (*y)[i].free_bytes);
          EXPECT_EQ((*x)[i].category, (*y)[i].category);
          EXPECT_EQ((*x)[i].label, (*y)[i].label);
        }
      }
    }
  const Outcome f = simulate(full, 4), o = simulate(one, 4);
  EXPECT_EQ(f.report.iteration_s, o.report.iteration_s);
  EXPECT_EQ(f.peak_activations, o.peak_activations);
  EXPECT_EQ(f.report.hfu, o.report.hfu);
}

TEST(RecomputeEveryK, PeakActivationsFollowTheClosedForm) {
  // One stage, one micro-batch in flight at a time. With L layers, A one layer's
  // activations, C = 2·s·b·h the kept input of a segment and E what the embedding and head
  // keep, the peak comes right after the first segment that backward meets is recomputed:
  // every segment's input is still held and its k layers are whole:
  //   peak(k) = E + (L/k)·C + k·A.
  auto spec = testing::gpt_spec(1, 1, 1, 2);
  spec.model.vocab = 512;  // a small head, so that the layers' activations make the peak
  const Program none = build_program(spec, BuildOptions{true});
  std::int64_t A = 0;
  for (const auto& it : none.roles[0].chunks[0].forward)
    if (it.layer == 0) A += it.alloc_bytes;
  const std::int64_t C = 2 * spec.micro_batch * spec.sequence * spec.model.hidden;
  const std::int64_t L = spec.model.layers;
  std::int64_t E = -1;
  double hfu = 0;
  for (std::int64_t k : {1, 2, 4}) {
    SCOPED_TRACE(k);
    // Full fidelity: fast mode folds a stage's run of compute work into one task, whose
    // allocations all come at its start and its frees at its end.
    const Outcome o = simulate(every_k(spec, "recompute(every-k,k=" + std::to_string(k) + ")"), 1, Fidelity::FULL);
    const std::int64_t rest = o.peak_activations - (L / k) * C - k * A;
    if (E < 0) E = rest;
    EXPECT_EQ(rest, E) << "peak " << o.peak_activations;
    EXPECT_GE(E, 0);
    // Every k recomputes every layer's forward once: the same hardware FLOPs as full.
    if (hfu == 0) hfu = o.report.recompute_flops;
    EXPECT_DOUBLE_EQ(o.report.recompute_flops, hfu);
    EXPECT_GT(o.report.hfu, o.report.mfu * 1.2);
  }
}

}  // namespace
}  // namespace trainsim::strategies
