// The attention kernels (see attention_kernels.cuh). Moved out of
// attention_bench.cu so that the benchmark and the executor run the same code;
// views are strided so that the executor reads Q, K, V from the fused QKV
// tensor and writes O, dQ, dK, dV where its GEMMs read them.

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "calibration/cuda/attention_kernels.cuh"
#include "calibration/cuda/check.h"
#include "calibration/cuda/mma.cuh"

namespace podsim::calibration::gpu {
namespace {

using bf16 = __nv_bfloat16;

constexpr int kD = kAttnHeadDim;    // head dimension
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

// Strides of every view a kernel reads or writes.
struct FwdStrides {
  AttnStrides q, k, v, o;
};
struct BwdStrides {
  AttnStrides q, k, v, d_o, dk, dv;
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

// Offset of row `row` of head h of sequence b in a strided view.
__device__ __forceinline__ int64_t view_offset(const AttnStrides& st, int b, int h, int row) {
  return static_cast<int64_t>(b) * st.batch + static_cast<int64_t>(h) * st.head +
         static_cast<int64_t>(row) * st.row;
}

// rows x kD elements (rows `src_stride` apart in global) into a [rows][stride] tile.
__device__ void load_rows(bf16* dst, int stride, const bf16* __restrict__ src, int64_t src_stride,
                          int rows) {
  for (int c = threadIdx.x; c < rows * (kD / 8); c += blockDim.x) {
    const int r = c / (kD / 8), col = (c % (kD / 8)) * 8;
    *reinterpret_cast<uint4*>(dst + r * stride + col) =
        *reinterpret_cast<const uint4*>(src + r * src_stride + col);
  }
}

// rows x kD elements into a transposed [kD][stride] tile (dst[d * stride + row]).
__device__ void load_rows_transposed(bf16* dst, int stride, const bf16* __restrict__ src,
                                     int64_t src_stride, int rows) {
  for (int c = threadIdx.x; c < rows * (kD / 8); c += blockDim.x) {
    const int r = c / (kD / 8), col = (c % (kD / 8)) * 8;
    const uint4 v = *reinterpret_cast<const uint4*>(src + r * src_stride + col);
    const bf16* e = reinterpret_cast<const bf16*>(&v);
#pragma unroll
    for (int i = 0; i < 8; ++i) dst[(col + i) * stride + r] = e[i];
  }
}

__global__ void __launch_bounds__(128)
    attn_fwd_kernel(const bf16* __restrict__ q_all, const bf16* __restrict__ k_all,
                    const bf16* __restrict__ v_all, bf16* __restrict__ o_all,
                    float* __restrict__ lse_all, AttnShape sh, FwdStrides st) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  bf16* s_q = reinterpret_cast<bf16*>(smem_raw);
  bf16* s_k = s_q + kFwdBr * kRowStride;
  bf16* s_vt = s_k + kFwdBc * kRowStride;

  const int n_qt = sh.s / kFwdBr;
  const int qt = n_qt - 1 - static_cast<int>(blockIdx.x);  // the longest causal rows first
  const int h = blockIdx.y, bi = blockIdx.z;
  const int hk = h / (sh.hq / sh.hkv);
  const size_t q_head = (static_cast<size_t>(bi) * sh.hq + h) * sh.s;  // lse rows
  const bf16* q_base = q_all + view_offset(st.q, bi, h, 0);
  const bf16* k_base = k_all + view_offset(st.k, bi, hk, 0);
  const bf16* v_base = v_all + view_offset(st.v, bi, hk, 0);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

