#include "calibration/execute_reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>

#include "sim/to_double.h"

namespace podsim::calibration {
namespace {

using Vec = std::vector<double>;

size_t z(int64_t v) { return static_cast<size_t>(v); }

/// C[m x n] = op(A) op(B), row-major; A is [m x k] (or [k x m] when
/// trans_a), B is [k x n] (or [n x k] when trans_b).
Vec matmul(const Vec& a, const Vec& b, int64_t m, int64_t n, int64_t k, bool trans_a,
           bool trans_b) {
  Vec c(z(m * n), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t p = 0; p < k; ++p) {
      const double av = trans_a ? a[z(p * m + i)] : a[z(i * k + p)];
      if (av == 0) continue;
      double* row = &c[z(i * n)];
      if (trans_b) {
        for (int64_t j = 0; j < n; ++j) row[j] += av * b[z(j * k + p)];
      } else {
        const double* brow = &b[z(p * n)];
        for (int64_t j = 0; j < n; ++j) row[j] += av * brow[j];
      }
    }
  }
  return c;
}

/// y = x / rms(x) * w over rows of `width`, into rows [0, rows) of `out`.
void rmsnorm_forward(const Vec& x, const Vec& w, int64_t rows, int64_t width, double eps,
                     Vec& out) {
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t j = 0; j < width; ++j) ss += x[z(r * width + j)] * x[z(r * width + j)];
    const double inv = 1.0 / std::sqrt(ss / d(width) + eps);
    for (int64_t j = 0; j < width; ++j) {
      out[z(r * width + j)] = x[z(r * width + j)] * inv * w[z(j)];
    }
  }
}

/// dx = residual + d(rmsnorm)/dx^T dy over rows; dw accumulates.
Vec rmsnorm_backward(const Vec& x, const Vec& w, const Vec& dy, const Vec& residual, int64_t rows,
                     int64_t width, double eps, Vec& dw) {
  Vec dx(z(rows * width));
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = &x[z(r * width)];
    const double* dyr = &dy[z(r * width)];
    double ss = 0, gx = 0;
    for (int64_t j = 0; j < width; ++j) {
      ss += xr[j] * xr[j];
      gx += dyr[j] * w[z(j)] * xr[j];
    }
    const double inv = 1.0 / std::sqrt(ss / d(width) + eps);
    const double c = inv * inv * inv * gx / d(width);
    for (int64_t j = 0; j < width; ++j) {
      dx[z(r * width + j)] = residual[z(r * width + j)] + inv * dyr[j] * w[z(j)] - xr[j] * c;
      dw[z(j)] += dyr[j] * xr[j] * inv;
    }
  }
  return dx;
}

/// The sequence-parallel all-gather as one rank emulates it: rows [0, n)
/// copied into every rank's slot of a [tp * n] tensor.
Vec gather_rows(const Vec& x, const ExecLayerShape& s) {
  Vec out(z(s.tokens * s.hidden));
  const size_t block = z(s.norm_tokens * s.hidden);
  for (size_t r = 0; r * block < out.size(); ++r) {
    std::copy(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(block),
              out.begin() + static_cast<std::ptrdiff_t>(r * block));
  }
  return out;
}

/// Rotary embedding (rotate-half pairs c, c + d/2) of the Q and K columns of
/// `qkv`, position = token index within its sequence; `inverse` applies the
/// transposed rotation (the backward).
void rotary(Vec& qkv, const ExecLayerShape& s, bool inverse) {
  const int64_t w = s.qkv_columns(), half = s.head_dim / 2;
  for (int64_t t = 0; t < s.tokens; ++t) {
    const double pos = d(t % s.seq);
    for (int64_t h = 0; h < s.heads + s.kv_heads; ++h) {
      double* x = &qkv[z(t * w + h * s.head_dim)];
      for (int64_t c = 0; c < half; ++c) {
        const double angle = pos * std::pow(s.rope_theta, -2.0 * d(c) / d(s.head_dim));
        const double cs = std::cos(angle), sn = inverse ? -std::sin(angle) : std::sin(angle);
        const double x1 = x[c], x2 = x[c + half];
        x[c] = x1 * cs - x2 * sn;
        x[c + half] = x2 * cs + x1 * sn;
      }
    }
  }
}

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

