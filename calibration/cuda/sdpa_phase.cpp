// cuDNN's fused scaled-dot-product attention (flash attention), forward and backward,
// causal and not, BF16, built through cuDNN 9's backend graph API (cudnn_graph.h): the
// operation graphs that cudnn-frontend's SDPA nodes build (include/cudnn_frontend/node/
// scaled_dot_product_flash_attention.h and softmax.h), restated op by op, since
// cudnn-frontend itself is not installed. cuDNN's heuristics then pick a fused engine for
// the graph; where none accepts it (a head dimension or GPU the fused kernels do not
// cover, or a cuDNN version that wants another pattern) the problem is skipped and the
// reason noted in run.csv, so the run goes on.
//
// COMPILED, NOT RUN: no GPU was available while this was written, so this file has been
// compiled for sm_80 and sm_90 but never executed. In particular, whether cuDNN's fused
// engines accept exactly these graphs has not been checked; the first run on a GPU will
// say so in run.csv's notes ("sdpa: … no engine …").
//
// Layout: Q, K, V, O and their gradients are [b, h, s, d] BF16, packed (BHSD). The
// forward writes O and the softmax statistics (log-sum-exp per row, FP32 [b, h, s, 1]),
// which the backward reads, as a training step does.
#include "calibration/attention_records.hpp"
#include "calibration/cuda/detail/check.hpp"
#include "calibration/cuda/detail/kernels.hpp"
#include "calibration/cuda/detail/phases.hpp"

