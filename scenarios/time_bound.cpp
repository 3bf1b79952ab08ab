#include "scenarios/time_bound.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include "models/model.hpp"
#include "strategies/lower.hpp"
#include "strategies/program.hpp"
#include "strategies/registry.hpp"

namespace trainsim::scenarios {
namespace {

using Int = std::int64_t;

// The tensor-parallel collectives of one transformer layer, forward then backward, as
// build_program makes them (with those a full recompute redoes): read from the Program of
// the same layer alone on one tensor group, so that no rule of the tensor or recompute pass
// is restated here.
std::vector<strategies::CollectiveNeed> layer_tensor_collectives(strategies::TrainingSpec spec, Int tensor,
                                                                 bool sequence_parallel) {
  spec.model.layers = 1;
  const std::string rank_order = spec.layout.rank_order;
  spec.layout = {};
  spec.layout.rank_order = rank_order;
  spec.layout.tensor = tensor;
  spec.layout.sequence_parallel = sequence_parallel;
  spec.global_batch = spec.micro_batch;
  spec.pipeline_schedule = "1f1b";
  spec.zero_stage = 0;
  spec.overlap_grad_reduce = spec.overlap_param_gather = spec.overlap_tp_comm = false;
  spec.passes = {};
  const strategies::Program program = strategies::build_program(spec);
  std::vector<strategies::CollectiveNeed> out;
  for (const auto* list : {&program.roles[0].chunks[0].forward, &program.roles[0].chunks[0].backward})
    for (const strategies::Item& it : *list)
      if (it.kind == strategies::Item::Kind::COLLECTIVE && it.collective.dim == strategies::Dim::TENSOR &&
          it.layer == 0)
        out.push_back(it.collective);
  return out;
}

}  // namespace

TimeBound::TimeBound(const strategies::TrainingSpec& base, const hardware::Cluster& cluster,
                     const hardware::CostModel& cost)
    : base_(base), cluster_(cluster), cost_(cost) {}

const TimeBound::LayerWork& TimeBound::layer_work(std::int32_t tensor, bool sequence_parallel,
                                                  std::int32_t micro_batch) {
  auto [pos, fresh] = layer_work_.try_emplace({tensor, sequence_parallel ? 1 : 0, micro_batch});
  if (!fresh) return pos->second;
  strategies::TrainingSpec spec = base_;
  spec.micro_batch = micro_batch;
  const models::ShardSpec shard = strategies::layer_shard(spec, tensor, sequence_parallel);
  // The kernels as the lowering prices them, each at the least it could take.
  auto least = [&](std::vector<models::Op> ops, strategies::Cost what) {
    strategies::Segment segment;
    segment.ops = std::move(ops);
    return strategies::segment_seconds(segment, what, base_.dtype, cost_, strategies::Pricing::LEAST);
  };
  const models::Layer layer = models::transformer_layer(base_.model, shard);
  std::vector<models::Op> selective;
  std::copy_if(layer.ops.begin(), layer.ops.end(), std::back_inserter(selective),
               [](const models::Op& op) { return op.selective_recompute; });
  const std::vector<models::Op> head = models::head_layer(base_.model, shard).ops;
  LayerWork& w = pos->second;
  w.layer_forward = least(layer.ops, strategies::Cost::FORWARD);
  w.layer = w.layer_forward + least(layer.ops, strategies::Cost::BACKWARD);
  w.selective = least(selective, strategies::Cost::FORWARD);
  w.head = least(head, strategies::Cost::FORWARD) + least(head, strategies::Cost::BACKWARD);
  w.params = static_cast<double>(layer.params());
  return w;
}

double TimeBound::least_collective(strategies::ParallelDim dim, hardware::Collective op, double bytes,
                                   const LayoutCandidate& c) {
  auto [pos, fresh] =
      closed_forms_.try_emplace({static_cast<int>(dim), static_cast<int>(op), c.tensor, c.pipeline, c.data});
  std::vector<hardware::ClosedForm>& forms = pos->second;
  if (fresh) {
    strategies::Layout layout;
    layout.tensor = c.tensor;
    layout.pipeline = c.pipeline;
    layout.data = c.data;
    layout.rank_order = base_.layout.rank_order;
    const strategies::ParallelLayout pl = strategies::parallel_layout(layout);
    for (Int stage = 0; stage < c.pipeline; ++stage) {
      // One group of the stage: the others' flows only load the links more (and pricing every
      // group of every stage of every layout would take longer than the search saves).
      const std::vector<std::vector<std::uint32_t>> group{pl.groups(dim, strategies::ParallelDim::PIPELINE, stage)[0]};
      // What NCCL's model enables depends on the group, not on the size.
      const hardware::TuningInputs in = hardware::tuning_inputs(cluster_, op, group[0], 0);
      for (const hardware::AlgorithmChoice& choice : hardware::nccl_enabled(in))
        forms.push_back(hardware::symmetric_closed_form(cluster_, op, group, choice));
    }
  }
  double least = std::numeric_limits<double>::infinity();
  for (const hardware::ClosedForm& f : forms) least = std::min(least, f.seconds(bytes));
  return forms.empty() ? 0.0 : least;
}

namespace {

// The recompute whose work a candidate does: every-k redoes every layer's forward, collectives
// included, as full recompute does, only in segments of k layers.
strategies::Recompute work_of(strategies::Recompute r) {
  return r == strategies::Recompute::EVERY_K ? strategies::Recompute::FULL : r;
}

}  // namespace

double TimeBound::tensor_comm(const LayoutCandidate& c) {
  if (c.tensor <= 1 || c.overlap_tp_comm) return 0;
  const strategies::Recompute recompute = work_of(c.recompute);
  auto [pos, fresh] = tensor_comm_.try_emplace(
      {c.tensor, c.sequence_parallel ? 1 : 0, c.micro_batch, static_cast<int>(recompute), c.pipeline, c.data});
  if (!fresh) return pos->second;
  auto [known, unseen] = layer_collectives_.try_emplace(
      {c.tensor, c.sequence_parallel ? 1 : 0, c.micro_batch, static_cast<int>(recompute)});
  if (unseen) {
    strategies::TrainingSpec spec = base_;
    spec.micro_batch = c.micro_batch;
    spec.recompute = recompute;
    known->second = layer_tensor_collectives(spec, c.tensor, c.sequence_parallel);
  }
  double sum = 0;
  for (const strategies::CollectiveNeed& need : known->second)
    sum += least_collective(strategies::ParallelDim::TENSOR, need.op, need.bytes, c);
  pos->second = sum;
  return sum;
}

double TimeBound::after_last_backward(const LayoutCandidate& c, Int layers) {
  const double params = static_cast<double>(layers) * layer_work(c.tensor, c.sequence_parallel, c.micro_batch).params;
  const strategies::StateBytes sb = strategies::state_bytes_per_param(base_);
  const bool zero = c.zero_stage >= 1;
  double seconds = 0;
  if (c.data > 1 && !c.overlap_grad_reduce)
    seconds += least_collective(strategies::ParallelDim::DATA,
                                zero ? hardware::Collective::REDUCE_SCATTER : hardware::Collective::ALL_REDUCE,
                                params * sb.gradients, c);
  strategies::Segment step;
  step.ops = {strategies::optimizer_step_op(base_, zero ? params / static_cast<double>(c.data) : params, params)};
  seconds += strategies::segment_seconds(step, strategies::Cost::FORWARD, base_.dtype, cost_,
                                         strategies::Pricing::LEAST);
  if (c.data > 1 && zero && !c.overlap_param_gather)
    seconds +=
        least_collective(strategies::ParallelDim::DATA, hardware::Collective::ALL_GATHER, params * sb.weights, c);
  return seconds;
}

double TimeBound::seconds(const LayoutCandidate& c) {
  const LayerWork& w = layer_work(c.tensor, c.sequence_parallel, c.micro_batch);
  const strategies::Recompute work = work_of(c.recompute);
  const double recompute = work == strategies::Recompute::FULL        ? w.layer_forward
                           : work == strategies::Recompute::SELECTIVE ? w.selective
                                                                      : 0.0;
  const double per_layer = w.layer + recompute + tensor_comm(c);
  const Int layers = base_.model.layers;
  const Int p = c.pipeline;
  const Int first = c.first_stage_layers > 0 ? c.first_stage_layers : layers / p;
  const Int last = c.last_stage_layers > 0 ? c.last_stage_layers : layers / p;
  const Int middle = c.first_stage_layers > 0 ? (layers - c.first_stage_layers - c.last_stage_layers) / (p - 2)
                                              : layers / p;
  const Int most = std::max<Int>({middle, c.first_stage_layers, c.last_stage_layers});
  const double m = static_cast<double>(base_.global_batch / (static_cast<Int>(c.micro_batch) * c.data));
  const double last_stage = m * (static_cast<double>(last) * per_layer + w.head);
  const double busiest = m * static_cast<double>(most) * per_layer + after_last_backward(c, most);
  const double fill_drain = static_cast<double>(layers - last) / c.virtual_stages * per_layer;
  return std::max(busiest, last_stage + fill_drain + after_last_backward(c, first));
}

}  // namespace trainsim::scenarios
