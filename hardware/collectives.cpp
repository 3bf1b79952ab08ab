#include "hardware/collectives.hpp"

#include "hardware/detail/collective_flows.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace trainsim::hardware {
namespace {

void validate_ranks(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks) {
  const std::string what = std::string(to_string(c)) + ": ";
  if (ranks.empty()) throw std::invalid_argument(what + "the group has no ranks");
  if (c == Collective::SEND_RECV && ranks.size() != 2) {
    throw std::invalid_argument(what + "needs exactly {src, dst}, got " + std::to_string(ranks.size()) + " ranks");
  }
  std::vector<std::uint32_t> sorted(ranks.begin(), ranks.end());
  std::sort(sorted.begin(), sorted.end());
  if (sorted.back() >= cluster.num_gpus()) {
    throw std::invalid_argument(what + "GPU " + std::to_string(sorted.back()) + " is not in the cluster (" +
                                std::to_string(cluster.num_gpus()) + " GPUs)");
  }
  const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
  if (dup != sorted.end()) {
    throw std::invalid_argument(what + "GPU " + std::to_string(*dup) + " appears twice in the group");
  }
}

// NCCL's topology search tries per-channel speeds from fixed lists, fastest first, and keeps
// the fastest at which it fits channels (reference §1.2, search.cc:1051-1067). GB/s.
constexpr double SM80_INTRA[] = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
constexpr double SM80_INTER[] = {48, 30, 28, 24, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3, 2.4, 1.2, 0.24, 0.12};
constexpr double SM90_INTRA[] = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
constexpr double SM90_INTER[] = {48, 45, 42, 40, 30, 24, 22, 20, 17.5, 15, 12, 6, 3, 2.4, 1.2, 0.24, 0.12};

template <std::size_t N>
double fastest_at_most(const double (&speeds)[N], double limit) {
  for (const double s : speeds)
    if (s <= limit) return s;
  return speeds[N - 1];
}

std::string choice_name(Collective c, const AlgorithmChoice& ch) {
  return std::string(to_string(ch.algorithm)) + "/" + to_string(ch.protocol) + "-" + to_string(c);
}

// Throws when `choice` cannot run `c` over this group.
void check_choice(Collective c, const TuningInputs& in, const AlgorithmChoice& ch) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument(std::string(to_string(c)) + ": algorithm " + to_string(ch.algorithm) + " " + why);
  };
  const bool p2p = c == Collective::SEND_RECV || c == Collective::ALL_TO_ALL;
  const bool direct = ch.algorithm == Algorithm::DIRECT || ch.algorithm == Algorithm::PAIRWISE;
  if (p2p != direct) fail(p2p ? "does not run point-to-point operations (valid: direct, pairwise)"
                              : "runs only send/recv and all-to-all");
  if (c == Collective::SEND_RECV && ch.algorithm == Algorithm::PAIRWISE) fail("needs more than two ranks (valid: direct)");
  const bool ag_rs = c == Collective::ALL_GATHER || c == Collective::REDUCE_SCATTER;
  const bool simple_only = ch.algorithm == Algorithm::NVLS || ch.algorithm == Algorithm::NVLS_TREE ||
                           ch.algorithm == Algorithm::PAT || direct;
  if (simple_only && ch.protocol != Protocol::SIMPLE)
    fail(std::string("runs only the Simple protocol, not ") + to_string(ch.protocol));
  switch (ch.algorithm) {
    case Algorithm::TREE:
      if (c != Collective::ALL_REDUCE) fail("runs only all-reduce");
      break;
    case Algorithm::NVLS:
      if (c != Collective::ALL_REDUCE && !ag_rs) fail("runs only all-reduce, all-gather and reduce-scatter");
      if (!in.nvls) fail("needs NVLink SHARP (NVSwitch, compute capability >= 90)");
      if (in.nodes > 1) fail("runs inside one node (valid across nodes: nvls-tree)");
      break;
    case Algorithm::NVLS_TREE:
      if (c != Collective::ALL_REDUCE) fail("runs only all-reduce");
      if (!in.nvls) fail("needs NVLink SHARP (NVSwitch, compute capability >= 90)");
      break;
    case Algorithm::PAT:
      if (!ag_rs) fail("runs only all-gather and reduce-scatter");
      if (in.ranks_per_node != 1) fail("needs exactly one GPU per node");
      break;
    case Algorithm::RING:
      if (c == Collective::SEND_RECV || c == Collective::ALL_TO_ALL) fail("does not run point-to-point operations");
      break;
    default: break;
  }
}

