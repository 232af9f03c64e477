#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>

#include "calibration/cuda/execute_check.cuh"
#include "calibration/execute_reference.h"

namespace podsim::calibration::gpu {
namespace {

size_t z(int64_t v) { return static_cast<size_t>(v); }

// Tolerances, as the relative errors of calibration::tensor_error. Every
// activation is stored in bf16 (relative rounding 2^-9 ~ 0.2%) about ten times
// between a layer's input and its output (twenty for gradients), so rms
// errors of a few tenths of a percent and worst elements of a few percent are
// expected; a wrong index or transpose gives errors of order 1.
constexpr double kForwardRms = 0.03, kForwardMax = 0.08;
constexpr double kBackwardRms = 0.04, kBackwardMax = 0.12;
// fp32 arithmetic against double: the optimizer's results agree to ~1e-6.
constexpr double kOptimizerRel = 1e-4;

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::vector<double> read_bf16(const bf16* p, size_t n) {
  std::vector<bf16> raw(n);
  if (n > 0) PODSIM_CUDA_CHECK(cudaMemcpy(raw.data(), p, n * sizeof(bf16), cudaMemcpyDeviceToHost));
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<double>(__bfloat162float(raw[i]));
  return out;
}

std::vector<double> read_f32(const float* p, size_t n) {
  std::vector<float> raw(n);
  if (n > 0)
    PODSIM_CUDA_CHECK(cudaMemcpy(raw.data(), p, n * sizeof(float), cudaMemcpyDeviceToHost));
  return std::vector<double>(raw.begin(), raw.end());
}

__global__ void gather_rows_kernel(const bf16* __restrict__ src, int64_t row_stride, size_t rows,
                                   size_t width, bf16* __restrict__ dst) {
  const size_t n = rows * width;
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    dst[i] = src[static_cast<int64_t>(i / width) * row_stride + static_cast<int64_t>(i % width)];
  }
}

/// `rows` rows of `width` bf16 values, `row_stride` elements apart (a column
/// when width is 1), gathered on the device and copied back at once.
std::vector<double> read_rows(const bf16* p, size_t rows, int64_t row_stride, size_t width) {
  DeviceBuffer<bf16> packed(rows * width);
  const size_t blocks = std::min<size_t>((rows * width + 255) / 256, 4096);
  gather_rows_kernel<<<static_cast<unsigned>(std::max<size_t>(blocks, 1)), 256>>>(
      p, row_stride, rows, width, packed.get());
  PODSIM_CUDA_CHECK_LAUNCH();
  PODSIM_CUDA_CHECK(cudaDeviceSynchronize());
  return read_bf16(packed.get(), rows * width);
}

/// One value of a bf16 or fp32 tensor.
double read_one(const void* p, size_t index, bool fp32) {
  if (fp32) {
    float v = 0;
    PODSIM_CUDA_CHECK(
        cudaMemcpy(&v, static_cast<const float*>(p) + index, sizeof v, cudaMemcpyDeviceToHost));
    return static_cast<double>(v);
  }
  bf16 v;
  PODSIM_CUDA_CHECK(
      cudaMemcpy(&v, static_cast<const bf16*>(p) + index, sizeof v, cudaMemcpyDeviceToHost));
  return static_cast<double>(__bfloat162float(v));
}

bool all_finite(const std::vector<double>& v) {
  return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
}

/// Judges a tensor against the reference; appends the error to `detail`.
bool judge(const std::string& what, const std::vector<double>& got, const std::vector<double>& want,
           double rms_tol, double max_tol, std::string& detail) {
  const TensorError e = tensor_error(got, want);
  const bool ok = e.rms_rel <= rms_tol && e.max_rel <= max_tol;
  if (!detail.empty()) detail += "; ";
  detail +=
      what + " rms " + fmt("%.2e", e.rms_rel) + " max " + fmt("%.2e", e.max_rel) +
      (ok ? "" : " (FAILS: limits " + fmt("%.0e", rms_tol) + ", " + fmt("%.0e", max_tol) + ")");
  return ok;
}

std::vector<double> near_one(size_t n, uint64_t seed) {
  std::vector<double> v = bf16_uniform(n, seed, 0.5);
  for (double& x : v) x = static_cast<double>(round_to_bf16(static_cast<float>(1.0 + x)));
  return v;
}

std::vector<double> pack(const RefLayerWeights& w) {
  std::vector<double> out;
  for (const std::vector<double>* part : {&w.qkv, &w.out, &w.fc1, &w.fc2, &w.norm1, &w.norm2}) {
    out.insert(out.end(), part->begin(), part->end());
  }
  return out;
}

}  // namespace

