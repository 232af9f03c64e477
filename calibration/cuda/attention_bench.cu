// The attention core (causal, GQA, 128-dim heads, bf16) forward and backward:
// podsim's own FlashAttention-2-style kernels (tiled, online softmax,
// mma.sync m16n8k16), since the cuDNN frontend is not available here. Checked
// against a double-precision host reference on small shapes before timing.

#include <algorithm>
#include <cmath>

#include "calibration/cuda/common.cuh"
#include "calibration/cuda/mma.cuh"

namespace podsim::calibration::gpu {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kD = 128;             // head dimension
constexpr int kRowStride = kD + 8;  // padded [rows][d] tile row (bank spread; 16-byte aligned)
constexpr int kFwdBr = 64;          // queries per forward block (16 per warp)
constexpr int kFwdBc = 64;          // keys per forward iteration
constexpr int kBwdBc = 64;          // keys per backward block (16 per warp)
constexpr int kBwdBr = 32;          // queries per backward iteration
constexpr int kFwdVtStride = kFwdBc + 8;
constexpr int kKtStride = kBwdBc + 8;
constexpr int kQtStride = kBwdBr + 8;
constexpr int kDsStride = kBwdBc + 8;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

struct AttnShape {
  int b, hq, hkv, s;
  float scale;
  bool causal;
};

constexpr size_t kFwdSmemBytes =
    sizeof(bf16) * (kFwdBr * kRowStride + kFwdBc * kRowStride + kD * kFwdVtStride);
constexpr size_t kBwdSmemBytes =
    sizeof(bf16) * (2 * kBwdBc * kRowStride + kD * kKtStride + 2 * kBwdBr * kRowStride +
                    2 * kD * kQtStride + kBwdBr * kDsStride) +
    sizeof(float) * 2 * kBwdBr;

__device__ __forceinline__ uint32_t ld32(const bf16* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// rows x kD elements, row-major in global, into a [rows][stride] tile.
__device__ void load_rows(bf16* dst, int stride, const bf16* __restrict__ src, int rows) {
  for (int c = threadIdx.x; c < rows * (kD / 8); c += blockDim.x) {
    const int r = c / (kD / 8), col = (c % (kD / 8)) * 8;
    *reinterpret_cast<uint4*>(dst + r * stride + col) =
        *reinterpret_cast<const uint4*>(src + static_cast<size_t>(r) * kD + col);
  }
}

// rows x kD elements into a transposed [kD][stride] tile (dst[d * stride + row]).
__device__ void load_rows_transposed(bf16* dst, int stride, const bf16* __restrict__ src,
                                     int rows) {
  for (int c = threadIdx.x; c < rows * (kD / 8); c += blockDim.x) {
    const int r = c / (kD / 8), col = (c % (kD / 8)) * 8;
    const uint4 v = *reinterpret_cast<const uint4*>(src + static_cast<size_t>(r) * kD + col);
    const bf16* e = reinterpret_cast<const bf16*>(&v);
#pragma unroll
    for (int i = 0; i < 8; ++i) dst[(col + i) * stride + r] = e[i];
  }
}

__global__ void __launch_bounds__(128)
    attn_fwd_kernel(const bf16* __restrict__ q_all, const bf16* __restrict__ k_all,
                    const bf16* __restrict__ v_all, bf16* __restrict__ o_all,
                    float* __restrict__ lse_all, AttnShape sh) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* s_q = reinterpret_cast<bf16*>(smem_raw);
  bf16* s_k = s_q + kFwdBr * kRowStride;
  bf16* s_vt = s_k + kFwdBc * kRowStride;

  const int n_qt = sh.s / kFwdBr;
  const int qt = n_qt - 1 - static_cast<int>(blockIdx.x);  // the longest causal rows first
  const int h = blockIdx.y, bi = blockIdx.z;
  const int hk = h / (sh.hq / sh.hkv);
  const size_t q_head = (static_cast<size_t>(bi) * sh.hq + h) * sh.s;
  const size_t kv_head = (static_cast<size_t>(bi) * sh.hkv + hk) * sh.s;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

  load_rows(s_q, kRowStride, q_all + (q_head + static_cast<size_t>(qt) * kFwdBr) * kD, kFwdBr);
  __syncthreads();
  const int r0 = warp * 16 + g;  // this thread's first row in the tile; the second is r0 + 8
  uint32_t qa[kD / 16][4];
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk) {
    const bf16* p = s_q + r0 * kRowStride + kk * 16 + 2 * t;
    qa[kk][0] = ld32(p);
    qa[kk][1] = ld32(p + 8 * kRowStride);
    qa[kk][2] = ld32(p + 8);
    qa[kk][3] = ld32(p + 8 * kRowStride + 8);
  }
  float o[kD / 8][4];
#pragma unroll
  for (int i = 0; i < kD / 8; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY};
  float l_run[2] = {0.0f, 0.0f};
  const float sl2 = sh.scale * kLog2e;
  const int query0 = qt * kFwdBr + r0;
  const int n_kv = sh.causal ? (qt * kFwdBr + kFwdBr) / kFwdBc : sh.s / kFwdBc;

