#include "sim/trace.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/plan.hpp"
#include "sim/simulate.hpp"

namespace trainsim::sim {
namespace {

using nlohmann::json;

Time ps(std::int64_t v) { return Time::from_ps(v); }

PlanBuilder::TaskSpec on(std::uint32_t device, std::uint8_t stream, std::uint16_t label, std::int32_t micro_batch = -1) {
  PlanBuilder::TaskSpec s;
  s.device = device;
  s.stream = stream;
  s.label = label;
  s.micro_batch = micro_batch;
  return s;
}

// A traced plan, what it was built from, and the ids worth checking.
struct Traced {
  Plan plan;
  Timeline timeline;
  std::string text;
  json doc;
};

std::string write(const Plan& plan, const Timeline& tl, const TraceOptions& options = {}) {
  std::ostringstream out;
  write_chrome_trace(out, plan, tl, options);
  return out.str();
}

Traced trace(Plan plan, const TraceOptions& options = {}, bool curve = true) {
  Traced t;
  t.timeline = simulate(plan, NetworkSpec{}, SimulateOptions{.record_memory_curve = curve});
  t.text = write(plan, t.timeline, options);
  t.plan = std::move(plan);
  t.doc = json::parse(t.text);  // throws (and fails the test) when the file is not JSON
  return t;
}

// `devices` devices, streams {compute = 0, comm = 1}. On every device d: "fwd" (micro-batch 0,
// allocates activations), then a `devices`-participant collective on the comm stream after
// it, then "bwd" after the collective (frees the activations). Device 1's "bwd" also waits
// for device 0's "fwd": the cross-device edge. Durations are not whole microseconds, so
// the picoseconds must survive as fractions.
Plan collective_plan(std::uint32_t devices) {
  PlanBuilder b(devices, 2, {"compute", "tp-comm"}, {"weights", "activations"});
  const std::uint16_t fwd = b.label("fwd");
  const std::uint16_t bwd = b.label("bwd");
  const std::uint16_t ar = b.label("all-reduce");
  CommInstance ci;
  ci.fixed_duration = ps(3'000'000);
  ci.participants = devices;
  ci.bytes = 1048576.0;
  const std::uint32_t c = b.add_comm(ci);
  std::vector<TaskId> f(devices);
  std::vector<TaskId> bw(devices);
  for (std::uint32_t d = 0; d < devices; ++d) {
    b.set_initial_memory(d, 0, 1000 + d);
    PlanBuilder::TaskSpec s = on(d, 0, fwd, 0);
    s.mem_class = 1;
    s.alloc_bytes = 500;
    f[d] = b.add_compute(s, ps(1'234'567 + 1'000'000 * std::int64_t{d}));
    PlanBuilder::TaskSpec cs = on(d, 1, ar, 0);
    cs.category = 1;
    const TaskId comm = b.add_comm_task(cs, c);
    PlanBuilder::TaskSpec bs = on(d, 0, bwd, 0);
    bs.mem_class = 1;
    bs.free_bytes = 500;
    bw[d] = b.add_compute(bs, ps(2'000'001));
    b.add_edge(f[d], comm);
    b.add_edge(comm, bw[d]);
  }
  b.add_edge(f[0], bw[1]);
  return std::move(b).finish();
}

// The format's rules (Trace Event Format, "JSON Object Format"), and that the file says
// what the plan and timeline say. Sets `pairs` to the number of flow pairs (an out
// parameter: gtest's ASSERT_* need a void function).
void check_format(const Traced& t, std::size_t& pairs) {
  const Plan& p = t.plan;
  const Timeline& tl = t.timeline;
  const json& doc = t.doc;
  EXPECT_TRUE(doc.is_object());
  EXPECT_EQ(doc.at("displayTimeUnit"), "ns");
  const json& events = doc.at("traceEvents");
  EXPECT_TRUE(events.is_array());

  const auto us_to_ps = [](const json& v) { return static_cast<std::int64_t>(std::llround(v.get<double>() * 1e6)); };

  std::set<std::uint32_t> process_names;
  std::set<std::pair<std::uint32_t, std::uint32_t>> thread_names;
  std::set<std::uint32_t> pids_used;
  std::set<std::pair<std::uint32_t, std::uint32_t>> threads_used;
  std::map<std::pair<std::uint32_t, std::uint32_t>, int> open_slices;  // B minus E per thread
  struct FlowEnds {
    int starts = 0;
    int ends = 0;
    std::int64_t s_ts = 0;
    std::int64_t f_ts = 0;
    std::string s_key;
    std::string f_key;
  };
  std::map<std::uint64_t, FlowEnds> flows;
  std::vector<int> seen_task(p.size(), 0);
  std::map<std::uint32_t, std::vector<const json*>> counters;
  // Slices per thread, to check that each flow end lies on a task of its thread.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::vector<std::pair<std::int64_t, std::int64_t>>> slices;

  for (const json& e : events) {
    SCOPED_TRACE(e.dump());
    for (const char* key : {"name", "ph", "pid", "tid", "ts"}) EXPECT_TRUE(e.contains(key)) << key;
    EXPECT_TRUE(e.at("name").is_string());
    EXPECT_TRUE(e.at("pid").is_number_unsigned());
    EXPECT_TRUE(e.at("tid").is_number_unsigned());
    EXPECT_TRUE(e.at("ts").is_number());
    const std::string ph = e.at("ph");
    const auto pid = e.at("pid").get<std::uint32_t>();
    const auto tid = e.at("tid").get<std::uint32_t>();
    if (ph == "M") {
      EXPECT_TRUE(e.at("args").is_object());
      const std::string name = e.at("name");
      if (name == "process_name") process_names.insert(pid);
      if (name == "thread_name") thread_names.emplace(pid, tid);
      if (name == "process_name" || name == "thread_name") {
        EXPECT_TRUE(e.at("args").at("name").is_string());
      }
      continue;
    }
    pids_used.insert(pid);
    threads_used.emplace(pid, tid);
    const std::int64_t ts = us_to_ps(e.at("ts"));
    if (ph == "X") {
      ASSERT_TRUE(e.contains("dur"));
      EXPECT_GE(e.at("dur").get<double>(), 0.0);
      const std::int64_t dur = us_to_ps(e.at("dur"));
      const json& args = e.at("args");
      const auto task = args.at("task").get<TaskId>();
      ASSERT_LT(task, p.size());
      ++seen_task[task];
      EXPECT_EQ(pid, p.device[task]);
      EXPECT_EQ(tid, p.stream[task]);
      EXPECT_EQ(ts, tl.start[task].ps);
      EXPECT_EQ(dur, (tl.end[task] - tl.start[task]).ps);
      EXPECT_EQ(us_to_ps(args.at("ready")), tl.ready[task].ps);
      EXPECT_EQ(e.at("name"), p.label_names[p.label[task]]);
      EXPECT_EQ(e.at("cat"), p.category_names[p.category[task]]);
      if (p.micro_batch[task] >= 0) {
        EXPECT_EQ(args.at("micro_batch"), p.micro_batch[task]);
      } else {
        EXPECT_FALSE(args.contains("micro_batch"));
      }
      if (p.kind[task] == TaskKind::COMM) {
        EXPECT_EQ(args.at("kind"), "COMM");
        EXPECT_EQ(args.at("comm"), p.comm[task]);
        EXPECT_EQ(args.at("bytes").get<double>(), p.comms[p.comm[task]].bytes);
      } else {
        EXPECT_EQ(args.at("kind"), "COMPUTE");
        EXPECT_FALSE(args.contains("comm"));
      }
      slices[{pid, tid}].emplace_back(ts, ts + dur);
    } else if (ph == "B" || ph == "E") {
      open_slices[{pid, tid}] += ph == "B" ? 1 : -1;
    } else if (ph == "s" || ph == "f") {
      ASSERT_TRUE(e.contains("id"));
      FlowEnds& fe = flows[e.at("id").get<std::uint64_t>()];
      const std::string key = e.at("name").get<std::string>() + "/" + e.value("cat", "");
      if (ph == "s") {
        ++fe.starts;
        fe.s_ts = ts;
        fe.s_key = key;
      } else {
        ++fe.ends;
        fe.f_ts = ts;
        fe.f_key = key;
        EXPECT_EQ(e.at("bp"), "e");
      }
    } else if (ph == "C") {
      EXPECT_TRUE(e.at("args").is_object());
      counters[pid].push_back(&e);
    } else {
      ADD_FAILURE() << "unexpected phase " << ph;
    }
  }

  // Every task exactly once.
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_EQ(seen_task[i], 1) << "task " << i;
  // Begin/end balance (none are written; a future B/E writer must keep it).
  for (const auto& [thread, open] : open_slices) EXPECT_EQ(open, 0);
  // Names for everything used.
  for (const std::uint32_t pid : pids_used) EXPECT_TRUE(process_names.count(pid)) << "pid " << pid;
  for (const auto& th : threads_used) {
    EXPECT_TRUE(thread_names.count(th)) << "pid " << th.first << " tid " << th.second;
  }
  // Flows: one start and one end per id, in time order, with matching name and cat.
  for (const auto& [id, fe] : flows) {
    EXPECT_EQ(fe.starts, 1) << "flow " << id;
    EXPECT_EQ(fe.ends, 1) << "flow " << id;
    EXPECT_LE(fe.s_ts, fe.f_ts) << "flow " << id;
    EXPECT_EQ(fe.s_key, fe.f_key) << "flow " << id;
  }
  // Flow ends lie on a task slice of their thread (re-scan: slices are all known now).
  for (const json& e : events) {
    const std::string ph = e.at("ph");
    if (ph != "s" && ph != "f") continue;
    const auto& th = slices[{e.at("pid").get<std::uint32_t>(), e.at("tid").get<std::uint32_t>()}];
    const std::int64_t ts = us_to_ps(e.at("ts"));
    bool inside = false;
    for (const auto& [b, en] : th) inside = inside || (b <= ts && ts <= en);
    EXPECT_TRUE(inside) << e.dump();
  }
  // How many pairs there must be: k - 1 per instance, one per cross-device edge.
  std::size_t expected_pairs = 0;
  for (const CommInstance& ci : p.comms) expected_pairs += ci.participants > 1 ? ci.participants - 1 : 0;
  for (std::size_t u = 0; u < p.size(); ++u) {
    for (const TaskId v : p.successors(static_cast<TaskId>(u))) expected_pairs += p.device[u] != p.device[v];
  }
  EXPECT_EQ(flows.size(), expected_pairs);
  pairs = flows.size();

  // Counters equal the memory curve, point by point, class by class.
  const std::size_t classes = p.mem_class_names.size();
  for (std::uint32_t d = 0; d < p.num_devices; ++d) {
    const DeviceMemory& m = tl.memory[d];
    const std::vector<const json*>& cs = counters[d];
    // A plan without memory classes has nothing to put in a counter's args.
    ASSERT_EQ(cs.size(), classes == 0 ? 0 : m.curve.size()) << "device " << d;
    for (std::size_t i = 0; i < cs.size(); ++i) {
      const json& c = *cs[i];
      EXPECT_EQ(c.at("name"), "memory");
      EXPECT_EQ(us_to_ps(c.at("ts")), m.curve[i].first.ps);
      const json& args = c.at("args");
      EXPECT_EQ(args.size(), classes);
      std::int64_t total = 0;
      for (std::size_t k = 0; k < classes; ++k) {
        const auto v = args.at(p.mem_class_names[k]).get<std::int64_t>();
        EXPECT_EQ(v, m.curve_by_class[i * classes + k]);
        total += v;
      }
      EXPECT_EQ(total, m.curve[i].second);
    }
  }
}

std::size_t checked_pairs(const Traced& t) {
  std::size_t pairs = 0;
  check_format(t, pairs);
  return pairs;
}

TEST(ChromeTrace, TwoDevicesFollowTheFormat) {
  const Traced t = trace(collective_plan(2));
  // One 2-participant collective (1 pair) and one cross-device edge (1 pair).
  EXPECT_EQ(checked_pairs(t), 2u);
}

TEST(ChromeTrace, CollectiveOfKParticipantsHasKMinusOnePairsFromTheFirst) {
  const Traced t = trace(collective_plan(4));
  EXPECT_EQ(checked_pairs(t), 3u + 1u);
  // The collective's arrows all start on its first participant (task 1, device 0, comm
  // stream) and end on each other participant, all at the rendezvous time.
  std::multiset<std::uint32_t> end_devices;
  for (const json& e : t.doc.at("traceEvents")) {
    if (e.value("cat", "") != "comm" || (e.at("ph") != "s" && e.at("ph") != "f")) continue;
    EXPECT_EQ(e.at("tid"), 1);
    EXPECT_DOUBLE_EQ(e.at("ts").get<double>() * 1e6, static_cast<double>(t.timeline.start[1].ps));
    if (e.at("ph") == "s") {
      EXPECT_EQ(e.at("pid"), 0);
    } else {
      end_devices.insert(e.at("pid").get<std::uint32_t>());
    }
  }
  EXPECT_EQ(end_devices, (std::multiset<std::uint32_t>{1, 2, 3}));
}

TEST(ChromeTrace, CrossDeviceEdgeRunsFromPredecessorEndToSuccessorStart) {
  const Traced t = trace(collective_plan(2));
  // Tasks: device 0 fwd 0, comm 1, bwd 2; device 1 fwd 3, comm 4, bwd 5; edge 0 -> 5.
  int seen = 0;
  for (const json& e : t.doc.at("traceEvents")) {
    if (e.value("cat", "") != "dependency") continue;
    ++seen;
    const auto at = std::llround(e.at("ts").get<double>() * 1e6);
    if (e.at("ph") == "s") {
      EXPECT_EQ(e.at("pid"), 0);
      EXPECT_EQ(e.at("tid"), 0);
      EXPECT_EQ(at, t.timeline.end[0].ps);
    } else {
      EXPECT_EQ(e.at("pid"), 1);
      EXPECT_EQ(e.at("tid"), 0);
      EXPECT_EQ(at, t.timeline.start[5].ps);
    }
  }
  EXPECT_EQ(seen, 2);
}

TEST(ChromeTrace, TimesAreExactMicrosecondDecimals) {
  const Traced t = trace(collective_plan(2));
  // fwd on device 0 lasts 1234567 ps; bwd lasts 2000001 ps; the collective 3 us.
  EXPECT_NE(t.text.find("\"ts\":0,\"dur\":1.234567,"), std::string::npos) << t.text;
  EXPECT_NE(t.text.find("\"dur\":2.000001,"), std::string::npos);
  EXPECT_NE(t.text.find("\"dur\":3,"), std::string::npos);
  EXPECT_NE(t.text.find("\"bytes\":1048576"), std::string::npos);
}

TEST(ChromeTrace, NamesComeFromOptionsWithDefaults) {
  TraceOptions options;
  options.device_names = {"rank 0 (stage 0)"};  // device 1 keeps its default
  options.stream_names = {"compute"};           // stream 1 keeps its default
  const Traced t = trace(collective_plan(2), options);
  checked_pairs(t);
  std::map<std::uint32_t, std::string> processes;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::string> threads;
  for (const json& e : t.doc.at("traceEvents")) {
    if (e.at("ph") != "M") continue;
    if (e.at("name") == "process_name") processes[e.at("pid")] = e.at("args").at("name");
    if (e.at("name") == "thread_name") threads[{e.at("pid"), e.at("tid")}] = e.at("args").at("name");
  }
  EXPECT_EQ(processes, (std::map<std::uint32_t, std::string>{{0, "rank 0 (stage 0)"}, {1, "device 1"}}));
  EXPECT_EQ(threads[std::make_pair(0u, 0u)], "compute");
  EXPECT_EQ(threads[std::make_pair(1u, 1u)], "stream 1");
  EXPECT_EQ(threads.size(), 4u);
}

TEST(ChromeTrace, NamesAreEscaped) {
  PlanBuilder b(1, 1, {"cat \"quoted\""}, {"back\\slash", "new\nline"});
  const std::uint16_t l = b.label("tab\there \xff");  // and invalid UTF-8
  PlanBuilder::TaskSpec s = on(0, 0, l);
  s.mem_class = 1;
  s.alloc_bytes = 8;
  b.add_compute(s, ps(5));
  TraceOptions options;
  options.device_names = {"gpu \"0\"\x01"};
  const Traced t = trace(std::move(b).finish(), options);  // parses
  bool found = false;
  for (const json& e : t.doc.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    found = true;
    EXPECT_EQ(e.at("cat"), "cat \"quoted\"");
    EXPECT_EQ(e.at("name"), "tab\there \xEF\xBF\xBD");  // U+FFFD replaces the bad byte
  }
  EXPECT_TRUE(found);
  EXPECT_NE(t.text.find("\"new\\nline\":8"), std::string::npos);
}

TEST(ChromeTrace, WithoutACurveThereAreNoCounters) {
  const Traced t = trace(collective_plan(2), {}, /*curve=*/false);
  for (const json& e : t.doc.at("traceEvents")) EXPECT_NE(e.at("ph"), "C");
  // The file is still well formed, and device streams still named.
  std::set<std::pair<std::uint32_t, std::uint32_t>> threads;
  for (const json& e : t.doc.at("traceEvents")) {
    if (e.at("name") == "thread_name") threads.emplace(e.at("pid"), e.at("tid"));
  }
  EXPECT_EQ(threads.size(), 4u);
}

TEST(ChromeTrace, IdleDeviceGetsNameAndCounterTrack) {
  PlanBuilder b(2, 2, {"compute"}, {"weights"});
  b.set_initial_memory(1, 0, 4096);  // device 1 runs nothing but holds weights
  b.add_compute(on(0, 0, b.label("x")), ps(10));
  const Traced t = trace(std::move(b).finish());
  checked_pairs(t);  // includes: device 1's counter on tid 0 has a thread name
}

TEST(ChromeTrace, IsDeterministic) {
  const Plan p = collective_plan(3);
  const Timeline a = simulate(p, NetworkSpec{}, SimulateOptions{.record_memory_curve = true});
  const Timeline b = simulate(p, NetworkSpec{}, SimulateOptions{.record_memory_curve = true});
  const std::string first = write(p, a);
  EXPECT_EQ(first, write(p, a));
  EXPECT_EQ(first, write(p, b));
}

TEST(ChromeTrace, EmptyPlanIsAValidTrace) {
  const Traced t = trace(PlanBuilder(1, 1, {}, {}).finish());
  EXPECT_EQ(checked_pairs(t), 0u);
}

TEST(ChromeTrace, RejectsATimelineOfAnotherPlan) {
  const Plan p = collective_plan(2);
  const Timeline other = simulate(collective_plan(3), NetworkSpec{});
  std::ostringstream out;
  try {
    write_chrome_trace(out, p, other, {});
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("was it simulated from this plan?"), std::string::npos) << e.what();
  }
  Timeline bad = simulate(p, NetworkSpec{}, SimulateOptions{.record_memory_curve = true});
  bad.memory[0].curve_by_class.pop_back();
  EXPECT_THROW(write_chrome_trace(out, p, bad, {}), std::invalid_argument);
}

TEST(ChromeTrace, FailingStreamThrows) {
  const Plan p = collective_plan(2);
  const Timeline tl = simulate(p, NetworkSpec{});
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  EXPECT_THROW(write_chrome_trace(out, p, tl, {}), std::runtime_error);
}

}  // namespace
}  // namespace trainsim::sim
