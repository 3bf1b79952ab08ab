#include "strategies/detail/schedule_builder.hpp"

namespace trainsim::strategies::detail {

ScheduleBuilder::ScheduleBuilder(const Program& program, Role& role)
    : role_(role),
      stages_(static_cast<std::int32_t>(program.roles.size())),
      chunks_(static_cast<std::int32_t>(role.chunks.size())),
      last_micro_batch_(static_cast<std::int32_t>(program.micro_batches - 1)) {
  const TrainingSpec& spec = program.spec;
  // Between stages Megatron sends the layer output, 2·b·s·h bytes; with tensor parallelism
  // each rank sends only its 1/t slice (sequence parallelism keeps it sharded; without it
  // the scatter/gather optimization of Narayanan et al. 2021 does the same).
  boundary_bytes_ = 2.0 * static_cast<double>(spec.micro_batch * spec.sequence * spec.model.hidden) /
                    static_cast<double>(program.applied.tensor);
}

std::uint32_t ScheduleBuilder::add(Step step) {
  role_.steps.push_back(std::move(step));
  return static_cast<std::uint32_t>(role_.steps.size() - 1);
}

// Virtual stage c·p + i runs as chunk c of stage i, so activations flow stage i → i+1
// within a chunk and from the last stage's chunk c to the first stage's chunk c+1.
ScheduleBuilder::Peer ScheduleBuilder::upstream(Direction dir, std::int32_t chunk) const {
  const std::int32_t s = role_.stage;
  if (dir == Direction::FORWARD) {
    if (s > 0) return {s - 1, chunk};
    if (chunk > 0) return {stages_ - 1, chunk - 1};
  } else {
    if (s < stages_ - 1) return {s + 1, chunk};
    if (chunk < chunks_ - 1) return {0, chunk + 1};
  }
  return {};
}

void ScheduleBuilder::run(Direction dir, std::int32_t mb, std::int32_t chunk) {
  const bool fwd = dir == Direction::FORWARD;
  const Peer from = upstream(dir, chunk);
  // Downstream is upstream of the other direction.
  const Peer to = upstream(fwd ? Direction::BACKWARD : Direction::FORWARD, chunk);
  std::int64_t prev = -1;
  // Every step of this run shares its direction, micro-batch and chunk.
  auto step = [&](Step::Kind kind) {
    Step s;
    s.kind = kind;
    s.direction = dir;
    s.micro_batch = mb;
    s.chunk = chunk;
    return s;
  };
  if (from.stage >= 0) {
    Step recv = step(Step::Kind::RECV);
    recv.peer_stage = from.stage;
    recv.peer_chunk = from.chunk;
    prev = add(std::move(recv));
  }
  const Chunk& c = role_.chunks[static_cast<std::size_t>(chunk)];
  for (const Item& it : fwd ? c.forward : c.backward) {
    Step s = step(Step::Kind::ITEM);
    s.item = it;
    if (prev >= 0 && it.after_previous) s.deps.push_back(static_cast<std::uint32_t>(prev));
    if (fwd && mb == 0 && it.waits_for_prologue >= 0)
      s.deps.push_back(prologue_steps_.at(static_cast<std::size_t>(it.waits_for_prologue)));
    prev = add(std::move(s));
    if (!fwd && mb == last_micro_batch_ && it.has_bucket) {
      Step b = step(Step::Kind::ITEM);
      b.item.kind = Item::Kind::COLLECTIVE;
      b.item.collective = it.bucket;
      b.item.category = Category::DP_COMM;
      b.item.stream = Stream::DP_COMM;
      b.item.layer = it.layer;
      b.item.label = "dp-grad-bucket";
      b.deps.push_back(static_cast<std::uint32_t>(prev));
      add(std::move(b));  // the next item does not wait for it
    }
  }
  if (to.stage >= 0) {
    Step send = step(Step::Kind::SEND);
    send.peer_stage = to.stage;
    send.peer_chunk = to.chunk;
    send.item.kind = Item::Kind::COLLECTIVE;
    send.item.collective = {Dim::PIPELINE, hardware::Collective::SEND_RECV, boundary_bytes_};
    send.item.category = Category::PP_COMM;
    send.item.stream = Stream::PP_COMM;
    send.item.label = fwd ? "pp-send-activations" : "pp-send-gradients";
    if (prev >= 0) send.deps.push_back(static_cast<std::uint32_t>(prev));
    add(std::move(send));
  }
}

void ScheduleBuilder::prologue() {
  for (const Item& it : role_.prologue) {
    Step s;
    s.kind = Step::Kind::ITEM;
    s.item = it;
    prologue_steps_.push_back(add(std::move(s)));
  }
}

void ScheduleBuilder::forward(std::int32_t mb, std::int32_t chunk) { run(Direction::FORWARD, mb, chunk); }
void ScheduleBuilder::backward(std::int32_t mb, std::int32_t chunk) { run(Direction::BACKWARD, mb, chunk); }

void ScheduleBuilder::tail() {
  // The first tail item waits for the last step of every stream: the last backward, and
  // every transfer and gradient bucket still in flight; each later one for the tail item
  // before it.
  std::int64_t last[STREAMS_PER_DEVICE];
  for (auto& l : last) l = -1;
  for (std::size_t i = 0; i < role_.steps.size(); ++i)
    if (role_.steps[i].kind != Step::Kind::RECV)
      last[static_cast<std::size_t>(role_.steps[i].item.stream)] = static_cast<std::int64_t>(i);
  std::int64_t prev = -1;
  for (const Item& it : role_.tail) {
    Step s;
    s.kind = Step::Kind::ITEM;
    s.item = it;
    s.direction = Direction::BACKWARD;
    s.micro_batch = -1;
    if (prev >= 0) {
      s.deps.push_back(static_cast<std::uint32_t>(prev));
    } else {
      for (auto l : last)
        if (l >= 0) s.deps.push_back(static_cast<std::uint32_t>(l));
    }
    prev = add(std::move(s));
  }
}

}  // namespace trainsim::strategies::detail
