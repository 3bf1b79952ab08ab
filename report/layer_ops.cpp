#include "report/layer_ops.hpp"

#include <algorithm>
#include <cstdint>

#include "models/model.hpp"
#include "strategies/lower.hpp"

namespace trainsim::report {

std::vector<OpShare> top_layer_ops(const strategies::Program& program, const hardware::CostModel& cost,
                                   std::size_t n) {
  const strategies::TrainingSpec& spec = program.spec;
  // The layer as the Program's roles hold it (strategies::rebuild_role builds the same shard).
  models::ShardSpec shard;
  shard.micro_batch = spec.micro_batch;
  shard.sequence = spec.sequence;
  shard.tensor = program.applied.tensor;
  shard.sequence_parallel = program.applied.sequence_parallel && program.applied.tensor > 1;
  shard.flash_attention = spec.flash_attention;
  const models::Layer layer = models::transformer_layer(spec.model, shard);

  std::vector<OpShare> ops;
  double total = 0;
  for (const models::Op& op : layer.ops) {
    strategies::Segment one;
    one.ops = {op};
    const double s = strategies::segment_seconds(one, strategies::Cost::FORWARD, spec.dtype, cost) +
                     strategies::segment_seconds(one, strategies::Cost::BACKWARD, spec.dtype, cost);
    ops.push_back({op.name, s, 0});
    total += s;
  }
  for (auto& o : ops) o.share = total > 0 ? o.seconds / total : 0;
  std::stable_sort(ops.begin(), ops.end(), [](const OpShare& a, const OpShare& b) { return a.seconds > b.seconds; });
  if (ops.size() > n) ops.resize(n);
  return ops;
}

}  // namespace trainsim::report
