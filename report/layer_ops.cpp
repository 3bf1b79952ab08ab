#include "report/layer_ops.hpp"

#include <algorithm>
#include <cstdint>

#include "models/model.hpp"
#include "strategies/lower.hpp"

namespace trainsim::report {

std::vector<OpShare> top_layer_ops(const strategies::Program& program, const hardware::CostModel& cost,
                                   std::size_t n) {
  const strategies::TrainingSpec& spec = program.spec;
  // The layer as the Program's roles hold it.
  const models::Layer layer = models::transformer_layer(spec.model, strategies::layer_shard(program));

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