#include <cudnn_graph.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace trainsim::calibration::cuda::detail {
namespace {

// A graph or plan that cuDNN refuses: the problem is skipped, not the phase.
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void cudnn_check(cudnnStatus_t s, const char* what) {
  if (s != CUDNN_STATUS_SUCCESS) throw Refused(std::string(what) + ": " + cudnnGetErrorString(s));
}

// One backend descriptor, destroyed with its owner.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type) { cudnn_check(cudnnBackendCreateDescriptor(type, &d_), "create"); }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  ~Desc() {
    if (d_ != nullptr) cudnnBackendDestroyDescriptor(d_);
  }
  template <typename T>
  Desc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T* values, std::int64_t n = 1) {
    cudnn_check(cudnnBackendSetAttribute(d_, name, type, n, values), "set attribute");
    return *this;
  }
  Desc& finalize(const char* what) {
    cudnn_check(cudnnBackendFinalize(d_), what);
    return *this;
  }
  [[nodiscard]] cudnnBackendDescriptor_t get() const { return d_; }
  // Address of the handle, for attributes of type CUDNN_TYPE_BACKEND_DESCRIPTOR.
  [[nodiscard]] const cudnnBackendDescriptor_t* ref() const { return &d_; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

using Dims = std::array<std::int64_t, 4>;

// An execution plan with every descriptor it was made from (tensors, operations, graph,
// engine configurations), kept alive as long as the plan, as cudnn-frontend keeps them.
struct Plan {
  std::vector<std::unique_ptr<Desc>> parts;
  const Desc* plan = nullptr;
};

Dims packed(const Dims& d) { return {d[1] * d[2] * d[3], d[2] * d[3], d[3], 1}; }

// Builds one operation graph: tensors (by unique id) and operations, in order.
class GraphBuilder {
 public:
  explicit GraphBuilder(cudnnHandle_t handle) : handle_(handle) {}

  // A tensor the caller binds to memory (its id goes into the variant pack).
  const Desc& io(std::int64_t uid, cudnnDataType_t type, const Dims& dims, const Dims& strides) {
    return tensor(uid, type, dims, strides, false, false);
  }
  // A scalar passed by value (attention scale, −inf, 1).
  const Desc& scalar(std::int64_t uid) { return tensor(uid, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true); }
  // An intermediate that never leaves the fused kernel.
  const Desc& virt(cudnnDataType_t type, const Dims& dims, const Dims& strides) {
    return tensor(next_virtual_++, type, dims, strides, true, false);
  }
  const Desc& virt(cudnnDataType_t type, const Dims& dims) { return virt(type, dims, packed(dims)); }

  void matmul(const Desc& a, const Desc& b, const Desc& c) {
    const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    Desc& m = keep(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    m.set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &comp).finalize("matmul");
    Desc& op = keep(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    op.set(CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, a.ref())
        .set(CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, b.ref())
        .set(CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, c.ref())
        .set(CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, m.ref())
        .finalize("matmul operation");
    ops_.push_back(op.get());
  }

  // y = mode(x[, b][, t]); GEN_INDEX takes an axis.
  void pointwise(cudnnPointwiseMode_t mode, const Desc& x, const Desc& y, const Desc* b = nullptr,
                 const Desc* t = nullptr, std::int64_t axis = -1, cudnnDataType_t precision = CUDNN_DATA_FLOAT) {
    Desc& pw = keep(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    pw.set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &mode)
        .set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &precision);
    if (axis >= 0) pw.set(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, &axis);
    pw.finalize("pointwise");
    Desc& op = keep(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    op.set(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, pw.ref())
        .set(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, x.ref());
    if (b != nullptr) op.set(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, b->ref());
    if (t != nullptr) op.set(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, t->ref());
    op.set(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, y.ref()).finalize("pointwise operation");
    ops_.push_back(op.get());
  }

  // y = reduce(x) over the dimensions where y has extent 1.
  void reduction(cudnnReduceTensorOp_t op_kind, const Desc& x, const Desc& y) {
    const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    Desc& r = keep(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    r.set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &op_kind)
        .set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &comp)
        .finalize("reduction");
    Desc& op = keep(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    op.set(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, x.ref())
        .set(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, y.ref())
        .set(CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, r.ref())
        .finalize("reduction operation");
    ops_.push_back(op.get());
  }

  // y: the same elements as x seen through other dimensions and strides (a transpose).
  void reshape(const Desc& x, const Desc& y) {
    Desc& op = keep(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    op.set(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, x.ref())
        .set(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, y.ref())
        .finalize("reshape operation");
    ops_.push_back(op.get());
  }

  // The operation graph, the heuristics' engine configurations in their order, and the
  // first one that finalizes into an execution plan. The builder is spent afterwards.
  Plan plan() {
    Desc& graph = keep(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    graph.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, ops_.data(),
              static_cast<std::int64_t>(ops_.size()))
        .set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle_)
        .finalize("operation graph");
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    Desc& heur = keep(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    heur.set(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, graph.ref())
        .set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode)
        .finalize("engine heuristics");
    std::int64_t count = 0;
    cudnn_check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                         &count, nullptr),
                "engine heuristics results");
    if (count <= 0) throw Refused("no engine for this graph");
    std::vector<cudnnBackendDescriptor_t> raw;
    for (std::int64_t i = 0; i < count; ++i) raw.push_back(keep(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR).get());
    std::int64_t returned = 0;
    cudnn_check(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                         count, &returned, raw.data()),
                "engine heuristics results");
    std::string last = "no engine configuration finalized";
    for (std::int64_t i = 0; i < returned; ++i) {
      Desc& p = keep(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      p.set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, &handle_)
          .set(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, &raw[static_cast<std::size_t>(i)]);
      if (cudnnStatus_t s = cudnnBackendFinalize(p.get()); s != CUDNN_STATUS_SUCCESS) {
        last = std::string("execution plan: ") + cudnnGetErrorString(s);
        continue;
      }
      return Plan{std::move(owned_), &p};
    }
    throw Refused(last);
  }

 private:
  const Desc& tensor(std::int64_t uid, cudnnDataType_t type, const Dims& dims, const Dims& strides, bool is_virtual,
                     bool by_value) {
    const std::int64_t alignment = 16, rank = 4;
    Desc& t = keep(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    t.set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type)
        .set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.data(), rank)
        .set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.data(), rank)
        .set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid)
        .set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &alignment)
        .set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &is_virtual);
    if (by_value) t.set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, &by_value);
    return t.finalize("tensor");
  }
  Desc& keep(cudnnBackendDescriptorType_t type) {
    owned_.push_back(std::make_unique<Desc>(type));
    return *owned_.back();
  }

  cudnnHandle_t handle_;
  std::vector<std::unique_ptr<Desc>> owned_;  // handed to the plan
  std::vector<cudnnBackendDescriptor_t> ops_;
  std::int64_t next_virtual_ = 1000;
};