double max_route_latency(const Cluster& cluster, std::uint32_t src, std::uint32_t dst) {
  double lat = 0;
  for (const std::uint32_t l : cluster.route(src, dst)) lat = std::max(lat, cluster.links()[l].latency_s);
  return lat;
}

// Latency of the pattern: NCCL's for the collectives its model covers (per step, by the link
// type each step crosses); for point-to-point work the latency of the links crossed (the
// profile's per-step NVLink or network latency), once per step.
double pattern_latency_s(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks,
                         const TuningInputs& in, const AlgorithmChoice& ch) {
  const std::size_t n = ranks.size();
  if (n < 2) return 0.0;
  if (c == Collective::SEND_RECV) return max_route_latency(cluster, ranks[0], ranks[1]);
  if (c == Collective::ALL_TO_ALL) {
    double total = 0, all = 0;
    for (std::size_t k = 1; k < n; ++k) {
      double round = 0;
      for (std::size_t i = 0; i < n; ++i) round = std::max(round, max_route_latency(cluster, ranks[i], ranks[(i + k) % n]));
      total += round;
      all = std::max(all, round);
    }
    return ch.algorithm == Algorithm::PAIRWISE ? total : all;  // direct: every send posted at once
  }
  // NCCL's latency without its size-dependent "plateau" factor, which only steers the choice.
  const double us = nccl_latency_us(in, ch.algorithm, ch.protocol);
  if (!std::isfinite(us))
    throw std::invalid_argument(std::string(to_string(c)) + ": NCCL's model does not run " + to_string(ch.algorithm) +
                                "/" + to_string(ch.protocol) + " on this group");
  return us * 1e-6;
}

// NCCL's view of a group already validated.
TuningInputs tuning_inputs_of_valid(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks,
                                    double bytes) {
  const detail::GroupShape g = detail::group_shape(cluster, ranks);
  TuningInputs in;
  in.collective = c;
  in.bytes = bytes;
  in.ranks = static_cast<int>(ranks.size());
  in.nodes = static_cast<int>(g.members.size());
  in.ranks_per_node = static_cast<int>(g.ranks_per_node);
  in.compute_capability = static_cast<int>(cluster.gpu().compute_capability().value());
  // Every node we model has its GPUs on NVSwitches; NVLS needs Hopper or later (§1.7).
  in.nvls = in.compute_capability >= 90;
  // The only Ampere node we model is the DGX A100, whose hosts are AMD EPYC 7742; the DGX
  // and HGX H100/H200 have Intel Xeon 8480C (reference §3.3).
  in.amd_host = in.compute_capability < 90;
  const bool sm90 = in.compute_capability >= 90;
  // The search (reference §1.2): inside one node, channels of the fastest listed speed at
  // most the GPU's NVLink bandwidth (NCCL's count × per-link rate), as many as that
  // bandwidth holds; across nodes, every channel crosses one NIC (NCCL's NET bandwidth,
  // line rate / 8), one channel per local rank's NIC, at the fastest listed speed the NIC holds.
  const double nvlink_gbs = cluster.gpu().nvlink_bytes_per_s().value() / 1e9;
  const double nic_gbs = cluster.spec().nic_gbps / 8.0;
  double speed = 0;
  int channels = 1;
  if (in.nodes == 1) {
    speed = sm90 ? fastest_at_most(SM90_INTRA, nvlink_gbs) : fastest_at_most(SM80_INTRA, nvlink_gbs);
    channels = std::clamp(static_cast<int>(std::floor(nvlink_gbs / speed + 1e-9)), 1, 32);
  } else {
    speed = sm90 ? fastest_at_most(SM90_INTER, nic_gbs) : fastest_at_most(SM80_INTER, nic_gbs);
    channels = in.ranks_per_node;
  }
  // ncclTopoDupChannels: twice the channels at half the speed when a channel is fast
  // (>= 25 GB/s before Hopper; >= 50, or at most 4 channels, on Hopper), at most 64.
  const bool dup = sm90 ? (speed >= 50 || channels <= 4) : speed >= 25;
  if (dup && channels * 2 <= 64) {
    channels *= 2;
    speed /= 2;
  }
  in.channels = channels;
  in.bw_intra_gbs = speed;
  in.bw_inter_gbs = speed;
  return in;
}

