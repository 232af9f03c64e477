// Tensor-core peaks from our own kernels: mma.sync m16n8k16 bf16 (sm_80+) and,
// on Hopper built for sm_90a, wgmma m64n128k16 bf16 and m64n128k32 e4m3.
// Each rate comes with a correctness check of the instruction's layout on one
// tile against a host reference (the attention kernels use the same mma.sync layout).

#include <cmath>

#include "calibration/cuda/common.cuh"
#include "calibration/cuda/mma.cuh"
#include "calibration/cuda/wgmma.cuh"

namespace podsim::calibration::gpu {
namespace {

constexpr int kMmaAccumulators = 8;

__global__ void mma_peak_kernel(int iters, const __nv_bfloat16* __restrict__ in,
                                float* __restrict__ out) {
  const int lane = threadIdx.x % 32;
  const size_t warp = (static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  uint32_t a[4], b[2];
  const __nv_bfloat16* base = in + (warp % 64) * 384 + lane * 12;
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = pack_bf16(base[2 * i], base[2 * i + 1]);
#pragma unroll
  for (int i = 0; i < 2; ++i) b[i] = pack_bf16(base[8 + 2 * i], base[9 + 2 * i]);
  float d[kMmaAccumulators][4] = {};
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int j = 0; j < kMmaAccumulators; ++j) mma_bf16_16816(d[j], a, b);
  }
  float sum = 0;
#pragma unroll
  for (int j = 0; j < kMmaAccumulators; ++j) sum += (d[j][0] + d[j][1]) + (d[j][2] + d[j][3]);
  out[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = sum;
}

// One warp: D (16x8) = A (16x16, row-major) * B (16x8, B[k][n]) through the documented fragment
// layout.
__global__ void mma_check_kernel(const __nv_bfloat16* __restrict__ a_mat,
                                 const __nv_bfloat16* __restrict__ b_mat,
                                 float* __restrict__ d_mat) {
  const int lane = threadIdx.x;
  const int g = lane / 4, t = lane % 4;
  uint32_t a[4], b[2];
  a[0] = pack_bf16(a_mat[g * 16 + 2 * t], a_mat[g * 16 + 2 * t + 1]);
  a[1] = pack_bf16(a_mat[(g + 8) * 16 + 2 * t], a_mat[(g + 8) * 16 + 2 * t + 1]);
  a[2] = pack_bf16(a_mat[g * 16 + 2 * t + 8], a_mat[g * 16 + 2 * t + 9]);
  a[3] = pack_bf16(a_mat[(g + 8) * 16 + 2 * t + 8], a_mat[(g + 8) * 16 + 2 * t + 9]);
  b[0] = pack_bf16(b_mat[(2 * t) * 8 + g], b_mat[(2 * t + 1) * 8 + g]);
  b[1] = pack_bf16(b_mat[(2 * t + 8) * 8 + g], b_mat[(2 * t + 9) * 8 + g]);
  float d[4] = {0, 0, 0, 0};
  mma_bf16_16816(d, a, b);
  d_mat[g * 8 + 2 * t] = d[0];
  d_mat[g * 8 + 2 * t + 1] = d[1];
  d_mat[(g + 8) * 8 + 2 * t] = d[2];
  d_mat[(g + 8) * 8 + 2 * t + 1] = d[3];
}

// Byte offset of element (row, k) of a K-major operand in the no-swizzle
// core-matrix layout: core matrix (row/8, kbyte/16) at ((row/8) * 2 + kbyte/16) * 128.
__host__ __device__ inline uint32_t core_offset(uint32_t row, uint32_t kbyte) {
  return ((row / 8) * 2 + kbyte / 16) * 128 + (row % 8) * 16 + kbyte % 16;
}

// Loads a (rows x 32 bytes) K-major tile from global (row-major) into shared memory.
__device__ void load_core_tile(unsigned char* smem, const unsigned char* __restrict__ g, int rows) {
  for (int i = threadIdx.x; i < rows * 32; i += blockDim.x) {
    smem[core_offset(static_cast<uint32_t>(i / 32), static_cast<uint32_t>(i % 32))] = g[i];
  }
}

// D (64x128) = A (64 x K) * B (128 x K)^T, K = 32 bytes (16 bf16 or 32 e4m3); one warpgroup.
// `variant` 0: LBO = 128 (K direction), SBO = 256 (M/N direction); 1: swapped.
template <bool kFp8>
__global__ void wgmma_check_kernel(const unsigned char* __restrict__ a_mat,
                                   const unsigned char* __restrict__ b_mat,
                                   float* __restrict__ d_mat, int variant, int* __restrict__ ran) {
  __shared__ __align__(128) unsigned char sa[64 * 32];
  __shared__ __align__(128) unsigned char sb[128 * 32];
  load_core_tile(sa, a_mat, 64);
  load_core_tile(sb, b_mat, 128);
  fence_proxy_async_shared();
  __syncthreads();
  const uint32_t lbo = variant == 0 ? 128 : 256;
  const uint32_t sbo = variant == 0 ? 256 : 128;
  float d[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0.0f;
  wgmma_fence();
  if constexpr (kFp8) {
    wgmma_m64n128k32_e4m3(d, wgmma_desc(sa, lbo, sbo), wgmma_desc(sb, lbo, sbo), 0);
  } else {
    wgmma_m64n128k16_bf16(d, wgmma_desc(sa, lbo, sbo), wgmma_desc(sb, lbo, sbo), 0);
  }
  wgmma_commit();
  wgmma_wait_all();
  fence_operands(d);
  const int tid = threadIdx.x;
  const int w = tid / 32, g = (tid % 32) / 4, t = tid % 4;
#pragma unroll
  for (int i = 0; i < 16; ++i) {
    const int r0 = 16 * w + g, c0 = 8 * i + 2 * t;
    d_mat[r0 * 128 + c0] = d[4 * i];
    d_mat[r0 * 128 + c0 + 1] = d[4 * i + 1];
    d_mat[(r0 + 8) * 128 + c0] = d[4 * i + 2];
    d_mat[(r0 + 8) * 128 + c0 + 1] = d[4 * i + 3];
  }
  if (tid == 0) *ran = PODSIM_HAVE_WGMMA;
}

template <bool kFp8>
__global__ void __launch_bounds__(128)
    wgmma_peak_kernel(int iters, const unsigned char* __restrict__ in, float* __restrict__ out,
                      int* __restrict__ ran) {
  __shared__ __align__(128) unsigned char sa[64 * 32];
  __shared__ __align__(128) unsigned char sb[128 * 32];
  load_core_tile(sa, in, 64);
  load_core_tile(sb, in + 64 * 32, 128);
  fence_proxy_async_shared();
  __syncthreads();
  const uint64_t da = wgmma_desc(sa, 128, 256);
  const uint64_t db = wgmma_desc(sb, 128, 256);
  float d[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0.0f;
  for (int it = 0; it < iters; ++it) {
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      if constexpr (kFp8) {
        wgmma_m64n128k32_e4m3(d, da, db, 1);
      } else {
        wgmma_m64n128k16_bf16(d, da, db, 1);
      }
    }
    wgmma_commit();
    wgmma_wait_all();
    fence_operands(d);
  }
  float sum = 0;
#pragma unroll
  for (int i = 0; i < 64; ++i) sum += d[i];
  out[static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x] = sum;
  if (blockIdx.x == 0 && threadIdx.x == 0) *ran = PODSIM_HAVE_WGMMA;
}

bool mma_layout_check(Context& ctx) {
  DeviceBuffer<__nv_bfloat16> a(16 * 16), b(16 * 8);
  DeviceBuffer<float> d(16 * 8);
  fill_random(a.get(), a.size(), 401, -1.0f, 1.0f, ctx.stream);
  fill_random(b.get(), b.size(), 402, -1.0f, 1.0f, ctx.stream);
  mma_check_kernel<<<1, 32, 0, ctx.stream>>>(a.get(), b.get(), d.get());
  PODSIM_CUDA_CHECK_LAUNCH();
  PODSIM_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
  const std::vector<float> got = d.read_all();
  for (int m = 0; m < 16; ++m) {
    for (int n = 0; n < 8; ++n) {
      double want = 0, scale = 0;
      for (int k = 0; k < 16; ++k) {
        const double x =
            random_value<__nv_bfloat16>(401, static_cast<uint64_t>(m * 16 + k), -1.0f, 1.0f) *
            static_cast<double>(
                random_value<__nv_bfloat16>(402, static_cast<uint64_t>(k * 8 + n), -1.0f, 1.0f));
        want += x;
        scale += std::abs(x);
      }
      if (std::abs(got[static_cast<size_t>(m * 8 + n)] - want) > 2e-4 * scale + 1e-7) return false;
    }
  }
  return true;
}

// Which descriptor variant (0 or 1) reproduces the host product; -1 if neither, -2 if wgmma did not
// run.
template <class T, bool kFp8>
int wgmma_layout_check(Context& ctx, uint64_t seed) {
  const int kElems = kFp8 ? 32 : 16;
  DeviceBuffer<T> a(64 * static_cast<size_t>(kElems)), b(128 * static_cast<size_t>(kElems));
  DeviceBuffer<float> d(64 * 128);
  DeviceBuffer<int> ran(1);
  fill_random(a.get(), a.size(), seed, -1.0f, 1.0f, ctx.stream);
  fill_random(b.get(), b.size(), seed + 1, -1.0f, 1.0f, ctx.stream);
  for (int variant = 0; variant < 2; ++variant) {
    PODSIM_CUDA_CHECK(cudaMemsetAsync(ran.get(), 0, sizeof(int), ctx.stream));
    wgmma_check_kernel<kFp8><<<1, 128, 0, ctx.stream>>>(
        reinterpret_cast<const unsigned char*>(a.get()),
        reinterpret_cast<const unsigned char*>(b.get()), d.get(), variant, ran.get());
    PODSIM_CUDA_CHECK_LAUNCH();
    PODSIM_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
    if (ran.read(0) != 1) return -2;
    const std::vector<float> got = d.read_all();
    bool ok = true;
    for (int m = 0; m < 64 && ok; ++m) {
      for (int n = 0; n < 128 && ok; ++n) {
        double want = 0, scale = 0;
        for (int k = 0; k < kElems; ++k) {
          const double x =
              static_cast<double>(
                  random_value<T>(seed, static_cast<uint64_t>(m * kElems + k), -1.0f, 1.0f)) *
              random_value<T>(seed + 1, static_cast<uint64_t>(n * kElems + k), -1.0f, 1.0f);
          want += x;
          scale += std::abs(x);
        }
        // Hopper's fp8 path accumulates with reduced precision (about 14 bits): a looser bound.
        ok = std::abs(got[static_cast<size_t>(m * 128 + n)] - want) <=
             (kFp8 ? 2e-3 : 2e-4) * scale + 1e-7;
      }
    }
    if (ok) return variant;
  }
  return -1;
}

void record_peak(Context& ctx, const std::string& name, const std::string& description,
                 double flops, std::vector<double> times, bool check_passed,
                 std::map<std::string, double> params) {
  Series s;
  s.name = name;
  s.work_unit = "flops";
  s.description = description;
  s.attributes = {{"fit", "none"}};
  Point p;
  p.params = std::move(params);
  p.work = flops;
  p.times_s = std::move(times);
  p.check_passed = check_passed;
  ctx.raw.scalars[name + ".flops_per_s"] = p.rate_per_s();
  s.points.push_back(std::move(p));
  ctx.raw.series.push_back(std::move(s));
}

}  // namespace

void measure_tensor_peaks(Context& ctx) {
  if (ctx.cc() < 80)
    throw std::runtime_error("tensor peaks: mma.sync bf16 needs compute capability 8.0+");
  // ---- mma.sync bf16
  {
    ctx.progress("tensor: mma.sync m16n8k16 bf16 peak");
    const bool ok = mma_layout_check(ctx);
    const int threads = 256;
    const int blocks = ctx.prop.multiProcessorCount * 2;
    const int iters = ctx.options.quick ? (1 << 15) : (1 << 17);
    DeviceBuffer<__nv_bfloat16> in(64 * 384);
    DeviceBuffer<float> out(static_cast<size_t>(blocks) * threads);
    fill_random(in.get(), in.size(), 403, -1.0f, 1.0f, ctx.stream);
    auto times = time_repeats(ctx.stream, ctx.warmup(), ctx.repeats(), [&](int) {
      mma_peak_kernel<<<blocks, threads, 0, ctx.stream>>>(iters, in.get(), out.get());
      PODSIM_CUDA_CHECK_LAUNCH();
    });
    const float sample = out.read(0);
    const double flops = 2.0 * 16 * 8 * 16 * kMmaAccumulators * static_cast<double>(iters) *
                         (static_cast<double>(blocks) * threads / 32);
    record_peak(ctx, "tensor.mma_sync.bf16",
                "mma.sync.m16n8k16 bf16->fp32, 8 independent accumulators per warp, 8 warps x 2 "
                "blocks per SM; "
                "check: one tile against the host",
                flops, std::move(times), ok && std::isfinite(sample),
                {{"blocks", blocks}, {"threads", threads}, {"iters", iters}});
    if (!ok) ctx.raw.errors.push_back("tensor.mma_sync.bf16: fragment layout check failed");
  }
  // ---- wgmma (Hopper, sm_90a build)
  if (ctx.cc() != 90) {
    ctx.raw.skipped.push_back(
        "tensor.wgmma: skipped (needs compute capability 9.0, this device is " +
        std::to_string(ctx.prop.major) + "." + std::to_string(ctx.prop.minor) + ")");
    return;
  }
  for (const bool fp8 : {false, true}) {
    const std::string name = fp8 ? "tensor.wgmma.fp8" : "tensor.wgmma.bf16";
    ctx.progress(name + " peak");
    const int variant = fp8 ? wgmma_layout_check<__nv_fp8_e4m3, true>(ctx, 411)
                            : wgmma_layout_check<__nv_bfloat16, false>(ctx, 421);
    if (variant == -2) {
      ctx.raw.errors.push_back(name +
                               ": wgmma was not compiled for this device (build for sm_90a)");
      continue;
    }
    const int threads = 128;
    const int blocks = ctx.prop.multiProcessorCount * 4;
    const int iters = ctx.options.quick ? 4096 : 16384;
    DeviceBuffer<unsigned char> in(192 * 32);
    DeviceBuffer<float> out(static_cast<size_t>(blocks) * threads);
    DeviceBuffer<int> ran(1);
    if (fp8) {
      fill_random(reinterpret_cast<__nv_fp8_e4m3*>(in.get()), in.size(), 431, -1.0f, 1.0f,
                  ctx.stream);
    } else {
      fill_random(reinterpret_cast<__nv_bfloat16*>(in.get()), in.size() / 2, 432, -1.0f, 1.0f,
                  ctx.stream);
    }
    auto times = time_repeats(ctx.stream, ctx.warmup(), ctx.repeats(), [&](int) {
      if (fp8) {
        wgmma_peak_kernel<true>
            <<<blocks, threads, 0, ctx.stream>>>(iters, in.get(), out.get(), ran.get());
      } else {
        wgmma_peak_kernel<false>
            <<<blocks, threads, 0, ctx.stream>>>(iters, in.get(), out.get(), ran.get());
      }
      PODSIM_CUDA_CHECK_LAUNCH();
    });
    const float sample = out.read(0);
    const double flops_per_op = 2.0 * 64 * 128 * (fp8 ? 32 : 16);
    const double flops = flops_per_op * 8 * static_cast<double>(iters) * blocks;
    const bool ok = variant >= 0 && std::isfinite(sample);
    record_peak(
        ctx, name,
        std::string("wgmma.mma_async m64n128k") + (fp8 ? "32 e4m3" : "16 bf16") +
            "->fp32 from shared memory (no swizzle), 8 per commit group, 4 warpgroups per SM; "
            "check: one tile against the host",
        flops, std::move(times), ok,
        {{"blocks", blocks},
         {"threads", threads},
         {"iters", iters},
         {"descriptor_variant", variant}});
    if (variant < 0) {
      ctx.raw.errors.push_back(name +
                               ": layout check failed for both descriptor conventions; "
                               "the rate is instruction throughput only");
    }
  }
}

}  // namespace podsim::calibration::gpu
