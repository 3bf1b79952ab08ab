#include "strategies/detail/schedule_builder.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>
#include <vector>

#include "strategies/detail/flat_map.hpp"

namespace trainsim::strategies::detail {

namespace {

constexpr std::uint32_t NO_STEP = 0xffffffffu;
// ScheduleBuilder::find_cuts's marks on a template's items.
constexpr std::uint8_t CUT_BEFORE = 1, CUT_AFTER = 2;

// Where to find the items a Dep::ITEM names: by label, layer, micro-batch (−1 for the
// per-iteration lists) and template direction, the first and last step carrying one.
struct ItemKey {
  std::uint32_t label;
  std::int32_t layer;
  std::int32_t micro_batch;
  std::uint8_t direction;
  bool operator==(const ItemKey&) const = default;
};
struct ItemKeyHash {
  std::size_t operator()(const ItemKey& k) const {
    std::uint64_t h = k.label;
    h = h * 0x9E3779B97F4A7C15ull + static_cast<std::uint32_t>(k.layer);
    h = h * 0x9E3779B97F4A7C15ull + static_cast<std::uint32_t>(k.micro_batch);
    h = h * 0x9E3779B97F4A7C15ull + k.direction;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};
struct Span {
  std::uint32_t first = NO_STEP, last = NO_STEP;
};

// The labels some dependency names, numbered (an item's number is its label's, −1: not
// named): what a Resolver reads of a role's lists (the same for roles whose lists are alike).
struct ResolverLabels {
  std::vector<std::int32_t> labels;  // by Label::id: its number in scan order, or −1
  std::int32_t named = 0;            // how many labels are numbered

  std::int32_t index(const Label& l) const {
    const std::uint32_t id = l.id();
    return id < labels.size() ? labels[id] : -1;
  }
};

// Numbers a label that a dependency names (scan order), once.
void name_label(ResolverLabels& out, const Label& label) {
  const std::uint32_t id = label.id();
  if (out.labels.size() <= id) out.labels.resize(id + 1, -1);
  if (out.labels[id] < 0) out.labels[id] = out.named++;
}

class Resolver {
 public:
  Resolver(const Role& role, const ResolverLabels& labels, std::int32_t micro_batches)
      : role_(role), l_(labels), micro_batches_(micro_batches) {}

  void index(const std::vector<Step>& steps) {
    if (l_.named == 0) return;
    spans_.clear();
    for (std::uint32_t s = 0; s < steps.size(); ++s) {
      const Step& st = steps[s];
      if (st.kind != Step::Kind::ITEM || st.whole_run) continue;  // nothing names a whole run's items
      // A step of several items starts with every item that is waited for to start and ends
      // with every item that is waited for to end (ScheduleBuilder::find_cuts), so only its
      // first and last items can be what a dependency names.
      note(st, 0, s);
      if (st.count > 1) note(st, st.count - 1, s);
    }
  }

  // The indexed steps moved (new_of_old[old step] is its new number) and the once-per-
  // iteration steps placed among and after them are indexed too: as index(steps) would, but
  // without visiting every item of the runs again.
  void renumber(const std::vector<std::uint32_t>& new_of_old, const std::vector<Step>& steps) {
    if (l_.named == 0) return;
    spans_.for_each([&](const ItemKey&, Span& span) {
      span.first = new_of_old[span.first];
      span.last = new_of_old[span.last];
    });
    for (std::uint32_t s = 0; s < steps.size(); ++s)
      if (steps[s].list == ItemList::FLOATING || steps[s].list == ItemList::TAIL) note(steps[s], 0, s);
  }

  // Appends the steps an ITEM dependency of `step` (at position `self`) names.
  void item_targets(const Step& step, const Item& it, const Dep& d, std::vector<StepDep>& out) const {
    const std::int32_t layer = it.layer + d.layer_offset;
    const std::int32_t label = l_.index(d.label);
    if (label < 0) return;
    auto add = [&](std::int32_t mb, Direction dir) {
      const Span* span = spans_.find({static_cast<std::uint32_t>(label), layer, mb, static_cast<std::uint8_t>(dir)});
      if (span == nullptr) return;
      out.push_back({d.on == Dep::On::START ? span->first : span->last, d.on});
    };
    switch (d.micro_batch) {
      case Dep::MicroBatch::SAME:
        if (step.micro_batch >= 0) add(step.micro_batch + d.micro_batch_offset, d.direction);
        break;
      case Dep::MicroBatch::EVERY:
        for (std::int32_t mb = 0; mb < micro_batches_; ++mb) add(mb, d.direction);
        break;
      case Dep::MicroBatch::ITERATION:
        add(-1, Direction::FORWARD);
        break;
    }
  }


 private:
  // Records that step s runs its j-th item, when some dependency names that item's label.
  // (A transfer is never named.)
  void note(const Step& st, std::uint32_t j, std::uint32_t s) {
    if (st.list == ItemList::TRANSFER) return;
    const Item& it = role_.list(st.list, st.chunk)[st.index + j];
    const std::int32_t label = l_.index(it.label);
    if (label < 0) return;
    Span& span = spans_[{static_cast<std::uint32_t>(label), it.layer, st.micro_batch,
                         static_cast<std::uint8_t>(st.micro_batch < 0 ? Direction::FORWARD : st.direction)}];
    span.first = std::min(span.first, s);
    span.last = span.last == NO_STEP ? s : std::max(span.last, s);
  }