// The flows of `c` over `ranks` (validated, at least two) appended to `pattern`, bytes per
// unit already divided by the protocol's efficiency; returns the pattern's latency.
sim::Time append_flows(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks,
                       const AlgorithmChoice& ch, sim::CommPattern& pattern) {
  const TuningInputs in = tuning_inputs_of_valid(cluster, c, ranks, 0);
  check_choice(c, in, ch);
  const std::size_t first_flow = pattern.flows.size();
  detail::FlowBuilder out(cluster, pattern);
  const double nvls_eff = nvls_efficiency(in.compute_capability);
  switch (ch.algorithm) {
    case Algorithm::RING:
      if (c == Collective::BROADCAST || c == Collective::REDUCE) detail::chain_flows(out, c, ranks);
      else detail::ring_flows(out, c, ranks);
      break;
    case Algorithm::TREE: detail::tree_flows(out, ranks); break;
    case Algorithm::NVLS: detail::nvls_flows(out, c, ranks, nvls_eff); break;
    case Algorithm::NVLS_TREE: detail::nvls_tree_flows(out, ranks, nvls_eff); break;
    case Algorithm::PAT: detail::pat_flows(out, ranks); break;
    case Algorithm::DIRECT:
    case Algorithm::PAIRWISE:
      if (c == Collective::SEND_RECV) out.route(ranks[0], ranks[1], 1.0);
      else detail::all_to_all_flows(out, ranks);
      break;
  }
  const double eff = protocol_efficiency(ch.protocol);
  for (std::size_t f = first_flow; f < pattern.flows.size(); ++f) pattern.flows[f].bytes_per_unit /= eff;
  return sim::Time::from_seconds(pattern_latency_s(cluster, c, ranks, in, ch));
}

sim::CommPattern decompose(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks,
                           const AlgorithmChoice& ch) {
  validate_ranks(cluster, c, ranks);
  sim::CommPattern pattern;
  pattern.name = choice_name(c, ch) + "[" + std::to_string(ranks.size()) + "]";
  if (c == Collective::SEND_RECV)
    pattern.name = std::string("send-recv[") + std::to_string(ranks[0]) + "->" + std::to_string(ranks[1]) + "]";
  if (ranks.size() >= 2) pattern.latency = append_flows(cluster, c, ranks, ch, pattern);
  return pattern;
}

// Calls visit(pattern, latency) with the flows of each group of two or more ranks in turn,
// in one buffer reused from group to group: closed forms over every group of a dimension
// keep only per-link sums, not the groups' patterns.
template <class Visit>
void for_each_group_flows(const Cluster& cluster, Collective c, std::span<const std::vector<std::uint32_t>> groups,
                          const AlgorithmChoice& ch, Visit&& visit) {
  sim::CommPattern scratch;
  for (const auto& g : groups) {
    validate_ranks(cluster, c, g);
    if (g.size() < 2) continue;
    scratch.flows.clear();
    scratch.route_links.clear();
    const sim::Time latency = append_flows(cluster, c, g, ch, scratch);
    visit(scratch, latency);
  }
}

AlgorithmChoice default_choice(Collective c) {
  const bool p2p = c == Collective::SEND_RECV || c == Collective::ALL_TO_ALL;
  return {p2p ? Algorithm::DIRECT : Algorithm::RING, Protocol::SIMPLE, 1, 0.0};
}

