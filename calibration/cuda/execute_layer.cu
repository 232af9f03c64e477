#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "calibration/cuda/execute_layer.cuh"

namespace podsim::calibration::gpu {
namespace {

constexpr size_t kWorkspaceBytes = size_t{64} << 20;  // cuBLASLt workspace (Hopper wants 32 MiB+)

size_t z(int64_t v) { return static_cast<size_t>(v); }

bool is_gemm_step(ExecStep step) { return expected_gemm(step, ExecLayerShape{}).has_value(); }

bool is_collective_step(ExecStep step) {
  switch (step) {
    case ExecStep::kAttnInputGather:
    case ExecStep::kAttnReduce:
    case ExecStep::kMlpInputGather:
    case ExecStep::kMlpReduce:
    case ExecStep::kMlpFc2DoutGather:
    case ExecStep::kMlpFc1InputRegather:
    case ExecStep::kMlpFc1DgradReduce:
    case ExecStep::kAttnOutDoutGather:
    case ExecStep::kQkvInputRegather:
    case ExecStep::kQkvDgradReduce:
      return true;
    default:
      return false;
  }
}

bool is_optimizer_step(ExecStep step) {
  return step == ExecStep::kGradNorm || step == ExecStep::kAdamStep;
}

// Which operand of a GEMM step is transposed, and whether it is a weight
// gradient (fp32, accumulated).
struct GemmKind {
  bool trans_a = false, trans_b = false, wgrad = false;
};
GemmKind gemm_kind(ExecStep step) {
  switch (step) {
    case ExecStep::kMlpFc2Dgrad:
    case ExecStep::kMlpFc1Dgrad:
    case ExecStep::kAttnOutDgrad:
    case ExecStep::kQkvDgrad:
      return {false, true, false};  // dX = dY W^T, W stored [in x out]
    case ExecStep::kMlpFc2Wgrad:
    case ExecStep::kMlpFc1Wgrad:
    case ExecStep::kAttnOutWgrad:
    case ExecStep::kQkvWgrad:
      return {true, false, true};  // dW += X^T dY
    default:
      return {false, false, false};  // Y = X W
  }
}

std::string shape_string(const ExecGemmShape& g) {
  return std::to_string(g.m) + "x" + std::to_string(g.n) + "x" + std::to_string(g.k) +
         (g.batch != 1 ? " x" + std::to_string(g.batch) : "");
}

}  // namespace

std::vector<PassItem> pass_items(const ExecPlan& plan, bool collectives) {
  std::vector<PassItem> items;
  const auto add_phase = [&](ExecPhase phase, int64_t layer) {
    for (size_t i = 0; i < plan.layer_ops.size(); ++i) {
      const ExecOp& op = plan.layer_ops[i];
      if (op.phase != phase || (!collectives && op.op_class == OpClass::kCollective)) continue;
      for (int64_t c = 0; c < op.count; ++c) items.push_back({false, i, layer});
    }
  };
  for (int64_t l = 0; l < plan.layers; ++l) add_phase(ExecPhase::kForward, l);
  for (int64_t l = plan.layers - 1; l >= 0; --l) {
    add_phase(ExecPhase::kRecompute, l);
    add_phase(ExecPhase::kBackward, l);
  }
  for (size_t i = 0; i < plan.optimizer_ops.size(); ++i) {
    for (int64_t c = 0; c < plan.optimizer_ops[i].count; ++c) items.push_back({true, i, 0});
  }
  return items;
}

LayerExecutor::LayerExecutor(const ExecPlan& plan, cudaStream_t stream, cublasLtHandle_t lt)
    : plan_(plan),
      s_(plan.layer),
      layout_(layer_param_layout(plan.layer)),
      stream_(stream),
      lt_(lt),
      step_gemm_(static_cast<size_t>(ExecStep::kAdamStep) + 1, nullptr) {
  const std::vector<ExecLimit> limits = executor_limits(s_);
  if (!limits.empty()) throw std::runtime_error("execute: " + limits.front().message);
  if (plan.layers < 1) throw std::runtime_error("execute: the plan runs no layer");
  check_ops();
  int device = 0;
  PODSIM_CUDA_CHECK(cudaGetDevice(&device));
  PODSIM_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, device));

  const int64_t t = s_.tokens, n = s_.norm_tokens, h = s_.hidden, f = s_.ffn;
  const int64_t w = s_.qkv_columns(), a = s_.attn_columns();
  const int64_t rows = s_.batch * s_.heads * s_.seq;
  for (int64_t l = 0; l <= plan.layers; ++l) x_.emplace_back(z(n * h));
  for (int64_t l = 0; l < plan.layers; ++l) {
    xg1_.emplace_back(z(t * h));
    qkv_.emplace_back(z(t * w));
    o_.emplace_back(z(t * a));
    lse_.emplace_back(z(rows));
    h1_.emplace_back(z(n * h));
    xg2_.emplace_back(z(t * h));
    u_.emplace_back(z(t * 2 * f));
    a_.emplace_back(z(t * f));
  }
  y_ = DeviceBuffer<bf16>(z(t * h));
  if (s_.sequence_parallel) dgath_ = DeviceBuffer<bf16>(z(t * h));
  da_ = DeviceBuffer<bf16>(z(t * f));
  du_ = DeviceBuffer<bf16>(z(t * 2 * f));
  dxn_ = DeviceBuffer<bf16>(z(t * h));
  d_o_ = DeviceBuffer<bf16>(z(t * a));
  dqkv_ = DeviceBuffer<bf16>(z(t * w));
  dh1_ = DeviceBuffer<bf16>(z(n * h));
  dy_top_ = DeviceBuffer<bf16>(z(n * h));
  chain_[0] = DeviceBuffer<bf16>(z(n * h));
  chain_[1] = DeviceBuffer<bf16>(z(n * h));
  delta_ = DeviceBuffer<float>(z(rows));
  dq_acc_ = DeviceBuffer<float>(z(t * a));
  kv_splits_ = attention_backward_splits(attention_shape(), sm_count_);
  const size_t scratch = attention_backward_scratch_floats(attention_shape(), kv_splits_);
  if (scratch > 0) dkv_scratch_ = DeviceBuffer<float>(scratch);
  const size_t params = z(plan.layers * layout_.total);
  weights_ = DeviceBuffer<bf16>(params);
  grads_ = DeviceBuffer<float>(params);
  master_ = DeviceBuffer<float>(params);
  m_ = DeviceBuffer<float>(params);
  v_ = DeviceBuffer<float>(params);
  sum_squares_ = DeviceBuffer<double>(1);
  workspace_ = DeviceBuffer<unsigned char>(kWorkspaceBytes);
  // Random activations (rows a skipped all-gather would fill stay realistic
  // data: a GEMM's power, hence its clock, depends on its operands), zero
  // statistics, gradients and moments.
  uint64_t salt = 7000;
  const auto randomize = [&](DeviceBuffer<bf16>& b) {
    if (b.size() > 0) fill_random(b.get(), b.size(), salt++, -1.0f, 1.0f, stream_);
  };
  for (auto* list : {&x_, &xg1_, &qkv_, &o_, &h1_, &xg2_, &u_, &a_}) {
    for (DeviceBuffer<bf16>& b : *list) randomize(b);
  }
  for (DeviceBuffer<bf16>* b : {&y_, &dgath_, &da_, &du_, &dxn_, &d_o_, &dqkv_, &dh1_, &dy_top_,
                                &chain_[0], &chain_[1], &weights_}) {
    randomize(*b);
  }
  for (DeviceBuffer<float>* b : {&delta_, &dq_acc_, &grads_, &master_, &m_, &v_}) {
    PODSIM_CUDA_CHECK(cudaMemsetAsync(b->get(), 0, b->bytes(), stream_));
  }
  for (const DeviceBuffer<float>& b : lse_) {
    PODSIM_CUDA_CHECK(cudaMemsetAsync(b.get(), 0, b.bytes(), stream_));
  }
  PODSIM_CUDA_CHECK(cudaMemsetAsync(sum_squares_.get(), 0, sizeof(double), stream_));
  PODSIM_CUDA_CHECK(cudaStreamSynchronize(stream_));

  // Rotary table: (cos, sin) of position x theta^(-2c/128), computed in double.
  std::vector<float2> table(z(s_.seq * 64));
  for (int64_t p = 0; p < s_.seq; ++p) {
    for (int64_t c = 0; c < 64; ++c) {
      const double angle =
          static_cast<double>(p) * std::pow(s_.rope_theta, -2.0 * static_cast<double>(c) / 128.0);
      table[z(p * 64 + c)] =
          make_float2(static_cast<float>(std::cos(angle)), static_cast<float>(std::sin(angle)));
    }
  }
  rope_table_ = DeviceBuffer<float2>(table.size());
  PODSIM_CUDA_CHECK(cudaMemcpy(rope_table_.get(), table.data(), table.size() * sizeof(float2),
                               cudaMemcpyHostToDevice));

  // One cuBLASLt plan per GEMM step, for the least-aligned layer's operands.
  for (const ExecOp& op : plan_.layer_ops) {
    if (op.op_class != OpClass::kGemm) continue;
    const GemmKind kind = gemm_kind(op.step);
    RowMajorGemmSpec spec;
    spec.m = op.gemm.m;
    spec.n = op.gemm.n;
    spec.k = op.gemm.k;
    spec.trans_a = kind.trans_a;
    spec.trans_b = kind.trans_b;
    spec.c_fp32 = kind.wgrad;
    spec.accumulate = kind.wgrad;
    for (int64_t l = 0; l < plan.layers; ++l) {
      const GemmCall call = gemm_call(op.step, l);
      spec.alignment = std::min({spec.alignment, pointer_alignment(call.a),
                                 pointer_alignment(call.b), pointer_alignment(call.c)});
    }
    step_gemm_[static_cast<size_t>(op.step)] = &plan_gemm(spec);
  }
}