/// The Q, K or V block of a [tokens x qkv_columns] tensor as a head view.
template <class T>
HeadView<T> qkv_view(T* base, const ExecLayerShape& s, int64_t first_head) {
  const int64_t w = s.qkv_columns();
  return {base + first_head * s.head_dim, s.seq * w, s.head_dim, w};
}
template <class T>
HeadView<T> attn_view(T* base, const ExecLayerShape& s) {
  const int64_t a = s.attn_columns();
  return {base, s.seq * a, s.head_dim, a};
}

RefAttentionShape attention_shape(const ExecLayerShape& s) {
  return {s.batch, s.heads, s.kv_heads, s.seq, s.head_dim, true, 1.0 / std::sqrt(d(s.head_dim))};
}

/// Softmax probabilities of row i of head (b, h): p[j] for j < keys.
int64_t attention_row(const RefAttentionShape& a, HeadView<const double> q,
                      HeadView<const double> k, int64_t b, int64_t h, int64_t i, Vec& p,
                      double& lse) {
  const int64_t hk = h / (a.heads / a.kv_heads);
  const int64_t keys = a.causal ? i + 1 : a.seq;
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < keys; ++j) {
    double dot = 0;
    for (int64_t c = 0; c < a.head_dim; ++c) dot += q.at(b, h, i, c) * k.at(b, hk, j, c);
    p[z(j)] = dot * a.scale;
    mx = std::max(mx, p[z(j)]);
  }
  double sum = 0;
  for (int64_t j = 0; j < keys; ++j) sum += std::exp(p[z(j)] - mx);
  for (int64_t j = 0; j < keys; ++j) p[z(j)] = std::exp(p[z(j)] - mx) / sum;
  lse = mx + std::log(sum);
  return keys;
}

void check_attention_shape(const RefAttentionShape& a) {
  if (a.batch <= 0 || a.heads <= 0 || a.kv_heads <= 0 || a.seq <= 0 || a.head_dim <= 0 ||
      a.heads % a.kv_heads != 0) {
    throw std::invalid_argument("reference attention: bad shape");
  }
}

}  // namespace

float round_to_bf16(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7f800000u) == 0x7f800000u) {  // inf or NaN: truncate (keep NaN a NaN)
    if ((bits & 0x007fffffu) != 0) bits |= 0x00400000u;
    bits &= 0xffff0000u;
  } else {
    bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest, ties to even
    bits &= 0xffff0000u;
  }
  float out = 0;
  std::memcpy(&out, &bits, sizeof out);
  return out;
}

std::vector<double> bf16_uniform(size_t n, uint64_t seed, double scale) {
  std::mt19937_64 gen(seed);
  std::vector<double> out(n);
  for (double& v : out) {
    const double u = static_cast<double>(gen() >> 11) * 0x1.0p-53;  // [0, 1)
    v = static_cast<double>(round_to_bf16(static_cast<float>((2.0 * u - 1.0) * scale)));
  }
  return out;
}

void reference_attention_forward(const RefAttentionShape& a, HeadView<const double> q,
                                 HeadView<const double> k, HeadView<const double> v,
                                 HeadView<double> o, std::vector<double>& lse) {
  check_attention_shape(a);
  const int64_t group = a.heads / a.kv_heads;
  Vec p(z(a.seq));
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      for (int64_t i = 0; i < a.seq; ++i) {
        double row_lse = 0;
        const int64_t keys = attention_row(a, q, k, b, h, i, p, row_lse);
        lse[z((b * a.heads + h) * a.seq + i)] = row_lse;
        for (int64_t c = 0; c < a.head_dim; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < keys; ++j) acc += p[z(j)] * v.at(b, h / group, j, c);
          o.at(b, h, i, c) = acc;
        }
      }
    }
  }
}

