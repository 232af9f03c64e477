// The attention core (causal, GQA, 128-dim heads, bf16) forward and backward:
// podsim's own FlashAttention-2-style kernels (attention_kernels.cu), since the
// cuDNN frontend is not available here. Checked against the double-precision
// host reference (calibration/execute_reference.h) on small shapes before timing.

#include <algorithm>
#include <cmath>

#include "calibration/cuda/attention_kernels.cuh"
#include "calibration/cuda/common.cuh"
#include "calibration/execute_reference.h"

namespace podsim::calibration::gpu {
namespace {

using bf16 = __nv_bfloat16;
constexpr int kD = kAttnHeadDim;

// ------------------------------------------------------------------ host side

struct AttnBuffers {
  DeviceBuffer<bf16> q, k, v, o, d_o, dq, dk, dv;
  DeviceBuffer<float> lse, delta, dq_acc;
  AttnBuffers(size_t q_elems, size_t kv_elems, size_t q_rows)
      : q(q_elems),
        k(kv_elems),
        v(kv_elems),
        o(q_elems),
        d_o(q_elems),
        dq(q_elems),
        dk(kv_elems),
        dv(kv_elems),
        lse(q_rows),
        delta(q_rows),
        dq_acc(q_elems) {}
};

constexpr uint64_t kSeedQ = 701, kSeedK = 702, kSeedV = 703, kSeedDo = 704;

void fill_inputs(AttnBuffers& buf, cudaStream_t stream) {
  fill_random(buf.q.get(), buf.q.size(), kSeedQ, -1.0f, 1.0f, stream);
  fill_random(buf.k.get(), buf.k.size(), kSeedK, -1.0f, 1.0f, stream);
  fill_random(buf.v.get(), buf.v.size(), kSeedV, -1.0f, 1.0f, stream);
  fill_random(buf.d_o.get(), buf.d_o.size(), kSeedDo, -1.0f, 1.0f, stream);
}

AttnTensor view(DeviceBuffer<bf16>& buf, int heads, int seq) {
  return {buf.get(), contiguous_heads(heads, seq)};
}

void launch_fwd(AttnBuffers& buf, const AttnShape& sh, cudaStream_t stream) {
  launch_attention_forward(sh, view(buf.q, sh.hq, sh.s), view(buf.k, sh.hkv, sh.s),
                           view(buf.v, sh.hkv, sh.s), view(buf.o, sh.hq, sh.s), buf.lse.get(),
                           stream);
}

void launch_bwd(AttnBuffers& buf, const AttnShape& sh, cudaStream_t stream) {
  AttnBackwardTensors t;
  t.q = view(buf.q, sh.hq, sh.s);
  t.k = view(buf.k, sh.hkv, sh.s);
  t.v = view(buf.v, sh.hkv, sh.s);
  t.o = view(buf.o, sh.hq, sh.s);
  t.d_o = view(buf.d_o, sh.hq, sh.s);
  t.dq = view(buf.dq, sh.hq, sh.s);
  t.dk = view(buf.dk, sh.hkv, sh.s);
  t.dv = view(buf.dv, sh.hkv, sh.s);
  t.lse = buf.lse.get();
  t.delta = buf.delta.get();
  t.dq_acc = buf.dq_acc.get();
  launch_attention_backward(sh, t, stream);
}

std::vector<double> widen(const std::vector<bf16>& v) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = static_cast<double>(__bfloat162float(v[i]));
  return out;
}

// Forward and backward on a small shape against the double-precision
// reference from the same bf16 inputs. Returns "" when they agree, else what differs.
std::string check_against_host(Context& ctx) {
  AttnShape sh{2, 4, 2, 192, 1.0f / std::sqrt(static_cast<float>(kD)), true};
  const size_t q_elems = static_cast<size_t>(sh.b) * sh.hq * sh.s * kD;
  const size_t kv_elems = static_cast<size_t>(sh.b) * sh.hkv * sh.s * kD;
  const size_t rows = static_cast<size_t>(sh.b) * sh.hq * sh.s;
  AttnBuffers buf(q_elems, kv_elems, rows);
  fill_inputs(buf, ctx.stream);
  launch_fwd(buf, sh, ctx.stream);
  launch_bwd(buf, sh, ctx.stream);
  PODSIM_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));

  // The inputs as the GPU holds them (bf16), widened to double once.
  const auto host_copy = [](uint64_t seed, size_t n) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = static_cast<double>(random_value<bf16>(seed, i, -1.0f, 1.0f));
    return v;
  };
  const std::vector<double> q = host_copy(kSeedQ, q_elems), k = host_copy(kSeedK, kv_elems),
                            v = host_copy(kSeedV, kv_elems), d_o = host_copy(kSeedDo, q_elems);
  std::vector<double> o(q_elems), lse(rows), dq(q_elems), dk(kv_elems), dv(kv_elems);
  const RefAttentionShape ref{sh.b, sh.hq, sh.hkv, sh.s, kD, true, static_cast<double>(sh.scale)};
  const AttnStrides qs = contiguous_heads(sh.hq, sh.s), ks = contiguous_heads(sh.hkv, sh.s);
  const auto in = [](const std::vector<double>& t, const AttnStrides& st) {
    return HeadView<const double>{t.data(), st.batch, st.head, st.row};
  };
  const auto out = [](std::vector<double>& t, const AttnStrides& st) {
    return HeadView<double>{t.data(), st.batch, st.head, st.row};
  };
  reference_attention_forward(ref, in(q, qs), in(k, ks), in(v, ks), out(o, qs), lse);
  reference_attention_backward(ref, in(q, qs), in(k, ks), in(v, ks), in(o, qs), in(d_o, qs),
                               out(dq, qs), out(dk, ks), out(dv, ks));

  // bf16 rounding of P, dS and the outputs bounds the error at a few 2^-8.
  std::string problems;
  const auto judge = [&](const char* what, const std::vector<bf16>& got,
                         const std::vector<double>& want, double tol) {
    const double e = tensor_error(widen(got), want).max_rel;
    if (!(e <= tol)) problems += std::string(" ") + what + " rel. error " + std::to_string(e);
  };
  judge("O", buf.o.read_all(), o, 2e-2);
  judge("dQ", buf.dq.read_all(), dq, 3e-2);
  judge("dK", buf.dk.read_all(), dk, 3e-2);
  judge("dV", buf.dv.read_all(), dv, 3e-2);
  const std::vector<float> lse_got = buf.lse.read_all();
  double lse_err = 0;
  for (size_t i = 0; i < rows; ++i) {
    const double e = std::abs(static_cast<double>(lse_got[i]) - lse[i]);
    lse_err = std::isnan(e) ? INFINITY : std::max(lse_err, e);
  }
  if (!(lse_err <= 1e-2)) problems += " LSE abs. error " + std::to_string(lse_err);
  return problems;
}

}  // namespace