LayerExecutor::~LayerExecutor() = default;

void LayerExecutor::check_ops() const {
  const auto fail = [](const ExecOp& op, const std::string& why) {
    throw std::runtime_error("execute: op '" + op.name + "' " + why);
  };
  for (const ExecOp& op : plan_.layer_ops) {
    if (to_string(op.step) != op.name)
      fail(op, "is mapped to step " + std::string(to_string(op.step)));
    if (op.count < 1) fail(op, "runs no instance");
    if (is_optimizer_step(op.step)) fail(op, "is an optimizer op among the layer's ops");
    if (const auto g = expected_gemm(op.step, s_)) {
      if (op.op_class != OpClass::kGemm || !(op.gemm == *g)) {
        fail(op, "has shape " + shape_string(op.gemm) + "; the executor's layer runs " +
                     shape_string(*g));
      }
    } else if (const auto at = expected_attention(op.step, s_)) {
      if (op.op_class != OpClass::kAttention || !(op.attention == *at)) {
        fail(op, "is not the attention call of the executor's layer");
      }
    } else if (is_collective_step(op.step)) {
      if (op.op_class != OpClass::kCollective) fail(op, "should be a collective");
    } else if (op.op_class != OpClass::kMemoryBound) {
      fail(op, "should be a memory-bound kernel");
    }
  }
  for (const ExecOp& op : plan_.optimizer_ops) {
    if (!is_optimizer_step(op.step) || op.op_class != OpClass::kOptimizer) {
      fail(op, "is not an optimizer op");
    }
  }
  const double stack = static_cast<double>(plan_.layers) * static_cast<double>(layout_.total);
  if (!plan_.optimizer_ops.empty() &&
      (!(plan_.optimizer_params >= 1) || plan_.optimizer_params > stack ||
       plan_.optimizer_params != std::floor(plan_.optimizer_params))) {
    throw std::runtime_error("execute: the optimizer updates " +
                             std::to_string(plan_.optimizer_params) +
                             " parameters; the stack holds " + std::to_string(stack));
  }
}

