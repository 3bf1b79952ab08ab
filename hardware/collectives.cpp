#include "hardware/collectives.hpp"

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

// Steps and bytes-per-edge factor of a ring collective (formulas.md, NCCL tuning.cc).
struct RingShape {
  std::int64_t steps = 0;
  double factor = 0;
};

RingShape ring_shape(Collective c, std::int64_t n) {
  switch (c) {
    case Collective::ALL_REDUCE:
      return {2 * (n - 1), 2.0 * static_cast<double>(n - 1) / static_cast<double>(n)};
    case Collective::REDUCE_SCATTER:
    case Collective::ALL_GATHER:
      return {n - 1, static_cast<double>(n - 1) / static_cast<double>(n)};
    case Collective::SEND_RECV:
      return {1, 1.0};
  }
  return {};
}

const char* pattern_stem(Collective c) {
  switch (c) {
    case Collective::ALL_REDUCE: return "ring-allreduce";
    case Collective::REDUCE_SCATTER: return "ring-reducescatter";
    case Collective::ALL_GATHER: return "ring-allgather";
    case Collective::SEND_RECV: return "send-recv";
  }
  return "unknown";
}

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

// The rings a group runs, each as the rank order around it.
//
// One ring in the given order, unless the group spans m > 1 nodes with the same k > 1
// members on each: then k rings, as NCCL's channels, each leaving every node through a
// different member's NIC. With members numbered 0..k-1 on each node (in the order given),
// ring j enters node i at member e_i = (j + c_i) mod k and leaves it at the member where it
// enters node i+1, visiting the other members in between. The offsets alternate
// c = 0, 1, 0, 1, ... so that a ring leaves one node and enters the next through members
// at the same position: the same rail when the group is rail-aligned, so that ring traffic
// stays under one leaf as NCCL's does. An odd m closes the cycle with c_{m-1} = 2 (k >= 3);
// with k = 2 and odd m one hop per ring has to change rails. Over the k rings every member
// sends and receives through its NIC exactly once, so each NIC carries 1/k of the traffic.
std::vector<std::vector<std::uint32_t>> build_rings(const Cluster& cluster, std::span<const std::uint32_t> ranks) {
  // Nodes in order of first appearance, each with its members in the order given.
  std::unordered_map<std::uint32_t, std::size_t> node_index;
  std::vector<std::vector<std::uint32_t>> members;
  for (const std::uint32_t r : ranks) {
    const auto [it, inserted] = node_index.try_emplace(cluster.node_of(r), members.size());
    if (inserted) members.emplace_back();
    members[it->second].push_back(r);
  }
  const std::size_t m = members.size();
  const std::size_t k = members.front().size();
  const bool uniform = std::all_of(members.begin(), members.end(), [&](const auto& v) { return v.size() == k; });
  if (m == 1 || k == 1 || !uniform) return {std::vector<std::uint32_t>(ranks.begin(), ranks.end())};

  std::vector<std::size_t> offset(m);
  for (std::size_t i = 0; i < m; ++i) offset[i] = i % 2;
  if (m % 2 == 1 && k >= 3) offset[m - 1] = 2;

  std::vector<std::vector<std::uint32_t>> rings(k);
  for (std::size_t j = 0; j < k; ++j) {
    auto& ring = rings[j];
    ring.reserve(m * k);
    for (std::size_t i = 0; i < m; ++i) {
      const std::size_t entry = (j + offset[i]) % k;
      std::size_t exit = (j + offset[(i + 1) % m]) % k;
      if (exit == entry) exit = (entry + 1) % k;  // only k = 2 with odd m
      ring.push_back(members[i][entry]);
      for (std::size_t t = 1; t < k; ++t) {
        const std::size_t p = (entry + t) % k;
        if (p != exit) ring.push_back(members[i][p]);
      }
      ring.push_back(members[i][exit]);
    }
  }
  return rings;
}

double route_latency(const Cluster& cluster, const std::vector<std::uint32_t>& route) {
  double lat = 0;
  for (const std::uint32_t l : route) lat = std::max(lat, cluster.links()[l].latency_s);
  return lat;
}

struct Decomposition {
  sim::CommPattern pattern;
  double alpha_s = 0;  // per-step latency
  RingShape shape;
  std::int64_t n = 0;
};

