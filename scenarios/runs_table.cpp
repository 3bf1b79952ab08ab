#include "scenarios/runs_table.hpp"

#include "scenarios/message_text.hpp"
#include "scenarios/input_file.hpp"
#include "scenarios/limits.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <utility>

#include <fmt/format.h>

namespace trainsim::scenarios {

namespace {

std::string_view trim(std::string_view s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

// A character as a message shows it: printable ones quoted, others by code.
std::string describe(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return fmt::format("'{}'", c);
  return fmt::format("character 0x{:02x}", u);
}

template <class T>
using Tokens = std::vector<std::pair<std::string, T>>;

std::vector<std::string> names_of(const auto& tokens) {
  std::vector<std::string> names;
  for (const auto& [name, value] : tokens) names.push_back(name);
  return names;
}

const Tokens<models::Family>& family_tokens() {
  static const Tokens<models::Family> t = {{"gpt", models::Family::GPT}, {"llama", models::Family::LLAMA}};
  return t;
}
const Tokens<strategies::Recompute>& recompute_tokens() {
  static const Tokens<strategies::Recompute> t = {{"none", strategies::Recompute::NONE},
                                                   {"selective", strategies::Recompute::SELECTIVE},
                                                   {"full", strategies::Recompute::FULL}};
  return t;
}
const Tokens<hardware::Dtype>& precision_tokens() {
  static const Tokens<hardware::Dtype> t = {
      {"fp16", hardware::Dtype::FP16}, {"bf16", hardware::Dtype::BF16}, {"fp8", hardware::Dtype::FP8}};
  return t;
}
const Tokens<bool>& attention_tokens() {
  static const Tokens<bool> t = {{"flash", true}, {"unfused", false}};
  return t;
}
const std::vector<std::string>& overlap_tokens() {
  static const std::vector<std::string> t = {"grad_reduce", "param_gather", "tp_comm"};
  return t;
}
const std::vector<std::string>& metric_tokens() {
  static const std::vector<std::string> t = {"iteration_time_s"};
  return t;
}

std::int64_t size_bound(std::string_view column) {
  if (column == "layers" || column == "vpp" || column == "first_stage_layers" || column == "last_stage_layers")
    return limits::LAYERS;
  if (column == "hidden") return limits::HIDDEN;
  if (column == "heads" || column == "kv_heads") return limits::HEADS;
  if (column == "ffn") return limits::FFN;
  if (column == "vocab") return limits::VOCAB;
  if (column == "seq") return limits::SEQUENCE;
  if (column == "gpus_per_node") return limits::GPUS_PER_NODE;
  if (column == "micro_batch" || column == "global_batch") return limits::BATCH;
  return limits::GPUS;  // gpus, tp, pp, dp, cp, ep
}

// The header: column name → field index.
using Header = std::map<std::string, std::size_t, std::less<>>;

// Reads the cells of one record; each problem becomes an error naming the column.
class RowReader {
 public:
  RowReader(const CsvRecord& record, const Header& header, const std::string& file, std::vector<TableError>& errors)
      : record_(record), header_(header), file_(file), errors_(errors) {}

  void error(const char* column, std::string message) {
    errors_.push_back({file_, record_.line, column, std::move(message)});
  }

  // The cell, trimmed; empty when the column is absent (only optional columns can be).
  std::string_view text(const char* column) const {
    auto it = header_.find(column);
    return it == header_.end() ? std::string_view() : trim(record_.fields[it->second]);
  }

  // An empty cell: nullopt, and an error when the column has no default.
  bool empty(const char* column, bool required, const std::string& valid) {
    if (!text(column).empty()) return false;
    if (required) error(column, fmt::format("empty, and this column has no default (valid: {})", valid));
    return true;
  }

  std::optional<std::int64_t> integer(const char* column, bool required, std::int64_t min, std::int64_t max,
                                      const std::string& valid) {
    if (empty(column, required, valid)) return std::nullopt;
    const std::string_view s = text(column);
    std::int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc::result_out_of_range) {
      error(column, fmt::format("{} is too large (valid: {})", s, valid));
      return std::nullopt;
    }
    if (ec != std::errc() || end != s.data() + s.size()) {
      error(column, fmt::format("\"{}\" is not a whole number (valid: {})", s, valid));
      return std::nullopt;
    }
    if (v < min || v > max) {
      error(column, fmt::format("{} is out of range (valid: {})", v, valid));
      return std::nullopt;
    }
    return v;
  }

  // A size, bounded as the scenario field it becomes (scenarios/limits.hpp): products of
  // sizes must stay far inside int64.
  std::optional<std::int64_t> size(const char* column, bool required, const char* example) {
    const std::int64_t bound = size_bound(column);
    return integer(column, required, 1, bound, fmt::format("a whole number from 1 to {}, e.g. {}", bound, example));
  }

  std::optional<double> positive(const char* column, double min, double max, const char* example) {
    const std::string valid = fmt::format("a number from {:g} to {:g}, e.g. {}", min, max, example);
    if (empty(column, true, valid)) return std::nullopt;
    const std::string_view s = text(column);
    double v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) {
      error(column, fmt::format("\"{}\" is not a number (valid: {})", s, valid));
      return std::nullopt;
    }
    if (!std::isfinite(v) || v < min || v > max) {
      error(column, fmt::format("{} is out of range (valid: {})", s, valid));
      return std::nullopt;
    }
    return v;
  }