const RowMajorGemm& LayerExecutor::plan_gemm(const RowMajorGemmSpec& spec) {
  for (const auto& [known, gemm] : gemms_) {
    if (known.m == spec.m && known.n == spec.n && known.k == spec.k &&
        known.trans_a == spec.trans_a && known.trans_b == spec.trans_b &&
        known.c_fp32 == spec.c_fp32 && known.accumulate == spec.accumulate &&
        known.alignment == spec.alignment) {
      return *gemm;
    }
  }
  gemms_.emplace_back(spec, std::make_unique<RowMajorGemm>(lt_, spec, kWorkspaceBytes));
  return *gemms_.back().second;
}

bf16* LayerExecutor::weight(int64_t layer, int64_t offset) const {
  return weights_.get() + layer * layout_.total + offset;
}
float* LayerExecutor::grad(int64_t layer, int64_t offset) const {
  return grads_.get() + layer * layout_.total + offset;
}

const bf16* LayerExecutor::output_gradient(int64_t layer) const {
  return layer == plan_.layers - 1 ? dy_top_.get() : chain_[(layer + 1) % 2].get();
}
const bf16* LayerExecutor::input_gradient(int64_t layer) const { return chain_[layer % 2].get(); }
bf16* LayerExecutor::gathered_gradient(const bf16* rows) const {
  return s_.sequence_parallel ? dgath_.get() : const_cast<bf16*>(rows);
}

