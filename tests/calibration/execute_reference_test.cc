// The host reference the GPU run is checked against: its backward must be the
// gradient of its forward (central finite differences), its attention row
// helpers must agree with the full attention, and its AdamW step and bf16
// rounding must match hand-computed values.
#include "calibration/execute_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

namespace podsim::calibration {
namespace {

ExecLayerShape tiny_shape(int64_t tp, bool sp) {
  ExecLayerShape s;
  s.batch = 2;
  s.seq = 6;
  s.tokens = 12;
  s.tp = tp;
  s.sequence_parallel = sp;
  s.norm_tokens = sp ? s.tokens / tp : s.tokens;
  s.hidden = 8;
  s.heads = 4;
  s.kv_heads = 2;
  s.head_dim = 4;
  s.ffn = 6;
  s.rope_theta = 10.0;  // strong rotation at these few positions
  return s;
}

std::vector<double> uniform(size_t n, uint64_t seed, double scale) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-scale, scale);
  std::vector<double> v(n);
  for (double& x : v) x = u(gen);
  return v;
}

RefLayerWeights random_weights(const ExecLayerShape& s, uint64_t seed) {
  RefLayerWeights w;
  w.qkv = uniform(static_cast<size_t>(s.hidden * s.qkv_columns()), seed + 1, 0.5);
  w.out = uniform(static_cast<size_t>(s.attn_columns() * s.hidden), seed + 2, 0.5);
  w.fc1 = uniform(static_cast<size_t>(s.hidden * 2 * s.ffn), seed + 3, 0.5);
  w.fc2 = uniform(static_cast<size_t>(s.ffn * s.hidden), seed + 4, 0.5);
  w.norm1 = uniform(static_cast<size_t>(s.hidden), seed + 5, 0.5);
  w.norm2 = uniform(static_cast<size_t>(s.hidden), seed + 6, 0.5);
  for (double& x : w.norm1) x += 1.0;
  for (double& x : w.norm2) x += 1.0;
  return w;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

// L = dout . layer(x, w). Every analytic derivative of `values` (a weight
// tensor or the input) must match the central difference at a few entries.
void expect_gradient_matches(
    const ExecLayerShape& s, const char* what,
    const std::function<std::vector<double>&(RefLayerWeights&, std::vector<double>&)>& pick,
    const std::function<const std::vector<double>&(const RefLayerGrads&)>& analytic) {
  RefLayerWeights w = random_weights(s, 11);
  std::vector<double> x = uniform(static_cast<size_t>(s.norm_tokens * s.hidden), 21, 1.0);
  const std::vector<double> dout = uniform(x.size(), 31, 1.0);
  const RefLayerState st = reference_layer_forward(s, w, x);
  const RefLayerGrads g = reference_layer_backward(s, w, st, dout);
  std::vector<double>& values = pick(w, x);
  const std::vector<double>& grad = analytic(g);
  ASSERT_EQ(values.size(), grad.size()) << what;
  const double h = 1e-5;
  for (size_t i = 0; i < values.size(); i += std::max<size_t>(1, values.size() / 7)) {
    const double saved = values[i];
    values[i] = saved + h;
    const double up = dot(dout, reference_layer_forward(s, w, x).out);
    values[i] = saved - h;
    const double down = dot(dout, reference_layer_forward(s, w, x).out);
    values[i] = saved;
    const double numeric = (up - down) / (2 * h);
    EXPECT_NEAR(grad[i], numeric, 1e-6 * std::max(1.0, std::abs(numeric)))
        << what << "[" << i << "]";
  }
}

void expect_layer_gradients(const ExecLayerShape& s) {
  using W = RefLayerWeights;
  using V = std::vector<double>;
  using G = RefLayerGrads;
  expect_gradient_matches(
      s, "x", [](W&, V& x) -> V& { return x; }, [](const G& g) -> const V& { return g.dx; });
  expect_gradient_matches(
      s, "W_qkv", [](W& w, V&) -> V& { return w.qkv; },
      [](const G& g) -> const V& { return g.dw.qkv; });
  expect_gradient_matches(
      s, "W_o", [](W& w, V&) -> V& { return w.out; },
      [](const G& g) -> const V& { return g.dw.out; });
  expect_gradient_matches(
      s, "W_1", [](W& w, V&) -> V& { return w.fc1; },
      [](const G& g) -> const V& { return g.dw.fc1; });
  expect_gradient_matches(
      s, "W_2", [](W& w, V&) -> V& { return w.fc2; },
      [](const G& g) -> const V& { return g.dw.fc2; });
  expect_gradient_matches(
      s, "norm1", [](W& w, V&) -> V& { return w.norm1; },
      [](const G& g) -> const V& { return g.dw.norm1; });
  expect_gradient_matches(
      s, "norm2", [](W& w, V&) -> V& { return w.norm2; },
      [](const G& g) -> const V& { return g.dw.norm2; });
}

TEST(ExecuteReference, BackwardIsTheGradientOfTheForward) {
  expect_layer_gradients(tiny_shape(1, false));
}

TEST(ExecuteReference, BackwardIsTheGradientWithTensorParallelAllReduce) {
  // Without sequence parallelism the emulated all-reduces are the identity:
  // the rank's layer is still a function and its backward its gradient.
  expect_layer_gradients(tiny_shape(2, false));
}

TEST(ExecuteReference, SequenceParallelGathersReplicateTheRanksRows) {
  const ExecLayerShape s = tiny_shape(3, true);
  ASSERT_EQ(s.norm_tokens, 4);
  const RefLayerWeights w = random_weights(s, 5);
  const RefLayerState st =
      reference_layer_forward(s, w, uniform(static_cast<size_t>(s.norm_tokens * s.hidden), 6, 1));
  const size_t block = static_cast<size_t>(s.norm_tokens * s.hidden);
  ASSERT_EQ(st.xg1.size(), 3 * block);
  for (size_t i = 0; i < block; ++i) {
    EXPECT_EQ(st.xg1[i], st.xg1[block + i]);
    EXPECT_EQ(st.xg1[i], st.xg1[2 * block + i]);
    EXPECT_EQ(st.xg2[i], st.xg2[2 * block + i]);
  }
  EXPECT_EQ(st.out.size(), block);
  // The attention saw all tokens: the last sequence's rows differ from the first's.
  EXPECT_NE(st.o[0], st.o[static_cast<size_t>(s.seq * s.attn_columns())]);
}

TEST(ExecuteReference, AttentionRowHelpersAgreeWithTheFullAttention) {
  const RefAttentionShape a{1, 2, 1, 9, 4, true, 0.5};
  const std::vector<double> q = uniform(2 * 9 * 4, 1, 1), k = uniform(9 * 4, 2, 1),
                            v = uniform(9 * 4, 3, 1), d_o = uniform(2 * 9 * 4, 4, 1);
  std::vector<double> o(q.size()), lse(2 * 9), dq(q.size()), dk(k.size()), dv(v.size());
  const HeadView<const double> qv{q.data(), 72, 36, 4}, kv{k.data(), 36, 36, 4},
      vv{v.data(), 36, 36, 4}, dov{d_o.data(), 72, 36, 4};
  reference_attention_forward(a, qv, kv, vv, {o.data(), 72, 36, 4}, lse);
  reference_attention_backward(a, qv, kv, vv, {o.data(), 72, 36, 4}, dov, {dq.data(), 72, 36, 4},
                               {dk.data(), 36, 36, 4}, {dv.data(), 36, 36, 4});
  // Row 0 attends to key 0 only: its output is value row 0.
  for (int c = 0; c < 4; ++c)
    EXPECT_NEAR(o[static_cast<size_t>(c)], v[static_cast<size_t>(c)], 1e-15);
  for (int h = 0; h < 2; ++h) {
    for (int i : {0, 4, 8}) {
      const size_t row = static_cast<size_t>((h * 9 + i) * 4);
      std::vector<double> o_row(4), dq_row(4);
      const double l =
          reference_attention_row(&q[row], k.data(), v.data(), i + 1, 4, 0.5, o_row.data());
      EXPECT_NEAR(l, lse[static_cast<size_t>(h * 9 + i)], 1e-12);
      reference_attention_dq_row(&q[row], k.data(), v.data(), &o[row], &d_o[row], i + 1, 4, 0.5,
                                 dq_row.data());
      for (size_t c = 0; c < 4; ++c) {
        EXPECT_NEAR(o_row[c], o[row + c], 1e-12);
        EXPECT_NEAR(dq_row[c], dq[row + c], 1e-12);
      }
    }
  }
}

TEST(ExecuteReference, AdamStepMatchesTheHandComputedUpdate) {
  AdamSettings adam;
  adam.lr = 0.1;
  adam.weight_decay = 0.1;
  adam.eps = 0;
  // Step 1 from zero moments: m/c1 = g and v/c2 = g^2, so the update is lr sign(g).
  std::vector<double> p{1.0, -2.0}, m{0, 0}, v{0, 0};
  reference_adam(adam, 1, 1.0, {0.5, -3.0}, p, m, v);
  EXPECT_NEAR(p[0], 1.0 * (1 - 0.01) - 0.1, 1e-12);
  EXPECT_NEAR(p[1], -2.0 * (1 - 0.01) + 0.1, 1e-12);
  EXPECT_NEAR(m[0], 0.05, 1e-12);
  EXPECT_NEAR(v[1], 0.05 * 9.0, 1e-12);
  // Clipping: a gradient of norm 2 against a limit of 1.
  EXPECT_NEAR(adam_clip_scale(AdamSettings{}, 4.0), 1.0 / (2.0 + 1e-6), 1e-15);
  EXPECT_EQ(adam_clip_scale(AdamSettings{}, 0.25), 1.0);
}

TEST(ExecuteReference, Bf16RoundingIsToNearestEven) {
  EXPECT_EQ(round_to_bf16(1.0f), 1.0f);
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-8f), 1.0f);                // tie: down to even
  EXPECT_EQ(round_to_bf16(1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);  // tie: up to even
  EXPECT_EQ(round_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 1.0f + 0x1p-7f);
  EXPECT_EQ(round_to_bf16(-3.0f), -3.0f);
  EXPECT_TRUE(std::isnan(round_to_bf16(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(round_to_bf16(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  const std::vector<double> v = bf16_uniform(1000, 3, 0.25);
  EXPECT_EQ(v, bf16_uniform(1000, 3, 0.25));
  EXPECT_NE(v, bf16_uniform(1000, 4, 0.25));
  for (double x : v) {
    EXPECT_LE(std::abs(x), 0.25);
    EXPECT_EQ(static_cast<double>(round_to_bf16(static_cast<float>(x))), x);
  }
}

TEST(ExecuteReference, TensorErrorIsRelativeToTheReference) {
  const TensorError e = tensor_error({1.0, 2.1, -4.0}, {1.0, 2.0, -4.0});
  EXPECT_NEAR(e.max_rel, 0.1 / 4.0, 1e-12);
  EXPECT_NEAR(e.rms_rel, std::sqrt(0.01 / 21.0), 1e-12);
  EXPECT_TRUE(std::isinf(tensor_error({std::numeric_limits<double>::quiet_NaN()}, {1.0}).max_rel));
  EXPECT_THROW(tensor_error({1.0}, {1.0, 2.0}), std::invalid_argument);
}

}  // namespace
}  // namespace podsim::calibration
