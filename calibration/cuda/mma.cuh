#pragma once

// Warp-level matrix instructions (PTX), shared by the tensor-peak benchmark and
// the flash-attention kernels.
//
// mma.sync.m16n8k16 (bf16 in, fp32 accumulate) fragment layout, per the PTX ISA
// ("Matrix Fragments for mma.m16n8k16 with floating point type"), with
// g = lane / 4 and t = lane % 4; a 32-bit register packs two bf16, the lower
// column (A) or row (B) in the low half:
//   A (16x16, row-major): a[0] = A[g][2t..2t+1]    a[1] = A[g+8][2t..2t+1]
//                          a[2] = A[g][2t+8..2t+9]  a[3] = A[g+8][2t+8..2t+9]
//   B (16x8, B[k][n]):     b[0] = B[2t..2t+1][g]    b[1] = B[2t+8..2t+9][g]
//   C/D (16x8, fp32):      c[0] = C[g][2t]  c[1] = C[g][2t+1]  c[2] = C[g+8][2t]  c[3] =
//   C[g+8][2t+1]

#include <cuda_bf16.h>

#include <cstdint>

namespace podsim::calibration::gpu {

/// Packs two floats as bf16 (round to nearest), `lo` in the low half.
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x = lo (low half), .y = hi
  return *reinterpret_cast<const uint32_t*>(&v);
}

/// Packs two bf16 values, `lo` in the low half.
__device__ __forceinline__ uint32_t pack_bf16(__nv_bfloat16 lo, __nv_bfloat16 hi) {
  const uint32_t l = *reinterpret_cast<const unsigned short*>(&lo);
  const uint32_t h = *reinterpret_cast<const unsigned short*>(&hi);
  return l | (h << 16);
}

/// d += a * b for one m16n8k16 tile (bf16 inputs, fp32 accumulators).
__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4],
                                               const uint32_t (&b)[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

/// The A fragment (16x16 bf16) formed by two adjacent 16x8 fp32 accumulator
/// tiles, columns 0-7 in `left` and 8-15 in `right` (FlashAttention-2's
/// register reuse: C's layout for rows g, g+8 and columns 2t, 2t+1 matches A's).
__device__ __forceinline__ void accumulators_to_a(const float (&left)[4], const float (&right)[4],
                                                  uint32_t (&a)[4]) {
  a[0] = pack_bf16(left[0], left[1]);
  a[1] = pack_bf16(left[2], left[3]);
  a[2] = pack_bf16(right[0], right[1]);
  a[3] = pack_bf16(right[2], right[3]);
}

}  // namespace podsim::calibration::gpu
