#include "cli/sweep_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <fstream>
#include <map>
#include <ostream>
#include <thread>

#include <fmt/format.h>

#include "cli/detail/evaluate.hpp"
#include "cli/detail/ordered_pool.hpp"
#include "cli/detail/output_file.hpp"
#include "cli/detail/progress.hpp"
#include "cli/detail/ranks.hpp"
#include "cli/detail/sweep_table.hpp"
#include "cli/memory_budget.hpp"
#include "scenarios/memory_bound.hpp"
#include "scenarios/sweep.hpp"

namespace trainsim::cli {
namespace {

using detail::VariantStatus;

constexpr double GIB = 1024.0 * 1024.0 * 1024.0;

struct VariantRow {
  std::string status, reason;
  std::string csv, jsonl;
};

// What the summary counts a dropped variant under: the constraint or the validation
// message as is; every memory-bound drop under one heading (their figures differ).
std::string reason_key(const std::string& status, const std::string& reason) {
  if (status == detail::to_string(VariantStatus::MEMORY_BOUND)) return "memory lower bound above HBM capacity";
  if (status == detail::to_string(VariantStatus::CONSTRAINT)) return "constraint " + reason;
  return reason;
}

VariantRow evaluate_variant(const scenarios::SweepPlan& plan, std::uint64_t index, bool breakdown,
                            double max_memory_bytes, bool csv, bool jsonl) {
  detail::VariantOutcome o;
  o.index = index;
  const scenarios::Scenario written = plan.variant(index);
  o.written = &written;
  std::optional<scenarios::LoadResult> loaded;
  std::optional<report::RunReport> report;
  if (auto broken = plan.broken_constraint(written)) {
    o.status = VariantStatus::CONSTRAINT;
    o.reason = *broken;
  } else {
    loaded = plan.load(written);
    if (auto* errors = std::get_if<std::vector<scenarios::Diagnostic>>(&*loaded)) {
      o.status = VariantStatus::INVALID;
      for (const auto& d : *errors) {
        if (!o.reason.empty()) o.reason += "; ";
        o.reason += (d.field.empty() ? "" : d.field + ": ") + d.message;
      }
    } else {
      const auto& scenario = std::get<scenarios::LoadedScenario>(*loaded);
      o.loaded = &scenario;
      const scenarios::MemoryLowerBound bound = scenarios::memory_lower_bound(scenario.training, scenario.gpu);
      o.memory_lower_bound_bytes = bound.bytes();
      const double capacity = scenario.gpu.hbm_capacity_bytes().value();
      if (o.memory_lower_bound_bytes > capacity) {
        o.status = VariantStatus::MEMORY_BOUND;
        o.reason = fmt::format("{} need at least {:.2f} GiB per GPU, HBM holds {:.2f} GiB", bound.what(),
                               o.memory_lower_bound_bytes / GIB, capacity / GIB);
      } else {
        try {
          report = detail::evaluate_fast(scenario, !breakdown, max_memory_bytes);
          o.report = &*report;
        } catch (const std::exception& e) {
          o.status = VariantStatus::ERROR;
          o.reason = e.what();
        }
      }
    }
  }
  const detail::Row row = detail::make_row(o, plan.fingerprint());
  VariantRow out{detail::to_string(o.status), o.reason, "", ""};
  if (csv) out.csv = detail::csv_line(row);
  if (jsonl) out.jsonl = detail::jsonl_line(row);
  return out;
}

// An output table: resumed when it holds rows of this sweep, else started.
class Table {
 public:
  Table(std::string path, bool csv) : path_(std::move(path)), csv_(csv) {}
  const std::string& path() const { return path_; }
  bool enabled() const { return !path_.empty(); }

  // Reads what is there; an error line when it cannot be resumed.
  std::string scan(std::uint64_t fingerprint) {
    if (!enabled() || !std::filesystem::exists(path_)) return "";
    auto scanned = detail::scan_table(path_, csv_, fingerprint);
    if (auto* error = std::get_if<std::string>(&scanned)) return path_ + ": error: " + *error;
    existing_ = std::get<detail::ExistingTable>(std::move(scanned));
    return "";
  }
  std::uint64_t rows() const { return existing_ ? existing_->rows : 0; }
  const detail::ExistingTable* existing() const { return existing_ ? &*existing_ : nullptr; }