void LayerExecutor::replicate_rows(bf16* tensor) const {
  const size_t block = z(s_.norm_tokens * s_.hidden);
  for (int64_t r = 1; r < s_.tp; ++r) {
    PODSIM_CUDA_CHECK(cudaMemcpyAsync(tensor + z(r) * block, tensor, block * sizeof(bf16),
                                      cudaMemcpyDeviceToDevice, stream_));
  }
}

GemmCall LayerExecutor::gemm_call(ExecStep step, int64_t l) const {
  GemmCall c;
  c.gemm = step_gemm_[static_cast<size_t>(step)];
  const size_t i = z(l);
  switch (step) {
    case ExecStep::kQkv:
      c = {c.gemm, xg1_[i].get(), weight(l, layout_.qkv), qkv_[i].get()};
      break;
    case ExecStep::kAttnOut:
      c = {c.gemm, o_[i].get(), weight(l, layout_.out), y_.get()};
      break;
    case ExecStep::kMlpFc1:
      c = {c.gemm, xg2_[i].get(), weight(l, layout_.fc1), u_[i].get()};
      break;
    case ExecStep::kMlpFc2:
      c = {c.gemm, a_[i].get(), weight(l, layout_.fc2), y_.get()};
      break;
    case ExecStep::kMlpFc2Dgrad:
      c = {c.gemm, gathered_gradient(output_gradient(l)), weight(l, layout_.fc2), da_.get()};
      break;
    case ExecStep::kMlpFc2Wgrad:
      c = {c.gemm, a_[i].get(), gathered_gradient(output_gradient(l)), grad(l, layout_.fc2)};
      break;
    case ExecStep::kMlpFc1Dgrad:
      c = {c.gemm, du_.get(), weight(l, layout_.fc1), dxn_.get()};
      break;
    case ExecStep::kMlpFc1Wgrad:
      c = {c.gemm, xg2_[i].get(), du_.get(), grad(l, layout_.fc1)};
      break;
    case ExecStep::kAttnOutDgrad:
      c = {c.gemm, gathered_gradient(dh1_.get()), weight(l, layout_.out), d_o_.get()};
      break;
    case ExecStep::kAttnOutWgrad:
      c = {c.gemm, o_[i].get(), gathered_gradient(dh1_.get()), grad(l, layout_.out)};
      break;
    case ExecStep::kQkvDgrad:
      c = {c.gemm, dqkv_.get(), weight(l, layout_.qkv), dxn_.get()};
      break;
    case ExecStep::kQkvWgrad:
      c = {c.gemm, xg1_[i].get(), dqkv_.get(), grad(l, layout_.qkv)};
      break;
    default:
      c = {};
      break;
  }
  return c;
}