// Unique ids of the tensors bound to memory.
enum Uid : std::int64_t { Q = 1, K, V, O, STATS, SCALE, NEG_INF, ONE, DO, DQ, DK, DV, SOFTMAX_SUM, DQ_ACCUM };

// S = Q·Kᵀ · scale, masked above the diagonal when causal (row ≥ column kept), in FP32;
// the backward also subtracts the statistics before the mask, as cudnn-frontend does.
const Desc& scores(GraphBuilder& g, const Desc& q, const Desc& kt, const Desc& scale, const Dims& ss) {
  const Desc& s = g.virt(CUDNN_DATA_FLOAT, ss);
  g.matmul(q, kt, s);
  const Desc& scaled = g.virt(CUDNN_DATA_FLOAT, ss);
  g.pointwise(CUDNN_POINTWISE_MUL, s, scaled, &scale);
  return scaled;
}

const Desc& causal_mask(GraphBuilder& g, const Desc& s, const Desc& neg_inf, const Dims& ss) {
  const Desc& row = g.virt(CUDNN_DATA_INT32, ss);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, s, row, nullptr, nullptr, 2, CUDNN_DATA_INT32);
  const Desc& col = g.virt(CUDNN_DATA_INT32, ss);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, s, col, nullptr, nullptr, 3, CUDNN_DATA_INT32);
  const Desc& keep = g.virt(CUDNN_DATA_BOOLEAN, ss);
  g.pointwise(CUDNN_POINTWISE_CMP_GE, row, keep, &col, nullptr, -1, CUDNN_DATA_BOOLEAN);
  const Desc& masked = g.virt(CUDNN_DATA_FLOAT, ss);
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, s, masked, &neg_inf, &keep);  // keep ? s : −inf
  return masked;
}

struct Shapes {
  Dims qkv, qkv_strides, kt, kt_strides, ss, stats;
};

Shapes shapes_of(const AttentionProblem& p) {
  const std::int64_t b = p.batch, h = p.heads, s = p.sequence, d = p.head_dim;
  Shapes x;
  x.qkv = {b, h, s, d};
  x.qkv_strides = packed(x.qkv);
  x.kt = {b, h, d, s};  // Kᵀ (and Vᵀ): the same memory read column-wise
  x.kt_strides = {h * s * d, s * d, 1, d};
  x.ss = {b, h, s, s};
  x.stats = {b, h, s, 1};
  return x;
}

// Forward: O = softmax(S)·V, with the statistics (max + log Σ exp per row) for the backward.
Plan forward_plan(cudnnHandle_t handle, const AttentionProblem& p) {
  const Shapes x = shapes_of(p);
  GraphBuilder g(handle);
  const Desc& q = g.io(Q, CUDNN_DATA_BFLOAT16, x.qkv, x.qkv_strides);
  const Desc& kt = g.io(K, CUDNN_DATA_BFLOAT16, x.kt, x.kt_strides);
  const Desc& v = g.io(V, CUDNN_DATA_BFLOAT16, x.qkv, x.qkv_strides);
  const Desc& o = g.io(O, CUDNN_DATA_BFLOAT16, x.qkv, x.qkv_strides);
  const Desc& stats = g.io(STATS, CUDNN_DATA_FLOAT, x.stats, packed(x.stats));
  const Desc& scale = g.scalar(SCALE);
  const Desc* s = &scores(g, q, kt, scale, x.ss);
  if (p.causal) s = &causal_mask(g, *s, g.scalar(NEG_INF), x.ss);
  const Desc& row_max = g.virt(CUDNN_DATA_FLOAT, x.stats);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, *s, row_max);
  const Desc& shifted = g.virt(CUDNN_DATA_FLOAT, x.ss);
  g.pointwise(CUDNN_POINTWISE_SUB, *s, shifted, &row_max);
  const Desc& e = g.virt(CUDNN_DATA_FLOAT, x.ss);
  g.pointwise(CUDNN_POINTWISE_EXP, shifted, e);
  const Desc& row_sum = g.virt(CUDNN_DATA_FLOAT, x.stats);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, row_sum);
  const Desc& log_sum = g.virt(CUDNN_DATA_FLOAT, x.stats);
  g.pointwise(CUDNN_POINTWISE_LOG, row_sum, log_sum);
  g.pointwise(CUDNN_POINTWISE_ADD, log_sum, stats, &row_max);
  const Desc& probs = g.virt(CUDNN_DATA_BFLOAT16, x.ss);
  g.pointwise(CUDNN_POINTWISE_DIV, e, probs, &row_sum);
  g.matmul(probs, v, o);
  return g.plan();
}

