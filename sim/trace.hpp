#pragma once
// Chrome / Perfetto trace of a simulated plan, in the trace-event "JSON Object Format"
// ({"traceEvents": [...], "displayTimeUnit": "ns"}) that chrome://tracing, Perfetto UI
// and most trace viewers open.
//
// What is written:
//  * one process per plan device (pid = device) and one thread per stream (tid = stream),
//    named by metadata events (process_name / thread_name, plus sort indices so that viewers
//    list devices and streams in number order);
//  * one complete event ("ph":"X") per task: ts/dur in microseconds, written as exact
//    decimals of the engine's picoseconds (1234567 ps -> 1.234567); name = the task's label,
//    cat = its category; args: task id, kind, micro_batch (omitted when the plan says -1),
//    ready (when it reached its stream head with predecessors done, so that a rendezvous
//    wait shows), and for COMM tasks the comm instance, its bytes and its pattern's name;
//  * flow arrows ("ph":"s" then "ph":"f" with "bp":"e", one id per pair, ids unique in the
//    file): from the first participant of every communication instance with more than one
//    participant to each other participant, at their common start; and for every plan edge
//    between tasks on different devices, from the predecessor's end to the successor's start;
//  * memory as a counter track per device ("ph":"C", name "memory", args {class: bytes}),
//    one sample per point of Timeline's DeviceMemory::curve / curve_by_class (so simulate
//    with SimulateOptions::record_memory_curve to get it; without a curve there is none).
//
// The output is streamed (a plan may have 10^7 tasks) and deterministic: the same plan and
// timeline give byte-identical files.
#include <ostream>
#include <string>
#include <vector>

#include "sim/plan.hpp"
#include "sim/simulate.hpp"

namespace trainsim::sim {

struct TraceOptions {
  std::vector<std::string> device_names;  // per plan device, e.g. "rank 17 (stage 2)"; default "device N"
  std::vector<std::string> stream_names;  // per stream index, e.g. {"compute", "comm"}; default "stream N"
};

// Writes the trace of `timeline`, which must come from simulating `plan`. Throws
// std::invalid_argument when the timeline's sizes do not match the plan, and
// std::runtime_error when `out` fails while being written.
void write_chrome_trace(std::ostream& out, const Plan& plan, const Timeline& timeline, const TraceOptions& options);

}  // namespace trainsim::sim