void measure_attention(Context& ctx) {
  prepare_attention_kernels(ctx.prop);
  ctx.progress("attention: correctness check against the host (b=2, 4 heads, 2 KV heads, seq 192)");
  const std::string problems = check_against_host(ctx);
  const bool ok = problems.empty();
  if (!ok)
    ctx.raw.errors.push_back("attention: kernels disagree with the host reference:" + problems);

  // Llama 3 8B attention: 32 query heads, 8 KV heads, 128-dim heads; 16384 tokens per step.
  const int tokens = 16384, hq = 32, hkv = 8;
  const std::vector<int> seqs = ctx.options.quick ? std::vector<int>{1024, 4096}
                                                  : std::vector<int>{512, 1024, 2048, 4096, 8192};
  AttnBuffers buf(static_cast<size_t>(tokens) * hq * kD, static_cast<size_t>(tokens) * hkv * kD,
                  static_cast<size_t>(tokens) * hq);
  fill_inputs(buf, ctx.stream);
  Series fwd, bwd;
  for (Series* s : {&fwd, &bwd}) {
    s->work_unit = "flops";
    s->attributes = {{"fit", "saturating"},
                     {"dtype", "bf16"},
                     {"x", "seq"},
                     {"kernel", "podsim FlashAttention-2-style, mma.sync m16n8k16 (not cuDNN/FA3)"},
                     {"causal", "true"}};
  }
  fwd.name = "attention.fwd";
  fwd.description =
      "causal attention forward, bf16, 128-dim heads, GQA; work = 4 b h s^2 d / 2 (causal half)";
  bwd.name = "attention.bwd";
  bwd.description =
      "causal attention backward (dQ, dK, dV incl. the delta and dQ-conversion kernels); "
      "work = 2.5 x forward";
  for (int s : seqs) {
    const AttnShape sh{tokens / s, hq, hkv, s, 1.0f / std::sqrt(static_cast<float>(kD)), true};
    check_attention_shape(sh);
    const double fwd_flops = 4.0 * sh.b * hq * static_cast<double>(s) * s * kD / 2.0;
    const std::map<std::string, double> params = {{"seq", s},       {"batch", sh.b},
                                                  {"heads_q", hq},  {"heads_kv", hkv},
                                                  {"head_dim", kD}, {"causal", 1}};
    ctx.progress("attention fwd seq " + std::to_string(s));
    Point pf;
    pf.params = params;
    pf.work = fwd_flops;
    pf.times_s = time_repeats(ctx.stream, ctx.warmup(), ctx.repeats(),
                              [&](int) { launch_fwd(buf, sh, ctx.stream); });
    const float o_sample =
        __bfloat162float(buf.o.read(static_cast<size_t>(tokens) * hq * kD / 2 + 5));
    const float lse_sample = buf.lse.read(static_cast<size_t>(tokens) * hq - 1);
    pf.check_passed = ok && std::isfinite(o_sample) && std::isfinite(lse_sample);
    fwd.points.push_back(std::move(pf));

    ctx.progress("attention bwd seq " + std::to_string(s));
    Point pb;
    pb.params = params;
    pb.work = 2.5 * fwd_flops;
    pb.times_s = time_repeats(ctx.stream, ctx.warmup(), ctx.repeats(),
                              [&](int) { launch_bwd(buf, sh, ctx.stream); });
    const float dq_sample =
        __bfloat162float(buf.dq.read(static_cast<size_t>(tokens) * hq * kD / 3 + 11));
    const float dk_sample =
        __bfloat162float(buf.dk.read(static_cast<size_t>(tokens) * hkv * kD / 2 + 3));
    pb.check_passed = ok && std::isfinite(dq_sample) && std::isfinite(dk_sample);
    bwd.points.push_back(std::move(pb));
  }
  ctx.raw.series.push_back(std::move(fwd));
  ctx.raw.series.push_back(std::move(bwd));
}

}  // namespace podsim::calibration::gpu