  for (int j = 0; j < n_kv; ++j) {
    __syncthreads();  // everyone is done with the previous K/V tile
    load_rows(s_k, kRowStride, k_all + (kv_head + static_cast<size_t>(j) * kFwdBc) * kD, kFwdBc);
    load_rows_transposed(s_vt, kFwdVtStride,
                         v_all + (kv_head + static_cast<size_t>(j) * kFwdBc) * kD, kFwdBc);
    __syncthreads();
    float sc[kFwdBc / 8][4];
#pragma unroll
    for (int i = 0; i < kFwdBc / 8; ++i) sc[i][0] = sc[i][1] = sc[i][2] = sc[i][3] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
#pragma unroll
      for (int nt = 0; nt < kFwdBc / 8; ++nt) {
        const bf16* p = s_k + (nt * 8 + g) * kRowStride + kk * 16 + 2 * t;
        const uint32_t b[2] = {ld32(p), ld32(p + 8)};
        mma_bf16_16816(sc[nt], qa[kk], b);
      }
    }
    float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int nt = 0; nt < kFwdBc / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int key = j * kFwdBc + nt * 8 + 2 * t + (e & 1);
        const int query = query0 + (e >= 2 ? 8 : 0);
        float v = sc[nt][e] * sl2;
        if (sh.causal && key > query) v = -INFINITY;
        sc[nt][e] = v;
        mx[e >> 1] = fmaxf(mx[e >> 1], v);
      }
    }
    float alpha[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
      const float m_new = fmaxf(m_run[r], mx[r]);
      const float m_use = m_new == -INFINITY ? 0.0f : m_new;  // a row with nothing unmasked yet
      alpha[r] = exp2f(m_run[r] - m_use);
      m_run[r] = m_new;
      mx[r] = m_use;
      l_run[r] *= alpha[r];
    }
#pragma unroll
    for (int nt = 0; nt < kFwdBc / 8; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float p = exp2f(sc[nt][e] - mx[e >> 1]);
        sc[nt][e] = p;
        l_run[e >> 1] += p;
      }
    }
#pragma unroll
    for (int nt = 0; nt < kD / 8; ++nt) {
      o[nt][0] *= alpha[0];
      o[nt][1] *= alpha[0];
      o[nt][2] *= alpha[1];
      o[nt][3] *= alpha[1];
    }
#pragma unroll
    for (int ks = 0; ks < kFwdBc / 16; ++ks) {
      // The S accumulators of two adjacent 8-key tiles are the A fragment of a 16-key step.
      uint32_t a[4];
      accumulators_to_a(sc[2 * ks], sc[2 * ks + 1], a);
#pragma unroll
      for (int nt = 0; nt < kD / 8; ++nt) {
        const bf16* p = s_vt + (nt * 8 + g) * kFwdVtStride + ks * 16 + 2 * t;
        const uint32_t b[2] = {ld32(p), ld32(p + 8)};
        mma_bf16_16816(o[nt], a, b);
      }
    }
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 1);
    l_run[r] += __shfl_xor_sync(0xffffffffu, l_run[r], 2);
  }
  const float inv0 = 1.0f / l_run[0], inv1 = 1.0f / l_run[1];
  bf16* out0 = o_all + (q_head + query0) * kD;
  bf16* out1 = out0 + 8 * kD;