  const Role& role_;
  const ResolverLabels& l_;
  std::int32_t micro_batches_;
  // Probed linearly (FlatMap): a node per key was about 2 % of a search evaluation's time.
  FlatMap<ItemKey, Span, ItemKeyHash> spans_;
};

// A stream runs its steps in order, so of several dependencies on steps of one stream only
// the one that happens last matters: the latest step, its end over its start.
// (`stream_of_step`: each step's stream, −1 for a receive.)
void keep_latest_per_stream(const std::vector<std::int16_t>& stream_of_step, std::vector<StepDep>& deps) {
  if (deps.size() < 2) return;
  auto rank = [](const StepDep& d) { return 2 * std::uint64_t{d.step} + (d.on == Dep::On::END ? 1 : 0); };
  auto stream_of = [&](const StepDep& d) { return int{stream_of_step[d.step]}; };
  if (deps.size() == 2) {  // the common case, without the sort below
    StepDep& a = deps[0];
    StepDep& b = deps[1];
    if (rank(a) > rank(b)) std::swap(a, b);
    const int sa = stream_of(a), sb = stream_of(b);
    if ((sa >= 0 && sa == sb) || (sa < 0 && sb < 0 && a == b)) deps.erase(deps.begin());  // the later one stands
    return;
  }
  // (stream, dependency), the stream looked up once per dependency: this runs for every step.
  thread_local std::vector<std::pair<int, StepDep>> keyed;
  keyed.clear();
  for (const StepDep& d : deps) keyed.emplace_back(stream_of(d), d);
  // Most steps have a handful of waits: sorted by insertion, not std::sort's calls. Only
  // equal entries tie, so the order is std::sort's either way.
  auto insertion_sort = [](auto& v, auto before) {
    if (v.size() > 32) {
      std::sort(v.begin(), v.end(), before);
      return;
    }
    for (std::size_t i = 1; i < v.size(); ++i)
      for (std::size_t j = i; j > 0 && before(v[j], v[j - 1]); --j) std::swap(v[j], v[j - 1]);
  };
  insertion_sort(keyed, [&](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return rank(a.second) > rank(b.second);
  });
  deps.clear();
  for (std::size_t i = 0; i < keyed.size(); ++i) {
    const int s = keyed[i].first;
    if (s >= 0 && i > 0 && keyed[i - 1].first == s) continue;
    if (s < 0 && i > 0 && keyed[i - 1].second == keyed[i].second) continue;
    deps.push_back(keyed[i].second);
  }
  insertion_sort(deps, [&](const StepDep& a, const StepDep& b) { return rank(a) < rank(b); });
}

}  // namespace

namespace {
enum : std::uint8_t { ALWAYS = 1, FIRST = 2, LAST = 4 };  // which runs of a template are open

// Every dependency of a role's items that names an item (Dep::Target::ITEM): its templates'
// items, then its per-iteration lists', in that order.
template <class Visit>
void for_each_item_dep(const Role& role, Visit&& visit) {
  auto scan = [&](const std::vector<Item>& items) {
    for (const Item& it : items)
      for (const Dep& d : it.deps)
        if (d.target == Dep::Target::ITEM) visit(it, d);
  };
  for (const Chunk& c : role.chunks) {
    scan(c.forward);
    scan(c.backward);
  }
  for (const auto* l : {&role.prologue, &role.floating, &role.tail, &role.transfers}) scan(*l);
}
enum : std::uint8_t { END = 1, START = 2 };  // how a dependency names an item
}  // namespace

struct ScheduleBuilder::Analysis {
  std::vector<std::uint8_t> open;  // per template (chunk × direction): ALWAYS, FIRST, LAST
  std::vector<std::vector<std::uint8_t>> cuts;     // per template: find_cuts' marks, once a run is cut
  std::vector<std::vector<std::uint8_t>> streams;  // per template: every stream its items use
  ResolverLabels labels;
  // How dependencies name the templates' items (find_cuts), found in analysis_of's one pass
  // over every dependency: per named label (label_slot, by Label::id; −1 if none) a table by
  // direction and layer, [direction · layer_slots + layer + 1] (−1 … the top layer), of END
  // and START. A named label ("bwd") is on most items of a template.
  std::int32_t stage = -1;  // of the role the table was found for (the layers are absolute)
  std::int32_t top_layer = 0;
  std::vector<std::int32_t> label_slot;
  std::vector<std::vector<std::uint8_t>> how;
  // For `role`'s items: the top layer, and the table emptied.
  void start_named(const Role& role) {
    stage = role.stage;
    top_layer = 0;
    for (const Chunk& c : role.chunks)
      for (const auto* items : {&c.forward, &c.backward})
        for (const Item& it : *items) top_layer = std::max(top_layer, it.layer);
    label_slot.clear();
    how.clear();
  }
  // An ITEM dependency of `it` (not once per iteration) into the table.
  void note_named(const Item& it, const Dep& d) {
    const std::int32_t layer = it.layer + d.layer_offset;
    if (layer < -1 || layer > top_layer) return;  // no such item
    const auto layer_slots = static_cast<std::size_t>(top_layer) + 2;
    const std::uint32_t id = d.label.id();
    if (label_slot.size() <= id) label_slot.resize(id + 1, -1);
    if (label_slot[id] < 0) {
      label_slot[id] = static_cast<std::int32_t>(how.size());
      how.emplace_back(2 * layer_slots, 0);
    }
    const std::size_t at = static_cast<std::size_t>(d.direction) * layer_slots + static_cast<std::size_t>(layer + 1);
    how[static_cast<std::size_t>(label_slot[id])][at] |= d.on == Dep::On::END ? END : START;
  }
  // Per template cut into pieces: the first item of each piece, then the template's size
  // (emit_body; found once for the stages that share this analysis).
  std::vector<std::vector<std::uint32_t>> piece_starts;
};

ScheduleBuilder::ScheduleBuilder(Program& program, Role& role)
    : role_(role),
      stages_(static_cast<std::int32_t>(program.roles.size())),
      chunks_(static_cast<std::int32_t>(role.chunks.size())),
      micro_batches_(static_cast<std::int32_t>(program.micro_batches)) {
  const TrainingSpec& spec = program.spec;
  // A stream per direction for sends and one for receives: each talks to one peer, in the
  // order both ends run their work, so one transfer waiting for its peer holds up none
  // that another peer is ready for (NCCL runs a batch's sends and receives at once).
  if (stages_ > 1)
    for (const Direction dir : {Direction::FORWARD, Direction::BACKWARD}) {
      static const std::string SEND[2] = {"pp-send-fwd", "pp-send-bwd"}, RECV[2] = {"pp-recv-fwd", "pp-recv-bwd"};
      send_stream_[static_cast<int>(dir)] = program.stream(SEND[static_cast<int>(dir)]);
      recv_stream_[static_cast<int>(dir)] = program.stream(RECV[static_cast<int>(dir)]);
    }
  // Between stages Megatron sends the layer output, 2·b·s·h bytes; with tensor parallelism
  // each rank sends only its 1/t slice (sequence parallelism keeps it sharded; without it
  // the scatter/gather optimization of Narayanan et al. 2021 does the same).
  const double boundary_bytes = 2.0 * static_cast<double>(spec.micro_batch * spec.sequence * spec.model.hidden) /
                                static_cast<double>(program.applied.tensor);
  role_.transfers.clear();
  role_.transfers.reserve(4);  // two sends and two receives (grown one by one, 0.6 % of a search evaluation)
  for (const Direction dir : {Direction::FORWARD, Direction::BACKWARD}) {
    Item send;
    send.kind = Item::Kind::COLLECTIVE;
    send.collective = {Dim::PIPELINE, hardware::Collective::SEND_RECV, boundary_bytes};
    send.category = Category::PP_COMM;
    send.stream = send_stream_[static_cast<int>(dir)];
    static const Label SEND_ACTIVATIONS("pp-send-activations"), SEND_GRADIENTS("pp-send-gradients");  // named once
    send.label = dir == Direction::FORWARD ? SEND_ACTIVATIONS : SEND_GRADIENTS;
    send.deps = {Dep::previous()};  // the run's last item
    role_.transfers.push_back(std::move(send));
  }
  // The receives, on a stream of their own: a receive is posted when the stage's compute
  // reaches it and meets the peer's send there (the pair is one rendezvous; see tail()).
  for (const Direction dir : {Direction::FORWARD, Direction::BACKWARD}) {
    Item recv = role_.transfers[static_cast<std::size_t>(dir)];
    recv.stream = recv_stream_[static_cast<int>(dir)];
    static const Label RECV_ACTIVATIONS("pp-recv-activations"), RECV_GRADIENTS("pp-recv-gradients");
    recv.label = dir == Direction::FORWARD ? RECV_ACTIVATIONS : RECV_GRADIENTS;
    recv.deps.clear();
    role_.transfers.push_back(std::move(recv));
  }
  // Without sequence parallelism each tensor rank sends 1/t of the boundary tensor, and
  // the receiver all-gathers it over the tensor group before it computes (Narayanan et al.
  // 2021 §4.1, the scatter/gather optimization; Megatron-LM's p2p_communication
  // _communicate calls gather_split_1d_tensor on what it received, on the compute stream).
  if (stages_ > 1 && program.applied.tensor > 1 && !program.applied.sequence_parallel) {
    for (std::int32_t c = 0; c < chunks_; ++c)
      for (const Direction dir : {Direction::FORWARD, Direction::BACKWARD}) {
        if (upstream(dir, c).stage < 0) continue;
        Chunk& chunk = role_.chunks[static_cast<std::size_t>(c)];
        std::vector<Item>& items = dir == Direction::FORWARD ? chunk.forward : chunk.backward;
        static const Label GATHER_ACTIVATIONS("pp-gather-activations"), GATHER_GRADIENTS("pp-gather-gradients");
        const Label& label = dir == Direction::FORWARD ? GATHER_ACTIVATIONS : GATHER_GRADIENTS;
        if (!items.empty() && items.front().label == label) continue;  // scheduled before
        Item gather;
        gather.kind = Item::Kind::COLLECTIVE;
        gather.collective = {Dim::TENSOR, hardware::Collective::ALL_GATHER, boundary_bytes * static_cast<double>(program.applied.tensor)};
        gather.category = Category::PP_COMM;
        gather.stream = COMPUTE_STREAM;
        if (!chunk.layers.empty()) gather.layer = dir == Direction::FORWARD ? chunk.layers.front() : chunk.layers.back();
        gather.label = label;
        gather.deps = {Dep::previous()};  // the run's receive
        items.insert(items.begin(), std::move(gather));
      }
  }
  role_.steps.clear();
  role_.step_deps.clear();
  // Most runs are one step with a receive and a send around it; a few go in pieces (at most an
  // item each).
  std::size_t template_items = 0;
  for (const Chunk& c : role.chunks) template_items += c.forward.size() + c.backward.size();
  const std::size_t estimate = static_cast<std::size_t>(micro_batches_) * role.chunks.size() * 2 * 3 +
                               2 * template_items + role.prologue.size() + role.floating.size() + role.tail.size();
  role_.steps.reserve(estimate);
  list_begin_.reserve(estimate);
  run_recv_.reserve(estimate);
  item_step_.reserve(2 * template_items);
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

std::uint32_t ScheduleBuilder::emit_recv(const RunRef& ref) {
  const Peer from = upstream(ref.dir, ref.chunk);
  if (from.stage < 0) return NO_STEP;
  Step r;
  r.kind = Step::Kind::RECV;
  r.list = ItemList::TRANSFER;
  r.index = 2 + static_cast<std::uint32_t>(ref.dir);
  r.direction = ref.dir;
  r.micro_batch = ref.micro_batch;
  r.chunk = ref.chunk;
  r.peer_stage = from.stage;
  r.peer_chunk = from.chunk;
  role_.steps.push_back(r);
  list_begin_.push_back(NO_STEP);
  run_recv_.push_back(NO_STEP);
  return static_cast<std::uint32_t>(role_.steps.size() - 1);
}

std::uint32_t ScheduleBuilder::emit_body(const RunRef& ref, bool whole, std::uint32_t recv) {
  const bool fwd = ref.dir == Direction::FORWARD;
  Step step;
  step.direction = ref.dir;
  step.micro_batch = ref.micro_batch;
  step.chunk = ref.chunk;
  step.list = fwd ? ItemList::FORWARD : ItemList::BACKWARD;
  const auto first = static_cast<std::uint32_t>(role_.steps.size());
  const Chunk& c = role_.chunks[static_cast<std::size_t>(ref.chunk)];
  const auto n = static_cast<std::uint32_t>((fwd ? c.forward : c.backward).size());
  if (n == 0) return NO_STEP;
  if (whole) {
    Step s = step;
    s.count = n;
    s.whole_run = true;
    role_.steps.push_back(s);
    list_begin_.push_back(first);
    run_recv_.push_back(recv);
  } else {
    // In pieces: a piece starts where something outside the run waits for an item to start
    // or an item waits for something outside the piece, and ends where something outside
    // waits for an item to end; inside a piece items wait only for each other, as the
    // template says (Step::count).
    const std::size_t t = 2 * static_cast<std::size_t>(ref.chunk) + static_cast<std::size_t>(ref.dir);
    if (analysis_->piece_starts.size() <= t) analysis_->piece_starts.resize(t + 1);
    std::vector<std::uint32_t>& starts = analysis_->piece_starts[t];
    if (starts.empty()) {
      const std::vector<Item>& items = fwd ? c.forward : c.backward;
      const std::vector<std::uint8_t>& cuts = analysis_->cuts[t];
      std::uint32_t begin = 0;
      starts.push_back(0);
      for (std::uint32_t i = 1; i < n; ++i) {
        bool cut = (cuts[i] & CUT_BEFORE) || (cuts[i - 1] & CUT_AFTER);
        for (const Dep& d : items[i].deps)
          cut = cut || (i > begin && d.target == Dep::Target::PREVIOUS && static_cast<std::uint32_t>(d.offset) > i - begin);
        if (cut) starts.push_back(begin = i);
      }
      starts.push_back(n);
    }
    const auto base = static_cast<std::uint32_t>(item_step_.size());
    for (std::size_t k = 0; k + 1 < starts.size(); ++k) {
      Step s = step;
      s.index = starts[k];
      s.count = starts[k + 1] - starts[k];
      item_step_.insert(item_step_.end(), s.count, static_cast<std::uint32_t>(role_.steps.size()));
      role_.steps.push_back(s);
      list_begin_.push_back(base);
      run_recv_.push_back(recv);
    }
  }
  return static_cast<std::uint32_t>(role_.steps.size() - 1);
}

void ScheduleBuilder::emit_send(const RunRef& ref, std::uint32_t last, std::uint32_t recv) {
  const Peer to = upstream(ref.dir == Direction::FORWARD ? Direction::BACKWARD : Direction::FORWARD, ref.chunk);
  if (to.stage < 0) return;
  Step s;
  s.kind = Step::Kind::SEND;
  s.list = ItemList::TRANSFER;
  s.index = static_cast<std::uint32_t>(ref.dir);
  s.direction = ref.dir;
  s.micro_batch = ref.micro_batch;
  s.chunk = ref.chunk;
  s.peer_stage = to.stage;
  s.peer_chunk = to.chunk;
  // A send's PREVIOUS is the run's last step (kept in list_begin_).
  list_begin_.push_back(last);
  role_.steps.push_back(s);
  run_recv_.push_back(recv);
}

// A run is one step when nothing needs its items one by one: its template's items wait only
// for each other (and the first for the run's receive), and no dependency names them. Two
// kinds of dependency leave all but one run of a template whole, because a stream runs in
// order: a wait for a once-per-iteration item (a parameter-gather bucket) matters only in
// the first run of the template, and a wait for the items of every micro-batch (a gradient
// bucket after the last accumulation) only on the last run.
// Where a run that is not one step must be cut, per template: before an item that waits for
// something outside the run (a stream's first wait for it: a later one on the same stream is
// already met) or that something waits for to start, and after an item something waits for to
// end (the last of its label and layer, as Resolver names it). The compute stream's first and
// last items also bound pieces: a pipeline receive waits for the stage's last compute, and the
// first compute after a send waits for the send.
void ScheduleBuilder::find_cuts() {
  if (analysis_->stage != role_.stage) {
    // The analysis is another stage's (the same lists but for their layers): the table again
    // for this one's.
    analysis_->start_named(role_);
    for_each_item_dep(role_, [&](const Item& it, const Dep& d) {
      if (d.micro_batch != Dep::MicroBatch::ITERATION) analysis_->note_named(it, d);
    });
  }
  const std::int32_t top_layer = analysis_->top_layer;
  const auto layer_slots = static_cast<std::size_t>(top_layer) + 2;
  const std::vector<std::int32_t>& label_slot = analysis_->label_slot;
  const std::vector<std::vector<std::uint8_t>>& how = analysis_->how;

  // Waits of a template's items for items outside it, met once per stream.
  struct Waited {
    std::uint32_t label;
    std::int32_t layer, micro_batch_offset;
    std::uint8_t micro_batch, direction, stream, how;
  };
  std::vector<Waited> waited;
  std::vector<std::uint32_t> first_named, last_named;  // per slot × layer of this template
  constexpr std::uint32_t NONE = 0xffffffffu;
  analysis_->cuts.clear();
  for (const Chunk& c : role_.chunks)
    for (const Direction dir : {Direction::FORWARD, Direction::BACKWARD}) {
      const std::vector<Item>& items = dir == Direction::FORWARD ? c.forward : c.backward;
      const auto n = static_cast<std::uint32_t>(items.size());
      std::vector<std::uint8_t> cuts(n, 0);
      waited.clear();
      first_named.assign(how.size() * layer_slots, NONE);
      last_named.assign(how.size() * layer_slots, NONE);
      std::uint32_t first_compute = n, last_compute = n;
      for (std::uint32_t i = 0; i < n; ++i) {
        const Item& it = items[i];
        if (it.stream == COMPUTE_STREAM) {
          if (first_compute == n) first_compute = i;
          last_compute = i;
        }
        if (const std::uint32_t id = it.label.id(); id < label_slot.size() && label_slot[id] >= 0) {
          const std::size_t at = static_cast<std::size_t>(label_slot[id]) * layer_slots + static_cast<std::size_t>(it.layer + 1);
          if (first_named[at] == NONE) first_named[at] = i;
          last_named[at] = i;
        }
        for (const Dep& d : it.deps) {
          if (d.target == Dep::Target::EVERY_STREAM || (d.target == Dep::Target::PREVIOUS && static_cast<std::uint32_t>(d.offset) > i))
            cuts[i] |= CUT_BEFORE;
          if (d.target != Dep::Target::ITEM) continue;
          const Waited w{d.label.id(), it.layer + d.layer_offset, d.micro_batch_offset, static_cast<std::uint8_t>(d.micro_batch),
                         static_cast<std::uint8_t>(d.direction), it.stream, 0};
          auto same = [&](const Waited& x) {
            return x.label == w.label && x.layer == w.layer && x.micro_batch_offset == w.micro_batch_offset &&
                   x.micro_batch == w.micro_batch && x.direction == w.direction && x.stream == w.stream;
          };
          auto pos = std::find_if(waited.begin(), waited.end(), same);  // a handful per template
          if (pos == waited.end()) pos = waited.insert(waited.end(), w);
          const std::uint8_t meets = d.on == Dep::On::END ? END : (END | START);
          if (pos->how & meets) continue;
          pos->how |= d.on == Dep::On::END ? END : START;
          cuts[i] |= CUT_BEFORE;
        }
      }
      for (std::size_t slot = 0; slot < how.size(); ++slot)
        for (std::size_t l = 0; l < layer_slots; ++l) {
          const std::size_t at = slot * layer_slots + l;
          if (first_named[at] == NONE) continue;
          const std::uint8_t named = how[slot][static_cast<std::size_t>(dir) * layer_slots + l];
          if (named & START) cuts[first_named[at]] |= CUT_BEFORE;
          if (named & END) cuts[last_named[at]] |= CUT_AFTER;
        }
      if (first_compute < n) cuts[first_compute] |= CUT_BEFORE;
      if (last_compute < n) cuts[last_compute] |= CUT_AFTER;
      analysis_->cuts.push_back(std::move(cuts));
    }
}

std::shared_ptr<ScheduleBuilder::Analysis> ScheduleBuilder::analysis_of(const Role& role) {
  thread_local std::uint64_t restoration = 0;
  thread_local std::shared_ptr<Analysis> shared;
  if (role.restored_from != 0 && role.restored_from == restoration) return shared;
  auto a = std::make_shared<Analysis>();
  a->start_named(role);
  std::vector<std::uint8_t> referenced;  // by Label::id: how
  // One pass over every dependency: how each label is referenced, the Resolver's numbering,
  // and which items dependencies name (find_cuts).
  for_each_item_dep(role, [&](const Item& it, const Dep& d) {
    name_label(a->labels, d.label);
    if (d.micro_batch == Dep::MicroBatch::ITERATION) return;
    const std::uint32_t id = d.label.id();
    if (referenced.size() <= id) referenced.resize(id + 1, 0);
    referenced[id] |= d.micro_batch == Dep::MicroBatch::EVERY ? LAST : ALWAYS;
    a->note_named(it, d);
  });
  // How a template is open, and the streams its items use (one pass over its items).
  std::array<bool, 256> used{};  // by stream id (a std::uint8_t)
  auto openness = [&](const std::vector<Item>& items) {
    std::uint8_t open = 0;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const Item& it = items[i];
      used[it.stream] = true;
      if (const std::uint32_t id = it.label.id(); id < referenced.size()) open |= referenced[id];
      for (const Dep& d : it.deps) {
        if (d.target == Dep::Target::PREVIOUS) {
          if (static_cast<std::size_t>(d.offset) > i && i > 0) open |= ALWAYS;  // a later item waits for the receive
        } else if (d.target == Dep::Target::ITEM && d.micro_batch == Dep::MicroBatch::ITERATION) {
          open |= FIRST;
        } else {
          open |= ALWAYS;
        }
      }
    }
    return open;
  };
  for (const Chunk& c : role.chunks)
    for (const auto* items : {&c.forward, &c.backward}) {
      used.fill(false);
      a->open.push_back(openness(*items));
      std::vector<std::uint8_t> streams;
      for (std::size_t id = 0; id < used.size(); ++id)
        if (used[id]) streams.push_back(static_cast<std::uint8_t>(id));
      a->streams.push_back(std::move(streams));
    }
  if (role.restored_from != 0) {
    restoration = role.restored_from;
    shared = a;
  }
  return a;
}

std::vector<bool> ScheduleBuilder::whole_runs() const {
  const std::vector<std::uint8_t>& open = analysis_->open;
  std::vector<std::int64_t> first(open.size(), -1), last(open.size(), -1);
  for (std::size_t r = 0; r < runs_.size(); ++r) {
    const std::size_t t = 2 * static_cast<std::size_t>(runs_[r].chunk) + static_cast<std::size_t>(runs_[r].dir);
    if (first[t] < 0) first[t] = static_cast<std::int64_t>(r);
    last[t] = static_cast<std::int64_t>(r);
  }
  std::vector<bool> whole(runs_.size());
  for (std::size_t r = 0; r < runs_.size(); ++r) {
    const std::size_t t = 2 * static_cast<std::size_t>(runs_[r].chunk) + static_cast<std::size_t>(runs_[r].dir);
    const auto ri = static_cast<std::int64_t>(r);
    whole[r] = !(open[t] & ALWAYS) && !((open[t] & FIRST) && first[t] == ri) && !((open[t] & LAST) && last[t] == ri);
  }
  return whole;
}

void ScheduleBuilder::prologue() {
  const auto first = static_cast<std::uint32_t>(role_.steps.size());
  for (std::uint32_t i = 0; i < role_.prologue.size(); ++i) {
    Step s;
    s.list = ItemList::PROLOGUE;
    s.index = i;
    role_.steps.push_back(s);
    list_begin_.push_back(first);
    run_recv_.push_back(NO_STEP);
  }
}

void ScheduleBuilder::forward(std::int32_t mb, std::int32_t chunk) { runs_.push_back({Direction::FORWARD, mb, chunk}); }
void ScheduleBuilder::backward(std::int32_t mb, std::int32_t chunk) { runs_.push_back({Direction::BACKWARD, mb, chunk}); }
void ScheduleBuilder::forward_backward(std::int32_t fwd_mb, std::int32_t fwd_chunk, std::int32_t bwd_mb,
                                       std::int32_t bwd_chunk) {
  runs_.push_back({Direction::FORWARD, fwd_mb, fwd_chunk, true});
  runs_.push_back({Direction::BACKWARD, bwd_mb, bwd_chunk});
}

namespace {

// The last stage scheduled on this thread that build_program restored from stage 1.
struct PreviousStage {
  std::uint64_t restored_from = 0;
  std::int32_t stage = -1;
  std::vector<ScheduleBuilder::RunRef> runs;
  std::vector<Step> steps;
  std::vector<StepDep> step_deps;
};
thread_local PreviousStage previous_stage;

}  // namespace

// Alike stages (Role::restored_from: the same lists but for their layers) that run the same runs in
// the same order — GPipe's middle stages, 1F1B's while the warm-up covers every
// micro-batch — resolve to the same steps and waits; only the peers of their transfers are
// one stage further on.
bool ScheduleBuilder::copy_previous_stage() {
  PreviousStage& p = previous_stage;
  if (role_.restored_from == 0 || p.restored_from != role_.restored_from || p.stage != role_.stage - 1 || p.runs.size() != runs_.size()) return false;
  for (std::size_t r = 0; r < runs_.size(); ++r)
    if (!(p.runs[r] == runs_[r])) return false;
  for (Step& st : p.steps)
    if (st.kind != Step::Kind::ITEM) ++st.peer_stage;
  p.stage = role_.stage;
  role_.steps = p.steps;
  role_.step_deps = p.step_deps;
  list_begin_.clear();
  run_recv_.clear();
  item_step_.clear();
  return true;
}

void ScheduleBuilder::tail() {
  if (copy_previous_stage()) return;
  std::vector<Step>& steps = role_.steps;
  analysis_ = analysis_of(role_);
  {
    const std::vector<bool> whole = whole_runs();
    if (std::find(whole.begin(), whole.end(), false) != whole.end() && analysis_->cuts.empty()) find_cuts();
    for (std::size_t r = 0; r < runs_.size(); ++r) {
      if (runs_[r].batched_with_next && r + 1 < runs_.size()) {
        // Megatron-LM's interleaved schedule: a forward and a backward, then one batch
        // of both sends and the next receives (send_forward_backward_recv_forward_backward).
        const RunRef& f = runs_[r];
        const RunRef& b = runs_[r + 1];
        const std::uint32_t recv_f = emit_recv(f), recv_b = emit_recv(b);
        const std::uint32_t last_f = emit_body(f, whole[r], recv_f);
        const std::uint32_t last_b = emit_body(b, whole[r + 1], recv_b);
        emit_send(f, last_f, recv_f);
        emit_send(b, last_b, recv_b);
        ++r;
        continue;
      }
      // A run's receive, the run, its send (Megatron-LM's non-interleaved schedules).
      const std::uint32_t recv = emit_recv(runs_[r]);
      emit_send(runs_[r], emit_body(runs_[r], whole[r], recv), recv);
    }
  }
  Resolver resolver(role_, analysis_->labels, micro_batches_);
  resolver.index(steps);

  // 1. Floating items go right after the last step they depend on (after the prologue
  //    when they depend on nothing placed), in list order.
  const auto prologue_end = static_cast<std::int64_t>(role_.prologue.size()) - 1;
  std::vector<std::int64_t> after(role_.floating.size(), prologue_end);
  std::vector<StepDep> found;
  for (std::size_t f = 0; f < role_.floating.size(); ++f) {
    const Item& it = role_.floating[f];
    Step probe;
    probe.list = ItemList::FLOATING;
    probe.index = static_cast<std::uint32_t>(f);
    for (const Dep& d : it.deps) {
      if (d.target == Dep::Target::PREVIOUS && f >= static_cast<std::size_t>(d.offset))
        after[f] = std::max(after[f], after[f - static_cast<std::size_t>(d.offset)]);
      if (d.target != Dep::Target::ITEM) continue;
      found.clear();
      resolver.item_targets(probe, it, d, found);
      for (const StepDep& t : found) after[f] = std::max(after[f], static_cast<std::int64_t>(t.step));
    }
  }
  std::vector<std::uint32_t> order_floating(role_.floating.size());
  for (std::uint32_t f = 0; f < order_floating.size(); ++f) order_floating[f] = f;
  std::stable_sort(order_floating.begin(), order_floating.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return after[a] < after[b]; });

