// The engine's hot parts at small, medium and large sizes: the event queue and the
// max-min flow solver.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "sim/event_queue.hpp"
#include "sim/flow_network.hpp"

namespace {

using trainsim::sim::Time;

// Push n events at pseudo-random times, then pop them all.
void event_queue_push_pop(benchmark::State& state) {
  const auto n = static_cast<std::uint32_t>(state.range(0));
  std::uint64_t x = 88172645463325252ull;
  std::vector<std::int64_t> times(n);
  for (auto& t : times) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift: a fixed sequence
    t = static_cast<std::int64_t>(x % 1000000007ull);
  }
  for (auto _ : state) {
    trainsim::sim::EventQueue q;
    q.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) q.push(Time::from_ps(times[i]), 0, i);
    while (!q.empty()) benchmark::DoNotOptimize(q.pop());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * n);
}
BENCHMARK(event_queue_push_pop)->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 20);

// Rings of 8 flows sharing a set of spine links: every start and finish re-solves the
// component it touches.
void max_min_rings(benchmark::State& state) {
  const auto rings = static_cast<std::uint32_t>(state.range(0));
  const std::uint32_t spines = 16;
  for (auto _ : state) {
    std::vector<double> capacity(rings * 8 + spines, 50e9);
    trainsim::sim::FlowNetwork net(capacity);
    std::uint64_t started = 0;
    for (std::uint32_t r = 0; r < rings; ++r)
      for (std::uint32_t i = 0; i < 8; ++i) {
        const std::uint32_t route[2] = {r * 8 + i, rings * 8 + (r + i) % spines};
        net.start(Time::zero(), route, 1e6 * (1 + i), r * 8 + i);
        ++started;
      }
    std::uint64_t finished = 0;
    while (net.active_flows() > 0) finished += net.advance(net.next_finish()).size();
    benchmark::DoNotOptimize(finished);
    state.counters["flows"] = static_cast<double>(started);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * rings * 8);
}
BENCHMARK(max_min_rings)->Arg(8)->Arg(64)->Arg(512)->Arg(4096)->Unit(benchmark::kMillisecond);

// The same flows driven as the engine drives the network: every ring is one add_flows of
// a registered route set, all rings of an instant are solved once, and each finish time
// is removed and solved once. Arg 1: with the spine links (every ring shares them with
// others, so no group may be aggregated); 0: each ring on its own links only (every ring
// is symmetric and alone, so each is one variable when aggregation is on).
void max_min_ring_groups(benchmark::State& state, trainsim::sim::FlowNetwork::Aggregation aggregation) {
  using trainsim::sim::FlowNetwork;
  const auto rings = static_cast<std::uint32_t>(state.range(0));
  const bool spine = state.range(1) != 0;
  const std::uint32_t spines = 16;
  std::vector<std::vector<std::uint32_t>> routes(8);
  std::vector<FlowNetwork::Finished> done;
  for (auto _ : state) {
    std::vector<double> capacity(rings * 8 + spines, 50e9);
    FlowNetwork net(capacity, aggregation);
    for (std::uint32_t r = 0; r < rings; ++r) {
      for (std::uint32_t i = 0; i < 8; ++i) {
        routes[i] = {r * 8 + i};
        if (spine) routes[i].push_back(rings * 8 + (r + i) % spines);
      }
      // Ring sizes differ so that finishes spread over time, as in max_min_rings.
      net.add_flows(Time::zero(), net.add_route_set(routes), 1e6 * (1 + r % 8), r);
    }
    net.solve(Time::zero());
    std::uint64_t finished = 0;
    while (net.active_flows() > 0) {
      const Time t = net.next_finish();
      done.clear();
      net.remove_finished(t, done);
      for (const FlowNetwork::Finished& f : done) finished += f.flows;
      net.solve(t);
    }
    benchmark::DoNotOptimize(finished);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * rings * 8);
}
BENCHMARK_CAPTURE(max_min_ring_groups, aggregated, trainsim::sim::FlowNetwork::Aggregation::ON)
    ->ArgsProduct({{8, 64, 512, 4096}, {0, 1}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(max_min_ring_groups, separate, trainsim::sim::FlowNetwork::Aggregation::OFF)
    ->ArgsProduct({{8, 64, 512, 4096}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
