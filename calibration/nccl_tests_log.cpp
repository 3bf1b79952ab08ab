#include "calibration/nccl_tests_log.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace trainsim::calibration {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_ws(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) ++i;
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t' && s[j] != '\r') ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

bool parse_u64(std::string_view s, std::uint64_t& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parse_int(std::string_view s, int& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

// A finite, non-negative number as nccl-tests prints it (%.2f, %.0f or %e).
bool parse_measure(std::string_view s, double& out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && std::isfinite(out) && out >= 0;
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// mpirun --tag-output prefixes "[rank]" or "[job,rank]<stdout>:".
std::string_view strip_rank_tag(std::string_view s) {
  std::string_view t = trim(s);
  if (t.empty() || t.front() != '[') return s;
  std::size_t close = t.find(']');
  if (close == std::string_view::npos) return s;
  std::string_view inside = t.substr(1, close - 1);
  if (inside.empty() || !std::all_of(inside.begin(), inside.end(), [](char c) { return (c >= '0' && c <= '9') || c == ','; }))
    return s;
  t.remove_prefix(close + 1);
  for (std::string_view tag : {"<stdout>:", "<stderr>:"}) {
    if (t.substr(0, tag.size()) == tag) t.remove_prefix(tag.size());
  }
  return t;
}

// The column layout a table header announces.
struct Layout {
  std::vector<std::string> header;  // the header's tokens, for comparing two headers
  int type = -1, redop = -1, root = -1;
  struct Half {
    int time = -1, algbw = -1, busbw = -1, wrong = -1;
  };
  Half half[2];
  bool wrong_is_count = true;  // "#wrong" (a count) or "error" (older: a max deviation)
  int data_tokens = 0;         // tokens a data row has
};

// Reads the "#  size  count  type  redop  root  time algbw busbw #wrong …" header; returns
// an explanation when the columns are not ones this reader knows.
std::string read_layout(const std::vector<std::string_view>& tokens, Layout& layout) {
  layout = Layout{};
  for (auto t : tokens) layout.header.emplace_back(t);
  int half = -1;
  bool timestamp = false;
  for (int i = 2; i < static_cast<int>(tokens.size()); ++i) {
    std::string_view t = tokens[static_cast<std::size_t>(i)];
    if (t == "time" || t == "cputime") {
      if (++half > 1) return "more than two time columns";
      layout.half[half].time = i;
    } else if (half < 0) {
      if (t == "type") layout.type = i;
      else if (t == "redop") layout.redop = i;
      else if (t == "root") layout.root = i;
      else return "unknown column \"" + std::string(t) + "\" before the first time column";
    } else if (t == "algbw") {
      layout.half[half].algbw = i;
    } else if (t == "busbw") {
      layout.half[half].busbw = i;
    } else if (t == "#wrong" || t == "error") {
      layout.half[half].wrong = i;
      layout.wrong_is_count = t == "#wrong";
    } else if (t == "timestamp") {
      timestamp = true;
    }  // -I's i_min i_max i_p99 i_cv% are read past
  }
  if (layout.type < 0) return "no type column";
  if (half != 1) return "expected an out-of-place and an in-place group of columns";
  for (const auto& h : layout.half) {
    if (h.algbw < 0 || h.busbw < 0 || h.wrong < 0) return "a time column without algbw, busbw and #wrong/error";
  }
  // A -S timestamp is one header word and two data words (date and time).
  layout.data_tokens = static_cast<int>(tokens.size()) + (timestamp ? 1 : 0);
  return "";
}

std::string env_value(std::string_view line, std::string_view key) {
  // "NCCL_ALGO=Ring" (a command line or JSON env) or "NCCL_ALGO set by environment to Ring" (NCCL INFO).
  std::size_t at = line.find(key);
  if (at == std::string_view::npos) return "";
  std::string_view rest = line.substr(at + key.size());
  if (!rest.empty() && rest.front() == '=') {
    rest.remove_prefix(1);
  } else {
    constexpr std::string_view said = " set by environment to ";
    if (rest.substr(0, said.size()) != said) return "";
    rest.remove_prefix(said.size());
  }
  auto words = split_ws(rest);
  if (words.empty()) return "";
  std::string v(words.front());
  while (!v.empty() && (v.back() == ',' || v.back() == '.' || v.back() == '"')) v.pop_back();
  return v;
}

class TextReader {
 public:
  TextReader(std::string_view text, const std::string& origin, std::string_view collective) : text_(text) {
    log_.origin = origin;
    hint_ = collective;
  }

  NcclTestsResult read() {
    int line_no = 0;
    std::size_t pos = 0;
    int last_row_line = 0;
    while (pos <= text_.size()) {
      std::size_t nl = text_.find('\n', pos);
      std::string_view raw = text_.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
      pos = nl == std::string_view::npos ? text_.size() + 1 : nl + 1;
      ++line_no;
      std::string_view line = trim(strip_rank_tag(raw));
      if (line.empty()) continue;
      note_environment(line);
      if (line.front() == '#') {
        if (auto e = comment(line.substr(1), line_no)) return *e;
        continue;
      }
      if (line.find("NCCL INFO") != std::string_view::npos || line.find("NCCL WARN") != std::string_view::npos ||
          line.substr(0, 12) == "NCCL version")
        continue;
      auto tokens = split_ws(line);
      if (tokens.empty() || !all_digits(tokens.front())) {
        if (line.front() == '{' || line.front() == '[' || line.front() == '"')
          return error(line_no, "JSON inside a text log (mixed formats): give the -J report and the text log as two files");
        continue;  // launcher and shell noise between tables
      }
      if (!layout_) {
        return error(line_no,
                     "data row before any table header: the log must keep the '#  size  count  type …' header line "
                     "that says which columns follow");
      }
      if (footer_line_ > 0) {
        return error(line_no, "data row after the table's footer at line " + std::to_string(footer_line_) +
                                  " (one nccl-tests run per file)");
      }
      if (auto e = row(tokens, line_no)) return *e;
      last_row_line = line_no;
    }
    if (!layout_) return error(0, "no nccl-tests table: no '#  size  count  type …' header line");
    if (footer_line_ == 0) {
      int at = last_row_line > 0 ? last_row_line : header_line_;
      return error(at, "the log ends inside the table (no '# Out of bounds values' footer after its last row): "
                       "was it cut mid-table?");
    }
    if (log_.rows.empty()) {
      return error(header_line_, "the table has no readable rows (" + std::to_string(log_.skipped_rows) + " skipped)");
    }
    if (log_.collective.empty()) log_.collective = std::string(hint_);
    if (log_.collective.empty()) {
      return error(0, "which collective was measured? the log has no '# Collective test starting: <binary>' line "
                      "(older nccl-tests print none); name it (calibrate: --collective all_reduce)");
    }
    log_.ranks = ranks_;
    log_.nodes = static_cast<int>(hosts_.size());
    if (log_.algorithm.empty()) log_.algorithm = "auto";
    if (log_.protocol.empty()) log_.protocol = "auto";
    return std::move(log_);
  }

 private:
  LogError error(int line, std::string message) const { return LogError{log_.origin, line, std::move(message)}; }

  void warn(int line, const std::string& message) {
    ++log_.skipped_rows;
    log_.warnings.push_back(log_.origin + ":" + std::to_string(line) + ": warning: " + message + "; row skipped");
  }

  void note_environment(std::string_view line) {
    if (std::string v = env_value(line, "NCCL_ALGO"); !v.empty()) log_.algorithm = v;
    if (std::string v = env_value(line, "NCCL_PROTO"); !v.empty()) log_.protocol = v;
  }

  std::optional<LogError> comment(std::string_view body, int line_no) {
    body = trim(body);
    auto tokens = split_ws(body);
    if (tokens.empty()) return std::nullopt;
    constexpr std::string_view starting = "Collective test starting:";
    if (body.substr(0, starting.size()) == starting) {
      if (layout_) {
        return error(line_no, "a second nccl-tests run starts here (the first table's header is at line " +
                                  std::to_string(header_line_) + "); split the log, one run per file");
      }
      std::string c = collective_of_binary(trim(body.substr(starting.size())));
      if (c.empty()) {
        return error(line_no, "unknown nccl-tests binary \"" + std::string(trim(body.substr(starting.size()))) +
                                  "\" (valid: all_reduce_perf, all_gather_perf, reduce_scatter_perf, alltoall_perf, "
                                  "broadcast_perf, reduce_perf, sendrecv_perf)");
      }
      log_.collective = c;
      return std::nullopt;
    }
    if (tokens[0] == "Rank" && !layout_) {
      // "#  Rank  0 Group  0 Pid  12345 on   host device  0 [0000:18:00] NVIDIA H100 80GB HBM3"
      ++ranks_;
      for (std::size_t i = 0; i + 1 < tokens.size(); ++i) {
        if (tokens[i] == "on") {
          hosts_.insert(std::string(tokens[i + 1]));
          break;
        }
      }
      if (std::size_t close = body.find(']'); close != std::string_view::npos && log_.gpu_name.empty())
        log_.gpu_name = std::string(trim(body.substr(close + 1)));
      return std::nullopt;
    }
    if (tokens.size() >= 2 && tokens[0] == "size" && tokens[1] == "count") {
      Layout layout;
      if (std::string why = read_layout(tokens, layout); !why.empty())
        return error(line_no, "table header not understood: " + why);
      if (layout_) {
        if (layout.header != layout_->header) {
          return error(line_no, "a table header with other columns than the one at line " +
                                    std::to_string(header_line_) + " (mixed nccl-tests formats in one file)");
        }
        if (!log_.rows.empty() || log_.skipped_rows > 0) {
          return error(line_no, "a second table starts here; split the log, one nccl-tests run per file");
        }
        return std::nullopt;  // several MPI processes printed the same header
      }
      layout_ = layout;
      header_line_ = line_no;
      log_.format = layout.wrong_is_count && layout.root >= 0 ? NcclTestsFormat::TEXT : NcclTestsFormat::TEXT_OLDER;
      return std::nullopt;
    }
    constexpr std::string_view oob = "Out of bounds values";
    if (body.substr(0, oob.size()) == oob && layout_) {
      footer_line_ = line_no;
      std::size_t colon = body.find(':');
      auto words = split_ws(colon == std::string_view::npos ? std::string_view{} : body.substr(colon + 1));
      std::uint64_t n = 0;
      if (words.empty() || !parse_u64(words[0], n)) return error(line_no, "unreadable 'Out of bounds values' footer");
      if (n > 0) {
        return error(line_no, "nccl-tests found " + std::to_string(n) +
                                  " out-of-bounds values: the run computed wrong results, its timings are not "
                                  "measurements of a correct collective");
      }
    }
    return std::nullopt;
  }

  std::optional<LogError> row(const std::vector<std::string_view>& tokens, int line_no) {
    const Layout& L = *layout_;
    if (static_cast<int>(tokens.size()) != L.data_tokens) {
      warn(line_no, "expected " + std::to_string(L.data_tokens) + " fields as the header at line " +
                        std::to_string(header_line_) + " announces, found " + std::to_string(tokens.size()));
      return std::nullopt;
    }
    auto at = [&](int i) { return tokens[static_cast<std::size_t>(i)]; };
    NcclTestsRow r;
    r.line = line_no;
    if (!parse_u64(at(0), r.size_bytes)) {
      warn(line_no, "size \"" + std::string(at(0)) + "\" is not a byte count");
      return std::nullopt;
    }
    if (!parse_u64(at(1), r.count)) {
      warn(line_no, "count \"" + std::string(at(1)) + "\" is not an element count");
      return std::nullopt;
    }
    r.type = std::string(at(L.type));
    if (L.redop >= 0) r.redop = std::string(at(L.redop));
    if (L.root >= 0) {
      int root = 0;
      if (!parse_int(at(L.root), root)) {
        warn(line_no, "root \"" + std::string(at(L.root)) + "\" is not an integer");
        return std::nullopt;
      }
      r.root = root;
    }
    static const char* const kHalf[] = {"out-of-place", "in-place"};
    for (int h = 0; h < 2; ++h) {
      const auto& cols = L.half[h];
      NcclTestsTiming t;
      struct Field {
        const char* name;
        int col;
        double* out;
      } fields[] = {{"time", cols.time, &t.time_us}, {"algbw", cols.algbw, &t.algbw_gbps}, {"busbw", cols.busbw, &t.busbw_gbps}};
      for (const auto& f : fields) {
        if (!parse_measure(at(f.col), *f.out)) {
          warn(line_no, std::string(kHalf[h]) + " " + f.name + " \"" + std::string(at(f.col)) +
                            "\" is not a non-negative number");
          return std::nullopt;
        }
      }
      std::string_view w = at(cols.wrong);
      if (w != "N/A") {
        double wrong = 0;
        if (!parse_measure(w, wrong)) {
          warn(line_no, std::string(kHalf[h]) + " " + (L.wrong_is_count ? "#wrong" : "error") + " \"" +
                            std::string(w) + "\" is not a number");
          return std::nullopt;
        }
        t.wrong = wrong;
        // Older logs print a maximum deviation in `error` (0e+00, or a rounding residue for
        // float sums); only a #wrong count says the result was wrong.
        if (L.wrong_is_count && wrong > 0) {
          return error(line_no, std::string(kHalf[h]) + " #wrong = " + std::string(w) +
                                    ": the run computed wrong results, its timings are not measurements of a "
                                    "correct collective");
        }
      }
      // algbw is size / time (reference §2.2): a row where it is not was garbled.
      if (t.time_us > 0) {
        double expect = static_cast<double>(r.size_bytes) / (t.time_us * 1e3);
        if (std::abs(expect - t.algbw_gbps) > 0.011 + 0.01 * expect) {
          std::ostringstream m;
          m << kHalf[h] << " algbw " << t.algbw_gbps << " GB/s disagrees with size/time = " << expect << " GB/s";
          warn(line_no, m.str());
          return std::nullopt;
        }
      }
      if (h == 0) r.out_of_place = t;
      else r.in_place = t;
    }
    log_.rows.push_back(std::move(r));
    return std::nullopt;
  }

  std::string_view text_;
  std::string_view hint_;
  NcclTestsLog log_;
  std::optional<Layout> layout_;
  int header_line_ = 0;
  int footer_line_ = 0;
  int ranks_ = 0;
  std::set<std::string> hosts_;
};

// ---------------------------------------------------------------- JSON (-J)

using nlohmann::json;

int line_of_byte(std::string_view text, std::size_t byte) {
  byte = std::min(byte, text.size());
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(byte), '\n'));
}

struct JsonProblem {
  std::string path;
  std::string message;
};

std::optional<double> number_at(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return std::nullopt;
  double v = it->get<double>();
  if (!std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

NcclTestsResult read_json(std::string_view text, const std::string& origin, std::string_view hint) {
  json doc;
  try {
    doc = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return LogError{origin, line_of_byte(text, e.byte == 0 ? 0 : e.byte - 1),
                    "not valid JSON (" + std::string(e.what()) + "); a -J report cut short?"};
  }
  auto fail = [&](const std::string& path, const std::string& message) {
    return LogError{origin, 0, path + ": " + message};
  };
  if (!doc.is_object()) return fail("(top level)", "expected the JSON object nccl-tests -J writes");
  NcclTestsLog log;
  log.origin = origin;
  log.format = NcclTestsFormat::JSON;
  log.algorithm = "auto";
  log.protocol = "auto";

  if (auto args = doc.find("args"); args != doc.end() && args->is_array() && !args->empty() && (*args)[0].is_string())
    log.collective = collective_of_binary((*args)[0].get<std::string>());
  if (log.collective.empty()) log.collective = std::string(hint);
  if (log.collective.empty())
    return fail("args[0]", "the nccl-tests binary (all_reduce_perf, …) is needed to know the collective");
  if (auto env = doc.find("env"); env != doc.end() && env->is_array()) {
    for (const auto& e : *env) {
      if (!e.is_string()) continue;
      const std::string s = e.get<std::string>();
      if (s.rfind("NCCL_ALGO=", 0) == 0) log.algorithm = env_value(s, "NCCL_ALGO");
      if (s.rfind("NCCL_PROTO=", 0) == 0) log.protocol = env_value(s, "NCCL_PROTO");
    }
  }
  if (auto config = doc.find("config"); config != doc.end() && config->is_object()) {
    // nccl-tests keeps the first device line of each process; every process drives
    // nthreads × ngpus GPUs.
    int per_process = 1;
    if (auto g = config->find("ngpus"); g != config->end() && g->is_number_integer()) per_process *= g->get<int>();
    if (auto t = config->find("nthreads"); t != config->end() && t->is_number_integer()) per_process *= t->get<int>();
    if (per_process < 1 || per_process > (1 << 20)) return fail("config.ngpus", "GPUs per process out of range");
    if (auto devices = config->find("devices"); devices != config->end() && devices->is_array()) {
      std::set<std::string> hosts;
      for (const auto& d : *devices) {
        if (!d.is_object()) continue;
        if (auto h = d.find("hostname"); h != d.end() && h->is_string()) hosts.insert(h->get<std::string>());
        if (auto n = d.find("device_info"); n != d.end() && n->is_string() && log.gpu_name.empty())
          log.gpu_name = n->get<std::string>();
      }
      if (devices->size() > static_cast<std::size_t>((1 << 20) / per_process))
        return fail("config.devices", "more than 2^20 GPUs");
      log.ranks = static_cast<int>(devices->size()) * per_process;
      log.nodes = static_cast<int>(hosts.size());
    }
  }
  if (auto oob = doc.find("out_of_bounds"); oob != doc.end() && oob->is_object()) {
    if (auto c = oob->find("count"); c != oob->end() && c->is_number() && c->get<double>() > 0)
      return fail("out_of_bounds.count", "nccl-tests found out-of-bounds values: the run computed wrong results");
  }
  auto results = doc.find("results");
  if (results == doc.end() || !results->is_array())
    return fail("results", "missing: the report has no results list (was the run interrupted?)");
  static const char* const kHalf[] = {"out_of_place", "in_place"};
  for (std::size_t i = 0; i < results->size(); ++i) {
    const json& r = (*results)[i];
    const std::string path = "results[" + std::to_string(i) + "]";
    auto skip = [&](const std::string& why) {
      ++log.skipped_rows;
      log.warnings.push_back(origin + ": warning: " + path + ": " + why + "; row skipped");
    };
    if (!r.is_object()) {
      skip("not an object");
      continue;
    }
    NcclTestsRow row;
    auto size = r.find("size");
    auto count = r.find("count");
    if (size == r.end() || !size->is_number_unsigned() || count == r.end() || !count->is_number_unsigned()) {
      skip("size and count must be non-negative integers");
      continue;
    }
    row.size_bytes = size->get<std::uint64_t>();
    row.count = count->get<std::uint64_t>();
    if (auto t = r.find("type"); t != r.end() && t->is_string()) row.type = t->get<std::string>();
    if (auto t = r.find("redop"); t != r.end() && t->is_string()) row.redop = t->get<std::string>();
    if (auto t = r.find("root"); t != r.end() && t->is_string()) {
      int root = 0;
      if (!parse_int(trim(t->get_ref<const std::string&>()), root)) {
        skip("root is not an integer");
        continue;
      }
      row.root = root;
    }
    bool ok = true;
    for (int h = 0; h < 2 && ok; ++h) {
      auto half = r.find(kHalf[h]);
      if (half == r.end() || half->is_null()) {
        if (h == 0) {
          skip(std::string(kHalf[h]) + " is missing");
          ok = false;
        }
        continue;
      }
      if (!half->is_object()) {
        skip(std::string(kHalf[h]) + " is not an object");
        ok = false;
        continue;
      }
      NcclTestsTiming t;
      auto time = number_at(*half, half->contains("cpu_time") ? "cpu_time" : "time");
      auto alg = number_at(*half, "alg_bw");
      auto bus = number_at(*half, "bus_bw");
      if (!time || !alg || !bus) {
        skip(std::string(kHalf[h]) + ": time, alg_bw and bus_bw must be non-negative numbers");
        ok = false;
        continue;
      }
      t.time_us = *time;
      t.algbw_gbps = *alg;
      t.busbw_gbps = *bus;
      if (auto w = half->find("nwrong"); w != half->end() && !w->is_null()) {
        if (!w->is_number()) {
          skip(std::string(kHalf[h]) + ".nwrong is not a number");
          ok = false;
          continue;
        }
        t.wrong = w->get<double>();
        if (*t.wrong > 0) {
          return fail(path + "." + kHalf[h] + ".nwrong",
                      "the run computed wrong results, its timings are not measurements of a correct collective");
        }
      }
      if (t.time_us > 0) {
        double expect = static_cast<double>(row.size_bytes) / (t.time_us * 1e3);
        if (std::abs(expect - t.algbw_gbps) > 0.011 + 0.01 * expect) {
          skip(std::string(kHalf[h]) + ".alg_bw disagrees with size/time");
          ok = false;
          continue;
        }
      }
      if (h == 0) row.out_of_place = t;
      else row.in_place = t;
    }
    if (ok) log.rows.push_back(std::move(row));
  }
  if (log.rows.empty()) return fail("results", "no readable rows (" + std::to_string(log.skipped_rows) + " skipped)");
  return log;
}

}  // namespace

const char* format_name(NcclTestsFormat f) {
  switch (f) {
    case NcclTestsFormat::TEXT: return "text";
    case NcclTestsFormat::TEXT_OLDER: return "text (older format)";
    case NcclTestsFormat::JSON: return "JSON";
  }
  return "?";
}

std::string to_string(const LogError& e) {
  return e.file + (e.line > 0 ? ":" + std::to_string(e.line) : std::string()) + ": error: " + e.message;
}

std::string collective_of_binary(std::string_view name) {
  if (std::size_t slash = name.find_last_of('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  constexpr std::string_view mpi = "_mpi";
  if (name.size() > mpi.size() && name.substr(name.size() - mpi.size()) == mpi) name.remove_suffix(mpi.size());
  constexpr std::string_view perf = "_perf";
  if (name.size() <= perf.size() || name.substr(name.size() - perf.size()) != perf) return "";
  name.remove_suffix(perf.size());
  for (std::string_view c : {"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv"}) {
    if (name == c) return std::string(c);
  }
  return "";
}

NcclTestsResult read_nccl_tests(std::string_view text, const std::string& origin, std::string_view collective) {
  std::string_view start = trim(text);
  while (!start.empty() && start.front() == '\n') start = trim(start.substr(1));
  NcclTestsResult r = !start.empty() && start.front() == '{' ? read_json(text, origin, collective)
                                                             : TextReader(text, origin, collective).read();
  auto* log = std::get_if<NcclTestsLog>(&r);
  if (log && !collective.empty() && log->collective != collective) {
    return LogError{origin, 0, "the log measured " + log->collective + ", not " + std::string(collective)};
  }
  return r;
}

}  // namespace trainsim::calibration