  // The steps in their final order; `begin` stays in the old numbering (a run's items were
  // consecutive there), new_of_old maps it.
  std::vector<std::uint32_t> new_of_old;
  std::vector<std::uint32_t> floating_step(role_.floating.size(), NO_STEP);
  if (!role_.floating.empty()) {
    // In place, from the back: each step moves once, to its own position plus the floating
    // steps placed before it (new_of_old[s] ≥ s, so no step is overwritten before it moves).
    const auto n = static_cast<std::uint32_t>(steps.size());
    const auto f_count = static_cast<std::uint32_t>(order_floating.size());
    new_of_old.resize(n);
    std::uint32_t before = 0;
    for (std::uint32_t s = 0; s < n; ++s) {
      while (before < f_count && after[order_floating[before]] < static_cast<std::int64_t>(s)) ++before;
      new_of_old[s] = s + before;
    }
    steps.resize(n + f_count);
    list_begin_.resize(n + f_count);
    run_recv_.resize(n + f_count);
    for (std::uint32_t s = n; s-- > 0;) {
      const std::uint32_t to = new_of_old[s];
      const std::uint32_t recv = run_recv_[s];
      steps[to] = steps[s];
      list_begin_[to] = list_begin_[s];
      run_recv_[to] = recv == NO_STEP ? NO_STEP : new_of_old[recv];
    }
    for (std::uint32_t k = 0; k < f_count; ++k) {
      const std::uint32_t f = order_floating[k];
      const auto steps_before = static_cast<std::uint32_t>(std::clamp<std::int64_t>(after[f] + 1, 0, n));
      const std::uint32_t at = k + steps_before;
      Step st;
      st.list = ItemList::FLOATING;
      st.index = f;
      steps[at] = st;
      list_begin_[at] = NO_STEP;
      run_recv_[at] = NO_STEP;
      floating_step[f] = at;
    }
  }
  auto renumber = [&](std::uint32_t old) { return new_of_old.empty() ? old : new_of_old[old]; };