  // Cuts the table to its first `rows` rows (a row half written by a kill, or rows the
  // other table lacks) and opens it for appending; writes the CSV header on a new table.
  std::string open(std::uint64_t rows) {
    if (!enabled()) return "";
    std::error_code ec;
    if (existing_ && (rows > 0 || existing_->header_end > 0)) {
      const std::uint64_t keep = rows > 0 ? existing_->row_end[rows - 1] : existing_->header_end;
      std::filesystem::resize_file(path_, keep, ec);
      if (ec) return path_ + ": error: cannot cut the table short to resume it: " + ec.message();
      stream_.open(path_, std::ios::binary | std::ios::app);
    } else {
      stream_.open(path_, std::ios::binary | std::ios::trunc);
      if (csv_) stream_ << detail::csv_header();
    }
    if (!stream_) return path_ + ": error: cannot open for writing";
    return "";
  }
  void write(const std::string& line) { stream_ << line; }
  bool flush() {
    if (!enabled()) return true;
    stream_.flush();
    return static_cast<bool>(stream_);
  }

 private:
  std::string path_;
  bool csv_;
  std::optional<detail::ExistingTable> existing_;
  std::ofstream stream_;
};

std::ostream& null_stream() {
  static std::ostream sink(nullptr);
  return sink;
}

// Rank 0: reads what the tables hold, counts the outcomes of the rows already written, and
// opens them to append; the number of rows both hold whole, or uint64 max on failure.
std::uint64_t prepare_tables(const SweepOptions& options, const scenarios::SweepPlan& plan, Table& csv, Table& jsonl,
                             std::map<std::string, std::uint64_t>& by_status,
                             std::map<std::string, std::uint64_t>& by_reason, std::ostream& err) {
  const std::uint64_t FAILED = std::numeric_limits<std::uint64_t>::max();
  if (!options.csv_path.empty() && options.csv_path == options.jsonl_path) {
    err << options.csv_path << ": error: --csv and --jsonl name the same file\n";
    return FAILED;
  }
  if (auto refused = detail::refuse_overwriting_inputs({{"--csv", options.csv_path}, {"--jsonl", options.jsonl_path}},
                                                       {options.sweep_path})) {
    err << *refused << '\n';
    return FAILED;
  }
  for (Table* t : {&csv, &jsonl}) {
    if (std::string problem = t->scan(plan.fingerprint()); !problem.empty()) {
      err << problem << '\n';
      return FAILED;
    }
  }
  // Both tables resume from the row both hold whole.
  std::uint64_t done = plan.size();
  for (const Table* t : {&csv, &jsonl})
    if (t->enabled()) done = std::min(done, t->rows());
  const detail::ExistingTable* before = csv.existing() ? csv.existing() : jsonl.existing();
  for (std::uint64_t i = 0; i < done; ++i) {
    const auto& [status, reason] = before->outcomes[i];
    ++by_status[status];
    if (!reason.empty()) ++by_reason[reason_key(status, reason)];
  }
  for (Table* t : {&csv, &jsonl}) {
    if (std::string problem = t->open(done); !problem.empty()) {
      err << problem << '\n';
      return FAILED;
    }
  }
  return done;
}

}  // namespace

int sweep_command(const SweepOptions& options, std::ostream& out, std::ostream& err) {
  const detail::Ranks ranks;
  const bool writer = ranks.rank() == 0;
  // Every rank reads the sweep file; only rank 0 speaks and writes. A failure on rank 0
  // (an output it cannot resume) reaches the others as a row count past the end.
  std::ostream& say = writer ? err : null_stream();
  if (options.csv_path.empty() && options.jsonl_path.empty()) {
    say << options.sweep_path << ": error: name an output: --csv FILE and/or --jsonl FILE\n";
    return 1;
  }
  auto loaded = scenarios::load_sweep(options.sweep_path);
  if (auto* errors = std::get_if<std::vector<scenarios::Diagnostic>>(&loaded)) {
    for (const auto& d : *errors) say << d.str() << '\n';
    return 1;
  }
  const auto& plan = std::get<scenarios::SweepPlan>(loaded);
  const std::uint64_t FAILED = std::numeric_limits<std::uint64_t>::max();
  Table csv(writer ? options.csv_path : "", true), jsonl(writer ? options.jsonl_path : "", false);
  std::map<std::string, std::uint64_t> by_status, by_reason;
  std::uint64_t done = writer ? prepare_tables(options, plan, csv, jsonl, by_status, by_reason, err) : 0;
  done = ranks.broadcast(done);
  if (done == FAILED) return 1;
  const unsigned threads = options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  const double budget = options.max_memory_bytes > 0 ? options.max_memory_bytes : default_memory_budget() / threads;
  const std::uint64_t resumed = done;
  const bool want_csv = !options.csv_path.empty(), want_jsonl = !options.jsonl_path.empty();
  detail::Progress progress(writer && options.progress && detail::stderr_is_terminal(), plan.size(), done, "variants");
  bool write_failed = false;
  bool stopped = false;
  // Rank 0's side of one row, in variant order.
  auto take = [&](VariantRow&& row) {
    if (options.stop_after > 0 && done == options.stop_after) {
      // As a kill would leave it: half of the next row, then gone.
      csv.write(row.csv.substr(0, row.csv.size() / 2));
      jsonl.write(row.jsonl.substr(0, row.jsonl.size() / 2));
      csv.flush();
      jsonl.flush();
      stopped = true;
      return false;
    }
    csv.write(row.csv);
    jsonl.write(row.jsonl);
    if (!csv.flush() || !jsonl.flush()) {
      write_failed = true;
      return false;
    }
    ++by_status[row.status];
    if (!row.reason.empty()) ++by_reason[reason_key(row.status, row.reason)];
    progress.update(++done);
    return true;
  };
  auto evaluate = [&](std::uint64_t index) {
    return evaluate_variant(plan, index, options.breakdown, budget, want_csv, want_jsonl);
  };
  if (ranks.size() == 1) {
    detail::run_ordered<VariantRow>(done, plan.size(), threads, 64ull * threads, evaluate,
                                    [&](std::uint64_t, VariantRow&& row) { return take(std::move(row)); });
  } else {
    // Blocks of variants; within one, rank r takes every size-th variant from the r-th,
    // and rank 0 puts the rows back in variant order. The table is the one-process table.
    const std::uint64_t n = static_cast<std::uint64_t>(ranks.size());
    const std::uint64_t block = 64ull * threads * n;
    for (std::uint64_t begin = done; begin < plan.size(); begin += block) {
      const std::uint64_t end = std::min(plan.size(), begin + block);
      const std::uint64_t first = begin + static_cast<std::uint64_t>(ranks.rank());
      const std::uint64_t mine = first < end ? (end - first + n - 1) / n : 0;
      std::vector<std::string> parts;
      parts.reserve(4 * mine);
      detail::run_ordered<VariantRow>(0, mine, threads, 64ull * threads,
                                      [&](std::uint64_t j) { return evaluate(first + j * n); },
                                      [&](std::uint64_t, VariantRow&& row) {
                                        parts.push_back(std::move(row.status));
                                        parts.push_back(std::move(row.reason));
                                        parts.push_back(std::move(row.csv));
                                        parts.push_back(std::move(row.jsonl));
                                        return true;
                                      });
      const auto all = ranks.all_gather(parts);
      bool more = true;
      if (writer) {
        for (std::uint64_t i = begin; i < end && more; ++i) {
          const auto& from = all[(i - begin) % n];
          const std::size_t at = 4 * ((i - begin) / n);
          more = take(VariantRow{from[at], from[at + 1], from[at + 2], from[at + 3]});
        }
      }
      if (ranks.broadcast(more ? 1 : 0) == 0) break;
    }
  }
  progress.finish();
  if (!writer) return 0;
  if (stopped) {
    std::fflush(nullptr);
    _exit(137);  // abruptly, as SIGKILL would: no destructors, no summary
  }
  if (write_failed) {
    for (const Table* t : {&csv, &jsonl})
      if (t->enabled()) err << t->path() << ": error: write failed (disk full?); run again to resume\n";
    return 1;
  }
  const auto count = [&](VariantStatus s) {
    auto it = by_status.find(detail::to_string(s));
    return it == by_status.end() ? 0 : it->second;
  };
  out << fmt::format("sweep {}: {} variants{}\n", plan.file(), plan.size(),
                     resumed > 0 ? fmt::format(" ({} rows were already written; resumed after them)", resumed) : "");
  out << fmt::format("  simulated {}; dropped by a constraint {}, invalid {}, over memory by the lower bound {}; "
                     "failed to build {}\n",
                     count(VariantStatus::OK), count(VariantStatus::CONSTRAINT), count(VariantStatus::INVALID),
                     count(VariantStatus::MEMORY_BOUND), count(VariantStatus::ERROR));
  if (!by_reason.empty()) {
    std::vector<std::pair<std::uint64_t, std::string>> reasons;
    for (const auto& [reason, n] : by_reason) reasons.emplace_back(n, reason);
    std::stable_sort(reasons.begin(), reasons.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    out << "  reasons (most frequent first):\n";
    constexpr std::size_t SHOWN = 10;
    for (std::size_t i = 0; i < std::min(SHOWN, reasons.size()); ++i)
      out << fmt::format("    {:>8}  {}\n", reasons[i].first, reasons[i].second);
    if (reasons.size() > SHOWN) out << fmt::format("    … and {} more distinct reasons\n", reasons.size() - SHOWN);
  }
  for (const Table* t : {&csv, &jsonl})
    if (t->enabled()) out << fmt::format("  wrote {}\n", t->path());
  return 0;
}

}  // namespace trainsim::cli
