#pragma once
// lower: the last pass. Expands the Program's roles to the ranks the fidelity simulates,
// prices every compute step with the cost model (once per distinct segment), turns
// collectives into communication instances, and emits the engine's Plan.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "hardware/cluster.hpp"
#include "hardware/cost_model.hpp"
#include "sim/plan.hpp"
#include "strategies/program.hpp"

namespace trainsim::strategies {

enum class Fidelity : std::uint8_t {
  FULL,  // every rank, every collective as flows on the topology
  FAST,  // one rank per pipeline stage; collectives in closed form
};
const char* to_string(Fidelity f);

struct Lowered {
  sim::Plan plan;
  sim::NetworkSpec network;
  Fidelity fidelity = Fidelity::FULL;
  std::vector<std::uint32_t> device_rank;   // plan device → global rank (Megatron order)
  std::vector<std::int32_t> device_stage;   // plan device → pipeline stage
  // Fast fidelity collapses runs of compute-stream steps (a layer's compute and its
  // tensor-parallel collectives, layer after layer) into one task; what each category
  // contributed to such a task is kept here for the time breakdown.
  std::vector<std::uint32_t> parts_of_task;  // per task: index into parts, or sim::NONE
  std::vector<std::array<sim::Time, static_cast<int>(Category::COUNT)>> parts;
};

// Megatron's rank order: tensor fastest, then data, then pipeline.
struct RankCoord {
  std::int64_t tensor = 0, data = 0, stage = 0;
};
std::uint32_t rank_of(const Layout& layout, const RankCoord& c);
RankCoord coord_of(const Layout& layout, std::uint32_t rank);

// Throws std::invalid_argument when the program's layout does not fit the cluster.
Lowered lower(const Program& program, const hardware::Cluster& cluster, const hardware::CostModel& cost,
              Fidelity fidelity);

// Seconds one compute step of `segment` costs in direction `dir` (sum over its ops).
double segment_seconds(const Segment& segment, Direction dir, hardware::Dtype dtype, const hardware::CostModel& cost);

}  // namespace trainsim::strategies
