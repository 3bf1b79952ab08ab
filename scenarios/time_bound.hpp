#pragma once
// A lower bound on a search candidate's iteration time that needs no simulation
// (`trainsim search` prunes by it). Two chains of work no schedule can shorten:
// * the GPU of the last stage runs all its micro-batches' layers and the head, after the
//   first micro-batch's forward has crossed the stages before it and before the last one's
//   backward crosses them back (one chunk each with interleaving); the first stage's GPU
//   then runs what follows its last backward;
// * the GPU of the stage with the most layers runs their work for every micro-batch, then
//   what follows its last backward.
// A layer's work: each kernel, forward, backward and recomputed (every-k redoes what full
// recompute does, in segments), at CostModel::least_seconds
// (its FLOPs at the most any kernel of its dtype reaches on the GPU, its memory traffic and
// launches as priced); and its tensor-parallel collectives, which Megatron-LM runs on the
// compute stream unless overlap-tp-comm pipelines them with their GEMMs.
// What follows a stage's last backward: the data-parallel gradient reduction unless
// overlap-grad-reduce spreads it under the backward, the optimizer step, and ZeRO-1's
// parameter all-gather unless overlap-param-gather moves it under the next forward.
// A collective takes at least the least closed form (hardware::symmetric_closed_form) of
// every algorithm and protocol NCCL's model enables for its groups in any stage: fast
// fidelity gives it the closed form of the one NCCL's model picks, and contention only
// lengthens it. Left out, since they only add: pipeline transfers, the embedding's and the
// head's collectives, and their parameters in the data-parallel reduction and the step.
#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "hardware/cluster.hpp"
#include "hardware/collectives.hpp"
#include "hardware/cost_model.hpp"
#include "scenarios/layout_space.hpp"
#include "strategies/parallel_layout.hpp"
#include "strategies/program.hpp"
#include "strategies/spec.hpp"

namespace trainsim::scenarios {

class TimeBound {
 public:
  // `cluster` must outlive the bound.
  TimeBound(const strategies::TrainingSpec& base, const hardware::Cluster& cluster, const hardware::CostModel& cost);
  double seconds(const LayoutCandidate& c);

 private:
  // The least seconds of a layer's forward and backward kernels, of its forward, of the part
  // of its forward that selective recompute redoes, and of the head's forward and backward;
  // and the parameters of a layer's shard.
  struct LayerWork {
    double layer = 0, layer_forward = 0, selective = 0, head = 0, params = 0;
  };
  const LayerWork& layer_work(std::int32_t tensor, bool sequence_parallel, std::int32_t micro_batch);
  // The least seconds of one layer's tensor-parallel collectives, forward and backward (with
  // those a full recompute redoes), when they block the compute stream.
  double tensor_comm(const LayoutCandidate& c);
  // The least seconds of what follows the last backward on a stage of `layers` layers.
  double after_last_backward(const LayoutCandidate& c, std::int64_t layers);
  double least_collective(strategies::ParallelDim dim, hardware::Collective op, double bytes, const LayoutCandidate& c);

  strategies::TrainingSpec base_;
  const hardware::Cluster& cluster_;
  hardware::CostModel cost_;
  std::map<std::tuple<int, int, int>, LayerWork> layer_work_;  // (tensor, sp, micro-batch)
  // A layer's tensor-parallel collectives by (tensor, sp, micro-batch, recompute), and their
  // least seconds by that and the pipeline and data sizes.
  std::map<std::tuple<int, int, int, int>, std::vector<strategies::CollectiveNeed>> layer_collectives_;
  std::map<std::tuple<int, int, int, int, int, int>, double> tensor_comm_;
  // Every stage's closed form of each enabled algorithm and protocol, by (dim, op, tensor,
  // pipeline, data).
  std::map<std::tuple<int, int, int, int, int>, std::vector<hardware::ClosedForm>> closed_forms_;
};

}  // namespace trainsim::scenarios
