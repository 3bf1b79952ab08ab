#include "strategies/lower.hpp"

#include <map>
#include <tuple>
#include <stdexcept>
#include <unordered_map>

namespace trainsim::strategies {

const char* to_string(Fidelity f) { return f == Fidelity::FULL ? "full" : "fast"; }

std::uint32_t rank_of(const Layout& l, const RankCoord& c) {
  return static_cast<std::uint32_t>(c.tensor + l.tensor * (c.data + l.data * c.stage));
}

RankCoord coord_of(const Layout& l, std::uint32_t rank) {
  RankCoord c;
  c.tensor = rank % l.tensor;
  c.data = (rank / l.tensor) % l.data;
  c.stage = rank / (l.tensor * l.data);
  return c;
}

namespace {

hardware::KernelClass kernel_class(models::ComputeClass c) {
  switch (c) {
    case models::ComputeClass::GEMM: return hardware::KernelClass::GEMM;
    case models::ComputeClass::BATCHED_GEMM: return hardware::KernelClass::BATCHED_GEMM;
    case models::ComputeClass::ELEMENTWISE: return hardware::KernelClass::MEMORY;
  }
  return hardware::KernelClass::MEMORY;
}

// The ranks of the group a collective of `dim` runs over, for the rank at `c`, in ring
// order; and an id for that group unique within its dimension.
std::vector<std::uint32_t> group_ranks(const Layout& l, Dim dim, const RankCoord& c, std::int64_t stages) {
  std::vector<std::uint32_t> ranks;
  switch (dim) {
    case Dim::TENSOR:
      for (std::int64_t t = 0; t < l.tensor; ++t) ranks.push_back(rank_of(l, {t, c.data, c.stage}));
      break;
    case Dim::DATA:
      for (std::int64_t d = 0; d < l.data; ++d) ranks.push_back(rank_of(l, {c.tensor, d, c.stage}));
      break;
    case Dim::PIPELINE:  // the tied-embedding group: first and last stage
      ranks.push_back(rank_of(l, {c.tensor, c.data, 0}));
      ranks.push_back(rank_of(l, {c.tensor, c.data, stages - 1}));
      break;
  }
  return ranks;
}

std::uint64_t group_id(const Layout& l, Dim dim, const RankCoord& c) {
  switch (dim) {
    case Dim::TENSOR: return static_cast<std::uint64_t>(c.data + l.data * c.stage);
    case Dim::DATA: return static_cast<std::uint64_t>(c.tensor + l.tensor * c.stage);
    case Dim::PIPELINE: return static_cast<std::uint64_t>(c.tensor + l.tensor * c.data);
  }
  return 0;
}

}  // namespace

double segment_seconds(const Segment& segment, Direction dir, hardware::Dtype dtype, const hardware::CostModel& cost) {
  double total = 0;
  for (const auto& op : segment.ops) {
    hardware::Kernel k;
    k.cls = kernel_class(op.cls);
    k.dtype = dtype;
    k.batch = op.gemm.batch;
    if (dir == Direction::FORWARD) {
      k.flops = op.fwd_flops;
      k.bytes = op.fwd_bytes;
      total += cost.seconds(k);
    } else if (op.bwd_weight_flops > 0) {
      // Input- and weight-gradient GEMMs are separate kernels of the forward's size class.
      k.flops = op.bwd_input_flops + op.bwd_extra_flops;
      k.bytes = op.bwd_bytes / 2;
      total += cost.seconds(k);
      k.flops = op.bwd_weight_flops;
      total += cost.seconds(k);
    } else {
      k.flops = op.bwd_input_flops + op.bwd_extra_flops;
      k.bytes = op.bwd_bytes;
      total += cost.seconds(k);
    }
  }
  return total;
}

Lowered lower(const Program& program, const hardware::Cluster& cluster, const hardware::CostModel& cost,
              Fidelity fidelity) {
  const Layout& l = program.spec.layout;
  const auto stages = static_cast<std::int64_t>(program.roles.size());
  if (l.tensor != program.applied.tensor || l.data != program.applied.data || stages != l.pipeline)
    throw std::invalid_argument("lower: the program's passes did not apply the layout " +
                                std::to_string(l.tensor) + "×" + std::to_string(l.pipeline) + "×" +
                                std::to_string(l.data));
  if (static_cast<std::uint64_t>(l.gpus()) != cluster.num_gpus())
    throw std::invalid_argument("lower: layout needs " + std::to_string(l.gpus()) + " GPUs, cluster has " +
                                std::to_string(cluster.num_gpus()));

  Lowered out;
  out.fidelity = fidelity;
  // Which ranks become plan devices.
  std::vector<std::uint32_t> device_of_rank(static_cast<std::size_t>(l.gpus()), sim::NONE);
  for (std::uint32_t r = 0; r < static_cast<std::uint32_t>(l.gpus()); ++r) {
    const RankCoord c = coord_of(l, r);
    if (fidelity == Fidelity::FULL || (c.tensor == 0 && c.data == 0)) {
      device_of_rank[r] = static_cast<std::uint32_t>(out.device_rank.size());
      out.device_rank.push_back(r);
      out.device_stage.push_back(static_cast<std::int32_t>(c.stage));
    }
  }

  std::vector<std::string> categories, mem_classes;
  for (int c = 0; c < static_cast<int>(Category::COUNT); ++c) categories.emplace_back(to_string(static_cast<Category>(c)));
  for (int c = 0; c < static_cast<int>(MemClass::COUNT); ++c) mem_classes.emplace_back(to_string(static_cast<MemClass>(c)));
  sim::PlanBuilder b(static_cast<std::uint32_t>(out.device_rank.size()), STREAMS_PER_DEVICE, categories, mem_classes);

  // Compute costs, once per (role, segment, direction).
  std::vector<std::vector<double>> seg_seconds[2];
  for (int dir = 0; dir < 2; ++dir) {
    seg_seconds[dir].resize(program.roles.size());
    for (std::size_t r = 0; r < program.roles.size(); ++r) {
      const Role& role = program.roles[r];
      for (const auto& seg : role.segments)
        seg_seconds[dir][r].push_back(segment_seconds(seg, static_cast<Direction>(dir), program.spec.dtype, cost));
    }
  }


  std::map<std::tuple<int, std::uint64_t, int>, std::uint32_t> pattern_cache;  // (dim, group, op)
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> p2p_cache;   // (src, dst)
  std::unordered_map<std::uint64_t, std::uint32_t> instances[3];                 // per dim: (group, seq)
  auto instance_key = [](std::uint64_t group, std::uint64_t seq) { return (group << 32) | seq; };

  const auto m = static_cast<std::size_t>(program.micro_batches);
  const auto v = static_cast<std::size_t>(program.applied.virtual_stages);
  std::vector<std::vector<std::uint32_t>> task_of_step(out.device_rank.size());
  std::vector<std::uint32_t> send_task(out.device_rank.size() * m * v * 2, sim::NONE);
  auto send_slot = [&](std::uint32_t device, std::int32_t mb, std::int32_t chunk, Direction dir) {
    return ((static_cast<std::size_t>(device) * m + static_cast<std::size_t>(mb)) * v +
            static_cast<std::size_t>(chunk)) * 2 + static_cast<std::size_t>(dir);
  };

  // Closed-form collective times (fast fidelity), once per distinct (dim, group, op, size).
  std::map<std::tuple<int, std::uint64_t, int, double, double>, sim::Time> closed_form_cache;
  auto closed_form = [&](const CollectiveNeed& need, const RankCoord& c) {
    const std::uint64_t gid = group_id(l, need.dim, c);
    auto [pos, fresh] = closed_form_cache.try_emplace(
        {static_cast<int>(need.dim), gid, static_cast<int>(need.op), need.bytes, need.latency_scale}, sim::Time{});
    if (fresh) {
      const auto ranks = group_ranks(l, need.dim, c, stages);
      double seconds = hardware::closed_form_seconds(cluster, need.op, ranks, need.bytes);
      // A pipelined piece pays only its share of the per-step latency.
      if (need.latency_scale != 1.0)
        seconds -= (1.0 - need.latency_scale) * hardware::closed_form_seconds(cluster, need.op, ranks, 0);
      pos->second = sim::Time::from_seconds(seconds);
    }
    return pos->second;
  };
  auto compute_time = [&](const Item& it, std::int64_t stage) {
    const double seconds = seg_seconds[static_cast<int>(it.cost)][static_cast<std::size_t>(stage)][it.segment] *
                           it.fraction;
    return sim::Time::from_seconds(seconds);
  };

  // Which steps a fast plan may fold into the step before them: compute-stream work of the
  // same micro-batch that waits only for that step, which nothing else waits for.
  std::vector<std::vector<bool>> folds_into_previous(program.roles.size());
  if (fidelity == Fidelity::FAST) {
    for (std::size_t r = 0; r < program.roles.size(); ++r) {
      const auto& steps = program.roles[r].steps;
      std::vector<std::uint32_t> dependents(steps.size(), 0);
      for (const auto& st : steps)
        for (auto d : st.deps) ++dependents[d];
      auto foldable = [&](const Step& st) {
        return st.kind == Step::Kind::ITEM && st.item.stream == Stream::COMPUTE && st.micro_batch >= 0 &&
               st.item.mem_class == MemClass::ACTIVATIONS &&
               (st.item.kind == Item::Kind::COMPUTE || st.item.collective.dim == Dim::TENSOR);
      };
      auto& folds = folds_into_previous[r];
      folds.assign(steps.size(), false);
      for (std::size_t k = 1; k < steps.size(); ++k) {
        const Step &a = steps[k - 1], &st = steps[k];
        folds[k] = foldable(a) && foldable(st) && a.micro_batch == st.micro_batch && a.direction == st.direction &&
                   a.chunk == st.chunk && st.deps.size() == 1 && st.deps[0] == k - 1 && dependents[k - 1] == 1;
      }
    }
  }

  for (std::uint32_t dev = 0; dev < out.device_rank.size(); ++dev) {
    const std::uint32_t rank = out.device_rank[dev];
    const RankCoord c = coord_of(l, rank);
    const Role& role = program.roles[static_cast<std::size_t>(c.stage)];
    const auto& folds = folds_into_previous[static_cast<std::size_t>(c.stage)];
    std::uint64_t seq[3] = {0, 0, 0};
    for (int d = 0; d < static_cast<int>(MemClass::COUNT); ++d)
      b.set_initial_memory(dev, static_cast<std::uint8_t>(d), static_cast<std::int64_t>(role.static_bytes[d]));
    auto& tasks = task_of_step[dev];
    tasks.reserve(role.steps.size());
    for (std::size_t i = 0; i < role.steps.size(); ++i) {
      const Step& step = role.steps[i];
      if (step.kind == Step::Kind::RECV) {
        tasks.push_back(sim::NONE);
        continue;
      }
      const Item& it = step.item;
      if (!folds.empty() && i + 1 < role.steps.size() && folds[i + 1]) {
        // Fast fidelity: one task for the whole run of compute-stream steps.
        std::array<sim::Time, static_cast<int>(Category::COUNT)> part{};
        std::size_t j = i;
        std::int64_t alloc = 0, free = 0;
        for (;; ++j) {
          const Item& x = role.steps[j].item;
          const sim::Time d = x.kind == Item::Kind::COMPUTE ? compute_time(x, c.stage) : closed_form(x.collective, c);
          part[static_cast<int>(x.category)] += d;
          alloc += x.alloc_bytes;
          free += x.free_bytes;
          if (j + 1 >= role.steps.size() || !folds[j + 1]) break;
        }
        sim::Time total;
        for (auto p : part) total += p;
        sim::PlanBuilder::TaskSpec ts;
        ts.device = dev;
        ts.stream = static_cast<std::uint8_t>(Stream::COMPUTE);
        ts.category = static_cast<std::uint8_t>(it.category);
        ts.label = b.label(it.label);
        ts.micro_batch = step.micro_batch;
        ts.mem_class = static_cast<std::uint8_t>(MemClass::ACTIVATIONS);
        ts.alloc_bytes = alloc;
        ts.free_bytes = free;
        const std::uint32_t task = b.add_compute(ts, total);
        if (out.parts_of_task.size() <= task) out.parts_of_task.resize(task + 1, sim::NONE);
        out.parts_of_task[task] = static_cast<std::uint32_t>(out.parts.size());
        out.parts.push_back(part);
        for (std::size_t k = i; k <= j; ++k) tasks.push_back(task);
        // TP collectives folded in still take their place in the group's sequence.
        for (std::size_t k = i; k <= j; ++k)
          if (role.steps[k].item.kind == Item::Kind::COLLECTIVE) ++seq[static_cast<int>(Dim::TENSOR)];
        i = j;
        continue;
      }
      sim::PlanBuilder::TaskSpec ts;
      ts.device = dev;
      ts.stream = static_cast<std::uint8_t>(it.stream);
      ts.category = static_cast<std::uint8_t>(it.category);
      ts.label = b.label(it.label);
      ts.micro_batch = step.micro_batch;
      ts.mem_class = static_cast<std::uint8_t>(it.mem_class);
      ts.alloc_bytes = it.alloc_bytes;
      ts.free_bytes = it.free_bytes;
      if (step.kind == Step::Kind::ITEM && it.kind == Item::Kind::COMPUTE) {
        tasks.push_back(b.add_compute(ts, compute_time(it, c.stage)));
        continue;
      }
      if (step.kind == Step::Kind::SEND) {
        const std::uint32_t peer = rank_of(l, {c.tensor, c.data, step.peer_stage});
        sim::CommInstance inst;
        inst.bytes = it.collective.bytes;
        inst.participants = 1;
        const std::uint32_t pair[2] = {rank, peer};
        if (fidelity == Fidelity::FULL) {
          auto [pos, fresh] = p2p_cache.try_emplace({rank, peer}, 0);
          if (fresh) pos->second = b.add_pattern(hardware::ring_pattern(cluster, hardware::Collective::SEND_RECV, pair));
          inst.pattern = pos->second;
        } else {
          inst.fixed_duration = sim::Time::from_seconds(
              hardware::closed_form_seconds(cluster, hardware::Collective::SEND_RECV, pair, inst.bytes));
        }
        const std::uint32_t task = b.add_comm_task(ts, b.add_comm(inst));
        tasks.push_back(task);
        send_task[send_slot(dev, step.micro_batch, step.chunk, step.direction)] = task;
        continue;
      }
      // A collective over a group: every simulated member joins the same instance.
      const auto dim = static_cast<int>(it.collective.dim);
      const std::uint64_t gid = group_id(l, it.collective.dim, c);
      auto [pos, fresh] = instances[dim].try_emplace(instance_key(gid, seq[dim]++), 0);
      if (fresh) {
        const auto ranks = group_ranks(l, it.collective.dim, c, stages);
        sim::CommInstance inst;
        inst.bytes = it.collective.bytes;
        inst.latency_scale = it.collective.latency_scale;
        for (auto r : ranks) inst.participants += device_of_rank[r] != sim::NONE ? 1 : 0;
        if (fidelity == Fidelity::FULL) {
          auto [pp, pfresh] = pattern_cache.try_emplace({dim, gid, static_cast<int>(it.collective.op)}, 0);
          if (pfresh) pp->second = b.add_pattern(hardware::ring_pattern(cluster, it.collective.op, ranks));
          inst.pattern = pp->second;
        } else {
          inst.fixed_duration = closed_form(it.collective, c);
        }
        pos->second = b.add_comm(inst);
      }
      tasks.push_back(b.add_comm_task(ts, pos->second));
    }
  }

  // Dependencies: within a rank by step index; a RECV stands for the peer's SEND.
  for (std::uint32_t dev = 0; dev < out.device_rank.size(); ++dev) {
    const RankCoord c = coord_of(l, out.device_rank[dev]);
    const Role& role = program.roles[static_cast<std::size_t>(c.stage)];
    const auto& tasks = task_of_step[dev];
    for (std::size_t i = 0; i < role.steps.size(); ++i) {
      if (tasks[i] == sim::NONE) continue;
      for (std::uint32_t j : role.steps[i].deps) {
        const Step& dep = role.steps[j];
        std::uint32_t from = tasks[j];
        if (dep.kind == Step::Kind::RECV) {
          const std::uint32_t peer_dev = device_of_rank[rank_of(l, {c.tensor, c.data, dep.peer_stage})];
          from = send_task[send_slot(peer_dev, dep.micro_batch, dep.peer_chunk, dep.direction)];
        }
        if (from == sim::NONE) throw std::logic_error("lower: a step depends on a send that was never issued");
        if (from != tasks[i]) b.add_edge(from, tasks[i]);  // steps folded into one task
      }
    }
  }
  out.plan = std::move(b).finish();
  out.parts_of_task.resize(out.plan.size(), sim::NONE);
  // Compute that shares the GPU with running communication loses the SMs and memory
  // bandwidth the communication kernels take (the profile's contention factor).
  out.plan.contention_slowdown = cost.profile().comm_overlap_slowdown().value();
  out.plan.contended_stream = static_cast<std::uint8_t>(Stream::COMPUTE);
  out.network = cluster.network();
  return out;
}

}  // namespace trainsim::strategies
