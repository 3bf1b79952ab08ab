#include "sim/trace.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/detail/plan_check.hpp"

// Layout of the file (a fixed order, so the same inputs give the same bytes):
//  1. metadata: process and thread names and sort indices;
//  2. the "s" ends of the cross-device edge arrows;
//  3. per device: its tasks by stream, then by start time; then its memory counter samples;
//  4. the collective arrows ("s" and "f"), then the "f" ends of the edge arrows.
// Viewers sort by time, so the order only matters among events at the same time. Perfetto
// keeps file order among those and binds a flow end to the slice open on its thread when
// it reads it: an edge's "s" sits at its predecessor's end, where the stream's next task
// may begin, so it comes before every slice; an "f" sits at its successor's start, so it
// comes after every slice. chrome://tracing binds flows after reading the whole file and
// does not care.

namespace trainsim::sim {

namespace {

// Streams are numbered by a uint8_t, so at most 256 per device exist whatever
// streams_per_device says (as in the engine).
std::size_t stream_stride(const Plan& p) { return std::min<std::size_t>(p.streams_per_device, 256); }

// A JSON string literal, escaped once per name so that writing an event only copies bytes.
// Invalid UTF-8 in a name is replaced rather than failing a multi-gigabyte write.
std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string name_or(const std::vector<std::string>& names, std::size_t i, const char* fallback) {
  return quoted(i < names.size() ? names[i] : std::string(fallback) + " " + std::to_string(i));
}

// Appends to a buffer and hands it to the stream in large blocks: one ostream call per
// event would cost more than formatting the event.
class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) { buf_.reserve(FLUSH_AT + 4096); }

  void raw(std::string_view s) { buf_.append(s); }
  void ch(char c) { buf_.push_back(c); }

  template <class Int>
  void integer(Int v) {
    char tmp[24];
    const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, r.ptr);
  }

  // Picoseconds as an exact decimal number of microseconds: no floating point on the way,
  // so no rounding and no platform-dependent digits.
  void micros(std::int64_t ps) {
    std::uint64_t mag = static_cast<std::uint64_t>(ps);
    if (ps < 0) {
      ch('-');
      mag = 0 - mag;
    }
    integer(mag / 1'000'000);
    std::uint64_t frac = mag % 1'000'000;
    if (frac == 0) return;
    char digits[6];
    for (int i = 5; i >= 0; --i) {
      digits[i] = static_cast<char>('0' + frac % 10);
      frac /= 10;
    }
    std::size_t len = 6;
    while (digits[len - 1] == '0') --len;
    ch('.');
    buf_.append(digits, len);
  }

  // Shortest round-trip form (std::to_chars is exact and locale-free); JSON has no NaN.
  void number(double v) {
    if (!std::isfinite(v)) {
      raw("null");
      return;
    }
    char tmp[32];
    const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
    buf_.append(tmp, r.ptr);
  }

  // Starts an event object: a separator, one event per line (diffable, greppable).
  void begin_event() {
    if (buf_.size() >= FLUSH_AT) flush();
    if (!first_) raw(",\n");
    first_ = false;
  }

  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    written_ += buf_.size();
    buf_.clear();
    if (!out_) {
      throw std::runtime_error("write_chrome_trace: the output stream failed after " + std::to_string(written_) +
                               " bytes");
    }
  }

 private:
  static constexpr std::size_t FLUSH_AT = std::size_t{1} << 16;
  std::ostream& out_;
  std::string buf_;
  std::size_t written_ = 0;
  bool first_ = true;
};

// {"name":N,"cat":C,"ph":"P","pid":D,"tid":S,"ts":T   (the caller adds the rest and '}')
void event_head(JsonWriter& w, std::string_view name_q, std::string_view cat_q, char ph, std::uint32_t pid,
                std::uint32_t tid, std::int64_t ts_ps) {
  w.begin_event();
  w.raw("{\"name\":");
  w.raw(name_q);
  w.raw(",\"cat\":");
  w.raw(cat_q);
  w.raw(",\"ph\":\"");
  w.ch(ph);
  w.raw("\",\"pid\":");
  w.integer(pid);
  w.raw(",\"tid\":");
  w.integer(tid);
  w.raw(",\"ts\":");
  w.micros(ts_ps);
}

// Metadata events carry ts 0: the format does not need it, but some tools expect every
// event to have one.
void metadata(JsonWriter& w, const char* name, std::uint32_t pid, std::uint32_t tid, const char* key,
              std::string_view value_json) {
  w.begin_event();
  w.raw("{\"name\":\"");
  w.raw(name);
  w.raw("\",\"ph\":\"M\",\"pid\":");
  w.integer(pid);
  w.raw(",\"tid\":");
  w.integer(tid);
  w.raw(",\"ts\":0,\"args\":{\"");
  w.raw(key);
  w.raw("\":");
  w.raw(value_json);
  w.raw("}}");
}