#pragma unroll
  for (int nt = 0; nt < kD / 8; ++nt) {
    const int col = nt * 8 + 2 * t;
    *reinterpret_cast<__nv_bfloat162*>(out0 + col) =
        __floats2bfloat162_rn(o[nt][0] * inv0, o[nt][1] * inv0);
    *reinterpret_cast<__nv_bfloat162*>(out1 + col) =
        __floats2bfloat162_rn(o[nt][2] * inv1, o[nt][3] * inv1);
  }
  if (t == 0) {
    lse_all[q_head + query0] = (m_run[0] + log2f(l_run[0])) * kLn2;
    lse_all[q_head + query0 + 8] = (m_run[1] + log2f(l_run[1])) * kLn2;
  }
}

// delta[row] = sum_d dO[row][d] * O[row][d]; one warp per row.
__global__ void attn_delta_kernel(const bf16* __restrict__ o, const bf16* __restrict__ d_o,
                                  float* __restrict__ delta, size_t rows) {
  const size_t row = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float acc = 0;
#pragma unroll
  for (int i = 0; i < kD / 32; ++i) {
    const size_t idx = row * kD + lane + 32 * i;
    acc += __bfloat162float(o[idx]) * __bfloat162float(d_o[idx]);
  }
#pragma unroll
  for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (lane == 0) delta[row] = acc;
}

__global__ void convert_to_bf16_kernel(const float* __restrict__ in, bf16* __restrict__ out,
                                       size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = __float2bfloat16_rn(in[i]);
  }
}

__global__ void __launch_bounds__(128)
    attn_bwd_kernel(const bf16* __restrict__ q_all, const bf16* __restrict__ k_all,
                    const bf16* __restrict__ v_all, const bf16* __restrict__ do_all,
                    const float* __restrict__ lse_all, const float* __restrict__ delta_all,
                    float* __restrict__ dq_acc, bf16* __restrict__ dk_all,
                    bf16* __restrict__ dv_all, AttnShape sh) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* s_k = reinterpret_cast<bf16*>(smem_raw);  // [kBwdBc][kRowStride]
  bf16* s_v = s_k + kBwdBc * kRowStride;          // [kBwdBc][kRowStride]
  bf16* s_kt = s_v + kBwdBc * kRowStride;         // [kD][kKtStride]
  bf16* s_q = s_kt + kD * kKtStride;              // [kBwdBr][kRowStride]
  bf16* s_do = s_q + kBwdBr * kRowStride;         // [kBwdBr][kRowStride]
  bf16* s_qt = s_do + kBwdBr * kRowStride;        // [kD][kQtStride]
  bf16* s_dot = s_qt + kD * kQtStride;            // [kD][kQtStride]
  bf16* s_ds = s_dot + kD * kQtStride;            // [kBwdBr][kDsStride]
  float* s_lse = reinterpret_cast<float*>(s_ds + kBwdBr * kDsStride);
  float* s_delta = s_lse + kBwdBr;

  const int kt = blockIdx.x;  // the longest causal columns first
  const int hk = blockIdx.y, bi = blockIdx.z;
  const int group = sh.hq / sh.hkv;
  const size_t kv_head = (static_cast<size_t>(bi) * sh.hkv + hk) * sh.s;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int kw = warp * 16;
  const int key0 = kt * kBwdBc + kw + g;  // this thread's first key row; the second is key0 + 8

  load_rows(s_k, kRowStride, k_all + (kv_head + static_cast<size_t>(kt) * kBwdBc) * kD, kBwdBc);
  load_rows(s_v, kRowStride, v_all + (kv_head + static_cast<size_t>(kt) * kBwdBc) * kD, kBwdBc);
  load_rows_transposed(s_kt, kKtStride, k_all + (kv_head + static_cast<size_t>(kt) * kBwdBc) * kD,
                       kBwdBc);

  float dk[kD / 8][4], dv[kD / 8][4];