Decomposition decompose(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks) {
  validate_ranks(cluster, c, ranks);
  Decomposition d;
  d.n = static_cast<std::int64_t>(ranks.size());
  d.shape = ring_shape(c, d.n);
  auto add_flow = [&](std::uint32_t src, std::uint32_t dst, double bytes_per_unit) {
    const auto route = cluster.route(src, dst);
    sim::FlowTemplate f;
    f.route_begin = static_cast<std::uint32_t>(d.pattern.route_links.size());
    d.pattern.route_links.insert(d.pattern.route_links.end(), route.begin(), route.end());
    f.route_end = static_cast<std::uint32_t>(d.pattern.route_links.size());
    f.bytes_per_unit = bytes_per_unit;
    d.pattern.flows.push_back(f);
    // α rule: a pipelined step is as slow as its slowest edge, and an edge's latency is the
    // largest latency of the links it crosses (NCCL's per-step hw latencies are end to end).
    d.alpha_s = std::max(d.alpha_s, route_latency(cluster, route));
  };

  if (c == Collective::SEND_RECV) {
    d.pattern.name = std::string(pattern_stem(c)) + "[" + std::to_string(ranks[0]) + "->" + std::to_string(ranks[1]) + "]";
    add_flow(ranks[0], ranks[1], 1.0);
  } else {
    d.pattern.name = std::string(pattern_stem(c)) + "[" + std::to_string(d.n) + "]";
    if (d.n > 1) {
      const auto rings = build_rings(cluster, ranks);
      if (rings.size() > 1) d.pattern.name += "x" + std::to_string(rings.size());
      const double per_ring = d.shape.factor / static_cast<double>(rings.size());
      for (const auto& ring : rings) {
        for (std::size_t i = 0; i < ring.size(); ++i) add_flow(ring[i], ring[(i + 1) % ring.size()], per_ring);
      }
    }
  }
  d.pattern.latency = sim::Time::from_seconds(static_cast<double>(d.shape.steps) * d.alpha_s);
  return d;
}

}  // namespace

const char* to_string(Collective c) {
  switch (c) {
    case Collective::ALL_REDUCE: return "all-reduce";
    case Collective::REDUCE_SCATTER: return "reduce-scatter";
    case Collective::ALL_GATHER: return "all-gather";
    case Collective::SEND_RECV: return "send-recv";
  }
  return "unknown";
}

sim::CommPattern ring_pattern(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks) {
  return decompose(cluster, c, ranks).pattern;
}

double ring_closed_form_seconds(Collective c, std::int64_t n, double bytes, double alpha_s, double beta_bytes_per_s) {
  const std::string what = std::string("ring_closed_form_seconds(") + to_string(c) + "): ";
  if (n < 1) throw std::invalid_argument(what + "n must be >= 1, got " + std::to_string(n));
  if (c == Collective::SEND_RECV && n != 2) throw std::invalid_argument(what + "n must be 2 (src, dst)");
  if (!(bytes >= 0) || !std::isfinite(bytes)) throw std::invalid_argument(what + "bytes must be finite and >= 0");
  if (!(alpha_s >= 0) || !std::isfinite(alpha_s)) throw std::invalid_argument(what + "alpha must be finite and >= 0");
  const RingShape s = ring_shape(c, n);
  if (s.steps == 0) return 0.0;  // a group of one exchanges nothing
  double seconds = static_cast<double>(s.steps) * alpha_s;
  if (bytes > 0) {
    if (!(beta_bytes_per_s > 0)) throw std::invalid_argument(what + "beta must be > 0");
    seconds += s.factor * bytes / beta_bytes_per_s;
  }
  return seconds;
}

double closed_form_seconds(const Cluster& cluster, Collective c, std::span<const std::uint32_t> ranks, double bytes) {
  const Decomposition d = decompose(cluster, c, ranks);
  if (d.pattern.flows.empty()) return ring_closed_form_seconds(c, d.n, bytes, d.alpha_s, 1.0);
  // Load each link carries per byte of the collective, from every flow the pattern puts on
  // it (the k parallel rings included).
  std::vector<std::pair<std::uint32_t, double>> load;
  for (const auto& f : d.pattern.flows) {
    for (std::uint32_t i = f.route_begin; i < f.route_end; ++i) load.emplace_back(d.pattern.route_links[i], f.bytes_per_unit);
  }
  std::sort(load.begin(), load.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  // β = the bandwidth one ring edge carrying factor·S sees at the bottleneck link: the link
  // that needs the longest to move its load. On a symmetric group the flow simulation ends
  // exactly when that link has moved its bytes, so both give the same time.
  double beta = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < load.size();) {
    const std::uint32_t link = load[i].first;
    double per_unit = 0;
    for (; i < load.size() && load[i].first == link; ++i) per_unit += load[i].second;
    if (per_unit > 0) beta = std::min(beta, cluster.links()[link].bytes_per_s * d.shape.factor / per_unit);
  }
  return ring_closed_form_seconds(c, d.n, bytes, d.alpha_s, beta);
}