// Backward (cudnn-frontend's SDPA backward node, without dropout, bias or GQA):
//   softmax_sum = Σ_d dO ⊙ O (FP32, per row, in memory)
//   P = exp(S − stats) (masked when causal);      dV = Pᵀ·dO
//   dS = P ⊙ (dO·Vᵀ − softmax_sum) · scale;       dK = dSᵀ·Q;   dQ = dS·K (FP32, then BF16)
Plan backward_plan(cudnnHandle_t handle, const AttentionProblem& p) {
  const Shapes x = shapes_of(p);
  const Dims st = {x.ss[0], x.ss[1], x.ss[3], x.ss[2]};  // transposed scores [b, h, s_kv, s_q]
  const Dims st_strides = {x.ss[1] * x.ss[2] * x.ss[3], x.ss[2] * x.ss[3], 1, x.ss[3]};
  GraphBuilder g(handle);
  const Desc& q = g.io(Q, CUDNN_DATA_BFLOAT16, x.qkv, x.qkv_strides);
  const Desc& kt = g.io(K, CUDNN_DATA_BFLOAT16, x.kt, x.kt_strides);
  const Desc& vt = g.io(V, CUDNN_DATA_BFLOAT16, x.kt, x.kt_strides);
  const Desc& o = g.io(O, CUDNN_DATA_BFLOAT16, x.qkv, x.qkv_strides);
  const Desc& d_o = g.io(DO, CUDNN_DATA_BFLOAT16, x.qkv, x.qkv_strides);
  const Desc& stats = g.io(STATS, CUDNN_DATA_FLOAT, x.stats, packed(x.stats));
  const Desc& dq = g.io(DQ, CUDNN_DATA_BFLOAT16, x.qkv, x.qkv_strides);
  const Desc& dk = g.io(DK, CUDNN_DATA_BFLOAT16, x.qkv, x.qkv_strides);
  const Desc& dv = g.io(DV, CUDNN_DATA_BFLOAT16, x.qkv, x.qkv_strides);
  const Desc& scale = g.scalar(SCALE);
  const Desc& one = g.scalar(ONE);

  const Desc& do_o = g.virt(CUDNN_DATA_FLOAT, x.qkv);
  g.pointwise(CUDNN_POINTWISE_MUL, d_o, do_o, &o);
  const Desc& row_dot = g.virt(CUDNN_DATA_FLOAT, x.stats);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, do_o, row_dot);
  const Desc& softmax_sum = g.io(SOFTMAX_SUM, CUDNN_DATA_FLOAT, x.stats, packed(x.stats));
  g.pointwise(CUDNN_POINTWISE_MUL, row_dot, softmax_sum, &one);  // (× the inverse dropout scale: 1)

  const Desc& s = scores(g, q, kt, scale, x.ss);
  const Desc* centred = &g.virt(CUDNN_DATA_FLOAT, x.ss);
  g.pointwise(CUDNN_POINTWISE_SUB, s, *centred, &stats);
  if (p.causal) centred = &causal_mask(g, *centred, g.scalar(NEG_INF), x.ss);
  const Desc& probs = g.virt(CUDNN_DATA_FLOAT, x.ss);
  g.pointwise(CUDNN_POINTWISE_EXP, *centred, probs);
  const Desc& probs_t = g.virt(CUDNN_DATA_BFLOAT16, st, st_strides);
  g.reshape(probs, probs_t);
  g.matmul(probs_t, d_o, dv);

  const Desc& dp = g.virt(CUDNN_DATA_FLOAT, x.ss);
  g.matmul(d_o, vt, dp);
  const Desc& dp_centred = g.virt(CUDNN_DATA_FLOAT, x.ss);
  g.pointwise(CUDNN_POINTWISE_SUB, dp, dp_centred, &softmax_sum);
  const Desc& ds_unscaled = g.virt(CUDNN_DATA_FLOAT, x.ss);
  g.pointwise(CUDNN_POINTWISE_MUL, dp_centred, ds_unscaled, &probs);
  const Desc& ds = g.virt(CUDNN_DATA_FLOAT, x.ss);
  g.pointwise(CUDNN_POINTWISE_MUL, ds_unscaled, ds, &scale);
  const Desc& ds_t = g.virt(CUDNN_DATA_BFLOAT16, st, st_strides);
  g.reshape(ds, ds_t);
  g.matmul(ds_t, q, dk);

  const Desc& k = g.virt(CUDNN_DATA_BFLOAT16, x.qkv, x.qkv_strides);  // K again, row-wise
  g.reshape(kt, k);
  const Desc& dq_accum = g.io(DQ_ACCUM, CUDNN_DATA_FLOAT, x.qkv, x.qkv_strides);
  g.matmul(ds, k, dq_accum);
  g.pointwise(CUDNN_POINTWISE_IDENTITY, dq_accum, dq);
  return g.plan();
}