void reference_attention_backward(const RefAttentionShape& a, HeadView<const double> q,
                                  HeadView<const double> k, HeadView<const double> v,
                                  HeadView<const double> o, HeadView<const double> d_o,
                                  HeadView<double> dq, HeadView<double> dk, HeadView<double> dv) {
  check_attention_shape(a);
  const int64_t group = a.heads / a.kv_heads;
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t hk = 0; hk < a.kv_heads; ++hk) {
      for (int64_t j = 0; j < a.seq; ++j) {
        for (int64_t c = 0; c < a.head_dim; ++c) dk.at(b, hk, j, c) = dv.at(b, hk, j, c) = 0;
      }
    }
  }
  Vec p(z(a.seq)), ds(z(a.seq));
  for (int64_t b = 0; b < a.batch; ++b) {
    for (int64_t h = 0; h < a.heads; ++h) {
      const int64_t hk = h / group;
      for (int64_t i = 0; i < a.seq; ++i) {
        double row_lse = 0;
        const int64_t keys = attention_row(a, q, k, b, h, i, p, row_lse);
        double delta = 0;
        for (int64_t c = 0; c < a.head_dim; ++c) delta += d_o.at(b, h, i, c) * o.at(b, h, i, c);
        for (int64_t j = 0; j < keys; ++j) {
          double dp = 0;
          for (int64_t c = 0; c < a.head_dim; ++c) dp += d_o.at(b, h, i, c) * v.at(b, hk, j, c);
          ds[z(j)] = p[z(j)] * (dp - delta);
        }
        for (int64_t c = 0; c < a.head_dim; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < keys; ++j) acc += ds[z(j)] * k.at(b, hk, j, c);
          dq.at(b, h, i, c) = acc * a.scale;
        }
        for (int64_t j = 0; j < keys; ++j) {
          for (int64_t c = 0; c < a.head_dim; ++c) {
            dk.at(b, hk, j, c) += ds[z(j)] * q.at(b, h, i, c) * a.scale;
            dv.at(b, hk, j, c) += p[z(j)] * d_o.at(b, h, i, c);
          }
        }
      }
    }
  }
}

namespace {
/// Softmax of one row's scaled scores against `keys` contiguous key rows.
double row_probabilities(const double* q, const double* k, int64_t keys, int64_t head_dim,
                         double scale, Vec& p) {
  p.resize(z(keys));
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < keys; ++j) {
    double dot = 0;
    for (int64_t c = 0; c < head_dim; ++c) dot += q[c] * k[j * head_dim + c];
    p[z(j)] = dot * scale;
    mx = std::max(mx, p[z(j)]);
  }
  double sum = 0;
  for (int64_t j = 0; j < keys; ++j) sum += std::exp(p[z(j)] - mx);
  for (int64_t j = 0; j < keys; ++j) p[z(j)] = std::exp(p[z(j)] - mx) / sum;
  return mx + std::log(sum);
}
}  // namespace

double reference_attention_row(const double* q, const double* k, const double* v, int64_t keys,
                               int64_t head_dim, double scale, double* o) {
  Vec p;
  const double lse = row_probabilities(q, k, keys, head_dim, scale, p);
  for (int64_t c = 0; c < head_dim; ++c) {
    double acc = 0;
    for (int64_t j = 0; j < keys; ++j) acc += p[z(j)] * v[j * head_dim + c];
    o[c] = acc;
  }
  return lse;
}