#pragma unroll
  for (int i = 0; i < kD / 8; ++i) {
    dk[i][0] = dk[i][1] = dk[i][2] = dk[i][3] = 0.0f;
    dv[i][0] = dv[i][1] = dv[i][2] = dv[i][3] = 0.0f;
  }
  const float sl2 = sh.scale * kLog2e;
  const int qt_begin = sh.causal ? (kt * kBwdBc) / kBwdBr : 0;

  for (int hh = 0; hh < group; ++hh) {
    const int h = hk * group + hh;
    const size_t q_head = (static_cast<size_t>(bi) * sh.hq + h) * sh.s;
    for (int qt = qt_begin; qt < sh.s / kBwdBr; ++qt) {
      __syncthreads();  // the previous step is done with the query-side tiles
      const size_t q_row = q_head + static_cast<size_t>(qt) * kBwdBr;
      load_rows(s_q, kRowStride, q_all + q_row * kD, kBwdBr);
      load_rows(s_do, kRowStride, do_all + q_row * kD, kBwdBr);
      load_rows_transposed(s_qt, kQtStride, q_all + q_row * kD, kBwdBr);
      load_rows_transposed(s_dot, kQtStride, do_all + q_row * kD, kBwdBr);
      if (threadIdx.x < kBwdBr) {
        s_lse[threadIdx.x] = lse_all[q_row + threadIdx.x] * kLog2e;
        s_delta[threadIdx.x] = delta_all[q_row + threadIdx.x];
      }
      __syncthreads();

      // S^T = K_w Q^T and dP^T = V_w dO^T: 16 keys x 32 queries each.
      float st[kBwdBr / 8][4], dpt[kBwdBr / 8][4];
#pragma unroll
      for (int i = 0; i < kBwdBr / 8; ++i) {
        st[i][0] = st[i][1] = st[i][2] = st[i][3] = 0.0f;
        dpt[i][0] = dpt[i][1] = dpt[i][2] = dpt[i][3] = 0.0f;
      }
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) {
        const bf16* pk = s_k + (kw + g) * kRowStride + kk * 16 + 2 * t;
        const bf16* pv = s_v + (kw + g) * kRowStride + kk * 16 + 2 * t;
        const uint32_t ka[4] = {ld32(pk), ld32(pk + 8 * kRowStride), ld32(pk + 8),
                                ld32(pk + 8 * kRowStride + 8)};
        const uint32_t va[4] = {ld32(pv), ld32(pv + 8 * kRowStride), ld32(pv + 8),
                                ld32(pv + 8 * kRowStride + 8)};
#pragma unroll
        for (int nt = 0; nt < kBwdBr / 8; ++nt) {
          const bf16* pq = s_q + (nt * 8 + g) * kRowStride + kk * 16 + 2 * t;
          const bf16* pd = s_do + (nt * 8 + g) * kRowStride + kk * 16 + 2 * t;
          const uint32_t qb[2] = {ld32(pq), ld32(pq + 8)};
          const uint32_t db[2] = {ld32(pd), ld32(pd + 8)};
          mma_bf16_16816(st[nt], ka, qb);
          mma_bf16_16816(dpt[nt], va, db);
        }
      }
      // P^T = exp(scale S^T - lse), dS^T = P^T (dP^T - delta).
#pragma unroll
      for (int nt = 0; nt < kBwdBr / 8; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int qcol = nt * 8 + 2 * t + (e & 1);
          const int query = qt * kBwdBr + qcol;
          const int key = key0 + (e >= 2 ? 8 : 0);
          float p = exp2f(st[nt][e] * sl2 - s_lse[qcol]);
          if (sh.causal && key > query) p = 0.0f;
          st[nt][e] = p;
          dpt[nt][e] = p * (dpt[nt][e] - s_delta[qcol]);
        }
      }
      // dV_w += P^T dO and dK_w += dS^T Q (k = the 32 queries).
#pragma unroll
      for (int ks = 0; ks < kBwdBr / 16; ++ks) {
        uint32_t pa[4];
        accumulators_to_a(st[2 * ks], st[2 * ks + 1], pa);
        uint32_t sa[4];
        accumulators_to_a(dpt[2 * ks], dpt[2 * ks + 1], sa);
#pragma unroll
        for (int nt = 0; nt < kD / 8; ++nt) {
          const bf16* pd = s_dot + (nt * 8 + g) * kQtStride + ks * 16 + 2 * t;
          const bf16* pq = s_qt + (nt * 8 + g) * kQtStride + ks * 16 + 2 * t;
          const uint32_t db[2] = {ld32(pd), ld32(pd + 8)};
          const uint32_t qb[2] = {ld32(pq), ld32(pq + 8)};
          mma_bf16_16816(dv[nt], pa, db);
          mma_bf16_16816(dk[nt], sa, qb);
        }
      }
      // dS as [query][key] for dQ = dS K.