  template <class T>
  std::optional<T> token(const char* column, bool required, const Tokens<T>& tokens) {
    const std::string valid = join(names_of(tokens));
    if (empty(column, required, valid)) return std::nullopt;
    const std::string_view s = text(column);
    for (const auto& [name, value] : tokens)
      if (s == name) return value;
    error(column, fmt::format("unknown {} \"{}\" (valid: {})", column, s, valid));
    return std::nullopt;
  }

  // A required token kept as text (gpu, metric).
  std::string word(const char* column, const std::vector<std::string>& tokens) {
    const std::string valid = join(tokens);
    if (empty(column, true, valid)) return "";
    const std::string s(text(column));
    if (std::find(tokens.begin(), tokens.end(), s) != tokens.end()) return s;
    error(column, fmt::format("unknown {} \"{}\" (valid: {})", column, s, valid));
    return "";
  }

  // Comma-separated overlap names; "none" alone says explicitly that nothing overlapped.
  std::optional<Overlap> overlap() {
    const char* column = "overlap";
    const std::string valid = fmt::format("none, or a comma-separated list of {}", join(overlap_tokens()));
    if (empty(column, false, valid)) return std::nullopt;
    const std::string_view s = text(column);
    if (s == "none") return Overlap{};
    Overlap o;
    bool ok = true;
    std::size_t start = 0;
    while (start <= s.size()) {
      std::size_t comma = s.find(',', start);
      if (comma == std::string_view::npos) comma = s.size();
      const std::string_view item = trim(s.substr(start, comma - start));
      if (item == "grad_reduce") {
        o.grad_reduce = true;
      } else if (item == "param_gather") {
        o.param_gather = true;
      } else if (item == "tp_comm") {
        o.tp_comm = true;
      } else {
        error(column, item.empty() ? fmt::format("\"{}\" has an empty item (valid: {})", s, valid)
                                   : fmt::format("unknown overlap \"{}\" (valid: {})", item, valid));
        ok = false;
      }
      start = comma + 1;
    }
    return ok ? std::optional<Overlap>(o) : std::nullopt;
  }

 private:
  const CsvRecord& record_;
  const Header& header_;
  const std::string& file_;
  std::vector<TableError>& errors_;
};

RunRow read_row(RowReader& r, int line) {
  RunRow row;
  row.line = line;
  if (!r.empty("name", true, "a name unique in the table")) row.name = std::string(r.text("name"));
  row.source = std::string(r.text("source"));
  row.notes = std::string(r.text("notes"));
  row.family = r.token("family", true, family_tokens()).value_or(models::Family::GPT);
  row.layers = r.size("layers", true, "24").value_or(0);
  row.hidden = r.size("hidden", true, "2304").value_or(0);
  row.heads = r.size("heads", true, "24").value_or(0);
  row.kv_heads = r.size("kv_heads", true, "8 (equal to heads without grouped-query attention)").value_or(0);
  row.ffn = r.size("ffn", true, "9216 (4 × hidden for GPT)").value_or(0);
  row.vocab = r.size("vocab", true, "51200").value_or(0);
  row.seq = r.size("seq", true, "2048").value_or(0);
  row.gpu = r.word("gpu", gpu_tokens());
  row.gpus = r.size("gpus", true, "32").value_or(0);
  row.gpus_per_node = r.size("gpus_per_node", true, "8").value_or(0);
  row.nic_gbps = r.positive("nic_gbps", limits::MIN_NIC_GBPS, limits::MAX_NIC_GBPS,
                            "200 (Gb/s per GPU)")
                     .value_or(0);
  row.tp = r.size("tp", true, "8").value_or(0);
  row.pp = r.size("pp", true, "4").value_or(0);
  row.dp = r.size("dp", false, "32");
  row.cp = r.size("cp", false, "1");
  row.ep = r.size("ep", false, "1");
  row.vpp = r.size("vpp", false, "2");
  row.first_stage_layers = r.size("first_stage_layers", false, "3");
  row.last_stage_layers = r.size("last_stage_layers", false, "3");
  row.micro_batch = r.size("micro_batch", false, "1");
  row.global_batch = r.size("global_batch", true, "512").value_or(0);
  row.recompute = r.token("recompute", false, recompute_tokens());
  if (auto sp = r.integer("sequence_parallel", false, 0, 1, "0 or 1")) row.sequence_parallel = *sp == 1;
  row.zero_stage = r.integer("zero_stage", false, 0, 3, "0, 1, 2 or 3 (1 = Megatron's distributed optimizer)");
  row.precision = r.token("precision", false, precision_tokens());
  row.flash_attention = r.token("attention", false, attention_tokens());
  row.overlap = r.overlap();
  row.metric = r.word("metric", metric_tokens());
  row.value = r.positive("value", limits::MIN_ITERATION_S, limits::MAX_ITERATION_S,
                         "3.528 (seconds per iteration)")
                  .value_or(0);
  if (row.seq > 0 && row.micro_batch &&
      *row.micro_batch * row.seq > limits::TOKENS_PER_MICRO_BATCH) {  // both ≤ 2^24: exact
    r.error("micro_batch", fmt::format("micro_batch × seq = {} × {} tokens per micro-batch is too many (at most {})",
                                       *row.micro_batch, row.seq, limits::TOKENS_PER_MICRO_BATCH));
  }
  return row;
}

}  // namespace

