#include "cli/search_command.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>
#include <ostream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/detail/evaluate.hpp"
#include "cli/detail/ordered_pool.hpp"
#include "cli/detail/output_file.hpp"
#include "cli/detail/progress.hpp"
#include "cli/detail/ranks.hpp"
#include "cli/detail/search_table.hpp"
#include "cli/memory_budget.hpp"
#include "hardware/cost_model.hpp"
#include "scenarios/layout_space.hpp"
#include "scenarios/memory_bound.hpp"
#include "scenarios/time_bound.hpp"

namespace trainsim::cli {
namespace {

constexpr double GIB = 1024.0 * 1024.0 * 1024.0;

struct Evaluated {
  bool built = false;
  std::string error;
  double iteration_s = 0, tokens_per_s = 0, mfu = 0, peak_bytes = 0;
  bool fits = false;
};

struct Ranked {
  std::size_t candidate;  // index into the enumeration
  double iteration_s;
};

// Ties (equal times) go to the earlier candidate: the ranking depends on nothing else.
bool faster(const Ranked& a, const Ranked& b) {
  return a.iteration_s != b.iteration_s ? a.iteration_s < b.iteration_s : a.candidate < b.candidate;
}

std::string breakdown_diff(const report::RunReport& best, const report::RunReport& second) {
  struct Term {
    const char* name;
    double a, b;
  };
  const auto& x = best.time;
  const auto& y = second.time;
  std::vector<Term> terms = {{"compute", x.compute_s, y.compute_s},
                             {"recompute", x.recompute_s, y.recompute_s},
                             {"optimizer step", x.optimizer_s, y.optimizer_s},
                             {"exposed tensor-parallel comm", x.exposed_tp_s, y.exposed_tp_s},
                             {"exposed data-parallel comm", x.exposed_dp_s, y.exposed_dp_s},
                             {"exposed pipeline comm", x.exposed_pp_s, y.exposed_pp_s},
                             {"pipeline bubble / idle", x.bubble_s, y.bubble_s}};
  std::stable_sort(terms.begin(), terms.end(),
                   [](const Term& l, const Term& r) { return std::abs(l.b - l.a) > std::abs(r.b - r.a); });
  std::string out = fmt::format("  {:<30}{:>12}{:>12}{:>12}\n", "term (s)", "#1", "#2", "#2 − #1");
  for (const auto& t : terms) {
    // A difference under a microsecond is rounding, not a reason.
    if (std::abs(t.b - t.a) < 1e-6) continue;
    out += fmt::format("  {:<30}{:>12.4f}{:>12.4f}{:>+12.4f}\n", t.name, t.a, t.b, t.b - t.a);
  }
  out += fmt::format("  {:<30}{:>12.4f}{:>12.4f}{:>+12.4f}\n", "iteration", best.iteration_s, second.iteration_s,
                     second.iteration_s - best.iteration_s);
  const char* classes[] = {"weights", "gradients", "optimizer states", "activations", "comm buffers"};
  for (std::size_t c = 0; c < std::size(classes); ++c) {
    const double a = best.memory.at_peak[c] / GIB, b = second.memory.at_peak[c] / GIB;
    if (std::abs(b - a) < 1e-3) continue;
    out += fmt::format("  {:<30}{:>9.2f}GiB{:>9.2f}GiB{:>+9.2f}GiB\n", fmt::format("memory: {}", classes[c]), a, b, b - a);
  }
  return out;
}

// Exact across ranks: floats as hexadecimal.
std::string serialize(const Evaluated& e) {
  return fmt::format("{}|{:a}|{:a}|{:a}|{:a}|{}|{}", e.built ? 1 : 0, e.iteration_s, e.tokens_per_s, e.mfu,
                     e.peak_bytes, e.fits ? 1 : 0, e.error);
}

Evaluated deserialize(const std::string& text) {
  Evaluated e;
  const char* p = text.c_str();
  char* end = nullptr;
  e.built = std::strtol(p, &end, 10) != 0;
  e.iteration_s = std::strtod(end + 1, &end);
  e.tokens_per_s = std::strtod(end + 1, &end);
  e.mfu = std::strtod(end + 1, &end);
  e.peak_bytes = std::strtod(end + 1, &end);
  e.fits = std::strtol(end + 1, &end, 10) != 0;
  e.error = std::string(end + 1);
  return e;
}

// Every candidate's row, in enumeration order, to each table asked for; false (and the
// error) when one could not be written.
bool write_tables(const SearchOptions& options, const std::vector<detail::CandidateOutcome>& outcomes,
                  std::ostream& err) {
  for (const bool csv : {true, false}) {
    const std::string& path = csv ? options.csv_path : options.jsonl_path;
    if (path.empty()) continue;
    detail::OutputFile file(path);
    if (file.is_open()) {
      if (csv) file.stream() << detail::csv_header(detail::search_columns());
      for (const auto& o : outcomes) {
        const detail::Row row = detail::search_row(o);
        file.stream() << (csv ? detail::csv_line(row) : detail::jsonl_line(row, detail::search_columns()));
      }
    }
    if (!file.is_open() || !file.commit()) {
      err << file.error() << '\n';
      return false;
    }
  }
  return true;
}

std::ostream& null_stream() {
  static std::ostream sink(nullptr);
  return sink;
}

}  // namespace

int search_command(const SearchOptions& options, std::ostream& out_all, std::ostream& err_all) {
  // Every rank searches alike; only rank 0 speaks.
  const detail::Ranks ranks;
  std::ostream& out = ranks.rank() == 0 ? out_all : null_stream();
  std::ostream& err = ranks.rank() == 0 ? err_all : null_stream();
  // The search chooses the layout, so the one written (if any) is not read: a scenario
  // needs only its model, cluster and batch.
  auto loaded = scenarios::load_file(options.scenario_path, scenarios::LayoutFields::SEARCHED);
  if (auto* errors = std::get_if<std::vector<scenarios::Diagnostic>>(&loaded)) {
    for (const auto& d : *errors) err << d.str() << '\n';
    return 1;
  }
  const auto& base = std::get<scenarios::LoadedScenario>(loaded);
  if (auto refused = detail::refuse_overwriting_inputs({{"--csv", options.csv_path}, {"--jsonl", options.jsonl_path}},
                                                       base.inputs)) {
    err << *refused << '\n';
    return 1;
  }
  if (!base.set_aside.empty())
    err << fmt::format("search: {}: not read, the search chooses the layout, the micro-batch and the strategies\n",
                       fmt::join(base.set_aside, ", "));
  const std::string gpu_key = detail::gpu_key_of(base.gpu);  // every candidate runs on base's GPU
  const std::int64_t gpus = base.cluster.nodes * base.cluster.gpus_per_node;
  const unsigned threads = options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  const double budget = default_memory_budget() / threads;
  const std::size_t k = static_cast<std::size_t>(std::max(options.top, 1));
  const auto started = std::chrono::steady_clock::now();

  scenarios::LayoutSpaceOptions space_options;
  space_options.gpus_per_node = base.cluster.gpus_per_node;
  space_options.max_micro_batch = options.max_micro_batch;
  const std::vector<scenarios::LayoutCandidate> space = enumerate_layouts(base.training, gpus, space_options);
  if (space.empty()) {
    const auto& m = base.training.model;
    err << fmt::format("{}: error: training.global_batch_size: no layout of the {} GPUs takes a global batch of {}: "
                       "tensor must divide the {} attention heads ({} key-value heads) and the MLP's {} and be at "
                       "most the {} GPUs of a node, pipeline must split the {} layers (evenly, or unevenly from 3 "
                       "stages), and data = GPUs / (tensor × pipeline) times a micro-batch of at most {} must divide "
                       "the global batch\n",
                       options.scenario_path, gpus, base.training.global_batch, m.heads, m.kv_heads, m.ffn_hidden,
                       space_options.gpus_per_node, m.layers, space_options.max_micro_batch);
    return 1;
  }

  // 1. Memory: the model states must fit, and beside them the activations each stage keeps
  // until its first backward (scenarios/memory_bound.hpp).
  const double capacity = base.gpu.hbm_capacity_bytes().value();
  const hardware::CostModel cost(base.gpu);
  const hardware::Cluster cluster(base.cluster, base.gpu);
  scenarios::TimeBound time_bound(base.training, cluster, cost);
  std::vector<std::pair<double, std::size_t>> order;  // (time bound, candidate)
  std::uint64_t pruned_states = 0, pruned_activations = 0;
  // What became of each candidate, for the table (--csv, --jsonl).
  std::vector<detail::CandidateOutcome> outcomes(space.size());
  for (std::size_t i = 0; i < space.size(); ++i) {
    const auto& c = space[i];
    const scenarios::MemoryLowerBound bound = scenarios::memory_lower_bound(apply_layout(base.training, c), base.gpu);
    detail::CandidateOutcome& o = outcomes[i];
    o.layout = &c;
    o.index = i;
    o.memory_lower_bound_bytes = bound.bytes();
    if (bound.runtime + bound.states > capacity) {
      ++pruned_states;
      o.status = detail::CandidateStatus::PRUNED_MEMORY_STATES;
      continue;
    }
    if (bound.bytes() > capacity) {
      ++pruned_activations;
      o.status = detail::CandidateStatus::PRUNED_MEMORY_ACTIVATIONS;
      continue;
    }
    o.time_lower_bound_s = time_bound.seconds(c);
    o.status = options.count_only ? detail::CandidateStatus::NOT_SIMULATED : detail::CandidateStatus::PRUNED_TIME;
    order.emplace_back(o.time_lower_bound_s, i);
  }
  const auto bounded = std::chrono::steady_clock::now();
  // 2. Candidates in order of their time bound (ties by enumeration order), in
  // rounds of fixed sizes, each cut where the bounds pass the k-th best time found before
  // it; after each round everything whose bound exceeds the k-th best so far is pruned.
  // Rounds and order depend on the space alone, so the pruned set — and the top-k — are the
  // same for any number of threads.
  std::sort(order.begin(), order.end());
  std::vector<Ranked> fitting;
  std::uint64_t evaluated = 0, failed = 0, out_of_memory = 0, bound_violations = 0;
  std::map<std::string, std::uint64_t> failures;
  double threshold = std::numeric_limits<double>::infinity();
  std::size_t next = 0;
  std::size_t round = std::max<std::size_t>(256, 16 * k);
  detail::Progress progress(ranks.rank() == 0 && options.progress && detail::stderr_is_terminal(), order.size(), 0, "candidates");
  // One pool for every round: its threads keep their caches from round to round.
  detail::WorkerPool pool(threads);
  while (next < order.size() && !options.count_only) {
    if (options.prune && order[next].first > threshold) break;
    std::size_t end = std::min(order.size(), next + round);
    // Nor does a round take what the k-th best so far already prunes.
    if (options.prune)
      end = static_cast<std::size_t>(
          std::upper_bound(order.begin() + static_cast<std::ptrdiff_t>(next),
                           order.begin() + static_cast<std::ptrdiff_t>(end), threshold,
                           [](double t, const std::pair<double, std::size_t>& o) { return t < o.first; }) -
          order.begin());
    auto evaluate = [&](std::uint64_t at) {
      Evaluated e;
      const strategies::TrainingSpec variant = apply_layout(base.training, space[order[at].second]);
      try {
        const report::RunReport r = detail::evaluate_fast(base, variant, true, budget, gpu_key);
        e.built = true;
        e.iteration_s = r.iteration_s;
        e.tokens_per_s = r.tokens_per_s;
        e.mfu = r.mfu;
        e.peak_bytes = r.memory.peak_bytes;
        e.fits = !r.memory.out_of_memory;
      } catch (const std::exception& ex) {
        e.error = ex.what();
      }
      return e;
    };
    auto take = [&](std::uint64_t at, Evaluated&& e) {
      const std::size_t candidate = order[at].second;
      ++evaluated;
      if (!e.built) {
        ++failed;
        ++failures[e.error.substr(0, e.error.find(':'))];
      } else {
        if (order[at].first > e.iteration_s * (1 + 1e-9)) ++bound_violations;
        if (e.fits) fitting.push_back({candidate, e.iteration_s});
        else ++out_of_memory;
      }
      detail::CandidateOutcome& o = outcomes[candidate];
      o.status = !e.built ? detail::CandidateStatus::FAILED
                 : e.fits ? detail::CandidateStatus::FIT
                          : detail::CandidateStatus::OUT_OF_MEMORY;
      o.iteration_s = e.iteration_s;
      o.tokens_per_s = e.tokens_per_s;
      o.mfu = e.mfu;
      o.peak_bytes = e.peak_bytes;
      o.error = std::move(e.error);
      progress.update(at + 1);
      return true;
    };
    if (ranks.size() == 1) {
      detail::run_ordered<Evaluated>(pool, next, end, 64ull * threads, evaluate, take);
    } else {
      // Rank r takes every n-th candidate of the round from the r-th; every rank gets all
      // the results back and ranks them alike, so all agree on the threshold.
      const std::uint64_t n = static_cast<std::uint64_t>(ranks.size());
      const std::uint64_t first = next + static_cast<std::uint64_t>(ranks.rank());
      const std::uint64_t mine = first < end ? (end - first + n - 1) / n : 0;
      std::vector<std::string> parts;
      detail::run_ordered<Evaluated>(pool, 0, mine, 64ull * threads,
                                     [&](std::uint64_t j) { return evaluate(first + j * n); },
                                     [&](std::uint64_t, Evaluated&& e) {
                                       parts.push_back(serialize(e));
                                       return true;
                                     });
      const auto all = ranks.all_gather(parts);
      for (std::uint64_t at = next; at < end; ++at)
        take(at, deserialize(all[(at - next) % n][(at - next) / n]));
    }
    next = end;
    round *= 2;
    if (fitting.size() >= k) {
      std::nth_element(fitting.begin(), fitting.begin() + static_cast<std::ptrdiff_t>(k - 1), fitting.end(), faster);
      threshold = fitting[k - 1].iteration_s;
    }
  }
  progress.finish();
  const std::uint64_t pruned_time = options.count_only ? 0 : order.size() - next;
  std::sort(fitting.begin(), fitting.end(), faster);
  for (std::size_t r = 0; r < fitting.size(); ++r) outcomes[fitting[r].candidate].rank = r + 1;
  if (ranks.rank() == 0 && !write_tables(options, outcomes, err)) return 1;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  const auto& m = base.training.model;
  out << fmt::format("search {}: {} on {} GPUs ({} nodes × {} {}), global batch {}, sequence {}, {}\n",
                     options.scenario_path, m.name, gpus, base.cluster.nodes, base.cluster.gpus_per_node,
                     base.cluster.gpu, base.training.global_batch, base.training.sequence,
                     hardware::to_string(base.training.dtype));
  out << fmt::format("layout space: {} candidates (tensor ≤ {} dividing the heads and the MLP, every pipeline size "
                     "with even and uneven splits, data derived, micro-batch ≤ {}, 1F1B/GPipe/interleaved with every "
                     "virtual-stage count, ZeRO 0/1, recompute none/selective/full/every-k with every segment count, "
                     "sequence parallelism, three overlaps)\n",
                     space.size(), space_options.gpus_per_node, space_options.max_micro_batch);
  out << fmt::format("  pruned by the memory lower bounds (above {:.1f} GiB): {} (model states alone: {}; states and "
                     "the activations a stage holds at its first backward: {})\n",
                     capacity / GIB, pruned_states + pruned_activations, pruned_states, pruned_activations);
  if (options.count_only) out << fmt::format("  left to simulate or prune by time: {}\n", order.size());
  if (options.prune && !options.count_only)
    out << fmt::format("  pruned by the time lower bound (above the {}th best time found, {:.4f} s): {}\n", k,
                       threshold, pruned_time);
  out << fmt::format("  simulated: {} (fit: {}, out of memory: {}, failed to build: {})\n", evaluated, fitting.size(),
                     out_of_memory, failed);
  for (const auto& [reason, n] : failures) out << fmt::format("    {:>8}  {}\n", n, reason);
  if (bound_violations > 0)
    out << fmt::format("  WARNING: the time bound exceeded the simulated time for {} candidates: pruning may have "
                       "dropped a better layout\n",
                       bound_violations);
  // The rate is the simulations' own: enumerating and bounding every candidate comes first.
  const double bounding = std::chrono::duration<double>(bounded - started).count();
  const double simulating = std::max(seconds - bounding, 1e-9);
  err << fmt::format("search: {} candidates enumerated and bounded in {:.2f} s, {} simulated in {:.1f} s on {} rank(s) "
                     "× {} threads: {:.0f} evaluations/s, {:.0f} /s/core\n",
                     space.size(), bounding, evaluated, simulating, ranks.size(), threads, evaluated / simulating,
                     evaluated / simulating / threads / ranks.size());
  if (fitting.empty()) {
    out << "no candidate fits in memory\n";
    return 0;
  }
  out << fmt::format("\ntop {} by throughput (fitting in memory)\n", std::min(k, fitting.size()));
  out << fmt::format("  {:>3} {:>11} {:>12} {:>6} {:>9}  {}\n", "#", "iteration s", "tokens/s", "MFU", "peak GiB",
                     "layout");
  for (std::size_t r = 0; r < std::min(k, fitting.size()); ++r) {
    const detail::CandidateOutcome& e = outcomes[fitting[r].candidate];
    out << fmt::format("  {:>3} {:>11.4f} {:>12.0f} {:>5.1f}% {:>9.2f}  {}\n", r + 1, e.iteration_s, e.tokens_per_s,
                       100 * e.mfu, e.peak_bytes / GIB, scenarios::describe(space[fitting[r].candidate]));
  }
  if (fitting.size() >= 2 && ranks.rank() == 0) {
    // The two best again, with the time breakdown the summary-only runs left out.
    std::vector<report::RunReport> two;
    for (std::size_t r = 0; r < 2; ++r) {
      const strategies::TrainingSpec variant = apply_layout(base.training, space[fitting[r].candidate]);
      two.push_back(detail::evaluate_fast(base, variant, false, budget, gpu_key));
    }
    out << "\nwhy #1 beats #2\n" << breakdown_diff(two[0], two[1]);
  }
  return 0;
}

}  // namespace trainsim::cli