#pragma unroll
      for (int nt = 0; nt < kBwdBr / 8; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int qcol = nt * 8 + 2 * t + (e & 1);
          const int krow = kw + g + (e >= 2 ? 8 : 0);
          s_ds[qcol * kDsStride + krow] = __float2bfloat16_rn(dpt[nt][e]);
        }
      }
      __syncthreads();
      // dQ (32 x 128) += scale * dS (32 x 64) K (64 x 128); warp w: 16 queries x 64 columns.
      const int mrow = (warp & 1) * 16, ncol = (warp >> 1) * 64;
      float dq[8][4];
#pragma unroll
      for (int i = 0; i < 8; ++i) dq[i][0] = dq[i][1] = dq[i][2] = dq[i][3] = 0.0f;
#pragma unroll
      for (int ks = 0; ks < kBwdBc / 16; ++ks) {
        const bf16* ps = s_ds + (mrow + g) * kDsStride + ks * 16 + 2 * t;
        const uint32_t a[4] = {ld32(ps), ld32(ps + 8 * kDsStride), ld32(ps + 8),
                               ld32(ps + 8 * kDsStride + 8)};
#pragma unroll
        for (int nt = 0; nt < 8; ++nt) {
          const bf16* pk = s_kt + (ncol + nt * 8 + g) * kKtStride + ks * 16 + 2 * t;
          const uint32_t b[2] = {ld32(pk), ld32(pk + 8)};
          mma_bf16_16816(dq[nt], a, b);
        }
      }
      float* dq0 = dq_acc + (q_row + mrow + g) * kD;
      float* dq1 = dq0 + 8 * kD;
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        const int col = ncol + nt * 8 + 2 * t;
        atomicAdd(dq0 + col, dq[nt][0] * sh.scale);
        atomicAdd(dq0 + col + 1, dq[nt][1] * sh.scale);
        atomicAdd(dq1 + col, dq[nt][2] * sh.scale);
        atomicAdd(dq1 + col + 1, dq[nt][3] * sh.scale);
      }
    }
  }
  bf16* dk0 = dk_all + (kv_head + key0) * kD;
  bf16* dv0 = dv_all + (kv_head + key0) * kD;
#pragma unroll
  for (int nt = 0; nt < kD / 8; ++nt) {
    const int col = nt * 8 + 2 * t;
    *reinterpret_cast<__nv_bfloat162*>(dk0 + col) =
        __floats2bfloat162_rn(dk[nt][0] * sh.scale, dk[nt][1] * sh.scale);
    *reinterpret_cast<__nv_bfloat162*>(dk0 + 8 * kD + col) =
        __floats2bfloat162_rn(dk[nt][2] * sh.scale, dk[nt][3] * sh.scale);
    *reinterpret_cast<__nv_bfloat162*>(dv0 + col) = __floats2bfloat162_rn(dv[nt][0], dv[nt][1]);
    *reinterpret_cast<__nv_bfloat162*>(dv0 + 8 * kD + col) =
        __floats2bfloat162_rn(dv[nt][2], dv[nt][3]);
  }
}

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

void check_shape(const AttnShape& sh) {
  if (sh.s % kFwdBr != 0 || sh.s % kBwdBc != 0 || sh.hq % sh.hkv != 0) {
    throw std::runtime_error(
        "attention: sequence must be a multiple of 64 and heads a multiple of KV heads");
  }
}

void launch_fwd(AttnBuffers& buf, const AttnShape& sh, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(sh.s / kFwdBr), static_cast<unsigned>(sh.hq),
                  static_cast<unsigned>(sh.b));
  attn_fwd_kernel<<<grid, 128, kFwdSmemBytes, stream>>>(buf.q.get(), buf.k.get(), buf.v.get(),
                                                        buf.o.get(), buf.lse.get(), sh);
  PODSIM_CUDA_CHECK_LAUNCH();
}

