#pragma once
// Small specs and clusters shared by the strategies tests.
#include "hardware/cluster.hpp"
#include "hardware/cost_model.hpp"
#include "hardware/gpu_profile.hpp"
#include "models/presets.hpp"
#include "strategies/spec.hpp"

namespace trainsim::strategies::testing {

inline TrainingSpec gpt_spec(std::int64_t t, std::int64_t p, std::int64_t d, std::int64_t global_batch) {
  TrainingSpec s;
  s.model = *models::find_preset("gpt-1.7b");
  s.sequence = 2048;
  s.micro_batch = 1;
  s.global_batch = global_batch;
  s.layout = Layout{t, p, d, false, 1};
  s.flash_attention = false;  // Korthikanti's formulas describe the unfused attention core
  return s;
}

inline hardware::Cluster a100_cluster(std::int64_t gpus) {
  hardware::ClusterSpec c;
  c.gpu = "a100-80gb";
  c.gpus_per_node = gpus < 8 ? gpus : 8;
  c.nodes = gpus / c.gpus_per_node;
  c.nic_gbps = 200;
  return hardware::Cluster(c, *hardware::find_profile("a100-80gb"));
}

inline hardware::CostModel a100_cost() { return hardware::CostModel(*hardware::find_profile("a100-80gb")); }

}  // namespace trainsim::strategies::testing