ClosedForm symmetric_closed_form(const Cluster& cluster, Collective c,
                                 std::span<const std::vector<std::uint32_t>> groups) {
  if (groups.empty()) throw std::invalid_argument(std::string(to_string(c)) + ": no groups");
  std::vector<Decomposition> parts;
  parts.reserve(groups.size());
  for (const auto& g : groups) parts.push_back(decompose(cluster, c, g));
  // Load per link per byte of the collective, over every group's flows.
  std::vector<double> load(cluster.links().size(), 0.0);
  for (const auto& d : parts)
    for (const auto& f : d.pattern.flows)
      for (std::uint32_t i = f.route_begin; i < f.route_end; ++i) load[d.pattern.route_links[i]] += f.bytes_per_unit;
  ClosedForm out;
  for (const auto& d : parts) {
    if (d.shape.steps == 0) continue;  // a group of one exchanges nothing
    out.latency_s = std::max(out.latency_s, static_cast<double>(d.shape.steps) * d.alpha_s);
    // The group ends when its most loaded link has moved its bytes: a flow on that link
    // gets capacity / load of it, and the ring moves factor·S through each edge.
    double spb = 0;
    for (const auto& f : d.pattern.flows)
      for (std::uint32_t i = f.route_begin; i < f.route_end; ++i) {
        const std::uint32_t l = d.pattern.route_links[i];
        spb = std::max(spb, load[l] / cluster.links()[l].bytes_per_s);
      }
    out.seconds_per_byte = std::max(out.seconds_per_byte, spb);
  }
  return out;
}

namespace {

// Per link, how many of the groups' flows cross it (max-min fairness shares a link
// between flows, whatever each carries).
std::vector<double> flows_per_link(const Cluster& cluster, Collective c, std::span<const std::vector<std::uint32_t>> groups) {
  std::vector<double> count(cluster.links().size(), 0.0);
  for (const auto& g : groups) {
    const Decomposition d = decompose(cluster, c, g);
    for (const auto& f : d.pattern.flows)
      for (std::uint32_t i = f.route_begin; i < f.route_end; ++i) count[d.pattern.route_links[i]] += 1;
  }
  return count;
}

}  // namespace

double interference_slowdown(const Cluster& cluster, Collective a, std::span<const std::vector<std::uint32_t>> groups_a,
                             Collective b, std::span<const std::vector<std::uint32_t>> groups_b) {
  const std::vector<double> la = flows_per_link(cluster, a, groups_a), lb = flows_per_link(cluster, b, groups_b);
  const auto& links = cluster.links();
  constexpr double INF = std::numeric_limits<double>::infinity();
  double alone = INF, shared_level = INF;
  bool a_fixed_first = false, b_fixed_first = false;
  for (std::size_t l = 0; l < links.size(); ++l) {
    if (la[l] > 0) alone = std::min(alone, links[l].bytes_per_s / la[l]);
    const double load = la[l] + lb[l];
    if (load <= 0) continue;
    const double level = links[l].bytes_per_s / load;
    if (level < shared_level) {
      shared_level = level;
      a_fixed_first = la[l] > 0;
      b_fixed_first = lb[l] > 0;
    } else if (level == shared_level) {
      a_fixed_first = a_fixed_first || la[l] > 0;
      b_fixed_first = b_fixed_first || lb[l] > 0;
    }
  }
  if (!(alone < INF)) return 0.0;  // `a` moves nothing over links
  double rate = shared_level;
  if (!a_fixed_first && b_fixed_first) {
    // `b` saturates a link of its own first; `a` takes what `b` leaves on its links.
    rate = INF;
    for (std::size_t l = 0; l < links.size(); ++l)
      if (la[l] > 0) rate = std::min(rate, (links[l].bytes_per_s - lb[l] * shared_level) / la[l]);
  }
  return rate > 0 ? std::max(0.0, alone / rate - 1.0) : 0.0;
}

}  // namespace trainsim::hardware