  // 2. The tail, after everything.
  const auto tail_first = static_cast<std::uint32_t>(steps.size());
  for (std::uint32_t i = 0; i < role_.tail.size(); ++i) {
    Step s;
    s.list = ItemList::TAIL;
    s.index = i;
    s.direction = Direction::BACKWARD;
    steps.push_back(s);
    list_begin_.push_back(NO_STEP);
    run_recv_.push_back(NO_STEP);
  }

  // 3. Every dependency to steps. A stream runs in order, so a dependency that an earlier
  //    step of the same stream already has (as strong: an end over a start) is dropped.
  if (!new_of_old.empty()) resolver.renumber(new_of_old, steps);
  std::vector<std::uint64_t> waited_end(steps.size(), 0), waited_start(steps.size(), 0);  // per target: streams
  std::vector<std::uint32_t> last_on_stream;
  std::vector<StepDep> deps;
  role_.step_deps.reserve(steps.size() + steps.size() / 4);
  auto mark_last = [&](std::uint8_t stream, std::uint32_t s) {
    if (last_on_stream.size() <= stream) last_on_stream.resize(stream + 1u, NO_STEP);
    last_on_stream[stream] = s;
  };
  // Pipeline transfers as Megatron-LM runs them (megatron/core/pipeline_parallel/
  // p2p_communication.py, _communicate): the sends and receives between two compute
  // steps are one batch_isend_irecv, and the stage waits on every request of it
  // (req.wait(), then torch.cuda.synchronize() with batch_p2p_sync) before it computes
  // again. A receive is posted when the stage's compute reaches it (with the sends after
  // the same compute step), and each send and its receive are one rendezvous (lower), so a
  // send ends only once the peer has posted the receive.
  auto on_compute = [&](const Step& st) {
    if (st.kind != Step::Kind::ITEM) return false;
    if (st.whole_run) return true;
    const auto items = role_.items(st);
    return std::any_of(items.begin(), items.end(), [](const Item& x) { return x.stream == COMPUTE_STREAM; });
  };
  std::uint32_t last_compute = NO_STEP;
  std::vector<std::uint32_t> pending_sends;  // since the last compute step
  // Each step's stream, looked up once: most steps' waits are sorted by it.
  std::vector<std::int16_t> stream_of_step(steps.size());
  for (std::size_t s = 0; s < steps.size(); ++s)
    stream_of_step[s] = steps[s].kind == Step::Kind::RECV ? std::int16_t{-1}
                                                          : std::int16_t{role_.item(steps[s]).stream};
  for (std::uint32_t s = 0; s < steps.size(); ++s) {
    Step& st = steps[s];
    st.deps_begin = st.deps_end = static_cast<std::uint32_t>(role_.step_deps.size());
    if (st.kind == Step::Kind::RECV) {
      if (last_compute != NO_STEP) role_.step_deps.push_back({last_compute, Dep::On::END});
      st.deps_end = static_cast<std::uint32_t>(role_.step_deps.size());
      mark_last(role_.item(st).stream, s);
      continue;
    }
    const Item& it = role_.item(st);
    deps.clear();
    for (const Dep& d : it.deps) {
      // A whole run waits only for its receive; its first item's other waits were the first run's.
      if (st.whole_run && d.target != Dep::Target::PREVIOUS) continue;
      switch (d.target) {
        case Dep::Target::PREVIOUS: {
          const auto k = static_cast<std::uint32_t>(d.offset);
          if (st.list == ItemList::FLOATING) {
            if (st.index >= k) deps.push_back({floating_step[st.index - k], d.on});
          } else if (st.list == ItemList::TAIL) {
            if (st.index >= k) deps.push_back({tail_first + st.index - k, d.on});
          } else if (st.kind == Step::Kind::SEND) {
            if (list_begin_[s] != NO_STEP) deps.push_back({renumber(list_begin_[s]), d.on});
            else if (run_recv_[s] != NO_STEP) deps.push_back({run_recv_[s], Dep::On::END});
          } else if (st.index >= k) {
            // The prologue runs an item per step; a run's pieces find the step in item_step_.
            const bool piece = st.list == ItemList::FORWARD || st.list == ItemList::BACKWARD;
            const std::uint32_t target = piece ? item_step_[list_begin_[s] + st.index - k] : list_begin_[s] + st.index - k;
            deps.push_back({renumber(target), d.on});
          } else if (run_recv_[s] != NO_STEP) {
            deps.push_back({run_recv_[s], Dep::On::END});  // before the template: what the run receives
          }
          break;
        }
        case Dep::Target::ITEM:
          resolver.item_targets(st, it, d, deps);
          break;
        case Dep::Target::EVERY_STREAM:
          for (const std::uint32_t l : last_on_stream)
            if (l != NO_STEP) deps.push_back({l, Dep::On::END});
          break;
      }
    }
    if (st.kind == Step::Kind::SEND) {
      // Issued after the stage's latest compute (the NCCL stream waits for the compute
      // stream), which in an interleaved batch is the backward after the sent forward.
      if (last_compute != NO_STEP) deps.push_back({last_compute, Dep::On::END});
      pending_sends.push_back(s);
    } else if (on_compute(st)) {
      for (const std::uint32_t send : pending_sends) deps.push_back({send, Dep::On::END});
      pending_sends.clear();
      last_compute = s;
    }
    std::erase_if(deps, [&](const StepDep& d) { return d.step == s; });
    keep_latest_per_stream(stream_of_step, deps);
    const std::uint64_t bit = std::uint64_t{1} << (it.stream & 63);
    for (const StepDep& d : deps) {
      if (d.on == Dep::On::END) {
        if (waited_end[d.step] & bit) continue;
        waited_end[d.step] |= bit;
      } else {
        if ((waited_end[d.step] | waited_start[d.step]) & bit) continue;
        waited_start[d.step] |= bit;
      }
      role_.step_deps.push_back(d);
    }
    st.deps_end = static_cast<std::uint32_t>(role_.step_deps.size());
    if (st.whole_run) {
      for (const std::uint8_t stream : analysis_->streams[2 * static_cast<std::size_t>(st.chunk) + static_cast<std::size_t>(st.direction)])
        mark_last(stream, s);
    } else {
      for (const Item& x : role_.items(st)) mark_last(x.stream, s);
    }
  }
  list_begin_.clear();
  run_recv_.clear();
  item_step_.clear();
  if (role_.restored_from != 0) previous_stage = {role_.restored_from, role_.stage, runs_, role_.steps, role_.step_deps};
}

}  // namespace trainsim::strategies::detail