  load_rows(s_q, kRowStride, q_base + static_cast<int64_t>(qt) * kFwdBr * st.q.row, st.q.row,
            kFwdBr);
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
    load_rows(s_k, kRowStride, k_base + static_cast<int64_t>(j) * kFwdBc * st.k.row, st.k.row,
              kFwdBc);
    load_rows_transposed(s_vt, kFwdVtStride, v_base + static_cast<int64_t>(j) * kFwdBc * st.v.row,
                         st.v.row, kFwdBc);
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
  bf16* out0 = o_all + view_offset(st.o, bi, h, query0);
  bf16* out1 = out0 + 8 * st.o.row;
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

// delta[row] = sum_d dO[row][d] * O[row][d]; one warp per (b, h, i) row.
__global__ void attn_delta_kernel(const bf16* __restrict__ o, const bf16* __restrict__ d_o,
                                  float* __restrict__ delta, AttnShape sh, AttnStrides o_st,
                                  AttnStrides do_st) {
  const size_t row = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= static_cast<size_t>(sh.b) * sh.hq * sh.s) return;
  const int i = static_cast<int>(row % sh.s);
  const int h = static_cast<int>((row / sh.s) % sh.hq);
  const int bi = static_cast<int>(row / (static_cast<size_t>(sh.s) * sh.hq));
  const bf16* o_row = o + view_offset(o_st, bi, h, i);
  const bf16* do_row = d_o + view_offset(do_st, bi, h, i);
  float acc = 0;
#pragma unroll
  for (int c = 0; c < kD / 32; ++c) {
    acc += __bfloat162float(o_row[lane + 32 * c]) * __bfloat162float(do_row[lane + 32 * c]);
  }
#pragma unroll
  for (int off = 16; off > 0; off /= 2) acc += __shfl_xor_sync(0xffffffffu, acc, off);
  if (lane == 0) delta[row] = acc;
}

// dQ's contiguous fp32 accumulator [b][hq][s][kD] into the strided bf16 dQ, two columns a thread.
__global__ void convert_dq_kernel(const float* __restrict__ in, bf16* __restrict__ out,
                                  AttnShape sh, AttnStrides st) {
  const size_t pairs = static_cast<size_t>(sh.b) * sh.hq * sh.s * (kD / 2);
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t p = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < pairs;
       p += stride) {
    const size_t row = p / (kD / 2);
    const int col = static_cast<int>(p % (kD / 2)) * 2;
    const int i = static_cast<int>(row % sh.s);
    const int h = static_cast<int>((row / sh.s) % sh.hq);
    const int bi = static_cast<int>(row / (static_cast<size_t>(sh.s) * sh.hq));
    const float2 v = *reinterpret_cast<const float2*>(in + row * kD + col);
    *reinterpret_cast<__nv_bfloat162*>(out + view_offset(st, bi, h, i) + col) =
        __floats2bfloat162_rn(v.x, v.y);
  }
}

__global__ void __launch_bounds__(128)
    attn_bwd_kernel(const bf16* __restrict__ q_all, const bf16* __restrict__ k_all,
                    const bf16* __restrict__ v_all, const bf16* __restrict__ do_all,
                    const float* __restrict__ lse_all, const float* __restrict__ delta_all,
                    float* __restrict__ dq_acc, bf16* __restrict__ dk_all,
                    bf16* __restrict__ dv_all, float* __restrict__ dkv_part, int splits,
                    AttnShape sh, BwdStrides st) {
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
  // blockIdx.y = hk * splits + split: the K/V head and which share of its
  // group of query heads this block runs (grouped-query attention with few
  // K/V heads would leave most SMs idle with one block per K/V head).
  const int hk = static_cast<int>(blockIdx.y) / splits,
            split = static_cast<int>(blockIdx.y) % splits;
  const int bi = blockIdx.z;
  const int group = sh.hq / sh.hkv, per_split = group / splits;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int kw = warp * 16;
  const int key0 = kt * kBwdBc + kw + g;  // this thread's first key row; the second is key0 + 8

  const bf16* k_tile = k_all + view_offset(st.k, bi, hk, kt * kBwdBc);
  const bf16* v_tile = v_all + view_offset(st.v, bi, hk, kt * kBwdBc);
  load_rows(s_k, kRowStride, k_tile, st.k.row, kBwdBc);
  load_rows(s_v, kRowStride, v_tile, st.v.row, kBwdBc);
  load_rows_transposed(s_kt, kKtStride, k_tile, st.k.row, kBwdBc);

  float dk[kD / 8][4], dv[kD / 8][4];
#pragma unroll
  for (int i = 0; i < kD / 8; ++i) {
    dk[i][0] = dk[i][1] = dk[i][2] = dk[i][3] = 0.0f;
    dv[i][0] = dv[i][1] = dv[i][2] = dv[i][3] = 0.0f;
  }
  const float sl2 = sh.scale * kLog2e;
  const int qt_begin = sh.causal ? (kt * kBwdBc) / kBwdBr : 0;

  for (int hh = split * per_split; hh < (split + 1) * per_split; ++hh) {
    const int h = hk * group + hh;
    const size_t q_head = (static_cast<size_t>(bi) * sh.hq + h) * sh.s;
    for (int qt = qt_begin; qt < sh.s / kBwdBr; ++qt) {
      __syncthreads();  // the previous step is done with the query-side tiles
      const size_t q_row = q_head + static_cast<size_t>(qt) * kBwdBr;  // lse, delta, dq_acc rows
      const bf16* q_tile = q_all + view_offset(st.q, bi, h, qt * kBwdBr);
      const bf16* do_tile = do_all + view_offset(st.d_o, bi, h, qt * kBwdBr);
      load_rows(s_q, kRowStride, q_tile, st.q.row, kBwdBr);
      load_rows(s_do, kRowStride, do_tile, st.d_o.row, kBwdBr);
      load_rows_transposed(s_qt, kQtStride, q_tile, st.q.row, kBwdBr);
      load_rows_transposed(s_dot, kQtStride, do_tile, st.d_o.row, kBwdBr);
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
  if (splits > 1) {
    // fp32 partial sums [2][splits][b][hkv][s][kD] (dK then dV), added up by reduce_dkv_kernel.
    const size_t part = static_cast<size_t>(splits) * sh.b * sh.hkv * sh.s * kD;
    const size_t row0 = ((static_cast<size_t>(split) * sh.b + bi) * sh.hkv + hk) * sh.s + key0;
    float* pk0 = dkv_part + row0 * kD;
    float* pv0 = dkv_part + part + row0 * kD;
#pragma unroll
    for (int nt = 0; nt < kD / 8; ++nt) {
      const int col = nt * 8 + 2 * t;
      *reinterpret_cast<float2*>(pk0 + col) =
          make_float2(dk[nt][0] * sh.scale, dk[nt][1] * sh.scale);
      *reinterpret_cast<float2*>(pk0 + 8 * kD + col) =
          make_float2(dk[nt][2] * sh.scale, dk[nt][3] * sh.scale);
      *reinterpret_cast<float2*>(pv0 + col) = make_float2(dv[nt][0], dv[nt][1]);
      *reinterpret_cast<float2*>(pv0 + 8 * kD + col) = make_float2(dv[nt][2], dv[nt][3]);
    }
    return;
  }
  bf16* dk0 = dk_all + view_offset(st.dk, bi, hk, key0);
  bf16* dv0 = dv_all + view_offset(st.dv, bi, hk, key0);
#pragma unroll
  for (int nt = 0; nt < kD / 8; ++nt) {
    const int col = nt * 8 + 2 * t;
    *reinterpret_cast<__nv_bfloat162*>(dk0 + col) =
        __floats2bfloat162_rn(dk[nt][0] * sh.scale, dk[nt][1] * sh.scale);
    *reinterpret_cast<__nv_bfloat162*>(dk0 + 8 * st.dk.row + col) =
        __floats2bfloat162_rn(dk[nt][2] * sh.scale, dk[nt][3] * sh.scale);
    *reinterpret_cast<__nv_bfloat162*>(dv0 + col) = __floats2bfloat162_rn(dv[nt][0], dv[nt][1]);
    *reinterpret_cast<__nv_bfloat162*>(dv0 + 8 * st.dv.row + col) =
        __floats2bfloat162_rn(dv[nt][2], dv[nt][3]);
  }
}

// dK and dV: the sum over splits of the fp32 partials, into the strided bf16 views.
__global__ void reduce_dkv_kernel(const float* __restrict__ part, bf16* __restrict__ dk_all,
                                  bf16* __restrict__ dv_all, int splits, AttnShape sh,
                                  AttnStrides dk_st, AttnStrides dv_st) {
  const size_t rows = static_cast<size_t>(sh.b) * sh.hkv * sh.s;  // [b][hkv][s]
  const size_t per_split = rows * kD;
  const size_t pairs = 2 * rows * (kD / 2);  // dK rows, then dV rows
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t p = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < pairs;
       p += stride) {
    const bool is_v = p >= pairs / 2;
    const size_t q = is_v ? p - pairs / 2 : p;
    const size_t row = q / (kD / 2);
    const int col = static_cast<int>(q % (kD / 2)) * 2;
    const float* src = part + (is_v ? static_cast<size_t>(splits) * per_split : 0) + row * kD + col;
    float2 sum = make_float2(0.0f, 0.0f);
    for (int sp = 0; sp < splits; ++sp) {
      const float2 v = *reinterpret_cast<const float2*>(src + static_cast<size_t>(sp) * per_split);
      sum.x += v.x;
      sum.y += v.y;
    }
    const int i = static_cast<int>(row % sh.s);
    const int hk = static_cast<int>((row / sh.s) % sh.hkv);
    const int bi = static_cast<int>(row / (static_cast<size_t>(sh.s) * sh.hkv));
    bf16* dst =
        is_v ? dv_all + view_offset(dv_st, bi, hk, i) : dk_all + view_offset(dk_st, bi, hk, i);
    *reinterpret_cast<__nv_bfloat162*>(dst + col) = __floats2bfloat162_rn(sum.x, sum.y);
  }
}

}  // namespace

void prepare_attention_kernels(const cudaDeviceProp& prop) {
  if (prop.major < 8) {
    throw std::runtime_error("attention: the mma.sync bf16 kernels need compute capability 8.0+");
  }
  if (static_cast<size_t>(prop.sharedMemPerBlockOptin) < kBwdSmemBytes) {
    throw std::runtime_error("attention: the backward kernel needs " +
                             std::to_string(kBwdSmemBytes) + " bytes of shared memory per block");
  }
  PODSIM_CUDA_CHECK(cudaFuncSetAttribute(attn_fwd_kernel,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(kFwdSmemBytes)));
  PODSIM_CUDA_CHECK(cudaFuncSetAttribute(attn_bwd_kernel,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(kBwdSmemBytes)));
}

int attention_backward_splits(const AttnShape& sh, int sms) {
  const int group = sh.hq / sh.hkv;
  const int64_t blocks = static_cast<int64_t>(sh.s / kBwdBc) * sh.hkv * sh.b;
  int splits = 1;
  // The smallest divisor of the group that gives two waves of blocks.
  while (splits < group && blocks * splits < 2 * static_cast<int64_t>(sms)) {
    ++splits;
    while (group % splits != 0) ++splits;
  }
  return splits;
}

size_t attention_backward_scratch_floats(const AttnShape& sh, int splits) {
  return splits > 1 ? 2 * static_cast<size_t>(splits) * sh.b * sh.hkv * sh.s * kD : 0;
}

void check_attention_shape(const AttnShape& sh) {
  if (sh.b <= 0 || sh.hq <= 0 || sh.hkv <= 0 || sh.s <= 0 || sh.s % kFwdBr != 0 ||
      sh.s % kBwdBc != 0 || sh.s % kBwdBr != 0 || sh.hq % sh.hkv != 0) {
    throw std::runtime_error("attention: sequence must be a positive multiple of " +
                             std::to_string(kAttnSeqMultiple) +
                             " and heads a multiple of KV heads");
  }
}

void launch_attention_forward(const AttnShape& sh, AttnTensor q, AttnTensor k, AttnTensor v,
                              AttnTensor o, float* lse, cudaStream_t stream) {
  check_attention_shape(sh);
  const dim3 grid(static_cast<unsigned>(sh.s / kFwdBr), static_cast<unsigned>(sh.hq),
                  static_cast<unsigned>(sh.b));
  const FwdStrides st{q.strides, k.strides, v.strides, o.strides};
  attn_fwd_kernel<<<grid, 128, kFwdSmemBytes, stream>>>(q.ptr, k.ptr, v.ptr, o.ptr, lse, sh, st);
  PODSIM_CUDA_CHECK_LAUNCH();
}

void launch_attention_backward(const AttnShape& sh, const AttnBackwardTensors& t,
                               cudaStream_t stream) {
  check_attention_shape(sh);
  const size_t rows = static_cast<size_t>(sh.b) * sh.hq * sh.s;
  PODSIM_CUDA_CHECK(cudaMemsetAsync(t.dq_acc, 0, rows * kD * sizeof(float), stream));
  attn_delta_kernel<<<static_cast<unsigned>((rows + 3) / 4), 128, 0, stream>>>(
      t.o.ptr, t.d_o.ptr, t.delta, sh, t.o.strides, t.d_o.strides);
  PODSIM_CUDA_CHECK_LAUNCH();
  const int splits = t.kv_splits;
  if (splits < 1 || (sh.hq / sh.hkv) % splits != 0 || (splits > 1 && t.dkv_scratch == nullptr)) {
    throw std::runtime_error(
        "attention: kv_splits must divide the query heads per K/V head, "
        "with scratch for the partial sums");
  }
  const dim3 grid(static_cast<unsigned>(sh.s / kBwdBc), static_cast<unsigned>(sh.hkv * splits),
                  static_cast<unsigned>(sh.b));
  const BwdStrides st{t.q.strides,   t.k.strides,  t.v.strides,
                      t.d_o.strides, t.dk.strides, t.dv.strides};
  attn_bwd_kernel<<<grid, 128, kBwdSmemBytes, stream>>>(t.q.ptr, t.k.ptr, t.v.ptr, t.d_o.ptr, t.lse,
                                                        t.delta, t.dq_acc, t.dk.ptr, t.dv.ptr,
                                                        t.dkv_scratch, splits, sh, st);
  PODSIM_CUDA_CHECK_LAUNCH();
  if (splits > 1) {
    const size_t kv_pairs = 2 * static_cast<size_t>(sh.b) * sh.hkv * sh.s * (kD / 2);
    reduce_dkv_kernel<<<static_cast<unsigned>(std::min<size_t>((kv_pairs + 255) / 256, 65536)), 256,
                        0, stream>>>(t.dkv_scratch, t.dk.ptr, t.dv.ptr, splits, sh, t.dk.strides,
                                     t.dv.strides);
    PODSIM_CUDA_CHECK_LAUNCH();
  }
  const size_t pairs = rows * (kD / 2);
  convert_dq_kernel<<<static_cast<unsigned>(std::min<size_t>((pairs + 255) / 256, 65536)), 256, 0,
                      stream>>>(t.dq_acc, t.dq.ptr, sh, t.dq.strides);
  PODSIM_CUDA_CHECK_LAUNCH();
}

}  // namespace podsim::calibration::gpu