// Per-link sums over the links some groups touch, a few among the cluster's thousands:
// clearing costs what was touched, not the cluster's link count. Every sum added is > 0, so
// a zero marks an untouched link.
struct LinkSums {
  std::vector<double> value;
  std::vector<std::uint32_t> touched;
  void reset(std::size_t links) {
    for (const std::uint32_t l : touched) value[l] = 0;
    touched.clear();
    if (value.size() < links) value.resize(links, 0.0);
  }
  void add(std::uint32_t l, double v) {
    if (value[l] == 0) touched.push_back(l);
    value[l] += v;
  }
};

// Reused by each thread (closed forms are computed per lowering, thousands per sweep).
LinkSums& link_sums(int which, std::size_t links) {
  thread_local LinkSums sums[2];
  sums[which].reset(links);
  return sums[which];
}

// Per link, the bytes per unit of S the pattern puts on it.
void add_loads(const sim::CommPattern& p, LinkSums& load) {
  for (const auto& f : p.flows)
    for (std::uint32_t i = f.route_begin; i < f.route_end; ++i) load.add(p.route_links[i], f.bytes_per_unit);
}

}  // namespace

TuningInputs tuning_inputs(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks, double bytes) {
  validate_ranks(cluster, c, ranks);
  return tuning_inputs_of_valid(cluster, c, ranks, bytes);
}


AlgorithmChoice choose_algorithm(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks,
                                 double bytes) {
  if (!(bytes >= 0) || !std::isfinite(bytes))
    throw std::invalid_argument(std::string(to_string(c)) + ": bytes must be finite and >= 0");
  return nccl_choose(tuning_inputs(cluster, c, ranks, bytes));
}

sim::CommPattern collective_pattern(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks,
                                    const AlgorithmChoice& choice) {
  return decompose(cluster, c, ranks, choice);
}

sim::CommPattern ring_pattern(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks) {
  return collective_pattern(cluster, c, ranks, default_choice(c));
}

double ring_closed_form_seconds(Collective c, std::int64_t n, double bytes, double alpha_s, double beta_bytes_per_s) {
  const std::string what = std::string("ring_closed_form_seconds(") + to_string(c) + "): ";
  if (n < 1) throw std::invalid_argument(what + "n must be >= 1, got " + std::to_string(n));
  if (c == Collective::SEND_RECV && n != 2) throw std::invalid_argument(what + "n must be 2 (src, dst)");
  if (c != Collective::ALL_REDUCE && c != Collective::ALL_GATHER && c != Collective::REDUCE_SCATTER &&
      c != Collective::SEND_RECV)
    throw std::invalid_argument(what + "not a ring collective (valid: all-reduce, all-gather, reduce-scatter, send-recv)");
  if (!(bytes >= 0) || !std::isfinite(bytes)) throw std::invalid_argument(what + "bytes must be finite and >= 0");
  if (!(alpha_s >= 0) || !std::isfinite(alpha_s)) throw std::invalid_argument(what + "alpha must be finite and >= 0");
  const auto nd = static_cast<double>(n);
  std::int64_t steps = 1;
  double factor = 1.0;
  if (c == Collective::ALL_REDUCE) {
    steps = 2 * (n - 1);
    factor = 2 * (nd - 1) / nd;
  } else if (c != Collective::SEND_RECV) {
    steps = n - 1;
    factor = (nd - 1) / nd;
  }
  if (steps == 0) return 0.0;  // a group of one exchanges nothing
  double seconds = static_cast<double>(steps) * alpha_s;
  if (bytes > 0) {
    if (!(beta_bytes_per_s > 0)) throw std::invalid_argument(what + "beta must be > 0");
    seconds += factor * bytes / beta_bytes_per_s;
  }
  return seconds;
}

double closed_form_seconds(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks, double bytes,
                           const AlgorithmChoice& choice) {
  const std::vector<std::vector<std::uint32_t>> one{std::vector<std::uint32_t>(ranks.begin(), ranks.end())};
  if (!(bytes >= 0) || !std::isfinite(bytes))
    throw std::invalid_argument(std::string(to_string(c)) + ": bytes must be finite and >= 0");
  return symmetric_closed_form(cluster, c, one, choice).seconds(bytes);
}

