#pragma once
// lower: the last pass. Expands the Program's roles to the ranks the fidelity simulates,
// prices every compute step with the cost model (once per distinct segment), turns
// collectives into communication instances, and emits the engine's Plan.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "hardware/cluster.hpp"
#include "hardware/collectives.hpp"
#include "hardware/cost_model.hpp"
#include "sim/plan.hpp"
#include "strategies/parallel_layout.hpp"
#include "strategies/program.hpp"

namespace trainsim::strategies {

enum class Fidelity : std::uint8_t {
  FULL,  // every rank, every collective as flows on the topology
  FAST,  // one rank per pipeline stage; collectives in closed form
};
const char* to_string(Fidelity f);

struct Lowered {
  sim::Plan plan;
  sim::NetworkSpec network;  // the cluster's links when the plan has flows (patterns); else empty
  Fidelity fidelity = Fidelity::FULL;
  std::vector<std::uint32_t> device_rank;   // plan device → global rank (the layout's rank order)
  std::vector<std::int32_t> device_stage;   // plan device → pipeline stage
  // Fast fidelity folds each run of a stage's rank-local work (a micro-batch's layers, their
  // tensor-parallel collectives, pipelined or not) into one compute-stream task whose time
  // comes from simulating that run alone; what each category contributed to such a task
  // (busy time by category, waits for tensor-parallel transfers as TP_COMM) is kept here
  // for the time breakdown.
  std::vector<std::uint32_t> parts_of_task;  // per task: index into parts, or sim::NONE
  std::vector<std::array<sim::Time, static_cast<int>(Category::COUNT)>> parts;
  // The algorithm, protocol and channels NCCL's tuning model picked for each kind of
  // collective the Plan runs (dimension, collective, whole-buffer bytes), in that order.
  struct CollectiveUse {
    Dim dim = Dim::DATA;
    hardware::Collective op = hardware::Collective::ALL_REDUCE;
    double bytes = 0;
    hardware::AlgorithmChoice choice;
  };
  std::vector<CollectiveUse> collectives;
};

struct LowerOptions {
  // Fill the Plan's op descriptors (what each task is: op, FLOPs, bytes, collective, group,
  // dtype) for Chakra export, the critical-path report and calibration.
  bool describe_ops = false;
  // The Program is lowered as build_program returned it (what a sweep or search does): the
  // middle stages it restored as copies of stage 1 (Role::restored_from) are still copies,
  // so fast fidelity checks only that each is priced as the stage before it, not that it
  // is item for item the same. A caller that edits a role's lists leaves this false, or
  // clears that role's restored_from.
  bool as_built = false;
};

// Throws std::invalid_argument when the program's layout does not fit the cluster.
Lowered lower(const Program& program, const hardware::Cluster& cluster, const hardware::CostModel& cost,
              Fidelity fidelity, const LowerOptions& options = {});

// NCCL's buffers on each GPU: the profile's bytes for each communicator the GPU joins, one per
// parallel dimension larger than one and, in a pipeline, the tied embedding's group.
double comm_buffer_bytes(const Layout& layout, const models::ModelConfig& model, const hardware::GpuProfile& gpu);

// How segment_seconds prices each kernel: as the cost model says (CostModel::seconds), or
// at the least it could take (CostModel::least_seconds), for lower bounds.
enum class Pricing : std::uint8_t { MEASURED, LEAST };

// Seconds one compute step of `segment` costs (sum over its ops) for the share `what` of
// its work: forward, whole backward, or the backward's input- or weight-gradient half.
double segment_seconds(const Segment& segment, Cost what, hardware::Dtype dtype, const hardware::CostModel& cost,
                       Pricing pricing = Pricing::MEASURED);
inline double segment_seconds(const Segment& segment, Direction dir, hardware::Dtype dtype,
                              const hardware::CostModel& cost) {
  return segment_seconds(segment, dir == Direction::FORWARD ? Cost::FORWARD : Cost::BACKWARD, dtype, cost);
}

}  // namespace trainsim::strategies