void reference_attention_dq_row(const double* q, const double* k, const double* v, const double* o,
                                const double* d_o, int64_t keys, int64_t head_dim, double scale,
                                double* dq) {
  Vec p;
  row_probabilities(q, k, keys, head_dim, scale, p);
  double delta = 0;
  for (int64_t c = 0; c < head_dim; ++c) delta += d_o[c] * o[c];
  for (int64_t c = 0; c < head_dim; ++c) dq[c] = 0;
  for (int64_t j = 0; j < keys; ++j) {
    double dp = 0;
    for (int64_t c = 0; c < head_dim; ++c) dp += d_o[c] * v[j * head_dim + c];
    const double ds = p[z(j)] * (dp - delta);
    for (int64_t c = 0; c < head_dim; ++c) dq[c] += ds * k[j * head_dim + c] * scale;
  }
}

RefLayerState reference_layer_forward(const ExecLayerShape& s, const RefLayerWeights& w,
                                      std::vector<double> x) {
  const int64_t n = s.norm_tokens, t = s.tokens, h = s.hidden, f = s.ffn;
  const int64_t wq = s.qkv_columns(), a = s.attn_columns();
  if (x.size() != z(n * h)) throw std::invalid_argument("reference layer: input size");
  RefLayerState st;
  st.x = std::move(x);
  Vec xn(z(n * h));
  rmsnorm_forward(st.x, w.norm1, n, h, s.norm_eps, xn);
  st.xg1 = gather_rows(xn, s);
  st.qkv = matmul(st.xg1, w.qkv, t, wq, h, false, false);
  rotary(st.qkv, s, false);
  st.o.assign(z(t * a), 0.0);
  st.lse.assign(z(s.batch * s.heads * s.seq), 0.0);
  reference_attention_forward(attention_shape(s), qkv_view<const double>(st.qkv.data(), s, 0),
                              qkv_view<const double>(st.qkv.data(), s, s.heads),
                              qkv_view<const double>(st.qkv.data(), s, s.heads + s.kv_heads),
                              attn_view<double>(st.o.data(), s), st.lse);
  const Vec y = matmul(st.o, w.out, t, h, a, false, false);
  st.h1.resize(z(n * h));
  for (size_t i = 0; i < st.h1.size(); ++i) st.h1[i] = st.x[i] + y[i];  // reduce: this rank's slot
  rmsnorm_forward(st.h1, w.norm2, n, h, s.norm_eps, xn);
  st.xg2 = gather_rows(xn, s);
  st.u = matmul(st.xg2, w.fc1, t, 2 * f, h, false, false);
  st.a.resize(z(t * f));
  for (int64_t r = 0; r < t; ++r) {
    for (int64_t j = 0; j < f; ++j) {
      const double g = st.u[z(r * 2 * f + j)], up = st.u[z(r * 2 * f + f + j)];
      st.a[z(r * f + j)] = g * sigmoid(g) * up;
    }
  }
  const Vec y2 = matmul(st.a, w.fc2, t, h, f, false, false);
  st.out.resize(z(n * h));
  for (size_t i = 0; i < st.out.size(); ++i) st.out[i] = st.h1[i] + y2[i];
  return st;
}