double closed_form_seconds(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks, double bytes) {
  return closed_form_seconds(cluster, c, ranks, bytes, choose_algorithm(cluster, c, ranks, bytes));
}

namespace {

ClosedForm symmetric_closed_form_uncached(const Cluster& cluster, Collective c,
                                          std::span<const std::vector<std::uint32_t>> groups,
                                          const AlgorithmChoice& choice) {
  // Load per link per byte of the collective, over every group's flows.
  LinkSums& load = link_sums(0, cluster.links().size());
  ClosedForm out;
  for_each_group_flows(cluster, c, groups, choice, [&](const sim::CommPattern& p, sim::Time latency) {
    add_loads(p, load);
    out.latency_s = std::max(out.latency_s, latency.seconds());
  });
  // A group ends when its most loaded link has moved its bytes (max-min fair sharing of a
  // link between the flows on it ends when the link has moved their sum); every loaded link
  // carries some group's flow, so the slowest group is bound by the most loaded link of all.
  const auto& links = cluster.links();
  for (const std::uint32_t l : load.touched)
    out.seconds_per_byte = std::max(out.seconds_per_byte, load.value[l] / links[l].bytes_per_s);
  return out;
}

// What a closed form or a slowdown over symmetric groups depends on: the cluster, the
// collectives with their algorithm and protocol, and every group's ranks in order.
struct GroupsKey {
  std::uint64_t cluster = 0;
  std::uint64_t what = 0;
  std::vector<std::uint32_t> ranks;  // per group, its size and then its ranks; sets separated by NONE
  bool operator==(const GroupsKey&) const = default;
};
struct GroupsKeyHash {
  std::size_t operator()(const GroupsKey& k) const {
    std::uint64_t h = k.cluster * 0x9E3779B97F4A7C15ull ^ k.what;
    for (const std::uint32_t r : k.ranks) h = (h ^ r) * 0x100000001B3ull;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

std::uint64_t choice_bits(Collective c, const AlgorithmChoice& ch) {
  return std::uint64_t{static_cast<std::uint8_t>(c)} << 16 | std::uint64_t{static_cast<std::uint8_t>(ch.algorithm)} << 8 |
         static_cast<std::uint8_t>(ch.protocol);
}

void append_groups(std::vector<std::uint32_t>& out, std::span<const std::vector<std::uint32_t>> groups) {
  for (const auto& g : groups) {
    out.push_back(static_cast<std::uint32_t>(g.size()));
    out.insert(out.end(), g.begin(), g.end());
  }
}

// Enough for the layouts of a large sweep on a few clusters; cleared when full.
constexpr std::size_t MAX_CACHED_GROUP_SETS = std::size_t{1} << 14;

// Looks `key` up in `cache` (one per thread, as the cost model's), computing and keeping
// the value when absent; a computation that throws keeps nothing.
template <class Value, class Compute>
Value cached(std::unordered_map<GroupsKey, Value, GroupsKeyHash>& cache, GroupsKey&& key, Compute&& compute) {
  if (const auto hit = cache.find(key); hit != cache.end()) return hit->second;
  const Value v = compute();
  if (cache.size() >= MAX_CACHED_GROUP_SETS) cache.clear();
  cache.emplace(std::move(key), v);
  return v;
}

}  // namespace

// A sweep's variants that share a layout and a cluster share these closed forms: computed
// once per thread, keyed by the cluster and the groups.
ClosedForm symmetric_closed_form(const Cluster& cluster, Collective c,
                                 std::span<const std::vector<std::uint32_t>> groups, const AlgorithmChoice& choice) {
  if (groups.empty()) throw std::invalid_argument(std::string(to_string(c)) + ": no groups");
  thread_local std::unordered_map<GroupsKey, ClosedForm, GroupsKeyHash> cache;
  GroupsKey key{cluster.id(), choice_bits(c, choice), {}};
  append_groups(key.ranks, groups);
  return cached(cache, std::move(key), [&] { return symmetric_closed_form_uncached(cluster, c, groups, choice); });
}

ClosedForm symmetric_closed_form(const Cluster& cluster, Collective c,
                                 std::span<const std::vector<std::uint32_t>> groups) {
  return symmetric_closed_form(cluster, c, groups, default_choice(c));
}

namespace {

// Per link, how many of the groups' flows cross it (max-min fairness shares a link
// between flows, whatever each carries).
const LinkSums& flows_per_link(int which, const Cluster& cluster, Collective c,
                               std::span<const std::vector<std::uint32_t>> groups, const AlgorithmChoice& choice) {
  LinkSums& count = link_sums(which, cluster.links().size());
  for_each_group_flows(cluster, c, groups, choice, [&](const sim::CommPattern& p, sim::Time) {
    for (const auto& f : p.flows)
      for (std::uint32_t i = f.route_begin; i < f.route_end; ++i) count.add(p.route_links[i], 1);
  });
  return count;
}

double interference_slowdown_uncached(const Cluster& cluster, Collective a,
                                      std::span<const std::vector<std::uint32_t>> groups_a, const AlgorithmChoice& choice_a,
                                      Collective b, std::span<const std::vector<std::uint32_t>> groups_b,
                                      const AlgorithmChoice& choice_b) {
  const LinkSums& sa = flows_per_link(0, cluster, a, groups_a, choice_a);
  const LinkSums& sb = flows_per_link(1, cluster, b, groups_b, choice_b);
  const std::vector<double>& la = sa.value;
  const std::vector<double>& lb = sb.value;
  const auto& links = cluster.links();
  constexpr double INF = std::numeric_limits<double>::infinity();
  double alone = INF, shared_level = INF;
  bool a_fixed_first = false, b_fixed_first = false;
  // Every link either crosses, each once: a's links, then b's that a does not cross. The
  // minimum and the flags ORed at it do not depend on the order.
  auto visit = [&](std::uint32_t l) {
    if (la[l] > 0) alone = std::min(alone, links[l].bytes_per_s / la[l]);
    const double level = links[l].bytes_per_s / (la[l] + lb[l]);
    if (level < shared_level) {
      shared_level = level;
      a_fixed_first = la[l] > 0;
      b_fixed_first = lb[l] > 0;
    } else if (level == shared_level) {
      a_fixed_first = a_fixed_first || la[l] > 0;
      b_fixed_first = b_fixed_first || lb[l] > 0;
    }
  };
  for (const std::uint32_t l : sa.touched) visit(l);
  for (const std::uint32_t l : sb.touched)
    if (la[l] == 0) visit(l);
  if (!(alone < INF)) return 0.0;  // `a` moves nothing over links
  double rate = shared_level;
  if (!a_fixed_first && b_fixed_first) {
    // `b` saturates a link of its own first; `a` takes what `b` leaves on its links.
    rate = INF;
    for (const std::uint32_t l : sa.touched) rate = std::min(rate, (links[l].bytes_per_s - lb[l] * shared_level) / la[l]);
  }
  return rate > 0 ? std::max(0.0, alone / rate - 1.0) : 0.0;
}

}  // namespace

double interference_slowdown(const Cluster& cluster, Collective a, std::span<const std::vector<std::uint32_t>> groups_a,
                             const AlgorithmChoice& choice_a, Collective b,
                             std::span<const std::vector<std::uint32_t>> groups_b, const AlgorithmChoice& choice_b) {
  thread_local std::unordered_map<GroupsKey, double, GroupsKeyHash> cache;
  GroupsKey key{cluster.id(), choice_bits(a, choice_a) << 24 | choice_bits(b, choice_b), {}};
  append_groups(key.ranks, groups_a);
  key.ranks.push_back(sim::NONE);
  append_groups(key.ranks, groups_b);
  return cached(cache, std::move(key), [&] {
    return interference_slowdown_uncached(cluster, a, groups_a, choice_a, b, groups_b, choice_b);
  });
}

}  // namespace trainsim::hardware