// One end of a flow arrow. Both ends of a pair share name, cat and id (Perfetto matches
// v1 flows on all three). "bp":"e" binds the end to the slice enclosing its time (the
// successor itself) rather than to the next slice that begins on the thread.
void flow(JsonWriter& w, std::string_view name_q, std::string_view cat_q, char ph, std::uint32_t pid,
          std::uint32_t tid, Time ts, std::uint64_t id) {
  event_head(w, name_q, cat_q, ph, pid, tid, ts.ps);
  w.raw(",\"id\":");
  w.integer(id);
  if (ph == 'f') w.raw(",\"bp\":\"e\"");
  w.ch('}');
}

void check_sizes(const Plan& plan, const Timeline& tl) {
  const detail::PlanProblems problems = detail::check_plan(plan, detail::NO_LINK_CHECK);
  if (!problems.empty()) throw std::invalid_argument(problems.join("write_chrome_trace: invalid plan"));
  const std::size_t n = plan.size();
  if (tl.ready.size() != n || tl.start.size() != n || tl.end.size() != n) {
    throw std::invalid_argument("write_chrome_trace: the timeline has " + std::to_string(tl.start.size()) +
                                " task starts, " + std::to_string(tl.end.size()) + " ends and " +
                                std::to_string(tl.ready.size()) + " ready times but the plan has " +
                                std::to_string(n) + " tasks (was it simulated from this plan?)");
  }
  if (!tl.memory.empty() && tl.memory.size() != plan.num_devices) {
    throw std::invalid_argument("write_chrome_trace: the timeline has memory for " + std::to_string(tl.memory.size()) +
                                " devices but the plan has " + std::to_string(plan.num_devices));
  }
  const std::size_t classes = plan.mem_class_names.size();
  for (std::size_t d = 0; d < tl.memory.size(); ++d) {
    const DeviceMemory& m = tl.memory[d];
    if (m.curve_by_class.size() != m.curve.size() * classes) {
      throw std::invalid_argument("write_chrome_trace: device " + std::to_string(d) + "'s memory curve has " +
                                  std::to_string(m.curve.size()) + " points but " +
                                  std::to_string(m.curve_by_class.size()) + " per-class values, expected points x " +
                                  std::to_string(classes) + " classes");
    }
  }
}

}  // namespace