RefLayerGrads reference_layer_backward(const ExecLayerShape& s, const RefLayerWeights& w,
                                       const RefLayerState& st, const std::vector<double>& dout) {
  const int64_t n = s.norm_tokens, t = s.tokens, h = s.hidden, f = s.ffn;
  const int64_t wq = s.qkv_columns(), a = s.attn_columns();
  RefLayerGrads g;
  g.dw.norm1.assign(z(h), 0.0);
  g.dw.norm2.assign(z(h), 0.0);
  // MLP: dY gathered, fc2 dgrad and wgrad, SwiGLU, fc1 dgrad and wgrad.
  Vec dg = gather_rows(dout, s);
  const Vec da = matmul(dg, w.fc2, t, f, h, false, true);
  g.dw.fc2 = matmul(st.a, dg, f, h, t, true, false);
  Vec du(z(t * 2 * f));
  for (int64_t r = 0; r < t; ++r) {
    for (int64_t j = 0; j < f; ++j) {
      const double gate = st.u[z(r * 2 * f + j)], up = st.u[z(r * 2 * f + f + j)];
      const double sg = sigmoid(gate), grad = da[z(r * f + j)];
      du[z(r * 2 * f + j)] = grad * up * sg * (1.0 + gate * (1.0 - sg));
      du[z(r * 2 * f + f + j)] = grad * gate * sg;
    }
  }
  const Vec dxn2 = matmul(du, w.fc1, t, h, 2 * f, false, true);  // reduce: this rank's slot
  g.dw.fc1 = matmul(st.xg2, du, h, 2 * f, t, true, false);
  const Vec dh1 = rmsnorm_backward(st.h1, w.norm2, dxn2, dout, n, h, s.norm_eps, g.dw.norm2);
  // Attention: dY gathered, output projection, the core, rotary, QKV.
  dg = gather_rows(dh1, s);
  const Vec d_o = matmul(dg, w.out, t, a, h, false, true);
  g.dw.out = matmul(st.o, dg, a, h, t, true, false);
  Vec dqkv(z(t * wq), 0.0);
  reference_attention_backward(
      attention_shape(s), qkv_view<const double>(st.qkv.data(), s, 0),
      qkv_view<const double>(st.qkv.data(), s, s.heads),
      qkv_view<const double>(st.qkv.data(), s, s.heads + s.kv_heads),
      attn_view<const double>(st.o.data(), s), attn_view<const double>(d_o.data(), s),
      qkv_view<double>(dqkv.data(), s, 0), qkv_view<double>(dqkv.data(), s, s.heads),
      qkv_view<double>(dqkv.data(), s, s.heads + s.kv_heads));
  rotary(dqkv, s, true);
  const Vec dxn1 = matmul(dqkv, w.qkv, t, h, wq, false, true);
  g.dw.qkv = matmul(st.xg1, dqkv, h, wq, t, true, false);
  g.dx = rmsnorm_backward(st.x, w.norm1, dxn1, dh1, n, h, s.norm_eps, g.dw.norm1);
  return g;
}

double adam_clip_scale(const AdamSettings& adam, double grad_sum_squares) {
  return std::min(1.0, adam.clip_norm / (std::sqrt(grad_sum_squares) + 1e-6));
}

void reference_adam(const AdamSettings& adam, int64_t step, double grad_scale,
                    const std::vector<double>& grad, std::vector<double>& param,
                    std::vector<double>& m, std::vector<double>& v) {
  if (param.size() != grad.size() || m.size() != grad.size() || v.size() != grad.size()) {
    throw std::invalid_argument("reference_adam: sizes differ");
  }
  const double c1 = 1.0 - std::pow(adam.beta1, d(step));
  const double c2 = 1.0 - std::pow(adam.beta2, d(step));
  for (size_t i = 0; i < grad.size(); ++i) {
    const double g = grad[i] * grad_scale;
    m[i] = adam.beta1 * m[i] + (1.0 - adam.beta1) * g;
    v[i] = adam.beta2 * v[i] + (1.0 - adam.beta2) * g * g;
    param[i] -= adam.lr * adam.weight_decay * param[i];
    param[i] -= adam.lr * (m[i] / c1) / (std::sqrt(v[i] / c2) + adam.eps);
  }
}

TensorError tensor_error(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) throw std::invalid_argument("tensor_error: sizes differ");
  double max_err = 0, max_ref = 0, sq_err = 0, sq_ref = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = std::abs(got[i] - want[i]);
    max_err = std::isnan(e) ? std::numeric_limits<double>::infinity() : std::max(max_err, e);
    max_ref = std::max(max_ref, std::abs(want[i]));
    sq_err += std::isnan(e) ? std::numeric_limits<double>::infinity() : e * e;
    sq_ref += want[i] * want[i];
  }
  TensorError out;
  out.max_rel = max_ref > 0 ? max_err / max_ref : max_err;
  out.rms_rel = sq_ref > 0 ? std::sqrt(sq_err / sq_ref) : std::sqrt(sq_err);
  return out;
}

}  // namespace podsim::calibration