std::vector<CheckOutcome> check_against_reference(const ExecPlan& cp, cudaStream_t stream,
                                                  cublasLtHandle_t lt) {
  const ExecLayerShape& s = cp.layer;
  const LayerParamLayout lay = layer_param_layout(s);
  const int64_t layers = cp.layers, n = s.norm_tokens, h = s.hidden, f = s.ffn;
  const int64_t w = s.qkv_columns(), a = s.attn_columns();
  const auto inv_sqrt = [](int64_t v) { return 1.0 / std::sqrt(static_cast<double>(v)); };

  // Host: bf16-exact weights and inputs, then the reference pass.
  uint64_t seed = 4242;
  std::vector<RefLayerWeights> weights(z(layers));
  for (RefLayerWeights& rw : weights) {
    rw.qkv = bf16_uniform(z(h * w), seed++, inv_sqrt(h));
    rw.out = bf16_uniform(z(a * h), seed++, inv_sqrt(a));
    rw.fc1 = bf16_uniform(z(h * 2 * f), seed++, inv_sqrt(h));
    rw.fc2 = bf16_uniform(z(f * h), seed++, inv_sqrt(f));
    rw.norm1 = near_one(z(h), seed++);
    rw.norm2 = near_one(z(h), seed++);
  }
  const std::vector<double> x0 = bf16_uniform(z(n * h), seed++, 1.0);
  const std::vector<double> dy = bf16_uniform(z(n * h), seed++, 1.0);
  std::vector<RefLayerState> states;
  std::vector<double> x = x0;
  for (int64_t l = 0; l < layers; ++l) {
    states.push_back(reference_layer_forward(s, weights[z(l)], x));
    x = states.back().out;
  }
  std::vector<RefLayerGrads> grads(z(layers));
  std::vector<double> dout = dy;
  for (int64_t l = layers - 1; l >= 0; --l) {
    grads[z(l)] = reference_layer_backward(s, weights[z(l)], states[z(l)], dout);
    dout = grads[z(l)].dx;
  }

  // GPU: the same pass, collectives emulated, optimizer step 1.
  LayerExecutor ex(cp, stream, lt);
  std::vector<double> initial;
  for (int64_t l = 0; l < layers; ++l) {
    const std::vector<double> p = pack(weights[z(l)]);
    ex.upload_layer(l, p);
    initial.insert(initial.end(), p.begin(), p.end());
  }
  ex.upload_input(x0, dy);
  for (const PassItem& item : pass_items(cp, true)) ex.run_item(item, CollectiveMode::kEmulate, 1);
  PODSIM_CUDA_CHECK(cudaStreamSynchronize(stream));

  std::vector<CheckOutcome> out;
  const std::string where = "b=" + std::to_string(s.batch) + " s=" + std::to_string(s.seq) +
                            " hidden=" + std::to_string(h) + " heads " + std::to_string(s.heads) +
                            "/" + std::to_string(s.kv_heads) + " ffn=" + std::to_string(f) +
                            " tp=" + std::to_string(s.tp) + (s.sequence_parallel ? " sp" : "") +
                            ", " + std::to_string(layers) + " layers";
  {
    CheckOutcome c{"reference check (" + where + "): forward output", true, ""};
    c.passed = judge("x_out", read_bf16(ex.layer_input(layers), z(n * h)), states.back().out,
                     kForwardRms, kForwardMax, c.detail);
    out.push_back(std::move(c));
  }
  {
    CheckOutcome c{"reference check: input gradient", true, ""};
    c.passed = judge("dx_in", read_bf16(ex.input_gradient(0), z(n * h)), grads[0].dx, kBackwardRms,
                     kBackwardMax, c.detail);
    out.push_back(std::move(c));
  }
  const std::vector<double> gpu_grads = read_f32(ex.grads(), z(layers * lay.total));
  {
    CheckOutcome c{"reference check: weight gradients", true, ""};
    for (int64_t l = 0; l < layers; ++l) {
      const RefLayerWeights& g = grads[z(l)].dw;
      const struct {
        const char* name;
        int64_t offset;
        const std::vector<double>* want;
      } parts[] = {{"dW_qkv", lay.qkv, &g.qkv},     {"dW_o", lay.out, &g.out},
                   {"dW_1", lay.fc1, &g.fc1},       {"dW_2", lay.fc2, &g.fc2},
                   {"dnorm1", lay.norm1, &g.norm1}, {"dnorm2", lay.norm2, &g.norm2}};
      for (const auto& part : parts) {
        const auto first =
            gpu_grads.begin() + static_cast<std::ptrdiff_t>(l * lay.total + part.offset);
        const std::vector<double> got(first,
                                      first + static_cast<std::ptrdiff_t>(part.want->size()));
        c.passed = judge("L" + std::to_string(l) + " " + part.name, got, *part.want, kBackwardRms,
                         kBackwardMax, c.detail) &&
                   c.passed;
      }
    }
    out.push_back(std::move(c));
  }
  if (cp.optimizer_ops.empty()) return out;

  // The optimizer from the GPU's own gradients: the norm in double, AdamW step 1.
  const auto params = static_cast<size_t>(cp.optimizer_params);
  double sum_squares = 0;
  for (size_t i = 0; i < params; ++i) sum_squares += gpu_grads[i] * gpu_grads[i];
  double gpu_sum_squares = 0;
  PODSIM_CUDA_CHECK(
      cudaMemcpy(&gpu_sum_squares, ex.grad_sum_squares(), sizeof(double), cudaMemcpyDeviceToHost));
  {
    const double rel = std::abs(gpu_sum_squares - sum_squares) / std::max(sum_squares, 1e-300);
    out.push_back({"reference check: gradient norm", rel <= kOptimizerRel,
                   "sum of squares rel. error " + fmt("%.2e", rel)});
  }
  {
    std::vector<double> grad(gpu_grads.begin(),
                             gpu_grads.begin() + static_cast<std::ptrdiff_t>(params));
    std::vector<double> p(initial.begin(), initial.begin() + static_cast<std::ptrdiff_t>(params));
    std::vector<double> m(params, 0.0), v(params, 0.0);
    reference_adam(cp.adam, 1, adam_clip_scale(cp.adam, sum_squares), grad, p, m, v);
    const size_t total = initial.size();
    const std::vector<double> master = read_f32(ex.master(), total);
    CheckOutcome c{"reference check: AdamW step over " + std::to_string(params) + " of " +
                       std::to_string(total) + " parameters",
                   true, ""};
    const std::vector<double> got_p(master.begin(),
                                    master.begin() + static_cast<std::ptrdiff_t>(params));
    // The update is ~lr per step: judge it, not the weights it moves.
    std::vector<double> got_step(params), want_step(params);
    for (size_t i = 0; i < params; ++i) {
      got_step[i] = got_p[i] - initial[i];
      want_step[i] = p[i] - initial[i];
    }
    c.passed =
        judge("update", got_step, want_step, kOptimizerRel * 10, kOptimizerRel * 100, c.detail);
    c.passed =
        judge("m", read_f32(ex.adam_m(), params), m, kOptimizerRel, kOptimizerRel * 10, c.detail) &&
        c.passed;
    c.passed =
        judge("v", read_f32(ex.adam_v(), params), v, kOptimizerRel, kOptimizerRel * 10, c.detail) &&
        c.passed;
    size_t moved = 0, bad_bf16 = 0;
    const std::vector<double> bf = read_bf16(ex.weights(), total);
    for (size_t i = 0; i < total; ++i) {
      if (i >= params && master[i] != initial[i]) ++moved;
      if (bf[i] != static_cast<double>(round_to_bf16(static_cast<float>(master[i])))) ++bad_bf16;
    }
    c.detail += "; " + std::to_string(moved) + " parameters outside the shard moved, " +
                std::to_string(bad_bf16) + " bf16 weights differ from their master copy";
    c.passed = c.passed && moved == 0 && bad_bf16 == 0;
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

struct GemmSample {
  int64_t i = 0, j = 0;
  double before = 0;
};

/// Samples of op(A) B at (i, j) against host dot products of what the GEMM read.
std::string check_gemm(const GemmCall& call, const std::vector<GemmSample>& samples,
                       double& worst) {
  const RowMajorGemmSpec& s = call.gemm->spec();
  std::string problems;
  for (const GemmSample& smp : samples) {
    const std::vector<double> arow = s.trans_a ? read_rows(call.a + smp.i, z(s.k), s.m, 1)
                                               : read_bf16(call.a + smp.i * s.k, z(s.k));
    const std::vector<double> bcol = s.trans_b ? read_bf16(call.b + smp.j * s.k, z(s.k))
                                               : read_rows(call.b + smp.j, z(s.k), s.n, 1);
    double want = 0, scale = 0;
    for (size_t p = 0; p < arow.size(); ++p) {
      want += arow[p] * bcol[p];
      scale += std::abs(arow[p] * bcol[p]);
    }
    const double got = read_one(call.c, z(smp.i * s.n + smp.j), s.c_fp32) - smp.before;
    // bf16 output: its rounding (2^-9) plus fp32 accumulation; fp32 output: accumulation only.
    const double tol = (s.c_fp32 ? 2e-3 : 8e-3) * scale + 1e-5;
    const double err = std::abs(got - want) / (scale + 1e-30);
    worst = std::max(worst, std::isnan(err) ? INFINITY : err);
    if (!(std::abs(got - want) <= tol)) {
      problems += " (" + std::to_string(smp.i) + "," + std::to_string(smp.j) + "): got " +
                  fmt("%.6g", got) + " want " + fmt("%.6g", want);
    }
  }
  return problems;
}

/// Rows of one head of a view: `rows` rows from row 0.
std::vector<double> head_rows(const AttnTensor& t, int b, int h, int rows) {
  return read_rows(t.ptr + b * t.strides.batch + h * t.strides.head, z(rows), t.strides.row,
                   kAttnHeadDim);
}
std::vector<double> head_row(const AttnTensor& t, int b, int h, int row) {
  return read_bf16(t.ptr + b * t.strides.batch + h * t.strides.head + row * t.strides.row,
                   kAttnHeadDim);
}

struct RowPick {
  int b, h, i;
};
std::vector<RowPick> attention_rows(const AttnShape& sh) {
  return {{sh.b - 1, sh.hq - 1, sh.s - 1}, {0, 0, std::min(sh.s - 1, sh.s / 2 + 5)}};
}

/// Query row r.i of head r.h and the key and value rows it attends to (rotated, as attention read
/// them).
struct RowInputs {
  std::vector<double> q, k, v;
};
RowInputs row_inputs(const LayerExecutor& ex, int64_t layer, const RowPick& r) {
  const AttnShape sh = ex.attention_shape();
  const int hk = r.h / (sh.hq / sh.hkv);
  return {head_row(ex.q(layer), r.b, r.h, r.i), head_rows(ex.k(layer), r.b, hk, r.i + 1),
          head_rows(ex.v(layer), r.b, hk, r.i + 1)};
}

std::string check_attention_forward(const LayerExecutor& ex, int64_t layer, double& worst) {
  const AttnShape sh = ex.attention_shape();
  std::string problems;
  for (const RowPick& r : attention_rows(sh)) {
    const RowInputs in = row_inputs(ex, layer, r);
    std::vector<double> want(kAttnHeadDim);
    const double lse =
        reference_attention_row(in.q.data(), in.k.data(), in.v.data(), r.i + 1, kAttnHeadDim,
                                static_cast<double>(sh.scale), want.data());
    const std::vector<double> got = head_row(ex.o(layer), r.b, r.h, r.i);
    const double e = tensor_error(got, want).max_rel;
    float lse_got = 0;
    PODSIM_CUDA_CHECK(
        cudaMemcpy(&lse_got, ex.lse(layer) + (static_cast<size_t>(r.b) * sh.hq + r.h) * sh.s + r.i,
                   sizeof lse_got, cudaMemcpyDeviceToHost));
    const double lse_err = std::abs(static_cast<double>(lse_got) - lse);
    worst = std::max(worst, std::isnan(e) ? INFINITY : e);
    if (!(e <= 2e-2) || !(lse_err <= 1e-2)) {
      problems += " row (b" + std::to_string(r.b) + " h" + std::to_string(r.h) + " i" +
                  std::to_string(r.i) + "): O rel. error " + fmt("%.2e", e) + ", lse error " +
                  fmt("%.2e", lse_err);
    }
  }
  return problems;
}

std::string check_attention_dq(const LayerExecutor& ex, int64_t layer, double& worst) {
  const AttnShape sh = ex.attention_shape();
  std::string problems;
  for (const RowPick& r : attention_rows(sh)) {
    const RowInputs in = row_inputs(ex, layer, r);
    const std::vector<double> o = head_row(ex.o(layer), r.b, r.h, r.i);
    const std::vector<double> d_o = head_row(ex.d_o(), r.b, r.h, r.i);
    std::vector<double> want(kAttnHeadDim);
    reference_attention_dq_row(in.q.data(), in.k.data(), in.v.data(), o.data(), d_o.data(), r.i + 1,
                               kAttnHeadDim, static_cast<double>(sh.scale), want.data());
    const double e = tensor_error(head_row(ex.dq(), r.b, r.h, r.i), want).max_rel;
    worst = std::max(worst, std::isnan(e) ? INFINITY : e);
    if (!(e <= 3e-2)) {
      problems += " row (b" + std::to_string(r.b) + " h" + std::to_string(r.h) + " i" +
                  std::to_string(r.i) + "): dQ rel. error " + fmt("%.2e", e);
    }
  }
  return problems;
}

}  // namespace

std::vector<CheckOutcome> run_spot_checked_pass(LayerExecutor& ex, cudaStream_t stream,
                                                int64_t step) {
  const ExecPlan& plan = ex.plan();
  std::vector<bool> checked(static_cast<size_t>(ExecStep::kAdamStep) + 1, false);
  std::mt19937_64 gen(1234);
  CheckOutcome gemms{"sampled GEMM outputs (4 per GEMM step) against host dot products", true, ""};
  CheckOutcome attn_fwd{"sampled attention forward rows (O, lse) against the host", true, ""};
  CheckOutcome attn_bwd{"sampled attention backward rows (dQ) against the host", true, ""};
  double gemm_worst = 0, fwd_worst = 0, bwd_worst = 0;
  int gemm_steps = 0;
  ex.zero_grads();
  for (const PassItem& item : pass_items(plan, false)) {
    const ExecOp* op = item.optimizer ? nullptr : &plan.layer_ops[item.op];
    const size_t key = op != nullptr ? static_cast<size_t>(op->step) : 0;
    const bool first = op != nullptr && !checked[key];
    if (first && op->op_class == OpClass::kGemm) {
      checked[key] = true;
      const GemmCall call = ex.gemm_call(op->step, item.layer);
      const RowMajorGemmSpec& s = call.gemm->spec();
      std::vector<GemmSample> samples(4);
      PODSIM_CUDA_CHECK(cudaStreamSynchronize(stream));
      for (GemmSample& smp : samples) {
        smp.i = static_cast<int64_t>(gen() % static_cast<uint64_t>(s.m));
        smp.j = static_cast<int64_t>(gen() % static_cast<uint64_t>(s.n));
        if (s.accumulate) smp.before = read_one(call.c, z(smp.i * s.n + smp.j), s.c_fp32);
      }
      ex.run_item(item, CollectiveMode::kSkip, step);
      PODSIM_CUDA_CHECK(cudaStreamSynchronize(stream));
      ++gemm_steps;
      const std::string problems = check_gemm(call, samples, gemm_worst);
      if (!problems.empty()) {
        gemms.passed = false;
        gemms.detail += " " + op->name + ":" + problems + ";";
      }
      continue;
    }
    ex.run_item(item, CollectiveMode::kSkip, step);
    if (first && (op->step == ExecStep::kAttnCore || op->step == ExecStep::kAttnCoreBwd)) {
      checked[key] = true;
      PODSIM_CUDA_CHECK(cudaStreamSynchronize(stream));
      if (op->step == ExecStep::kAttnCore) {
        const std::string problems = check_attention_forward(ex, item.layer, fwd_worst);
        if (!problems.empty()) attn_fwd = {attn_fwd.name, false, problems};
      } else {
        const std::string problems = check_attention_dq(ex, item.layer, bwd_worst);
        if (!problems.empty()) attn_bwd = {attn_bwd.name, false, problems};
      }
    }
  }
  PODSIM_CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<CheckOutcome> out;
  gemms.detail = std::to_string(gemm_steps) + " GEMM steps, worst error " +
                 fmt("%.2e", gemm_worst) + " of sum |a b|" + gemms.detail;
  out.push_back(std::move(gemms));
  if (checked[static_cast<size_t>(ExecStep::kAttnCore)]) {
    if (attn_fwd.passed) attn_fwd.detail = "worst O rel. error " + fmt("%.2e", fwd_worst);
    out.push_back(std::move(attn_fwd));
  }
  if (checked[static_cast<size_t>(ExecStep::kAttnCoreBwd)]) {
    if (attn_bwd.passed) attn_bwd.detail = "worst dQ rel. error " + fmt("%.2e", bwd_worst);
    out.push_back(std::move(attn_bwd));
  }
  // Everything the pass produced is finite (sampled: the first rows).
  const ExecLayerShape& s = plan.layer;
  const size_t sample = std::min<size_t>(4096, z(s.norm_tokens * s.hidden));
  const bool finite = all_finite(read_bf16(ex.layer_input(plan.layers), sample)) &&
                      all_finite(read_bf16(ex.input_gradient(0), sample)) &&
                      all_finite(read_f32(ex.grads(), sample)) &&
                      all_finite(read_f32(ex.master(), sample));
  out.push_back({"the pass's output, input gradient, gradients and weights are finite (sampled)",
                 finite, ""});
  return out;
}

}  // namespace podsim::calibration::gpu