void write_chrome_trace(std::ostream& out, const Plan& plan, const Timeline& timeline, const TraceOptions& options) {
  check_sizes(plan, timeline);
  const std::size_t n = plan.size();
  const std::size_t stride = stream_stride(plan);
  const std::size_t classes = plan.mem_class_names.size();

  // Names, escaped once.
  std::vector<std::string> label_q(plan.label_names.size());
  for (std::size_t i = 0; i < label_q.size(); ++i) label_q[i] = quoted(plan.label_names[i]);
  const std::string unnamed_q = quoted("task");  // a plan may name no labels at all
  std::vector<std::string> category_q(256);      // category is a uint8_t
  for (std::size_t i = 0; i < category_q.size(); ++i) category_q[i] = name_or(plan.category_names, i, "category");
  std::vector<std::string> class_q(classes);
  for (std::size_t k = 0; k < classes; ++k) class_q[k] = quoted(plan.mem_class_names[k]);
  std::vector<std::string> pattern_q(plan.patterns.size());
  for (std::size_t i = 0; i < pattern_q.size(); ++i) pattern_q[i] = quoted(plan.patterns[i].name);

  // Tasks grouped by (device, stream) with a counting sort. Within a stream, task id order
  // is start order: a stream is a FIFO in insertion order.
  std::vector<std::uint32_t> group_offset(std::size_t{plan.num_devices} * stride + 1, 0);
  for (std::size_t t = 0; t < n; ++t) ++group_offset[std::size_t{plan.device[t]} * stride + plan.stream[t] + 1];
  for (std::size_t g = 0; g + 1 < group_offset.size(); ++g) group_offset[g + 1] += group_offset[g];
  std::vector<TaskId> order(n);
  {
    std::vector<std::uint32_t> fill(group_offset.begin(), group_offset.end() - 1);
    for (std::size_t t = 0; t < n; ++t) {
      order[fill[std::size_t{plan.device[t]} * stride + plan.stream[t]]++] = static_cast<TaskId>(t);
    }
  }
  const auto has_counter = [&](std::uint32_t d) {
    return classes > 0 && d < timeline.memory.size() && !timeline.memory[d].curve.empty();
  };

  JsonWriter w(out);
  w.raw("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");

  // 1. Names for every device, and for every stream that has tasks (and stream 0 wherever
  // the memory counter, a per-process track that still needs a tid, lives).
  for (std::uint32_t d = 0; d < plan.num_devices; ++d) {
    metadata(w, "process_name", d, 0, "name", name_or(options.device_names, d, "device"));
    metadata(w, "process_sort_index", d, 0, "sort_index", std::to_string(d));
    for (std::size_t s = 0; s < stride; ++s) {
      const std::size_t g = std::size_t{d} * stride + s;
      const bool used = group_offset[g + 1] > group_offset[g] || (s == 0 && has_counter(d));
      if (!used) continue;
      const auto tid = static_cast<std::uint32_t>(s);
      metadata(w, "thread_name", d, tid, "name", name_or(options.stream_names, s, "stream"));
      metadata(w, "thread_sort_index", d, tid, "sort_index", std::to_string(s));
    }
  }

  // Flow ids: edges first (1 .. edge pairs), then collectives; unique in the file.
  static constexpr std::string_view EDGE_NAME = "\"dependency\"";
  static constexpr std::string_view EDGE_CAT = "\"dependency\"";
  static constexpr std::string_view COMM_NAME = "\"rendezvous\"";
  static constexpr std::string_view COMM_CAT = "\"comm\"";
  std::uint64_t next_id = 1;

  // 2. Edge arrow starts, at each cross-device predecessor's end.
  for (std::size_t u = 0; u < n; ++u) {
    for (const TaskId v : plan.successors(static_cast<TaskId>(u))) {
      if (plan.device[v] == plan.device[u]) continue;
      flow(w, EDGE_NAME, EDGE_CAT, 's', plan.device[u], plan.stream[u], timeline.end[u], next_id++);
    }
  }

  // 3. Tasks, then the memory counter, device by device.
  for (std::uint32_t d = 0; d < plan.num_devices; ++d) {
    for (std::size_t i = group_offset[std::size_t{d} * stride]; i < group_offset[std::size_t{d + 1} * stride]; ++i) {
      const TaskId t = order[i];
      const std::uint16_t label = plan.label[t];
      event_head(w, label < label_q.size() ? label_q[label] : unnamed_q, category_q[plan.category[t]], 'X', d,
                 plan.stream[t], timeline.start[t].ps);
      w.raw(",\"dur\":");
      w.micros((timeline.end[t] - timeline.start[t]).ps);
      w.raw(",\"args\":{\"task\":");
      w.integer(t);
      if (plan.micro_batch[t] >= 0) {
        w.raw(",\"micro_batch\":");
        w.integer(plan.micro_batch[t]);
      }
      w.raw(",\"ready\":");
      w.micros(timeline.ready[t].ps);
      if (plan.kind[t] == TaskKind::COMPUTE) {
        w.raw(",\"kind\":\"COMPUTE\"}}");
        continue;
      }
      const std::uint32_t c = plan.comm[t];
      const CommInstance& ci = plan.comms[c];
      w.raw(",\"kind\":\"COMM\",\"comm\":");
      w.integer(c);
      w.raw(",\"bytes\":");
      w.number(ci.bytes);
      if (ci.pattern != NONE) {
        w.raw(",\"pattern\":");
        w.raw(pattern_q[ci.pattern]);
      }
      w.raw("}}");
    }
    if (!has_counter(d)) continue;
    const DeviceMemory& m = timeline.memory[d];
    for (std::size_t p = 0; p < m.curve.size(); ++p) {
      event_head(w, "\"memory\"", "\"memory\"", 'C', d, 0, m.curve[p].first.ps);
      w.raw(",\"args\":{");
      for (std::size_t k = 0; k < classes; ++k) {
        if (k > 0) w.ch(',');
        w.raw(class_q[k]);
        w.ch(':');
        w.integer(m.curve_by_class[p * classes + k]);
      }
      w.raw("}}");
    }
  }

  // 4a. Collective arrows: the first participant (lowest task id) to each other one, all
  // at the instance's start. Only the first participant of each instance is remembered.
  {
    std::vector<TaskId> first(plan.comms.size(), NONE);
    for (std::size_t t = 0; t < n; ++t) {
      if (plan.kind[t] != TaskKind::COMM) continue;
      TaskId& f = first[plan.comm[t]];
      if (f == NONE) {
        f = static_cast<TaskId>(t);
        continue;
      }
      const std::uint64_t id = next_id++;
      flow(w, COMM_NAME, COMM_CAT, 's', plan.device[f], plan.stream[f], timeline.start[f], id);
      flow(w, COMM_NAME, COMM_CAT, 'f', plan.device[t], plan.stream[t], timeline.start[t], id);
    }
  }

  // 4b. Edge arrow ends, in the order (and so with the ids) of their starts in 2.
  std::uint64_t edge_id = 1;
  for (std::size_t u = 0; u < n; ++u) {
    for (const TaskId v : plan.successors(static_cast<TaskId>(u))) {
      if (plan.device[v] == plan.device[u]) continue;
      flow(w, EDGE_NAME, EDGE_CAT, 'f', plan.device[v], plan.stream[v], timeline.start[v], edge_id++);
    }
  }

  w.raw("\n]}\n");
  w.flush();
}

}  // namespace trainsim::sim