std::string TableError::str() const {
  std::string out = file;
  if (line > 0) out += fmt::format(":{}", line);
  out += warning ? ": warning: " : ": error: ";
  if (!column.empty()) out += fmt::format("column \"{}\": ", column);
  out += message;
  return out;
}

const std::vector<std::string>& required_columns() {
  static const std::vector<std::string> columns = {
      "name", "family", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq",
      "gpu", "gpus", "gpus_per_node", "nic_gbps", "tp", "pp", "dp", "cp", "ep", "vpp",
      "micro_batch", "global_batch", "recompute", "sequence_parallel", "zero_stage", "precision",
      "overlap", "metric", "value"};
  return columns;
}

const std::vector<std::string>& optional_columns() {
  static const std::vector<std::string> columns = {"first_stage_layers", "last_stage_layers", "attention"};
  return columns;
}

const std::vector<std::string>& known_columns() {
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> c = required_columns();
    c.insert(c.end(), optional_columns().begin(), optional_columns().end());
    c.insert(c.end(), {"source", "notes"});
    return c;
  }();
  return columns;
}

const std::vector<std::string>& gpu_tokens() {
  static const std::vector<std::string> tokens = {"v100-32gb", "a100-40gb", "a100-80gb", "h100-sxm",
                                                  "h800",      "h200",      "b200"};
  return tokens;
}

std::vector<CsvRecord> parse_csv(std::string_view text, const std::string& file, std::vector<TableError>& errors) {
  std::vector<CsvRecord> records;
  const std::size_t n = text.size();
  std::size_t i = 0;
  int line = 1;
  if (text.starts_with("\xEF\xBB\xBF")) i = 3;  // the byte-order mark spreadsheet exports start with
  const auto at_line_end = [&](std::size_t k) {
    return text[k] == '\n' || (text[k] == '\r' && k + 1 < n && text[k + 1] == '\n');
  };
  // Error recovery: drop the rest of the physical line.
  const auto skip_line = [&] {
    while (i < n && text[i] != '\n') ++i;
    if (i < n) {
      ++i;
      ++line;
    }
  };

  while (i < n) {
    CsvRecord record;
    record.line = line;
    bool ok = true;
    bool quoted_any = false;
    while (ok) {
      std::string field;
      if (text[i] == '"') {
        quoted_any = true;
        const int opened = line;
        bool closed = false;
        for (++i; i < n; ++i) {
          if (text[i] == '"') {
            if (i + 1 < n && text[i + 1] == '"') {
              field += '"';
              ++i;
              continue;
            }
            closed = true;
            ++i;
            break;
          }
          if (text[i] == '\n') ++line;
          field += text[i];
        }
        if (!closed) {
          errors.push_back({file, opened, "",
                            "a quoted field opened on this line is never closed (a quote inside a quoted field is "
                            "written twice: \"\")"});
          return records;  // the rest of the file is inside the quote
        }
        if (i < n && text[i] != ',' && !at_line_end(i)) {
          errors.push_back({file, line, "",
                            fmt::format("{} after a closing quote (a quote inside a quoted field is written twice: "
                                        "\"\"; a field is either quoted whole or not at all)",
                                        describe(text[i]))});
          ok = false;
          skip_line();
          break;
        }
      } else {
        while (i < n && text[i] != ',' && !at_line_end(i)) {
          if (text[i] == '"') {
            errors.push_back({file, line, "",
                              "a quote inside an unquoted field (enclose the whole field in double quotes and write "
                              "each quote in it twice: \"a \"\"b\"\" c\")"});
            ok = false;
            skip_line();
            break;
          }
          field += text[i++];
        }
        if (!ok) break;
      }
      record.fields.push_back(std::move(field));
      if (i < n && text[i] == ',') {
        ++i;
        if (i < n) continue;
        record.fields.emplace_back();  // "a,b," at the end of the text ends with an empty field
        break;
      }
      if (i < n) {  // the line break
        i += text[i] == '\r' ? 2 : 1;
        ++line;
      }
      break;
    }
    if (!ok) continue;
    if (!quoted_any && record.fields.size() == 1 && trim(record.fields[0]).empty()) continue;  // blank line
    records.push_back(std::move(record));
  }
  return records;
}

