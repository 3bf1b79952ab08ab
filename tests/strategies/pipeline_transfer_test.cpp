// Pipeline transfers as Megatron-LM runs them: each send and its receive are one
// rendezvous (batch_isend_irecv, and the stage waits on every request before it computes
// again), so a stage that sends cannot run ahead of a slower stage that has not yet posted
// the matching receive.
#include <gtest/gtest.h>

#include <cstdlib>

#include <string>
#include <tuple>

#include "sim/simulate.hpp"
#include "strategies/lower.hpp"
#include "strategies/registry.hpp"
#include "tests/strategies/fixtures.hpp"

namespace trainsim::strategies {
namespace {

// schedule_test's uniform program over two stages; stage 1's forward costs `slow` times stage 0's.
Program two_stage_program(const char* schedule, int m, double slow) {
  return testing::uniform_program(schedule, 2, m, 1, slow);
}

// The task of `device` labelled `label` for micro-batch `mb` (the only one).
std::uint32_t task_of(const sim::Plan& plan, std::uint32_t device, const std::string& label, int mb) {
  std::uint32_t found = sim::NONE;
  for (std::uint32_t t = 0; t < plan.size(); ++t)
    if (plan.device[t] == device && plan.label_names[plan.label[t]] == label && plan.micro_batch[t] == mb) {
      EXPECT_EQ(found, sim::NONE) << label << " mb " << mb << " twice on device " << device;
      found = t;
    }
  EXPECT_NE(found, sim::NONE) << label << " mb " << mb << " not on device " << device;
  return found;
}

// Full fidelity: every send and its receive are one instance of two participants, on the
// two stages. Fast fidelity: the send alone, waiting for what the receive would wait for
// (the receiver's compute before it), so no task of the receiver is needed.
TEST(PipelineTransfer, SendAndReceiveAreOneRendezvous) {
  for (const char* schedule : {"gpipe", "1f1b"})
    for (const Fidelity fid : {Fidelity::FAST, Fidelity::FULL}) {
      auto spec = testing::gpt_spec(2, 2, 2, 8);
      spec.pipeline_schedule = schedule;
      const Program prog = build_program(spec);
      const auto cluster = testing::a100_cluster(8);
      const Lowered low = lower(prog, cluster, testing::a100_cost(), fid);
      const sim::Plan& plan = low.plan;
      int sends = 0;
      for (std::uint32_t t = 0; t < plan.size(); ++t) {
        const std::string& label = plan.label_names[plan.label[t]];
        if (label.rfind("pp-send", 0) != 0) continue;
        ++sends;
        const sim::CommInstance& inst = plan.comms[plan.comm[t]];
        if (fid == Fidelity::FAST) {
          EXPECT_EQ(inst.participants, 1u);
          // From the second micro-batch on, the receiver has computed before it posts.
          if (plan.micro_batch[t] >= 1) {
            bool waits_for_receiver = false;
            for (std::uint32_t u = 0; u < plan.size(); ++u)
              if (low.device_stage[plan.device[u]] != low.device_stage[plan.device[t]] &&
                  plan.kind[u] == sim::TaskKind::COMPUTE)
                for (const sim::TaskId v : plan.successors(u)) waits_for_receiver |= v == t;
            EXPECT_TRUE(waits_for_receiver) << label << " mb " << plan.micro_batch[t] << " " << schedule;
          }
          continue;
        }
        EXPECT_EQ(inst.participants, 2u);
        int receives = 0;
        for (std::uint32_t u = 0; u < plan.size(); ++u) {
          if (u == t || plan.kind[u] != sim::TaskKind::COMM || plan.comm[u] != plan.comm[t]) continue;
          ++receives;
          EXPECT_EQ(plan.label_names[plan.label[u]], "pp-recv" + label.substr(7));
          EXPECT_NE(low.device_stage[plan.device[u]], low.device_stage[plan.device[t]]);
          EXPECT_EQ(plan.micro_batch[u], plan.micro_batch[t]);
        }
        EXPECT_EQ(receives, 1) << schedule << " " << to_string(fid);
      }
      if (fid == Fidelity::FAST) {
        for (std::uint32_t t = 0; t < plan.size(); ++t)
          EXPECT_NE(plan.label_names[plan.label[t]].rfind("pp-recv", 0), 0u) << "a receive task in fast fidelity";
      }
      // Per pipeline (one in fast fidelity, t·d = 4 in full): m forward and m backward sends.
      EXPECT_EQ(sends, 2 * 8 / 2 * (fid == Fidelity::FAST ? 1 : 4)) << schedule << " " << to_string(fid);
      EXPECT_NO_THROW((void)sim::simulate(plan, low.network));
    }
}

// GPipe over two stages, m = 3, stage 1's forward about 3 times stage 0's (T), transfers
// free. Stage 1 posts the receive of micro-batch k when its forward of k − 1 ends. Stage 0
// computes F0 0..T and sends it at once (stage 1 waits); F1 T..2T, but its send meets the
// receive only when stage 1's F0 ends (about 4T), and the stage waits on it, so F2 starts
// then (not at 2T, as with a send that does not wait); F2's send meets the receive when
// stage 1's F1 ends. Full fidelity moves the bytes over NVLink, so there the order is checked.
TEST(PipelineTransfer, SenderWaitsUntilTheReceiverHasPostedTheReceive) {
  const Program prog = two_stage_program("gpipe", 3, 3.0);
  const auto cluster = testing::a100_cluster(2);
  for (const Fidelity fid : {Fidelity::FAST, Fidelity::FULL}) {
    Lowered low = lower(prog, cluster, testing::a100_cost(), fid);
    if (fid == Fidelity::FAST)
      for (auto& c : low.plan.comms) c.fixed_duration = sim::Time::zero();
    const sim::Timeline tl = sim::simulate(low.plan, low.network);
    const sim::Plan& plan = low.plan;
    const std::uint32_t send1 = task_of(plan, 0, "pp-send-activations", 1);
    const std::uint32_t f1 = task_of(plan, 0, "f", 1), f2 = task_of(plan, 0, "f", 2);
    const std::uint32_t stage1_f0 = task_of(plan, 1, "f", 0);
    if (fid == Fidelity::FULL) {
      // One rendezvous: both sides start and end together, once stage 1's F0 is done.
      const std::uint32_t recv1 = task_of(plan, 1, "pp-recv-activations", 1);
      ASSERT_NE(recv1, sim::NONE);
      EXPECT_EQ(tl.start[send1].ps, tl.start[recv1].ps);
      EXPECT_EQ(tl.end[send1].ps, tl.end[recv1].ps);
    }
    // Stage 1 computes F1 only after the transfer.
    EXPECT_GE(tl.start[task_of(plan, 1, "f", 1)].ps, tl.end[send1].ps) << to_string(fid);
    EXPECT_GE(tl.start[send1].ps, tl.end[stage1_f0].ps) << to_string(fid);
    EXPECT_GE(tl.start[f2].ps, tl.end[send1].ps) << to_string(fid);
    // Stage 0 did wait: F2 starts well after F1 ended.
    EXPECT_GT(tl.start[f2].ps, tl.end[f1].ps + (tl.end[f1].ps - tl.start[f1].ps)) << to_string(fid);
    if (fid == Fidelity::FAST) {
      EXPECT_EQ(tl.start[send1].ps, tl.end[stage1_f0].ps);
      EXPECT_EQ(tl.start[f2].ps, tl.end[send1].ps);
      EXPECT_EQ(tl.start[task_of(plan, 0, "pp-send-activations", 2)].ps, tl.end[task_of(plan, 1, "f", 1)].ps);
    }
  }
}

// 1F1B's steady state batches a forward send with a backward receive between the same
// two stages (send_forward_recv_backward / send_backward_recv_forward): posted together,
// they must not wait for each other. Uniform stages, free transfers: the makespan stays
// the ideal (m + p − 1)·(Tf + Tb) for every p and m, and 1F1B and interleaved runs of
// real models finish in both fidelities.
TEST(PipelineTransfer, BatchedExchangesDoNotDeadlock) {
  for (const char* schedule : {"1f1b", "gpipe"}) {
    const Program prog = two_stage_program(schedule, 5, 1.0);
    Lowered low = lower(prog, testing::a100_cluster(2), testing::a100_cost(), Fidelity::FAST);
    for (auto& c : low.plan.comms) c.fixed_duration = sim::Time::zero();
    const sim::Timeline tl = sim::simulate(low.plan, low.network);
    const std::int64_t tf = tl.end[task_of(low.plan, 0, "f", 0)].ps;
    const std::uint32_t b0 = task_of(low.plan, 0, "b", 0);
    // Stage 0: Tb = 2 Tf (input and weight gradients), each rounded to a picosecond on its own.
    const std::int64_t tb = tl.end[b0].ps - tl.start[b0].ps;
    EXPECT_LE(std::abs(tb - 2 * tf), 1) << schedule;
    EXPECT_EQ(tl.makespan.ps, (5 + 2 - 1) * (tf + tb)) << schedule;
  }
  for (const auto& [schedule, p, v, m] : {std::tuple{"1f1b", 4, 1, 8}, std::tuple{"interleaved-1f1b", 4, 2, 8},
                                          std::tuple{"interleaved-1f1b", 2, 3, 4}, std::tuple{"gpipe", 3, 1, 5}}) {
    auto spec = testing::gpt_spec(1, p, 1, m);
    spec.pipeline_schedule = schedule;
    spec.layout.virtual_stages = v;
    const Program prog = build_program(spec);
    for (const Fidelity fid : {Fidelity::FAST, Fidelity::FULL}) {
      const Lowered low = lower(prog, testing::a100_cluster(p), testing::a100_cost(), fid);
      EXPECT_NO_THROW((void)sim::simulate(low.plan, low.network)) << schedule << " p=" << p << " v=" << v;
    }
  }
}


// Without sequence parallelism a tensor rank sends 1/t of the boundary tensor and the
// receiver all-gathers the b·s·h elements (2·b·s·h bytes) over the tensor group before it
// computes (Narayanan et al. 2021 §4.1). GPT-1.7B, s = 2048, b = 1, h = 2304, t = 2,
// p = 2: stage 1's forward and stage 0's backward start with a gather of 2·2048·2304 bytes;
// stage 0's forward and stage 1's backward receive nothing and gather nothing. With
// sequence parallelism the sent slice is the sequence shard the next layer wants: no gather.
TEST(PipelineTransfer, ScatterGatherReceiverAllGathersOverTheTensorGroup) {
  auto spec = testing::gpt_spec(2, 2, 1, 4);
  const Program prog = build_program(spec);
  const double bytes = 2.0 * 2048 * 2304;
  auto first = [](const std::vector<Item>& items) { return items.front(); };
  const Item f1 = first(prog.roles[1].chunks[0].forward), b0 = first(prog.roles[0].chunks[0].backward);
  EXPECT_EQ(f1.label, "pp-gather-activations");
  EXPECT_EQ(b0.label, "pp-gather-gradients");
  for (const Item& g : {f1, b0}) {
    EXPECT_EQ(g.kind, Item::Kind::COLLECTIVE);
    EXPECT_EQ(g.collective.dim, Dim::TENSOR);
    EXPECT_EQ(g.collective.op, hardware::Collective::ALL_GATHER);
    EXPECT_DOUBLE_EQ(g.collective.bytes, bytes);
    EXPECT_EQ(g.stream, COMPUTE_STREAM);
  }
  EXPECT_NE(first(prog.roles[0].chunks[0].forward).label, "pp-gather-activations");
  EXPECT_NE(first(prog.roles[1].chunks[0].backward).label, "pp-gather-gradients");
  // What is sent is the 1/t slice.
  EXPECT_DOUBLE_EQ(prog.roles[0].transfers[0].collective.bytes, bytes / 2);
  spec.layout.sequence_parallel = true;
  const Program sp = build_program(spec);
  for (const Role& role : sp.roles)
    for (const Item& it : role.chunks[0].forward) EXPECT_NE(it.label, "pp-gather-activations");
  for (const Fidelity fid : {Fidelity::FAST, Fidelity::FULL}) {
    const Lowered low = lower(prog, testing::a100_cluster(4), testing::a100_cost(), fid);
    EXPECT_NO_THROW((void)sim::simulate(low.plan, low.network)) << to_string(fid);
  }
}

}  // namespace
}  // namespace trainsim::strategies
