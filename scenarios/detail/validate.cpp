#include "scenarios/detail/validate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include <fmt/format.h>

#include "models/divisors.hpp"
#include "hardware/cluster.hpp"
#include "hardware/gpu_profile.hpp"
#include "hardware/node_presets.hpp"
#include "models/hf_config.hpp"
#include "models/model.hpp"
#include "models/presets.hpp"
#include "scenarios/detail/parse.hpp"
#include "scenarios/detail/schema.hpp"
#include "scenarios/input_file.hpp"
#include "scenarios/limits.hpp"
#include "models/shard_rules.hpp"
#include "strategies/layout_rules.hpp"
#include "strategies/parallel_layout.hpp"
#include "strategies/registry.hpp"

namespace trainsim::scenarios::detail {
namespace {

using Int = std::int64_t;
using MaybeInt = std::optional<Int>;

// Lists of valid values stop here; a longer list helps nobody read the message.
// Divisors are found by trial division up to the square root; numbers beyond this are
// no real model's and get no list (keeps the loader fast on hostile input).

// Products of user numbers can overflow int64 on hostile input; nullopt when they do.
MaybeInt multiply(Int a, Int b) {
  Int product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

// " (valid: …)" or nothing when there is nothing to list.
std::string valid_list(const std::string& values) { return values.empty() ? "" : fmt::format(" (valid: {})", values); }

std::string suggestion(const std::string& written, const std::vector<std::string>& names) {
  std::string guess = closest(written, names);
  return guess.empty() ? "" : fmt::format("; did you mean {}?", quote(guess));
}

class Validator {
 public:
  Validator(const Scenario& scenario, const std::string& file,
            const google::protobuf::TextFormat::ParseInfoTree* tree, std::string_view text, LayoutFields layout)
      : s_(scenario), file_(file), locator_(tree), text_(text), stand_in_(layout == LayoutFields::SEARCHED) {}

  LoadResult run() {
    resolve_training_sizes();
    resolve_model();
    resolve_cluster();
    check_training();
    resolve_parallel();
    check_batch();
    resolve_strategy();
    resolve_planning();
    if (errors_.empty()) check_resolved();
    if (errors_.empty()) check_scale();
    if (errors_.empty()) check_link_faults();
    if (!errors_.empty()) {
      // File order, as a compiler reports; errors without a position keep their order last.
      std::stable_sort(errors_.begin(), errors_.end(), [](const Diagnostic& a, const Diagnostic& b) {
        auto key = [](const Diagnostic& d) { return std::pair(d.line == 0 ? std::numeric_limits<int>::max() : d.line, d.column); };
        return key(a) < key(b);
      });
      return std::move(errors_);
    }
    return build();
  }

 private:
  void error(const std::string& path, std::string message) {
    auto [line, column] = locator_.locate(path);
    errors_.push_back({file_, line, column, path, std::move(message)});
  }
  void note(std::string message) { notes_.push_back(std::move(message)); }

  // A written size field (rule 4): its value when positive and within the field's bound
  // (scenarios/limits.hpp), else an error and nullopt.
  MaybeInt size(const std::string& path, Int value) {
    const Int bound = limits::for_field(path);
    if (value > 0 && (bound == 0 || value <= bound)) return value;
    if (value <= 0) {
      error(path, fmt::format("must be a positive integer, got {}", value));
    } else {
      error(path, fmt::format("{} is too large: at most {} (far beyond any real run; larger values would overflow "
                              "the simulator's arithmetic)",
                              value, bound));
    }
    return std::nullopt;
  }
  // A size field with a default: the written value, else the default (noted).
  MaybeInt size_or(const std::string& path, bool has, Int value, Int fallback) {
    if (has) return size(path, value);
    note(fmt::format("{} defaulted to {}", path, fallback));
    return fallback;
  }
  // A required size field; a missing one is reported saying `what` to give.
  MaybeInt required(const std::string& path, bool has, Int value, const char* what) {
    if (has) return size(path, value);
    error(path, fmt::format("missing: {}", what));
    return std::nullopt;
  }

  void resolve_training_sizes() {
    const Training& t = s_.training();
    if (!s_.has_training()) {
      error("training", "missing: give sequence_length and global_batch_size, e.g. "
                        "training { sequence_length: 2048 global_batch_size: 512 }");
    } else {
      sequence_ = required("training.sequence_length", t.has_sequence_length(), t.sequence_length(),
                           "give the tokens per sequence (e.g. 2048)");
      global_batch_ = required("training.global_batch_size", t.has_global_batch_size(), t.global_batch_size(),
                               "give the sequences per iteration (e.g. 512)");
    }
    micro_batch_ = size_or("training.micro_batch_size", t.has_micro_batch_size(), t.micro_batch_size(), 1);
  }

  void resolve_model() {
    const Model& m = s_.model();
    // The model's base shape comes from a preset or from a config.json, never both: which
    // one's values would the other's override?
    const bool base_named = !m.preset().empty() || !m.hf_config().empty();
    if (!m.preset().empty() && !m.hf_config().empty()) {
      error("model.hf_config", fmt::format("conflicts with model.preset {}: name the model by a preset or by a "
                                           "Hugging Face config.json, not both (drop one of them)",
                                           quote(m.preset())));
    } else if (!m.preset().empty()) {
      preset_ = models::find_preset(m.preset());
      if (!preset_) {
        error("model.preset", fmt::format("unknown model preset {}{} (known: {})", quote(m.preset()),
                                          suggestion(m.preset(), models::preset_names()),
                                          join(models::preset_names())));
      }
    } else if (!m.hf_config().empty()) {
      preset_ = read_hf_config(m.hf_config());
    }
    const models::ModelConfig* p = preset_ ? &*preset_ : nullptr;
    // Written fields override the preset's.
    auto field = [&](const char* path, bool has, Int value, Int preset_value) -> MaybeInt {
      if (has) return size(path, value);
      if (p != nullptr && preset_value > 0) return preset_value;
      return std::nullopt;
    };
    layers_ = field("model.num_layers", m.has_num_layers(), m.num_layers(), p ? p->layers : 0);
    hidden_ = field("model.hidden_size", m.has_hidden_size(), m.hidden_size(), p ? p->hidden : 0);
    heads_ = field("model.num_attention_heads", m.has_num_attention_heads(), m.num_attention_heads(),
                   p ? p->heads : 0);
    vocab_ = field("model.vocab_size", m.has_vocab_size(), m.vocab_size(), p ? p->vocab : 0);

    if (!base_named) {
      const std::string need = fmt::format(
          "without a preset the model needs num_layers, hidden_size, num_attention_heads and vocab_size "
          "(or name a preset: {})",
          join(models::preset_names()));
      if (!s_.has_model()) {
        error("model", "missing: " + need);
      } else {
        if (!m.has_num_layers()) error("model.num_layers", "missing: " + need);
        if (!m.has_hidden_size()) error("model.hidden_size", "missing: " + need);
        if (!m.has_num_attention_heads()) error("model.num_attention_heads", "missing: " + need);
        if (!m.has_vocab_size()) error("model.vocab_size", "missing: " + need);
      }
    }

    bool family_known = true;
    switch (m.family()) {
      case FAMILY_UNSPECIFIED:
        if (p != nullptr) {
          family_ = p->family;
        } else {
          family_ = models::Family::GPT;
          note("model.family defaulted to GPT");
        }
        break;
      case GPT: family_ = models::Family::GPT; break;
      case LLAMA: family_ = models::Family::LLAMA; break;
      default:
        family_known = false;
        error("model.family", unknown_enum_message(Family_descriptor(), std::to_string(m.family()), true));
    }

    // Grouped-query attention: a multi-head preset keeps groups = heads when heads change.
    if (m.has_num_query_groups()) {
      kv_ = size("model.num_query_groups", m.num_query_groups());
    } else if (p != nullptr && p->kv_heads > 0 && !(m.has_num_attention_heads() && p->kv_heads == p->heads)) {
      kv_ = p->kv_heads;
    } else if (heads_) {
      kv_ = heads_;
      note(fmt::format("model.num_query_groups defaulted to num_attention_heads = {}", *heads_));
    }

    // GPT's MLP is 4 × hidden; a GPT preset keeps that ratio when hidden_size changes.
    if (m.has_ffn_hidden_size()) {
      ffn_ = size("model.ffn_hidden_size", m.ffn_hidden_size());
    } else if (p != nullptr && p->ffn_hidden > 0 &&
               !(family_ == models::Family::GPT && m.has_hidden_size() && p->ffn_hidden == 4 * p->hidden)) {
      ffn_ = p->ffn_hidden;
    } else if (family_ == models::Family::GPT) {
      if (hidden_) {
        ffn_ = multiply(4, *hidden_);
        if (ffn_) note(fmt::format("model.ffn_hidden_size defaulted to 4 × hidden_size = {}", *ffn_));
      }
    } else if (family_known && s_.has_model()) {
      error("model.ffn_hidden_size",
            "missing: LLAMA models need it (SwiGLU's inner size is no fixed multiple of hidden_size; "
            "e.g. 28672 for Llama-3-70B)");
    }

    // GPT learns a position table; LLAMA's rotary embeddings have none.
    if (family_ == models::Family::GPT) {
      if (m.has_max_position_embeddings()) {
        positions_ = size("model.max_position_embeddings", m.max_position_embeddings());
      } else if (p != nullptr && p->family == models::Family::GPT && p->max_positions > 0) {
        positions_ = p->max_positions;
      } else if (sequence_) {
        positions_ = sequence_;
        note(fmt::format("model.max_position_embeddings defaulted to training.sequence_length = {}", *sequence_));
      }
    } else {
      if (m.has_max_position_embeddings() && size("model.max_position_embeddings", m.max_position_embeddings())) {
        note("model.max_position_embeddings ignored: LLAMA models use rotary position embeddings, no table");
      }
      positions_ = 0;
    }

    if (hidden_ && heads_) {
      if (auto e = models::heads_divide_hidden(*heads_, *hidden_); !e.empty())
        error(m.has_num_attention_heads() || !m.has_hidden_size() ? "model.num_attention_heads" : "model.hidden_size",
              fmt::format("{} (each head takes an equal share of hidden_size; valid num_attention_heads: {})", e,
                          models::divisor_list(*hidden_, *hidden_)));
    }
    if (heads_ && kv_) {
      if (auto e = models::kv_heads_divide_heads(*kv_, *heads_); !e.empty())
        error(m.has_num_query_groups() ? "model.num_query_groups" : "model.num_attention_heads",
              e + valid_list(models::divisor_list(*heads_, *heads_)));
    }
  }

  // The model a Hugging Face config.json describes; nullopt (and an error at model.hf_config)
  // when it cannot be read or is not a config the models layer accepts.
  std::optional<models::ModelConfig> read_hf_config(const std::string& written) {
    namespace fs = std::filesystem;
    // Relative to the scenario, not to the working directory: a scenario and its config
    // travel together, and the scenario must load the same from wherever it is run.
    fs::path path(written);
    const bool relative = path.is_relative();
    if (relative) path = fs::path(file_).parent_path() / path;
    const std::string shown = path.string();
    // A Hugging Face config.json is a few kilobytes; far more is not one.
    const InputFile text = read_input_file(shown, MAX_HF_CONFIG_BYTES);
    if (!text.ok()) {
      error("model.hf_config",
            fmt::format("cannot read Hugging Face config \"{}\": {}{}", printable(shown), text.error,
                        relative ? " (a relative hf_config is read from the scenario file's folder)" : ""));
      return std::nullopt;
    }
    auto parsed = models::parse_hf_config(text.text, shown);
    if (const std::string* message = std::get_if<std::string>(&parsed)) {
      error("model.hf_config", *message);
      return std::nullopt;
    }
    models::ModelConfig model = std::get<models::ModelConfig>(std::move(parsed));
    note(fmt::format("model.hf_config: {} read from {}", model.name, shown));
    inputs_.push_back(shown);
    return model;
  }

  void resolve_cluster() {
    const Cluster& c = s_.cluster();
    if (!s_.has_cluster()) {
      error("cluster", fmt::format("missing: name a node preset and the node count, e.g. cluster {{ preset: "
                                   "\"dgx-h100\" nodes: 4 }} (node presets: {})",
                                   join(hardware::node_preset_names())));
      return;
    }
    bool preset_named = !c.preset().empty();
    if (preset_named) {
      node_ = hardware::find_node_preset(c.preset());
      if (!node_) {
        error("cluster.preset", fmt::format("unknown node preset {}{} (known: {})", quote(c.preset()),
                                            suggestion(c.preset(), hardware::node_preset_names()),
                                            join(hardware::node_preset_names())));
      }
    }

    std::string& gpu_name = gpu_name_;
    if (node_) {
      gpu_name = node_->gpu;
      if (!c.gpu().empty() && c.gpu() != node_->gpu) {
        error("cluster.gpu", fmt::format("{} conflicts with node preset {}, whose GPU is {}: drop cluster.gpu, "
                                         "or drop cluster.preset and give gpu and gpus_per_node",
                                         quote(c.gpu()), quote(node_->name), quote(node_->gpu)));
      }
    } else if (!c.gpu().empty()) {
      gpu_name = c.gpu();
    } else if (!preset_named && c.profile().empty()) {
      error("cluster.gpu", fmt::format("missing: name a node preset (cluster.preset: {}) or a GPU profile "
                                       "(cluster.gpu: {}, or a profile file in cluster.profile) with gpus_per_node",
                                       join(hardware::node_preset_names()), join(hardware::profile_names())));
    }
    if (!c.profile().empty() && !c.gpu().empty()) {
      error("cluster.profile", fmt::format("conflicts with cluster.gpu {}: a profile file replaces the named GPU "
                                           "profile; keep one of them",
                                           quote(c.gpu())));
    } else if (!c.profile().empty()) {
      gpu_ = read_profile_file(c.profile());
      if (gpu_) {
        gpu_name = gpu_->name();  // reports name the profile that was used
        return resolve_cluster_sizes(c);
      }
      gpu_name.clear();  // the error is reported at cluster.profile; do not report the preset's GPU too
    }
    if (!gpu_name.empty()) {
      gpu_ = hardware::find_profile(gpu_name);
      if (!gpu_ && node_) {
        error("cluster.preset", fmt::format("node preset {} names GPU profile {}, which is not shipped (known: {})",
                                            quote(node_->name), quote(gpu_name), join(hardware::profile_names())));
      } else if (!gpu_) {
        error("cluster.gpu", fmt::format("unknown GPU profile {}{} (known: {})", quote(gpu_name),
                                         suggestion(gpu_name, hardware::profile_names()),
                                         join(hardware::profile_names())));
      }
    }

    resolve_cluster_sizes(c);
  }

  // A GPU cost profile from a file (cluster.profile); nullopt (and an error at
  // cluster.profile) when it cannot be read or is not a valid profile.
  std::optional<hardware::GpuProfile> read_profile_file(const std::string& written) {
    namespace fs = std::filesystem;
    // Relative to the scenario, as model.hf_config: the scenario and its calibrated
    // profile travel together.
    fs::path path(written);
    const bool relative = path.is_relative();
    if (relative) path = fs::path(file_).parent_path() / path;
    const std::string shown = path.string();
    const InputFile text = read_input_file(shown, MAX_PROFILE_BYTES);
    if (!text.ok()) {
      error("cluster.profile",
            fmt::format("cannot read GPU profile \"{}\": {}{}", printable(shown), text.error,
                        relative ? " (a relative profile is read from the scenario file's folder)" : ""));
      return std::nullopt;
    }
    hardware::GpuProfile profile;
    if (std::string message = hardware::parse_profile(text.text, shown, profile); !message.empty()) {
      error("cluster.profile", fmt::format("not a valid GPU profile (hardware/profile.proto):\n{}", message));
      return std::nullopt;
    }
    note(fmt::format("cluster.profile: GPU profile {} read from {}", quote(profile.name()), shown));
    inputs_.push_back(shown);
    return profile;
  }

  void resolve_cluster_sizes(const Cluster& c) {
    const bool preset_named = !c.preset().empty();
    if (c.has_gpus_per_node()) {
      gpus_per_node_ = size("cluster.gpus_per_node", c.gpus_per_node());
      if (node_ && gpus_per_node_ && *gpus_per_node_ != node_->gpus_per_node) {
        error("cluster.gpus_per_node", fmt::format("gpus_per_node={} conflicts with node preset {}, which has {} "
                                                   "GPUs per node: drop one of them",
                                                   *gpus_per_node_, quote(node_->name), node_->gpus_per_node));
        gpus_per_node_.reset();
      }
    } else if (node_) {
      gpus_per_node_ = node_->gpus_per_node;
    } else if (!preset_named) {
      error("cluster.gpus_per_node", "missing: without a node preset, give the GPUs per node (e.g. 8)");
    }

    nodes_ = required("cluster.nodes", c.has_nodes(), c.nodes(), "give the number of nodes");
    if (nodes_ && gpus_per_node_) {
      gpus_ = multiply(*nodes_, *gpus_per_node_);
      if (!gpus_ || *gpus_ > limits::GPUS) {
        error("cluster.nodes", fmt::format("nodes={} × gpus_per_node={} GPUs is more than any cluster holds (at most "
                                           "{} GPUs)",
                                           *nodes_, *gpus_per_node_, limits::GPUS));
        gpus_.reset();
      }
    }

    const FatTree& tree = c.fabric().fat_tree();
    if (tree.has_nic_gbps()) {
      if (std::isfinite(tree.nic_gbps()) && tree.nic_gbps() >= limits::MIN_NIC_GBPS &&
          tree.nic_gbps() <= limits::MAX_NIC_GBPS) {
        nic_gbps_ = tree.nic_gbps();
      } else {
        error("cluster.fabric.fat_tree.nic_gbps",
              fmt::format("must be a number of Gb/s per GPU NIC from {} to {}, got {}", limits::MIN_NIC_GBPS,
                          limits::MAX_NIC_GBPS, tree.nic_gbps()));
      }
    } else if (node_) {
      nic_gbps_ = node_->nic_gbps;
      note(fmt::format("cluster.fabric.fat_tree.nic_gbps defaulted to {} (the NIC rate of {})", node_->nic_gbps,
                       node_->name));
    } else if (!preset_named) {
      error("cluster.fabric.fat_tree.nic_gbps",
            "missing: without a node preset, give each GPU's NIC line rate in Gb/s "
            "(e.g. 200 for HDR InfiniBand, 400 for NDR)");
    }
    if (tree.has_oversubscription()) {
      if (std::isfinite(tree.oversubscription()) && tree.oversubscription() >= 1 &&
          tree.oversubscription() <= limits::MAX_OVERSUBSCRIPTION) {
        oversubscription_ = tree.oversubscription();
      } else {
        error("cluster.fabric.fat_tree.oversubscription",
              fmt::format("must be from 1 to {} (leaf down/up bandwidth ratio; 1 is non-blocking), got {}",
                          limits::MAX_OVERSUBSCRIPTION, tree.oversubscription()));
      }
    } else {
      oversubscription_ = 1.0;
      note("cluster.fabric.fat_tree.oversubscription defaulted to 1 (non-blocking)");
    }
    nodes_per_leaf_ = size_or("cluster.fabric.fat_tree.nodes_per_leaf", tree.has_nodes_per_leaf(),
                              tree.nodes_per_leaf(), 32);
    resolve_fabric(c.fabric());
  }

  // The fabric's kind and levels, and the faults whose names only the built topology can
  // check (check_link_faults).
  void resolve_fabric(const Fabric& f) {
    if (f.kind().empty() || f.kind() == "rail-optimized") {
      fabric_kind_ = hardware::FabricKind::RAIL_OPTIMIZED;
    } else if (f.kind() == "fat-tree") {
      fabric_kind_ = hardware::FabricKind::FAT_TREE;
    } else {
      error("cluster.fabric.kind", fmt::format("unknown fabric kind {} (valid: \"rail-optimized\", \"fat-tree\")",
                                               quote(f.kind())));
    }
    if (f.has_levels()) {
      const bool rail = fabric_kind_ == hardware::FabricKind::RAIL_OPTIMIZED;
      if (rail ? f.levels() == 2 : (f.levels() == 2 || f.levels() == 3)) {
        fabric_levels_ = f.levels();
      } else {
        error("cluster.fabric.levels",
              fmt::format("{} switch levels: a {} fabric has {}", f.levels(), hardware::fabric_kind_name(fabric_kind_),
                          rail ? "2 (leaf and spine)" : "2 (leaf, spine) or 3 (leaf, aggregation, core)"));
      }
    }
    if (f.has_leaves_per_pod()) {
      if (f.leaves_per_pod() < 1 || f.leaves_per_pod() > limits::GPUS) {
        error("cluster.fabric.leaves_per_pod",
              fmt::format("must be a positive integer of at most {}, got {}", limits::GPUS, f.leaves_per_pod()));
      } else if (fabric_levels_ != 3) {
        error("cluster.fabric.leaves_per_pod", "only a three-level fat tree has pods: add levels: 3 and "
                                               "kind: \"fat-tree\", or drop leaves_per_pod");
      } else {
        leaves_per_pod_ = f.leaves_per_pod();
      }
    }
    for (int i = 0; i < f.link_fault_size(); ++i) {
      const LinkFault& lf = f.link_fault(i);
      const std::string at = fmt::format("cluster.fabric.link_fault[{}]", i);
      if (lf.from().empty() || lf.to().empty()) {
        error(at + (lf.from().empty() ? ".from" : ".to"),
              "missing: name both ends of the cable, e.g. from: \"leaf0\" to: \"spine0\"");
        continue;
      }
      if (lf.from() == lf.to()) {
        error(at + ".to", fmt::format("{} is both ends: name two different vertices", quote(lf.to())));
        continue;
      }
      const double fraction = lf.has_bandwidth_fraction() ? lf.bandwidth_fraction() : 0.0;
      if (!(std::isfinite(fraction) && fraction >= 0 && fraction < 1)) {
        error(at + ".bandwidth_fraction",
              fmt::format("must be 0 (failed) or above 0 and below 1 (degraded to that fraction), got {}", fraction));
        continue;
      }
      link_faults_.push_back({lf.from(), lf.to(), fraction});
    }
  }

  // Names must be vertices of the topology, joined by a link, and the faults must leave it
  // connected: building the cluster is the check.
  void check_link_faults() {
    if (link_faults_.empty()) return;
    const LoadedScenario s = build();
    try {
      hardware::Cluster(s.cluster, s.gpu);
      return;
    } catch (const std::invalid_argument&) {
      // Find the first fault that breaks it, to point at its line.
    }
    for (std::size_t i = 0; i < link_faults_.size(); ++i) {
      hardware::ClusterSpec one = s.cluster;
      one.link_faults.assign(link_faults_.begin(), link_faults_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
      try {
        hardware::Cluster(one, s.gpu);
      } catch (const std::invalid_argument& e) {
        std::string what = e.what();
        if (what.rfind("cluster spec: ", 0) == 0) what.erase(0, std::strlen("cluster spec: "));
        error(fmt::format("cluster.fabric.link_fault[{}]", i), what);
        return;
      }
    }
  }

  void resolve_planning() {
    const Planning& p = s_.planning();
    // At least one iteration's tokens: fewer would plan zero iterations.
    const double iteration_tokens = sequence_ && global_batch_
                                        ? static_cast<double>(*sequence_) * static_cast<double>(*global_batch_)
                                        : 1.0;
    if (p.has_train_tokens()) {
      if (std::isfinite(p.train_tokens()) && p.train_tokens() >= iteration_tokens &&
          p.train_tokens() <= limits::MAX_TRAIN_TOKENS)
        train_tokens_ = p.train_tokens();
      else
        error("planning.train_tokens",
              fmt::format("must be a number of tokens from one iteration's (global_batch_size × sequence_length = "
                          "{:.0f}) to {:g}, got {}",
                          iteration_tokens, limits::MAX_TRAIN_TOKENS, p.train_tokens()));
    } else if (iteration_tokens > train_tokens_) {
      train_tokens_ = iteration_tokens;
      note(fmt::format("planning.train_tokens defaulted to one iteration's tokens, {:.0f} (more than the usual "
                       "1e12)",
                       iteration_tokens));
    } else {
      note("planning.train_tokens defaulted to 1e12 (planning figures are for one trillion tokens)");
    }
    if (p.has_price_per_gpu_hour()) {
      if (std::isfinite(p.price_per_gpu_hour()) && p.price_per_gpu_hour() > 0 &&
          p.price_per_gpu_hour() <= limits::MAX_PRICE_PER_GPU_HOUR)
        price_per_gpu_hour_ = p.price_per_gpu_hour();
      else
        error("planning.price_per_gpu_hour", fmt::format("must be a positive price per GPU-hour of at most {:g}, got {}",
                                                         limits::MAX_PRICE_PER_GPU_HOUR, p.price_per_gpu_hour()));
    }
  }

  void check_training() {
    const Training& t = s_.training();
    switch (t.precision()) {
      case PRECISION_UNSPECIFIED:
        dtype_ = hardware::Dtype::BF16;
        note("training.precision defaulted to BF16");
        break;
      case BF16: dtype_ = hardware::Dtype::BF16; break;
      case FP16: dtype_ = hardware::Dtype::FP16; break;
      case FP8: dtype_ = hardware::Dtype::FP8; break;
      default:
        error("training.precision", unknown_enum_message(Precision_descriptor(), std::to_string(t.precision()), true));
    }
    if (dtype_ == hardware::Dtype::FP8 && gpu_ && !(gpu_->peak_fp8_flops().value() > 0)) {
      error("training.precision", fmt::format("FP8 needs FP8 tensor cores, which GPU {} lacks (its profile's "
                                              "peak_fp8_flops is 0); use BF16 or FP16",
                                              quote(gpu_->name())));
    }
    switch (t.attention()) {
      case ATTENTION_UNSPECIFIED:
        note("training.attention defaulted to FLASH (a fused attention kernel, as Megatron-Core, Transformer Engine "
             "and PyTorch SDPA use)");
        break;
      case FLASH: break;
      case UNFUSED: flash_attention_ = false; break;
      default:
        error("training.attention", unknown_enum_message(Attention_descriptor(), std::to_string(t.attention()), true));
    }
    if (t.has_accumulate_allreduce_grads_in_fp32()) {
      accumulate_grads_in_fp32_ = t.accumulate_allreduce_grads_in_fp32();
    } else if (dtype_) {
      note(*dtype_ == hardware::Dtype::FP16
               ? "training.accumulate_allreduce_grads_in_fp32 defaulted to false with FP16 (gradients accumulated and "
                 "reduced in FP16, as Megatron-LM does unless --accumulate-allreduce-grads-in-fp32)"
               : "training.accumulate_allreduce_grads_in_fp32 defaulted to true with BF16 and FP8 (gradients "
                 "accumulated and reduced in fp32, as Megatron-LM does unless --grad-reduce-in-bf16)");
    }
    if (!t.has_gradient_accumulation_fusion())
      note("training.gradient_accumulation_fusion defaulted to true (weight-gradient GEMMs add into the gradient "
           "buffer, as Megatron-LM does unless --no-gradient-accumulation-fusion)");
    switch (t.optimizer()) {
      case OPTIMIZER_UNSPECIFIED: note("training.optimizer defaulted to ADAM"); break;
      case ADAM: break;
      case SGD: optimizer_ = strategies::Optimizer::SGD; break;
      default:
        error("training.optimizer", unknown_enum_message(Optimizer_descriptor(), std::to_string(t.optimizer()), true));
    }
    if (family_ == models::Family::GPT && sequence_ && positions_ && *sequence_ > *positions_) {
      error("training.sequence_length",
            fmt::format("sequence_length={} exceeds the model's max_position_embeddings={} (GPT learns one "
                        "position embedding per token position): use sequence_length ≤ {} or set "
                        "model.max_position_embeddings",
                        *sequence_, *positions_, *positions_));
    }
  }

  void resolve_parallel() {
    if (stand_in_) {
      tensor_ = pipeline_ = virtual_stages_ = 1;
      data_ = gpus_;
    } else {
      resolve_written_layout();
    }
    resolve_other_dimensions();
  }

  void resolve_written_layout() {
    const Parallel& p = s_.parallel();
    tensor_ = size_or("parallel.tensor", p.has_tensor(), p.tensor(), 1);
    pipeline_ = size_or("parallel.pipeline", p.has_pipeline(), p.pipeline(), 1);
    virtual_stages_ = size_or("parallel.virtual_stages", p.has_virtual_stages(), p.virtual_stages(), 1);
    MaybeInt tp = tensor_ && pipeline_ ? multiply(*tensor_, *pipeline_) : std::nullopt;

    if (p.has_data()) {
      data_ = size("parallel.data", p.data());
      if (data_ && tp && gpus_) {
        MaybeInt product = multiply(*tp, *data_);
        if (product != gpus_) {
          error("parallel.data", strategies::layout_product_mismatch(
                                     {{"tensor", *tensor_}, {"pipeline", *pipeline_}, {"data", *data_}}, *gpus_) +
                                     fmt::format(", but the cluster has {} GPUs ({} nodes × {})", *gpus_, *nodes_,
                                                 *gpus_per_node_));
        }
      }
    } else if (tp && gpus_) {
      if (*gpus_ % *tp == 0) {
        data_ = *gpus_ / *tp;
        note(fmt::format("parallel.data derived as {} = {} / ({} × {})", *data_, *gpus_, *tensor_, *pipeline_));
      } else {
        error("parallel.data",
              fmt::format("cannot be derived: {} GPUs / (tensor {} × pipeline {}) = {:.4g} is not an integer; "
                          "choose tensor × pipeline dividing {}",
                          *gpus_, *tensor_, *pipeline_, static_cast<double>(*gpus_) / static_cast<double>(*tp),
                          *gpus_));
      }
    }

    Int gpus = gpus_.value_or(std::numeric_limits<Int>::max());
    if (!tensor_) {
    } else if (auto e = models::tensor_divides_heads(*tensor_, heads_.value_or(0)); heads_ && !e.empty()) {
      error("parallel.tensor", e + valid_list(models::divisor_list(*heads_, gpus)));
    } else if (auto kv_error = models::tensor_divides_kv_heads(*tensor_, kv_.value_or(0)); kv_ && !kv_error.empty()) {
      error("parallel.tensor", kv_error + valid_list(models::divisor_list(*kv_, gpus)));
    } else if (auto ffn_error = models::tensor_divides_ffn(*tensor_, ffn_.value_or(0)); ffn_ && !ffn_error.empty()) {
      error("parallel.tensor", ffn_error + valid_list(models::divisor_list(*ffn_, gpus)));
    }
    if (p.has_first_stage_layers()) first_stage_ = size("parallel.first_stage_layers", p.first_stage_layers());
    if (p.has_last_stage_layers()) last_stage_ = size("parallel.last_stage_layers", p.last_stage_layers());
    const bool uneven = p.has_first_stage_layers() || p.has_last_stage_layers();
    if (uneven && pipeline_ && layers_) {
      const char* field = p.has_first_stage_layers() ? "parallel.first_stage_layers" : "parallel.last_stage_layers";
      const std::string e = strategies::uneven_split(*layers_, *pipeline_, virtual_stages_.value_or(1),
                                                     first_stage_.value_or(0), last_stage_.value_or(0));
      if (!e.empty()) error(field, e);
    } else if (pipeline_ && layers_ && *layers_ % *pipeline_ != 0) {
      error("parallel.pipeline", strategies::pipeline_divides_layers(*pipeline_, *layers_) +
                                     valid_list(models::divisor_list(*layers_, gpus)) +
                                     " (or set parallel.first_stage_layers / last_stage_layers for an uneven split)");
    } else if (virtual_stages_ && *virtual_stages_ > 1 && pipeline_) {
      if (*pipeline_ == 1) {
        error("parallel.virtual_stages", strategies::virtual_stages_need_pipeline(*virtual_stages_, *pipeline_));
      } else if (layers_) {
        MaybeInt chunks = multiply(*pipeline_, *virtual_stages_);
        if (!chunks || *layers_ % *chunks != 0) {
          Int per_stage = *layers_ / *pipeline_;
          error("parallel.virtual_stages",
                strategies::virtual_stages_divide_layers(*virtual_stages_, *pipeline_, *layers_) +
                    valid_list(models::divisor_list(per_stage, per_stage)));
        }
      }
    }
    if (p.sequence_parallel() && tensor_ == 1) {
      note("parallel.sequence_parallel has no effect with tensor = 1");
    }
  }

  void resolve_other_dimensions() {
    const Parallel& p = s_.parallel();
    // Context and expert parallelism: parallel_layout.hpp places their ranks, but no pass
    // shards a model over them yet.
    for (const auto& [field, has, value, what] :
         {std::tuple{"parallel.context", p.has_context(), p.context(), "context"},
          std::tuple{"parallel.expert", p.has_expert(), p.expert(), "expert"}}) {
      if (MaybeInt v = has ? size(field, value) : std::nullopt; v && *v > 1)
        error(field, fmt::format("{}={} is not supported yet: no pass implements {} parallelism (use 1, or leave "
                                 "it out)",
                                 what, *v, what));
    }
    if (!p.rank_order().empty()) {
      auto order = strategies::parse_rank_order(p.rank_order());
      if (const auto* message = std::get_if<std::string>(&order)) error("parallel.rank_order", *message);
      else rank_order_ = strategies::to_string(std::get<strategies::RankOrder>(order));
    }
  }

  void check_batch() {
    if (micro_batch_ && sequence_) {
      // Both ≤ 2^24, so the product is exact.
      const Int tokens = *micro_batch_ * *sequence_;
      if (tokens > limits::TOKENS_PER_MICRO_BATCH) {
        error(s_.training().has_micro_batch_size() ? "training.micro_batch_size" : "training.sequence_length",
              fmt::format("micro_batch_size × sequence_length = {} × {} = {} tokens per micro-batch is too many: at "
                          "most {}",
                          *micro_batch_, *sequence_, tokens, limits::TOKENS_PER_MICRO_BATCH));
      }
    }
    // The stand-in layout is not one the search takes: the batch need not divide by it.
    if (stand_in_ || !global_batch_ || !micro_batch_ || !data_) return;
    MaybeInt step = multiply(*micro_batch_, *data_);
    if (step && *global_batch_ % *step == 0) return;
    std::vector<std::string> nearest;
    if (step) {
      Int lower = *global_batch_ / *step * *step;
      if (lower > 0) nearest.push_back(std::to_string(lower));
      if (MaybeInt upper = lower <= std::numeric_limits<Int>::max() - *step ? MaybeInt(lower + *step) : std::nullopt) {
        nearest.push_back(std::to_string(*upper));
      }
    }
    error("training.global_batch_size",
          strategies::batch_divides(*global_batch_, *micro_batch_, *data_) +
              (nearest.empty() ? "" : fmt::format(" (nearest valid: {})", join(nearest))));
  }

  void resolve_strategy() {
    const Strategy& st = s_.strategy();
    if (!st.passes().empty()) {
      resolve_passes();
      return;
    }
    if (st.pipeline_schedule().empty()) {
      schedule_ = "1f1b";
      note("strategy.pipeline_schedule defaulted to \"1f1b\"");
    } else {
      schedule_ = st.pipeline_schedule();
    }
    std::vector<std::string> schedules = strategies::pass_names(strategies::PassKind::SCHEDULE);
    if (std::find(schedules.begin(), schedules.end(), schedule_) == schedules.end()) {
      error("strategy.pipeline_schedule", fmt::format("unknown pipeline schedule {}{} (registered: {})",
                                                      quote(schedule_), suggestion(schedule_, schedules),
                                                      join(schedules)));
    }
    const bool interleaved_v = virtual_stages_ && *virtual_stages_ > 1;
    if (interleaved_v && schedule_ != "interleaved-1f1b") {
      error("strategy.pipeline_schedule",
            fmt::format("schedule {} cannot run virtual_stages={}; use \"interleaved-1f1b\" or virtual_stages 1",
                        quote(schedule_), *virtual_stages_));
    }
    // Megatron's interleaved schedule walks micro-batches in groups of `pipeline`.
    const MaybeInt per_step = micro_batch_ && data_ ? multiply(*micro_batch_, *data_) : std::nullopt;
    if (interleaved_v && schedule_ == "interleaved-1f1b" && pipeline_ && *pipeline_ > 1 && global_batch_ &&
        per_step && *per_step > 0 && *global_batch_ % *per_step == 0) {
      const std::string e = strategies::interleaved_micro_batches(*global_batch_, *micro_batch_, *data_, *pipeline_,
                                                                  *virtual_stages_);
      if (!e.empty()) error("strategy.pipeline_schedule", e);
    }

    if (!st.has_zero_stage()) {
      zero_stage_ = 0;
      note("strategy.zero_stage defaulted to 0");
    } else if (st.zero_stage() >= 0 && st.zero_stage() <= 3) {
      zero_stage_ = st.zero_stage();
    } else {
      error("strategy.zero_stage", fmt::format("must be 0, 1, 2 or 3 (ZeRO stage: 1 shards optimizer states, "
                                               "2 also gradients, 3 also parameters), got {}",
                                               st.zero_stage()));
    }

    resolve_recompute();
    if (zero_stage_ && recompute_) check_passes_registered();
  }

  // --- pass pipelines (strategies/registry.hpp) -------------------------------------------

  // strategy.recompute: "none" or a variant of the registered recompute pass, with its
  // parameters from the message strategy.recompute_<policy> when the schema has one.
  void resolve_recompute() {
    const Strategy& st = s_.strategy();
    std::vector<std::string> valid = {"none"};
    for (const auto& v : strategies::variants_of("recompute")) valid.push_back(v);
    const std::string policy = st.recompute().empty() ? "none" : st.recompute();
    if (st.recompute().empty()) note("strategy.recompute defaulted to \"none\"");
    if (std::find(valid.begin(), valid.end(), policy) == valid.end()) {
      error("strategy.recompute", fmt::format("unknown recompute {}{} (valid: {})", quote(policy),
                                              suggestion(policy, valid), join(valid)));
    } else if (policy == "none") {
      recompute_ = strategies::Recompute::NONE;
    } else if (policy == "selective") {
      recompute_ = strategies::Recompute::SELECTIVE;
    } else if (policy == "full") {
      recompute_ = strategies::Recompute::FULL;
    } else {
      // A policy with parameters (every-k): its pass, with the arguments read below; the
      // spec's fields take it from that pipeline (with_pipeline, when the spec is made).
      recompute_ = strategies::Recompute::NONE;
      recompute_pass_ = strategies::PassInvocation{"recompute", {{"", policy}}};
    }
    // Parameter messages: only the chosen policy's, whose fields become its key=value arguments.
    namespace pb = google::protobuf;
    const pb::Reflection* reflection = st.GetReflection();
    for (int i = 0; i < Strategy::descriptor()->field_count(); ++i) {
      const pb::FieldDescriptor* f = Strategy::descriptor()->field(i);
      if (f->message_type() == nullptr || !f->name().starts_with("recompute_") || !reflection->HasField(st, f))
        continue;
      std::string wants = f->name().substr(std::strlen("recompute_"));
      std::replace(wants.begin(), wants.end(), '_', '-');
      if (!recompute_pass_ || recompute_pass_->args.front().value != wants) {
        error("strategy." + f->name(),
              fmt::format("parameters of recompute {}, but recompute is {} (set recompute: {} or drop {})",
                          quote(wants), quote(policy), quote(wants), f->name()));
        continue;
      }
      const pb::Message& params = reflection->GetMessage(st, f);
      std::vector<const pb::FieldDescriptor*> set;
      params.GetReflection()->ListFields(params, &set);
      for (const pb::FieldDescriptor* p : set) {
        if (p->cpp_type() == pb::FieldDescriptor::CPPTYPE_INT64)
          recompute_pass_->args.push_back({p->name(), std::to_string(params.GetReflection()->GetInt64(params, p))});
        else if (p->cpp_type() == pb::FieldDescriptor::CPPTYPE_BOOL)
          recompute_pass_->args.push_back({p->name(), params.GetReflection()->GetBool(params, p) ? "1" : "0"});
      }
    }
  }

  // The pipeline the strategy block asks for (pipeline_for over the resolved values, with a
  // recompute policy the spec's enum does not name inserted where recompute runs).
  strategies::Pipeline derived_pipeline() const {
    strategies::TrainingSpec spec;
    spec.layout = strategies::Layout{tensor_.value_or(1), pipeline_.value_or(1), data_.value_or(1),
                                     s_.parallel().sequence_parallel(), virtual_stages_.value_or(1),
                                     first_stage_.value_or(0), last_stage_.value_or(0)};
    spec.pipeline_schedule = schedule_;
    spec.zero_stage = zero_stage_.value_or(0);
    spec.recompute = recompute_.value_or(strategies::Recompute::NONE);
    spec.overlap_grad_reduce = s_.strategy().overlap_grad_reduce();
    spec.overlap_param_gather = s_.strategy().overlap_param_gather();
    spec.overlap_tp_comm = s_.strategy().overlap_tp_comm();
    strategies::Pipeline p = strategies::pipeline_for(spec);
    if (recompute_pass_) {
      auto at = std::find_if(p.begin(), p.end(), [](const strategies::PassInvocation& inv) {
        const strategies::PassInfo* info = strategies::find_pass(inv);
        return info != nullptr &&
               (info->kind == strategies::PassKind::OVERLAP || info->kind == strategies::PassKind::SCHEDULE);
      });
      p.insert(at, *recompute_pass_);
    }
    return p;
  }

  // Line and column just inside the string value of the text-format field at `path` (the
  // field's own position when the text is not at hand).
  std::pair<int, int> string_value_start(const std::string& path) const {
    auto [line, column] = locator_.locate(path);
    if (line == 0 || text_.empty()) return {line, column};
    std::size_t start = 0;
    for (int l = 1; l < line && start != std::string_view::npos; ++l) {
      start = text_.find('\n', start);
      if (start != std::string_view::npos) ++start;
    }
    if (start == std::string_view::npos) return {line, column};
    const std::size_t quote_at = text_.find_first_of("\"'", start + static_cast<std::size_t>(column - 1));
    const std::size_t eol = text_.find('\n', start);
    if (quote_at == std::string_view::npos || quote_at > eol) return {line, column};
    return {line, static_cast<int>(quote_at - start) + 2};
  }
  // An error at a 1-based column inside strategy.passes' string (0: at the field).
  void error_in_passes(std::size_t column_in_string, std::string message) {
    auto [line, column] = locator_.locate("strategy.passes");
    if (column_in_string > 0 && !text_.empty()) {
      auto [l, c] = string_value_start("strategy.passes");
      if (c != column) column = c + static_cast<int>(column_in_string) - 1;
      line = l;
    }
    errors_.push_back({file_, line, column, "strategy.passes", std::move(message)});
  }

  // strategy.passes: the pipeline written out. Parsed and checked here (positions inside the
  // string), exclusive with the other strategy fields, its layout equal to the parallel block's.
  void resolve_passes() {
    namespace pb = google::protobuf;
    const Strategy& st = s_.strategy();
    auto parsed = strategies::parse_pipeline(st.passes());
    if (const auto* e = std::get_if<strategies::PipelineSyntaxError>(&parsed)) {
      const bool wants_name = e->message.starts_with("expected a pass name");
      error_in_passes(e->column, e->message + (wants_name ? fmt::format(" (registered passes: {})",
                                                                        join(strategies::pass_names()))
                                                          : std::string()));
      return;
    }
    const strategies::Pipeline& pipeline = std::get<strategies::Pipeline>(parsed);
    std::vector<strategies::PassError> problems = strategies::check_pipeline(pipeline);
    for (const auto& e : problems) error_in_passes(e.column, e.message);
    const pb::Reflection* reflection = st.GetReflection();
    for (int i = 0; i < Strategy::descriptor()->field_count(); ++i) {
      const pb::FieldDescriptor* f = Strategy::descriptor()->field(i);
      if (f->name() == "passes" || !reflection->HasField(st, f)) continue;
      error("strategy." + f->name(), "cannot be combined with strategy.passes, which writes out the whole pipeline "
                                     "(say it in the passes string, or drop passes and use the strategy fields)");
    }
    if (!problems.empty()) return;
    const strategies::TrainingSpec spec = strategies::with_pipeline(strategies::TrainingSpec{}, pipeline);
    const strategies::Layout& l = spec.layout;
    const std::vector<std::tuple<const char*, const char*, MaybeInt, Int>> layout = {
        {"tensor", "parallel.tensor", tensor_, l.tensor},
        {"pipeline", "parallel.pipeline", pipeline_, l.pipeline},
        {"data", "parallel.data", data_, l.data},
        {"pipeline", "parallel.virtual_stages", virtual_stages_, l.virtual_stages},
        {"pipeline", "parallel.first_stage_layers", first_stage_.value_or(0), l.first_stage_layers},
        {"pipeline", "parallel.last_stage_layers", last_stage_.value_or(0), l.last_stage_layers},
        {"tensor", "parallel.sequence_parallel", Int{s_.parallel().sequence_parallel()}, Int{l.sequence_parallel}},
    };
    for (const auto& [pass, field, resolved, written] : layout) {
      if (!resolved || *resolved == written) continue;
      std::size_t column = 0;
      std::string shown = pass;
      for (const auto& inv : pipeline)
        if (inv.name == pass) {
          column = inv.column;
          shown = strategies::to_string(inv);
        }
      error_in_passes(column, fmt::format("{} disagrees with {} = {}: the parallel block sizes the cluster, and the "
                                          "layout passes must say the same",
                                          shown, field, *resolved));
    }
    schedule_ = spec.pipeline_schedule;
    zero_stage_ = spec.zero_stage;
    recompute_ = spec.recompute;
    passes_ = spec.passes;
  }

  // Each strategy a scenario asks for is a registered pass (zero(N), recompute(…),
  // overlap-…) with valid parameters, in a pipeline whose requirements hold; one that is
  // not would only fail when the program is built, without a position. The pipeline comes
  // from strategies::pipeline_for, so this follows the registry's naming.
  void check_passes_registered() {
    const strategies::Pipeline pipeline = derived_pipeline();
    for (const strategies::PassError& e : strategies::check_pipeline(pipeline)) {
      if (e.pass < 0) continue;  // no schedule: pipeline_schedule is checked above
      const strategies::PassInvocation& inv = pipeline[static_cast<std::size_t>(e.pass)];
      const strategies::PassInfo* info = strategies::find_pass(inv);
      if (info == nullptr && inv.name == schedule_) continue;  // an unknown schedule: reported above
      // The field that asked for it: overlap-grad-reduce comes from overlap_grad_reduce.
      std::string field = inv.name;
      std::replace(field.begin(), field.end(), '-', '_');
      std::string path = "strategy", hint;
      if (inv.name == "zero") {
        path = "strategy.zero_stage";
      } else if (inv.name == "recompute") {
        // Its parameters' message when written, else the policy.
        const std::string params = "strategy.recompute_" + field_name(inv.args.front().value);
        const google::protobuf::FieldDescriptor* f = field_at(params);
        const bool written = f != nullptr && s_.strategy().GetReflection()->HasField(s_.strategy(), f);
        path = written ? params : "strategy.recompute";
        if (f != nullptr && !written) hint = fmt::format(" (its parameters go in {} {{ … }})", f->name());
      } else if (info != nullptr && info->kind == strategies::PassKind::SCHEDULE) {
        path = "strategy.pipeline_schedule";
      } else if (field_at("strategy." + field) != nullptr) {
        path = "strategy." + field;
      } else if (info != nullptr && info->kind == strategies::PassKind::LAYOUT) {
        path = "parallel";
      }
      if (info == nullptr)
        error(path, fmt::format("needs the strategy pass {}, which is not implemented yet ({})",
                                quote(strategies::to_string(inv)), e.message));
      else
        error(path, e.message + hint);
    }
  }
  static std::string field_name(std::string name) {
    std::replace(name.begin(), name.end(), '-', '_');
    return name;
  }

  // Every value build() reads must have been resolved when no error was reported; one that
  // was not is a loader bug, reported rather than dereferenced.
  void check_resolved() {
    const std::vector<std::pair<const char*, bool>> resolved = {
        {"model.num_layers", layers_.has_value()},
        {"model.hidden_size", hidden_.has_value()},
        {"model.num_attention_heads", heads_.has_value()},
        {"model.num_query_groups", kv_.has_value()},
        {"model.ffn_hidden_size", ffn_.has_value()},
        {"model.vocab_size", vocab_.has_value()},
        {"model.max_position_embeddings", positions_.has_value()},
        {"cluster.gpu", gpu_.has_value()},
        {"cluster.nodes", nodes_.has_value()},
        {"cluster.gpus_per_node", gpus_per_node_.has_value()},
        {"cluster.fabric.fat_tree.nic_gbps", nic_gbps_.has_value()},
        {"cluster.fabric.fat_tree.oversubscription", oversubscription_.has_value()},
        {"cluster.fabric.fat_tree.nodes_per_leaf", nodes_per_leaf_.has_value()},
        {"training.sequence_length", sequence_.has_value()},
        {"training.global_batch_size", global_batch_.has_value()},
        {"training.micro_batch_size", micro_batch_.has_value()},
        {"training.precision", dtype_.has_value()},
        {"parallel.tensor", tensor_.has_value()},
        {"parallel.pipeline", pipeline_.has_value()},
        {"parallel.data", data_.has_value()},
        {"parallel.virtual_stages", virtual_stages_.has_value()},
        {"strategy.zero_stage", zero_stage_.has_value()},
        {"strategy.recompute", recompute_.has_value()},
    };
    for (const auto& [path, ok] : resolved) {
      if (!ok) error(path, "could not be resolved (a loader bug: please report it with this file)");
    }
  }

  // Sizes that pass one by one can still describe more state per GPU than any memory
  // holds (and byte counts near the int64 range): a long unfused-attention sequence, a
  // huge model on few GPUs. Such a scenario is refused here, with the figure.
  void check_scale() {
    const LoadedScenario s = build();
    const strategies::TrainingSpec& spec = s.training;
    models::ShardSpec shard;
    shard.micro_batch = spec.micro_batch;
    shard.sequence = spec.sequence;
    shard.tensor = spec.layout.tensor;
    shard.sequence_parallel = spec.layout.sequence_parallel;
    shard.flash_attention = spec.flash_attention;
    double activations = 0;
    try {
      activations = models::transformer_layer(spec.model, shard).activation_bytes();
    } catch (const std::invalid_argument&) {
      return;  // a shape the models refuse is reported where it is built
    }
    // 1F1B keeps up to `pipeline` micro-batches of a stage's layers in flight.
    const double stage_layers = std::ceil(static_cast<double>(spec.model.layers) /
                                          static_cast<double>(spec.layout.pipeline));
    activations *= stage_layers * static_cast<double>(spec.layout.pipeline);
    if (!(activations <= limits::BYTES_PER_GPU)) {
      error(s_.training().has_micro_batch_size() ? "training.micro_batch_size" : "training.sequence_length",
            fmt::format("the activations of a pipeline stage would take about {:.3g} bytes per GPU, more than {:.3g} "
                        "(no GPU holds a millionth of that): reduce sequence_length or micro_batch_size{}",
                        activations, limits::BYTES_PER_GPU,
                        spec.flash_attention ? ", or raise tensor or pipeline" : ", or use training.attention FLASH"));
    }
    // Mixed-precision Adam: about 20 bytes per parameter, split over tensor × pipeline.
    const double states = static_cast<double>(models::total_params(spec.model)) * 20.0 /
                          (static_cast<double>(spec.layout.tensor) * static_cast<double>(spec.layout.pipeline));
    if (!(states <= limits::BYTES_PER_GPU)) {
      error("model.hidden_size", fmt::format("the model states would take about {:.3g} bytes per GPU, more than {:.3g} "
                                             "(no GPU holds a millionth of that): reduce the model or raise tensor / "
                                             "pipeline",
                                             states, limits::BYTES_PER_GPU));
    }
  }

  LoadedScenario build() const {
    LoadedScenario out;
    out.file = file_;
    out.proto = s_;

    models::ModelConfig& model = out.training.model;
    model.name = preset_ ? preset_->name : "custom";  // the preset's, or the config.json's
    model.family = family_;
    model.layers = *layers_;
    model.hidden = *hidden_;
    model.heads = *heads_;
    model.kv_heads = *kv_;
    model.ffn_hidden = *ffn_;
    model.vocab = *vocab_;
    model.max_positions = family_ == models::Family::GPT ? *positions_ : 0;
    // A preset knows whether its head is tied (Megatron-Core's GPTs are not); a model of
    // another family than its preset's, or without one, follows the family.
    model.tied_embedding =
        preset_ && preset_->family == family_ ? preset_->tied_embedding : family_ == models::Family::GPT;

    strategies::TrainingSpec& spec = out.training;
    spec.sequence = *sequence_;
    spec.global_batch = *global_batch_;
    spec.micro_batch = *micro_batch_;
    spec.dtype = *dtype_;
    spec.accumulate_grads_in_fp32 = accumulate_grads_in_fp32_;
    spec.gradient_accumulation_fusion =
        !s_.training().has_gradient_accumulation_fusion() || s_.training().gradient_accumulation_fusion();
    spec.optimizer = optimizer_;
    spec.flash_attention = flash_attention_;
    spec.layout.tensor = *tensor_;
    spec.layout.pipeline = *pipeline_;
    spec.layout.data = *data_;
    spec.layout.sequence_parallel = s_.parallel().sequence_parallel();
    spec.layout.virtual_stages = *virtual_stages_;
    spec.layout.first_stage_layers = first_stage_.value_or(0);
    spec.layout.last_stage_layers = last_stage_.value_or(0);
    spec.layout.rank_order = rank_order_;
    spec.pipeline_schedule = schedule_;
    spec.zero_stage = *zero_stage_;
    spec.recompute = *recompute_;
    spec.overlap_grad_reduce = s_.strategy().overlap_grad_reduce();
    spec.overlap_param_gather = s_.strategy().overlap_param_gather();
    spec.overlap_tp_comm = s_.strategy().overlap_tp_comm();
    if (!passes_.empty()) {
      spec = strategies::with_pipeline(spec, passes_);
    } else if (recompute_pass_) {
      spec = strategies::with_pipeline(spec, derived_pipeline());  // the spec's fields name the policy too
    }

    out.cluster.gpu = gpu_name_;
    out.cluster.nodes = *nodes_;
    out.cluster.gpus_per_node = *gpus_per_node_;
    out.cluster.nic_gbps = *nic_gbps_;
    out.cluster.oversubscription = *oversubscription_;
    out.cluster.nodes_per_leaf = *nodes_per_leaf_;
    out.cluster.fabric = fabric_kind_;
    out.cluster.fabric_levels = fabric_levels_;
    out.cluster.leaves_per_pod = leaves_per_pod_;
    out.cluster.node_layout = node_ ? node_->layout : std::string();
    out.cluster.link_faults = link_faults_;
    out.gpu = *gpu_;
    out.train_tokens = train_tokens_;
    out.price_per_gpu_hour = price_per_gpu_hour_;
    out.notes = notes_;
    out.inputs = inputs_;
    return out;
  }

  const Scenario& s_;
  const std::string& file_;
  Locator locator_;
  std::vector<Diagnostic> errors_;
  std::vector<std::string> notes_;
  std::vector<std::string> inputs_;  // files read besides the scenario (model.hf_config)

  std::optional<models::ModelConfig> preset_;  // the named preset, or the model of model.hf_config
  models::Family family_ = models::Family::GPT;
  MaybeInt layers_, hidden_, heads_, kv_, ffn_, vocab_, positions_;

  std::optional<hardware::NodePreset> node_;
  std::string gpu_name_;  // the profile name, as the preset or cluster.gpu gives it
  std::optional<hardware::GpuProfile> gpu_;
  MaybeInt nodes_, gpus_per_node_, gpus_, nodes_per_leaf_;
  std::optional<double> nic_gbps_, oversubscription_;
  hardware::FabricKind fabric_kind_ = hardware::FabricKind::RAIL_OPTIMIZED;
  Int fabric_levels_ = 2;
  Int leaves_per_pod_ = 8;
  std::vector<hardware::LinkFault> link_faults_;

  MaybeInt sequence_, global_batch_, micro_batch_;
  std::optional<hardware::Dtype> dtype_;
  std::optional<bool> accumulate_grads_in_fp32_;  // training.accumulate_allreduce_grads_in_fp32, when written
  strategies::Optimizer optimizer_ = strategies::Optimizer::ADAM;
  bool flash_attention_ = true;

  MaybeInt tensor_, pipeline_, data_, virtual_stages_, first_stage_, last_stage_;
  std::string rank_order_{strategies::DEFAULT_RANK_ORDER};

  std::string schedule_;
  MaybeInt zero_stage_;
  std::optional<strategies::Recompute> recompute_;
  std::optional<strategies::PassInvocation> recompute_pass_;  // a policy the enum does not name
  strategies::Pipeline passes_;  // strategy.passes, canonical
  std::string_view text_;
  bool stand_in_;  // LayoutFields::SEARCHED
  double train_tokens_ = 1e12;
  double price_per_gpu_hour_ = 0;
};

}  // namespace

LoadResult validate(const Scenario& scenario, const std::string& file,
                    const google::protobuf::TextFormat::ParseInfoTree* tree, std::string_view text,
                    LayoutFields layout) {
  return Validator(scenario, file, tree, text, layout).run();
}

}  // namespace trainsim::scenarios::detail