void launch_bwd(AttnBuffers& buf, const AttnShape& sh, cudaStream_t stream) {
  const size_t rows = static_cast<size_t>(sh.b) * sh.hq * sh.s;
  PODSIM_CUDA_CHECK(cudaMemsetAsync(buf.dq_acc.get(), 0, rows * kD * sizeof(float), stream));
  attn_delta_kernel<<<static_cast<unsigned>((rows + 3) / 4), 128, 0, stream>>>(
      buf.o.get(), buf.d_o.get(), buf.delta.get(), rows);
  PODSIM_CUDA_CHECK_LAUNCH();
  const dim3 grid(static_cast<unsigned>(sh.s / kBwdBc), static_cast<unsigned>(sh.hkv),
                  static_cast<unsigned>(sh.b));
  attn_bwd_kernel<<<grid, 128, kBwdSmemBytes, stream>>>(
      buf.q.get(), buf.k.get(), buf.v.get(), buf.d_o.get(), buf.lse.get(), buf.delta.get(),
      buf.dq_acc.get(), buf.dk.get(), buf.dv.get(), sh);
  PODSIM_CUDA_CHECK_LAUNCH();
  const size_t n = rows * kD;
  convert_to_bf16_kernel<<<static_cast<unsigned>(std::min<size_t>((n + 255) / 256, 65536)), 256, 0,
                           stream>>>(buf.dq_acc.get(), buf.dq.get(), n);
  PODSIM_CUDA_CHECK_LAUNCH();
}

double bf(const std::vector<bf16>& v, size_t i) {
  return static_cast<double>(__bfloat162float(v[i]));
}

// max |got - want| / max |want| over an array.
struct ErrorTracker {
  double max_err = 0, max_ref = 0;
  void add(double got, double want) {
    max_err = std::max(max_err, std::abs(got - want));
    max_ref = std::max(max_ref, std::abs(want));
  }
  double relative() const { return max_ref > 0 ? max_err / max_ref : max_err; }
};

