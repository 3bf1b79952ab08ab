#include "calibration/attention_records.hpp"

#include "calibration/csv_rows.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>

namespace trainsim::calibration {
namespace {

bool same_problem(const AttentionProblem& a, const AttentionProblem& b) {
  return a.batch == b.batch && a.heads == b.heads && a.sequence == b.sequence && a.head_dim == b.head_dim &&
         a.causal == b.causal;
}

// A whole number from 1 to 2^24 (the harness's problems are far below it).
bool positive_integer(const std::string& s, std::int64_t& v) {
  const char* last = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), last, v);
  return ec == std::errc() && p == last && v >= 1 && v <= (std::int64_t{1} << 24);
}

}  // namespace

std::string read_attention_records(const std::string& text, const std::string& origin,
                                   std::vector<AttentionRecord>& out) {
  bool header_seen = false;
  const std::size_t before = out.size();
  const std::string error = read_csv_rows(
      text, origin, kAttentionRecordsHeader,
      [&](const std::vector<std::string>& f, const std::string& at) -> std::string {
        AttentionRecord r;
        if (f[0] != kUnfusedAttentionPath && f[0] != kFusedAttentionPath)
          return at + "path: \"" + f[0] + "\" is not " + kUnfusedAttentionPath + " or " + kFusedAttentionPath;
        r.path = f[0];
        if (f[1] != "forward" && f[1] != "backward") return at + "pass: \"" + f[1] + "\" is not forward or backward";
        r.pass = f[1];
        if (f[2] != "0" && f[2] != "1") return at + "causal: \"" + f[2] + "\" is not 0 or 1";
        r.problem.causal = f[2] == "1";
        static const char* const kCount[] = {"batch", "heads", "sequence", "head_dim"};
        std::int64_t* counts[] = {&r.problem.batch, &r.problem.heads, &r.problem.sequence, &r.problem.head_dim};
        for (int i = 0; i < 4; ++i) {
          if (!positive_integer(f[3 + i], *counts[i]))
            return at + kCount[i] + ": \"" + f[3 + i] + "\" is not a positive integer up to 2^24";
        }
        const char* last = f[7].data() + f[7].size();
        auto [p, ec] = std::from_chars(f[7].data(), last, r.seconds);
        if (ec != std::errc() || p != last || !std::isfinite(r.seconds) || r.seconds <= 0)
          return at + "seconds: \"" + f[7] + "\" is not a positive number";
        for (std::size_t i = before; i < out.size(); ++i) {
          if (out[i].path == r.path && out[i].pass == r.pass && same_problem(out[i].problem, r.problem))
            return at + "the " + r.path + " " + r.pass + " pass of this problem is timed twice";
        }
        out.push_back(std::move(r));
        return "";
      },
      &header_seen);
  if (!error.empty()) return error;
  if (!header_seen)
    return origin + ": error: empty file; expected the header \"" + std::string(kAttentionRecordsHeader) + "\"";
  if (out.size() == before) return origin + ": error: no measurements";
  return "";
}

FusedAttention fused_attention_measurements(const std::vector<AttentionRecord>& rows) {
  FusedAttention result;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const AttentionRecord& r = rows[i];
    if (r.path != kFusedAttentionPath) {
      ++result.unfused_rows;
      continue;
    }
    // The reader allows each (problem, pass) once, so a problem has at most one partner.
    const AttentionRecord* other = nullptr;
    for (const auto& o : rows)
      if (o.path == r.path && o.pass != r.pass && same_problem(o.problem, r.problem)) other = &o;
    if (other == nullptr) {
      ++result.unpaired_rows;
      continue;
    }
    if (r.pass != "forward") continue;  // the pair is taken once, at its forward row
    AttentionMeasurement m;
    m.batch = r.problem.batch;
    m.heads = r.problem.heads;
    m.sequence = r.problem.sequence;
    m.head_dim = r.problem.head_dim;
    m.causal = r.problem.causal;
    m.seconds = r.seconds + other->seconds;
    result.measurements.push_back(m);
  }
  return result;
}

}  // namespace trainsim::calibration