TableResult read_runs_table(std::string_view text, const std::string& file) {
  std::vector<TableError> errors;
  const std::vector<CsvRecord> records = parse_csv(text, file, errors);
  if (records.empty()) {
    if (errors.empty()) {
      errors.push_back({file, 1, "",
                        fmt::format("empty table: a header row naming the columns is required (required columns: {})",
                                    join(required_columns()))});
    }
    return errors;
  }

  const CsvRecord& first = records.front();
  const auto by_line = [](const TableError& a, const TableError& b) { return a.line < b.line; };
  Header header;
  std::vector<std::string> named_twice;
  for (std::size_t k = 0; k < first.fields.size(); ++k) {
    const std::string name(trim(first.fields[k]));
    if (name.empty()) continue;  // an unnamed column is an extra one, ignored
    if (!header.emplace(name, k).second) named_twice.push_back(name);
  }
  std::vector<std::string> missing;
  for (const auto& c : required_columns())
    if (!header.contains(c)) missing.push_back(c);
  if (missing.size() == required_columns().size()) {
    // The first record is data, not names: one error says so, rather than one per column.
    errors.push_back({file, first.line, "",
                      fmt::format("no header row: the first line must name the columns (required columns: {})",
                                  join(required_columns()))});
    std::stable_sort(errors.begin(), errors.end(), by_line);
    return errors;
  }
  std::vector<TableError> header_errors;
  for (const auto& c : missing) {
    header_errors.push_back({file, first.line, c,
                             "missing required column: add it to the header (where the source did not state a "
                             "value, leave the cell empty to use the default)"});
  }
  for (const auto& name : named_twice)
    header_errors.push_back({file, first.line, name, "named twice in the header (each column is named once)"});
  if (!header_errors.empty()) {
    // Without a usable header no cell can be read.
    errors.insert(errors.end(), header_errors.begin(), header_errors.end());
    std::stable_sort(errors.begin(), errors.end(), by_line);
    return errors;
  }

  RunsTable table;
  table.file = file;
  std::vector<std::string> unknown;
  for (const auto& [name, index] : header) {
    if (std::find(known_columns().begin(), known_columns().end(), name) == known_columns().end())
      unknown.push_back(fmt::format("\"{}\"", printable(name)));
  }
  if (!unknown.empty()) {
    table.warnings.push_back({file, first.line, "",
                              fmt::format("unknown column{} {} ignored (known columns: {})",
                                          unknown.size() == 1 ? "" : "s", join(unknown), join(known_columns())),
                              true});
  }
  std::map<std::string, int, std::less<>> first_line;  // row name → line that first used it
  for (std::size_t k = 1; k < records.size(); ++k) {
    const CsvRecord& record = records[k];
    if (record.fields.size() != first.fields.size()) {
      errors.push_back({file, record.line, "",
                        fmt::format("the record has {} fields, the header has {} (a field that holds a comma must be "
                                    "enclosed in double quotes)",
                                    record.fields.size(), first.fields.size())});
      continue;
    }
    RowReader reader(record, header, file, errors);
    RunRow row = read_row(reader, record.line);
    if (!row.name.empty()) {
      const auto [it, fresh] = first_line.emplace(row.name, record.line);
      if (!fresh) {
        reader.error("name", fmt::format("duplicate row name \"{}\" (first used on line {}; row names must be unique)",
                                         row.name, it->second));
      }
    }
    table.rows.push_back(std::move(row));
  }
  if (!errors.empty()) {
    std::stable_sort(errors.begin(), errors.end(), by_line);
    return errors;
  }
  return table;
}

TableResult read_runs_table_file(const std::string& path) {
  const InputFile read = read_input_file(path, MAX_RUNS_TABLE_BYTES);
  if (!read.ok()) return std::vector<TableError>{{path, 0, "", "cannot read file: " + read.error}};
  return read_runs_table(read.text, path);
}

}  // namespace trainsim::scenarios