void LayerExecutor::gemm(const GemmCall& call) const {
  if (call.gemm == nullptr) throw std::logic_error("execute: a GEMM step without a GEMM plan");
  call.gemm->run(call.a, call.b, call.c, workspace_.get(), stream_);
}

AttnShape LayerExecutor::attention_shape() const {
  return {static_cast<int>(s_.batch),
          static_cast<int>(s_.heads),
          static_cast<int>(s_.kv_heads),
          static_cast<int>(s_.seq),
          1.0f / std::sqrt(static_cast<float>(s_.head_dim)),
          true};
}

AttnTensor LayerExecutor::q(int64_t l) const {
  const int64_t w = s_.qkv_columns();
  return {qkv_[z(l)].get(), {s_.seq * w, kAttnHeadDim, w}};
}
AttnTensor LayerExecutor::k(int64_t l) const {
  AttnTensor t = q(l);
  t.ptr += s_.heads * kAttnHeadDim;
  return t;
}
AttnTensor LayerExecutor::v(int64_t l) const {
  AttnTensor t = q(l);
  t.ptr += (s_.heads + s_.kv_heads) * kAttnHeadDim;
  return t;
}
AttnTensor LayerExecutor::o(int64_t l) const {
  const int64_t a = s_.attn_columns();
  return {o_[z(l)].get(), {s_.seq * a, kAttnHeadDim, a}};
}
AttnTensor LayerExecutor::d_o() const {
  const int64_t a = s_.attn_columns();
  return {d_o_.get(), {s_.seq * a, kAttnHeadDim, a}};
}
AttnTensor LayerExecutor::dq() const {
  const int64_t w = s_.qkv_columns();
  return {dqkv_.get(), {s_.seq * w, kAttnHeadDim, w}};
}