std::int64_t workspace_bytes(const Desc& plan) {
  std::int64_t bytes = 0, n = 0;
  cudnn_check(cudnnBackendGetAttribute(plan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n,
                                       &bytes),
              "workspace size");
  return bytes;
}

// The memory each call reads and writes, bound to the plan's tensor ids.
std::unique_ptr<Desc> variant_pack(const std::vector<std::int64_t>& uids, std::vector<void*> pointers, void* workspace) {
  auto pack = std::make_unique<Desc>(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  pack->set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids.data(), static_cast<std::int64_t>(uids.size()))
      .set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, pointers.data(),
           static_cast<std::int64_t>(pointers.size()))
      .set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &workspace)
      .finalize("variant pack");
  return pack;
}

}  // namespace

std::vector<AttentionRecord> measure_fused_attention(const Phase& phase, const std::vector<AttentionProblem>& problems) {
  std::vector<AttentionRecord> rows;
  cudnnHandle_t handle = nullptr;
  if (cudnnStatus_t s = cudnnCreate(&handle); s != CUDNN_STATUS_SUCCESS) {
    phase.note(std::string("sdpa: cuDNN fused attention not measured: cudnnCreate: ") + cudnnGetErrorString(s));
    return rows;
  }
  cudaStream_t stream = nullptr;
  std::size_t too_large = 0, cut = 0;
  std::vector<std::string> refused;  // distinct reasons, in order
  try {
    TRAINSIM_CHECK(cudaStreamCreate(&stream));
    if (cudnnStatus_t s = cudnnSetStream(handle, stream); s != CUDNN_STATUS_SUCCESS)
      throw MeasureError(std::string("cudnnSetStream: ") + cudnnGetErrorString(s));
    for (std::size_t i = 0; i < problems.size(); ++i) {
      if (!phase.budget.allows(now_s())) {
        cut = problems.size() - i;
        break;
      }
      const AttentionProblem& p = problems[i];
      Plan fwd, bwd;
      try {
        fwd = forward_plan(handle, p);
        bwd = backward_plan(handle, p);
      } catch (const Refused& e) {
        const std::string why = fmt::format("head_dim {}{}: {}", p.head_dim, p.causal ? " causal" : "", e.what());
        if (std::find(refused.begin(), refused.end(), why) == refused.end()) refused.push_back(why);
        continue;
      }
      const auto elems = static_cast<std::size_t>(p.batch * p.heads * p.sequence * p.head_dim);
      const auto rows_n = static_cast<std::size_t>(p.batch * p.heads * p.sequence);
      const auto work = static_cast<std::size_t>(std::max(workspace_bytes(*fwd.plan), workspace_bytes(*bwd.plan)));
      // Q, K, V, O, dO, dQ, dK, dV in BF16; dQ's FP32 accumulator; two FP32 row vectors.
      if (8 * elems * 2 + elems * 4 + 2 * rows_n * 4 + work > free_device_bytes() * 9 / 10) {
        ++too_large;
        continue;
      }
      DeviceBuffer q(elems * 2), k(elems * 2), v(elems * 2), o(elems * 2), d_o(elems * 2), dq(elems * 2),
          dk(elems * 2), dv(elems * 2), dq_accum(elems * 4), stats(rows_n * 4), softmax_sum(rows_n * 4),
          workspace(work);
      std::uint32_t seed = 11;
      for (DeviceBuffer* b : {&q, &k, &v, &d_o}) fill_uniform(Elem::BF16, b->get(), elems, seed++, stream);
      float scale = 1.0f / std::sqrt(static_cast<float>(p.head_dim));
      float neg_inf = std::numeric_limits<float>::lowest();
      float one = 1.0f;
      std::vector<std::int64_t> fwd_ids = {Q, K, V, O, STATS, SCALE};
      std::vector<void*> fwd_ptrs = {q.get(), k.get(), v.get(), o.get(), stats.get(), &scale};
      std::vector<std::int64_t> bwd_ids = {Q, K, V, O, DO, STATS, DQ, DK, DV, SCALE, ONE, SOFTMAX_SUM, DQ_ACCUM};
      std::vector<void*> bwd_ptrs = {q.get(),  k.get(),  v.get(),  o.get(), d_o.get(),          stats.get(),
                                     dq.get(), dk.get(), dv.get(), &scale, &one, softmax_sum.get(), dq_accum.get()};
      if (p.causal) {
        fwd_ids.push_back(NEG_INF);
        fwd_ptrs.push_back(&neg_inf);
        bwd_ids.push_back(NEG_INF);
        bwd_ptrs.push_back(&neg_inf);
      }
      // A pack or an execution that cuDNN refuses skips the problem like a refused graph; a
      // CUDA failure (MeasureError) still ends the phase.
      double f = 0, b = 0;
      try {
        std::unique_ptr<Desc> fwd_pack = variant_pack(fwd_ids, fwd_ptrs, workspace.get());
        std::unique_ptr<Desc> bwd_pack = variant_pack(bwd_ids, bwd_ptrs, workspace.get());
        auto run = [&](const Desc& plan, const Desc& pack) {
          cudnn_check(cudnnBackendExecute(handle, plan.get(), pack.get()), "cudnnBackendExecute");
        };
        f = time_on_stream(stream, phase.target_s, [&] { run(*fwd.plan, *fwd_pack); });
        // The backward accumulates dQ in FP32: cudnn-frontend zeroes the accumulator before
        // every call, and so does each timed call here.
        b = time_on_stream(stream, phase.target_s, [&] {
          TRAINSIM_CHECK(cudaMemsetAsync(dq_accum.get(), 0, dq_accum.bytes(), stream));
          run(*bwd.plan, *bwd_pack);
        });
      } catch (const Refused& e) {
        const std::string why = fmt::format("head_dim {}{}: {}", p.head_dim, p.causal ? " causal" : "", e.what());
        if (std::find(refused.begin(), refused.end(), why) == refused.end()) refused.push_back(why);
        continue;
      }
      rows.push_back({kFusedAttentionPath, "forward", p, f});
      rows.push_back({kFusedAttentionPath, "backward", p, b});
    }
  } catch (...) {
    if (stream != nullptr) cudaStreamDestroy(stream);
    cudnnDestroy(handle);
    throw;
  }
  cudaStreamDestroy(stream);
  cudnnDestroy(handle);
  phase.note(fmt::format("sdpa: cuDNN {} fused attention (backend graph API): {} problems measured", cudnnGetVersion(),
                         rows.size() / 2));
  for (const auto& why : refused) phase.note("sdpa: skipped, cuDNN refused: " + why);
  if (too_large > 0) phase.note(fmt::format("sdpa: {} problems skipped: they do not fit in free memory", too_large));
  if (cut > 0)
    phase.note(fmt::format("sdpa: the time budget ended the phase; {} of {} problems not measured", cut, problems.size()));
  return rows;
}

}  // namespace trainsim::calibration::cuda::detail