// Forward and backward on a small shape against a double-precision reference
// from the same bf16 inputs. Returns "" when they agree, else what differs.
std::string check_against_host(Context& ctx) {
  AttnShape sh{2, 4, 2, 192, 1.0f / std::sqrt(static_cast<float>(kD)), true};
  const size_t q_elems = static_cast<size_t>(sh.b) * sh.hq * sh.s * kD;
  const size_t kv_elems = static_cast<size_t>(sh.b) * sh.hkv * sh.s * kD;
  AttnBuffers buf(q_elems, kv_elems, static_cast<size_t>(sh.b) * sh.hq * sh.s);
  fill_inputs(buf, ctx.stream);
  launch_fwd(buf, sh, ctx.stream);
  launch_bwd(buf, sh, ctx.stream);
  PODSIM_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
  const std::vector<bf16> o = buf.o.read_all(), dq = buf.dq.read_all(), dk = buf.dk.read_all(),
                          dv = buf.dv.read_all();
  const std::vector<float> lse = buf.lse.read_all();

  // The inputs as the GPU holds them (bf16), widened to double once.
  const auto host_copy = [](uint64_t seed, size_t n) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = static_cast<double>(random_value<bf16>(seed, i, -1.0f, 1.0f));
    return v;
  };
  const std::vector<double> hq_in = host_copy(kSeedQ, q_elems), hk_in = host_copy(kSeedK, kv_elems),
                            hv_in = host_copy(kSeedV, kv_elems),
                            hdo_in = host_copy(kSeedDo, q_elems);
  const auto in = [&](uint64_t seed, size_t i) {
    return seed == kSeedQ   ? hq_in[i]
           : seed == kSeedK ? hk_in[i]
           : seed == kSeedV ? hv_in[i]
                            : hdo_in[i];
  };
  ErrorTracker e_o, e_lse, e_dq, e_dk, e_dv;
  const int s = sh.s, group = sh.hq / sh.hkv;
  std::vector<double> dk_ref(kv_elems, 0.0), dv_ref(kv_elems, 0.0);
  for (int bi = 0; bi < sh.b; ++bi) {
    for (int h = 0; h < sh.hq; ++h) {
      const size_t qh = (static_cast<size_t>(bi) * sh.hq + h) * s;
      const size_t kh = (static_cast<size_t>(bi) * sh.hkv + h / group) * s;
      std::vector<double> p(static_cast<size_t>(s) * s, 0.0),
          o_ref(static_cast<size_t>(s) * kD, 0.0);
      for (int i = 0; i < s; ++i) {
        double mx = -1e300;
        for (int j = 0; j <= i; ++j) {
          double dot = 0;
          for (int d = 0; d < kD; ++d)
            dot += in(kSeedQ, (qh + i) * kD + d) * in(kSeedK, (kh + j) * kD + d);
          p[static_cast<size_t>(i) * s + j] = dot * sh.scale;
          mx = std::max(mx, dot * sh.scale);
        }
        double sum = 0;
        for (int j = 0; j <= i; ++j) sum += std::exp(p[static_cast<size_t>(i) * s + j] - mx);
        for (int j = 0; j <= i; ++j)
          p[static_cast<size_t>(i) * s + j] =
              std::exp(p[static_cast<size_t>(i) * s + j] - mx) / sum;
        e_lse.add(lse[qh + i], mx + std::log(sum));
        for (int d = 0; d < kD; ++d) {
          double acc = 0;
          for (int j = 0; j <= i; ++j)
            acc += p[static_cast<size_t>(i) * s + j] * in(kSeedV, (kh + j) * kD + d);
          o_ref[static_cast<size_t>(i) * kD + d] = acc;
          e_o.add(bf(o, (qh + i) * kD + d), acc);
        }
      }
      // Backward: dP = dO V^T, delta = rowsum(dO o O), dS = P (dP - delta).
      for (int i = 0; i < s; ++i) {
        double delta = 0;
        for (int d = 0; d < kD; ++d)
          delta += in(kSeedDo, (qh + i) * kD + d) * o_ref[static_cast<size_t>(i) * kD + d];
        std::vector<double> ds(static_cast<size_t>(i) + 1);
        for (int j = 0; j <= i; ++j) {
          double dp = 0;
          for (int d = 0; d < kD; ++d)
            dp += in(kSeedDo, (qh + i) * kD + d) * in(kSeedV, (kh + j) * kD + d);
          ds[static_cast<size_t>(j)] = p[static_cast<size_t>(i) * s + j] * (dp - delta);
        }
        for (int d = 0; d < kD; ++d) {
          double acc = 0;
          for (int j = 0; j <= i; ++j)
            acc += ds[static_cast<size_t>(j)] * in(kSeedK, (kh + j) * kD + d);
          e_dq.add(bf(dq, (qh + i) * kD + d), acc * sh.scale);
        }
        for (int j = 0; j <= i; ++j) {
          for (int d = 0; d < kD; ++d) {
            dk_ref[(kh + j) * kD + d] +=
                ds[static_cast<size_t>(j)] * in(kSeedQ, (qh + i) * kD + d) * sh.scale;
            dv_ref[(kh + j) * kD + d] +=
                p[static_cast<size_t>(i) * s + j] * in(kSeedDo, (qh + i) * kD + d);
          }
        }
      }
    }
  }
  for (size_t i = 0; i < kv_elems; ++i) {
    e_dk.add(bf(dk, i), dk_ref[i]);
    e_dv.add(bf(dv, i), dv_ref[i]);
  }
  // bf16 rounding of P, dS and the outputs bounds the error at a few 2^-8.
  std::string problems;
  const auto judge = [&](const char* what, const ErrorTracker& e, double tol) {
    if (!(e.relative() <= tol))
      problems += std::string(" ") + what + " rel. error " + std::to_string(e.relative());
  };
  judge("O", e_o, 2e-2);
  judge("dQ", e_dq, 3e-2);
  judge("dK", e_dk, 3e-2);
  judge("dV", e_dv, 3e-2);
  if (!(e_lse.max_err <= 1e-2)) problems += " LSE abs. error " + std::to_string(e_lse.max_err);
  return problems;
}

}  // namespace

void measure_attention(Context& ctx) {
  if (ctx.cc() < 80)
    throw std::runtime_error("attention: the mma.sync bf16 kernels need compute capability 8.0+");
  if (static_cast<size_t>(ctx.prop.sharedMemPerBlockOptin) < kBwdSmemBytes) {
    throw std::runtime_error("attention: the backward kernel needs " +
                             std::to_string(kBwdSmemBytes) + " bytes of shared memory per block");
  }
  PODSIM_CUDA_CHECK(cudaFuncSetAttribute(attn_fwd_kernel,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(kFwdSmemBytes)));
  PODSIM_CUDA_CHECK(cudaFuncSetAttribute(attn_bwd_kernel,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(kBwdSmemBytes)));
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
    check_shape(sh);
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
