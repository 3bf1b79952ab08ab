#include "strategies/detail/schedule_builder.hpp"

namespace trainsim::strategies::detail {

ScheduleBuilder::ScheduleBuilder(const Program& program, Role& role)
    : role_(role), stages_(static_cast<std::int32_t>(program.roles.size())) {
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

void ScheduleBuilder::run(Direction dir, std::int32_t mb) {
  const bool fwd = dir == Direction::FORWARD;
  const std::int32_t from = fwd ? role_.stage - 1 : role_.stage + 1;
  const std::int32_t to = fwd ? role_.stage + 1 : role_.stage - 1;
  std::int64_t prev = -1;
  if (from >= 0 && from < stages_) {
    Step recv;
    recv.kind = Step::Kind::RECV;
    recv.direction = dir;
    recv.micro_batch = mb;
    recv.peer_stage = from;
    prev = add(std::move(recv));
  }
  for (const Item& it : fwd ? role_.forward : role_.backward) {
    Step s;
    s.kind = Step::Kind::ITEM;
    s.item = it;
    s.direction = dir;
    s.micro_batch = mb;
    if (prev >= 0) s.deps.push_back(static_cast<std::uint32_t>(prev));
    prev = add(std::move(s));
  }
  if (to >= 0 && to < stages_) {
    Step send;
    send.kind = Step::Kind::SEND;
    send.direction = dir;
    send.micro_batch = mb;
    send.peer_stage = to;
    send.item.kind = Item::Kind::COLLECTIVE;
    send.item.collective = {Dim::PIPELINE, hardware::Collective::SEND_RECV, boundary_bytes_};
    send.item.category = Category::PP_COMM;
    send.item.stream = Stream::COMM;
    send.item.label = fwd ? "pp-send-activations" : "pp-send-gradients";
    if (prev >= 0) send.deps.push_back(static_cast<std::uint32_t>(prev));
    add(std::move(send));
  }
}

void ScheduleBuilder::forward(std::int32_t mb) { run(Direction::FORWARD, mb); }
void ScheduleBuilder::backward(std::int32_t mb) { run(Direction::BACKWARD, mb); }

void ScheduleBuilder::tail() {
  // Each tail item waits for everything before it on the compute stream (the last
  // backward) and for the tail item before it.
  std::int64_t prev = -1;
  for (std::size_t i = role_.steps.size(); i-- > 0;)
    if (role_.steps[i].kind == Step::Kind::ITEM && role_.steps[i].item.stream == Stream::COMPUTE) {
      prev = static_cast<std::int64_t>(i);
      break;
    }
  for (const Item& it : role_.tail) {
    Step s;
    s.kind = Step::Kind::ITEM;
    s.item = it;
    s.direction = Direction::BACKWARD;
    s.micro_batch = -1;
    if (prev >= 0) s.deps.push_back(static_cast<std::uint32_t>(prev));
    prev = add(std::move(s));
  }
}

}  // namespace trainsim::strategies::detail