void LayerExecutor::init_random(uint64_t seed) {
  const int64_t h = s_.hidden, f = s_.ffn, a = s_.attn_columns(), w = s_.qkv_columns();
  const auto fill = [&](bf16* p, int64_t n, float scale, uint64_t salt) {
    fill_random(p, z(n), seed * 1000 + salt, -scale, scale, stream_);
  };
  const auto inv_sqrt = [](int64_t v) { return 1.0f / std::sqrt(static_cast<float>(v)); };
  for (int64_t l = 0; l < plan_.layers; ++l) {
    const uint64_t salt = static_cast<uint64_t>(l) * 10;
    fill(weight(l, layout_.qkv), h * w, inv_sqrt(h), salt + 1);
    fill(weight(l, layout_.out), a * h, inv_sqrt(a), salt + 2);
    fill(weight(l, layout_.fc1), h * 2 * f, inv_sqrt(h), salt + 3);
    fill(weight(l, layout_.fc2), f * h, inv_sqrt(f), salt + 4);
    fill_random(weight(l, layout_.norm1), z(2 * h), seed * 1000 + salt + 5, 0.5f, 1.5f, stream_);
  }
  const int64_t params = plan_.layers * layout_.total;
  launch_bf16_to_float(weights_.get(), master_.get(), params, stream_);
  fill(x_[0].get(), s_.norm_tokens * h, 1.0f, 900);
  fill(dy_top_.get(), s_.norm_tokens * h, 1.0f, 901);
  PODSIM_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

namespace {
std::vector<bf16> to_bf16(const std::vector<double>& v) {
  std::vector<bf16> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = __float2bfloat16_rn(static_cast<float>(v[i]));
  return out;
}
}  // namespace

void LayerExecutor::upload_layer(int64_t layer, const std::vector<double>& params) {
  if (params.size() != z(layout_.total) || layer < 0 || layer >= plan_.layers) {
    throw std::invalid_argument("upload_layer: wrong size or layer");
  }
  const std::vector<bf16> w = to_bf16(params);
  std::vector<float> master(params.size());
  for (size_t i = 0; i < params.size(); ++i) master[i] = __bfloat162float(w[i]);
  const size_t at = z(layer * layout_.total);
  PODSIM_CUDA_CHECK(
      cudaMemcpy(weights_.get() + at, w.data(), w.size() * sizeof(bf16), cudaMemcpyHostToDevice));
  PODSIM_CUDA_CHECK(cudaMemcpy(master_.get() + at, master.data(), master.size() * sizeof(float),
                               cudaMemcpyHostToDevice));
}

void LayerExecutor::upload_input(const std::vector<double>& x0, const std::vector<double>& dy_top) {
  const size_t n = z(s_.norm_tokens * s_.hidden);
  if (x0.size() != n || dy_top.size() != n) throw std::invalid_argument("upload_input: sizes");
  const std::vector<bf16> x = to_bf16(x0), dy = to_bf16(dy_top);
  PODSIM_CUDA_CHECK(cudaMemcpy(x_[0].get(), x.data(), n * sizeof(bf16), cudaMemcpyHostToDevice));
  PODSIM_CUDA_CHECK(cudaMemcpy(dy_top_.get(), dy.data(), n * sizeof(bf16), cudaMemcpyHostToDevice));
}

void LayerExecutor::zero_grads() {
  PODSIM_CUDA_CHECK(cudaMemsetAsync(grads_.get(), 0, grads_.bytes(), stream_));
}

void LayerExecutor::run_layer_op(const ExecOp& op, int64_t l, CollectiveMode mode) {
  const size_t i = z(l);
  const int64_t t = s_.tokens, n = s_.norm_tokens, h = s_.hidden;
  const float eps = static_cast<float>(s_.norm_eps);
  const bool emulate = mode == CollectiveMode::kEmulate;
  const int norm_blocks = 2 * sm_count_;
  const auto gather_gradient = [&](const bf16* rows) {
    if (!emulate || !s_.sequence_parallel) return;
    PODSIM_CUDA_CHECK(cudaMemcpyAsync(dgath_.get(), rows, z(n * h) * sizeof(bf16),
                                      cudaMemcpyDeviceToDevice, stream_));
    replicate_rows(dgath_.get());
  };
  switch (op.step) {
    // ---- forward
    case ExecStep::kAttnNorm:
      launch_rmsnorm_forward(x_[i].get(), weight(l, layout_.norm1), xg1_[i].get(), n, h, eps,
                             stream_);
      break;
    case ExecStep::kAttnInputGather:
    case ExecStep::kQkvInputRegather:
      if (emulate) replicate_rows(xg1_[i].get());
      break;
    case ExecStep::kRope:
      launch_rope(qkv_[i].get(), rope_table_.get(), t, s_.seq, s_.qkv_columns(),
                  s_.heads + s_.kv_heads, false, stream_);
      break;
    case ExecStep::kAttnCore:
      launch_attention_forward(attention_shape(), q(l), k(l), v(l), o(l), lse_[i].get(), stream_);
      break;
    case ExecStep::kAttnReduce:
    case ExecStep::kMlpReduce:
    case ExecStep::kMlpFc1DgradReduce:
    case ExecStep::kQkvDgradReduce:
      break;  // one rank: its slot of the sum is its own partial sum (see CollectiveMode)
    case ExecStep::kAttnResidual:
      launch_add(x_[i].get(), y_.get(), h1_[i].get(), n * h, stream_);
      break;
    case ExecStep::kMlpNorm:
      launch_rmsnorm_forward(h1_[i].get(), weight(l, layout_.norm2), xg2_[i].get(), n, h, eps,
                             stream_);
      break;
    case ExecStep::kMlpInputGather:
    case ExecStep::kMlpFc1InputRegather:
      if (emulate) replicate_rows(xg2_[i].get());
      break;
    case ExecStep::kMlpSwiglu:
      launch_swiglu_forward(u_[i].get(), a_[i].get(), t, s_.ffn, stream_);
      break;
    case ExecStep::kMlpResidual:
      launch_add(h1_[i].get(), y_.get(), x_[i + 1].get(), n * h, stream_);
      break;
    // ---- backward
    case ExecStep::kMlpFc2DoutGather:
      gather_gradient(output_gradient(l));
      break;
    case ExecStep::kMlpSwigluBwd:
      launch_swiglu_backward(u_[i].get(), da_.get(), du_.get(), t, s_.ffn, stream_);
      break;
    case ExecStep::kMlpNormBwd:
      launch_rmsnorm_backward(h1_[i].get(), weight(l, layout_.norm2), dxn_.get(),
                              output_gradient(l), dh1_.get(), grad(l, layout_.norm2), n, h, eps,
                              norm_blocks, stream_);
      break;
    case ExecStep::kAttnOutDoutGather:
      gather_gradient(dh1_.get());
      break;
    case ExecStep::kAttnCoreBwd: {
      AttnBackwardTensors bt;
      bt.q = q(l);
      bt.k = k(l);
      bt.v = v(l);
      bt.o = o(l);
      bt.d_o = d_o();
      bt.dq = dq();
      bt.dk = bt.dq;
      bt.dk.ptr += s_.heads * kAttnHeadDim;
      bt.dv = bt.dq;
      bt.dv.ptr += (s_.heads + s_.kv_heads) * kAttnHeadDim;
      bt.lse = lse_[i].get();
      bt.delta = delta_.get();
      bt.dq_acc = dq_acc_.get();
      bt.kv_splits = kv_splits_;
      bt.dkv_scratch = dkv_scratch_.get();
      launch_attention_backward(attention_shape(), bt, stream_);
      break;
    }
    case ExecStep::kRopeBwd:
      launch_rope(dqkv_.get(), rope_table_.get(), t, s_.seq, s_.qkv_columns(),
                  s_.heads + s_.kv_heads, true, stream_);
      break;
    case ExecStep::kAttnNormBwd:
      launch_rmsnorm_backward(x_[i].get(), weight(l, layout_.norm1), dxn_.get(), dh1_.get(),
                              chain_[l % 2].get(), grad(l, layout_.norm1), n, h, eps, norm_blocks,
                              stream_);
      break;
    case ExecStep::kGradNorm:
    case ExecStep::kAdamStep:
      throw std::logic_error("execute: optimizer op run as a layer op");
    default:
      if (!is_gemm_step(op.step)) throw std::logic_error("execute: unhandled step " + op.name);
      gemm(gemm_call(op.step, l));
      break;
  }
}

void LayerExecutor::run_item(const PassItem& item, CollectiveMode mode, int64_t step) {
  if (item.optimizer) {
    run_optimizer_op(plan_.optimizer_ops[item.op], step);
  } else {
    run_layer_op(plan_.layer_ops[item.op], item.layer, mode);
  }
}

void LayerExecutor::run_optimizer_op(const ExecOp& op, int64_t step) {
  const auto params = static_cast<int64_t>(plan_.optimizer_params);
  switch (op.step) {
    case ExecStep::kGradNorm:
      launch_sum_squares(grads_.get(), params, sum_squares_.get(), stream_);
      break;
    case ExecStep::kAdamStep: {
      const AdamSettings& s = plan_.adam;
      AdamArgs args{};
      args.lr = static_cast<float>(s.lr);
      args.beta1 = static_cast<float>(s.beta1);
      args.beta2 = static_cast<float>(s.beta2);
      args.eps = static_cast<float>(s.eps);
      args.weight_decay = static_cast<float>(s.weight_decay);
      args.clip_norm = static_cast<float>(s.clip_norm);
      args.c1 = static_cast<float>(1.0 - std::pow(s.beta1, static_cast<double>(step)));
      args.c2 = static_cast<float>(1.0 - std::pow(s.beta2, static_cast<double>(step)));
      launch_adam(master_.get(), m_.get(), v_.get(), grads_.get(), weights_.get(), params,
                  sum_squares_.get(), args, stream_);
      break;
    }
    default:
      throw std::logic_error("execute: not an optimizer op: " + op.name);
  }
}

}  // namespace podsim::calibration::gpu
