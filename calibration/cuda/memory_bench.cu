// HBM (copy, scale, triad over sizes) and the L2 working-set sweep.

#include <algorithm>
#include <cmath>

#include "calibration/cuda/common.cuh"

namespace podsim::calibration::gpu {
namespace {

constexpr float kScale = 1.0009765625f;  // 1 + 2^-10: exact, never 1

__global__ void copy_kernel(const float4* __restrict__ a, float4* __restrict__ b, size_t n4) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride)
    b[i] = a[i];
}

__global__ void scale_kernel(const float4* __restrict__ a, float4* __restrict__ b, float q,
                             size_t n4) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
    const float4 v = a[i];
    b[i] = make_float4(q * v.x, q * v.y, q * v.z, q * v.w);
  }
}

__global__ void triad_kernel(const float4* __restrict__ b, const float4* __restrict__ c,
                             float4* __restrict__ a, float q, size_t n4) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
    const float4 x = b[i];
    const float4 y = c[i];
    a[i] = make_float4(x.x + q * y.x, x.y + q * y.y, x.z + q * y.z, x.w + q * y.w);
  }
}

enum class StreamOp : int { kCopy = 0, kScale = 1, kTriad = 2 };

// Counts elements of `out` that are not what the operation gives from the inputs.
__global__ void check_stream_kernel(StreamOp op, const float* __restrict__ out,
                                    const float* __restrict__ in1, const float* __restrict__ in2,
                                    float q, size_t n, unsigned long long* __restrict__ bad) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  unsigned long long local = 0;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    bool ok = false;
    if (op == StreamOp::kCopy) {
      ok = out[i] == in1[i];
    } else if (op == StreamOp::kScale) {
      ok = out[i] == __fmul_rn(q, in1[i]);
    } else {
      // The triad kernel may or may not be contracted to an FMA: accept either rounding.
      ok = out[i] == __fmaf_rn(q, in2[i], in1[i]) ||
           out[i] == __fadd_rn(in1[i], __fmul_rn(q, in2[i]));
    }
    if (!ok) ++local;
  }
  if (local != 0) atomicAdd(bad, local);
}

__global__ void l2_read_kernel(const float4* __restrict__ data, size_t n4, int passes,
                               float* __restrict__ out) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float acc0 = 0, acc1 = 0, acc2 = 0, acc3 = 0;
  for (int p = 0; p < passes; ++p) {
    size_t i = tid;
    // Four independent loads in flight per thread; __ldcg caches in L2 only, so
    // the L1 of each SM never serves a repeated pass.
    for (; i + 3 * stride < n4; i += 4 * stride) {
      const float4 v0 = __ldcg(data + i);
      const float4 v1 = __ldcg(data + i + stride);
      const float4 v2 = __ldcg(data + i + 2 * stride);
      const float4 v3 = __ldcg(data + i + 3 * stride);
      acc0 += (v0.x + v0.y) + (v0.z + v0.w);
      acc1 += (v1.x + v1.y) + (v1.z + v1.w);
      acc2 += (v2.x + v2.y) + (v2.z + v2.w);
      acc3 += (v3.x + v3.y) + (v3.z + v3.w);
    }
    for (; i < n4; i += stride) {
      const float4 v = __ldcg(data + i);
      acc0 += (v.x + v.y) + (v.z + v.w);
    }
  }
  out[tid] = (acc0 + acc1) + (acc2 + acc3);
}

unsigned grid_for(size_t n4, const cudaDeviceProp& prop, int blocks_per_sm) {
  const size_t want = (n4 + 255) / 256;
  const size_t cap =
      static_cast<size_t>(prop.multiProcessorCount) * static_cast<size_t>(blocks_per_sm);
  return static_cast<unsigned>(std::max<size_t>(1, std::min(want, cap)));
}

}  // namespace

void measure_hbm(Context& ctx) {
  const size_t mib = size_t{1} << 20;
  // Largest array: 4 GiB (1 GiB quick), never more than a sixth of the memory for three of them.
  size_t max_bytes = ctx.options.quick ? 1024 * mib : 4096 * mib;
  while (max_bytes > mib && 3 * max_bytes > static_cast<size_t>(ctx.prop.totalGlobalMem) / 2)
    max_bytes /= 2;
  const size_t pool_floats = max_bytes / sizeof(float);
  DeviceBuffer<float> a(pool_floats), b(pool_floats), c(pool_floats);
  fill_random(a.get(), pool_floats, 101, 0.5f, 1.5f, ctx.stream);
  fill_random(b.get(), pool_floats, 102, 0.5f, 1.5f, ctx.stream);
  fill_random(c.get(), pool_floats, 103, 0.5f, 1.5f, ctx.stream);
  DeviceBuffer<unsigned long long> bad(1);

  const char* names[] = {"hbm.copy", "hbm.scale", "hbm.triad"};
  const char* desc[] = {
      "b[i] = a[i], fp32, 16-byte vector accesses; work = bytes read + written",
      "b[i] = q * a[i], fp32, 16-byte vector accesses; work = bytes read + written",
      "a[i] = b[i] + q * c[i], fp32, 16-byte vector accesses; work = bytes read + written"};
  for (int op = 0; op < 3; ++op) {
    Series s = rotating_bandwidth_series(names[op], desc[op]);
    const int arrays = op == 2 ? 3 : 2;
    for (size_t bytes = mib; bytes <= max_bytes; bytes *= 2) {
      const size_t n = bytes / sizeof(float);
      const size_t n4 = n / 4;
      // Rotate over sets so that consecutive kernels touch >= 4x the L2.
      const double footprint = 4.0 * ctx.l2_bytes();
      const size_t sets = std::min<size_t>(
          max_bytes / bytes,
          std::max<size_t>(1, static_cast<size_t>(std::ceil(footprint / (arrays * bytes)))));
      const int per_repeat = static_cast<int>(sets);
      const unsigned grid = grid_for(n4, ctx.prop, 16);
      ctx.progress(std::string(names[op]) + " " + format_bytes(static_cast<double>(bytes)));
      auto enqueue = [&](int) {
        for (size_t r = 0; r < sets; ++r) {
          const size_t off = r * n;
          const auto* a4 = reinterpret_cast<const float4*>(a.get() + off);
          const auto* b4 = reinterpret_cast<const float4*>(b.get() + off);
          const auto* c4 = reinterpret_cast<const float4*>(c.get() + off);
          if (op == 0) {
            copy_kernel<<<grid, 256, 0, ctx.stream>>>(a4, reinterpret_cast<float4*>(b.get() + off),
                                                      n4);
          } else if (op == 1) {
            scale_kernel<<<grid, 256, 0, ctx.stream>>>(a4, reinterpret_cast<float4*>(b.get() + off),
                                                       kScale, n4);
          } else {
            triad_kernel<<<grid, 256, 0, ctx.stream>>>(
                b4, c4, reinterpret_cast<float4*>(a.get() + off), kScale, n4);
          }
          PODSIM_CUDA_CHECK_LAUNCH();
        }
      };
      Point p;
      p.params = {{"bytes", static_cast<double>(bytes)}, {"sets", static_cast<double>(sets)}};
      p.work = static_cast<double>(arrays) * static_cast<double>(bytes);
      p.times_s = per_operation(time_repeats(ctx.stream, 1, ctx.repeats(), enqueue), per_repeat);
      // Check every element of every set just written.
      PODSIM_CUDA_CHECK(cudaMemsetAsync(bad.get(), 0, sizeof(unsigned long long), ctx.stream));
      const size_t total = sets * n;
      const StreamOp sop = static_cast<StreamOp>(op);
      const float* out = op == 2 ? a.get() : b.get();
      const float* in1 = op == 2 ? b.get() : a.get();
      check_stream_kernel<<<grid_for(total / 4, ctx.prop, 16), 256, 0, ctx.stream>>>(
          sop, out, in1, c.get(), kScale, total, bad.get());
      PODSIM_CUDA_CHECK_LAUNCH();
      PODSIM_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
      p.check_passed = bad.read(0) == 0;
      s.points.push_back(std::move(p));
    }
    ctx.raw.series.push_back(std::move(s));
  }
}

void measure_l2(Context& ctx) {
  const double mib = 1024.0 * 1024.0;
  std::vector<double> sets_mib = ctx.options.quick
                                     ? std::vector<double>{1, 4, 16, 32, 48, 64, 96, 128, 256, 512}
                                     : std::vector<double>{1,  2,  4,  8,  16, 24,  32,  40,  48,
                                                           56, 64, 72, 80, 96, 128, 192, 256, 512};
  // Reach at least 8x the L2 whatever the GPU (B200: 126 MiB).
  while (sets_mib.back() * mib < 8 * ctx.l2_bytes()) sets_mib.push_back(sets_mib.back() * 2);
  const size_t max_floats = static_cast<size_t>(sets_mib.back() * mib) / sizeof(float);
  DeviceBuffer<float> data(max_floats);
  fill_random(data.get(), max_floats, 201, 0.0f, 1.0f, ctx.stream);
  const unsigned grid = static_cast<unsigned>(ctx.prop.multiProcessorCount *
                                              (ctx.prop.maxThreadsPerMultiProcessor / 256));
  DeviceBuffer<float> out(static_cast<size_t>(grid) * 256);

  Series s;
  s.name = "l2";
  s.work_unit = "bytes";
  s.description =
      "read-only sweep: a working set read repeatedly with ld.global.cg (L2, not L1); work = bytes "
      "read";
  s.attributes = {{"fit", "working_set"}};
  const double bytes_per_repeat = ctx.options.quick ? 2e9 : 4e9;
  // The sets are growing prefixes of one buffer: extend one host sum as they grow.
  double prefix_sum = 0;
  size_t prefix_n = 0;
  for (double ws_mib : sets_mib) {
    const size_t n = static_cast<size_t>(ws_mib * mib) / sizeof(float);
    const size_t n4 = n / 4;
    const int passes =
        std::max(1, static_cast<int>(std::lround(bytes_per_repeat / (ws_mib * mib))));
    ctx.progress("l2 working set " + format_bytes(ws_mib * mib));
    auto enqueue = [&](int) {
      l2_read_kernel<<<grid, 256, 0, ctx.stream>>>(reinterpret_cast<const float4*>(data.get()), n4,
                                                   passes, out.get());
      PODSIM_CUDA_CHECK_LAUNCH();
    };
    Point p;
    p.params = {{"working_set_bytes", ws_mib * mib}, {"passes", static_cast<double>(passes)}};
    p.work = static_cast<double>(passes) * static_cast<double>(n) * sizeof(float);
    p.times_s = time_repeats(ctx.stream, ctx.warmup(), ctx.repeats(), enqueue);
    // The per-thread sums must add up to passes x the sum of the set.
    const std::vector<float> partial = out.read_all();
    double got = 0;
    for (float v : partial) got += v;
    for (; prefix_n < n; ++prefix_n) prefix_sum += random_value<float>(201, prefix_n, 0.0f, 1.0f);
    const double want = prefix_sum * passes;
    p.check_passed = std::abs(got - want) <= 1e-3 * want;
    s.points.push_back(std::move(p));
  }
  ctx.raw.series.push_back(std::move(s));
}

}  // namespace podsim::calibration::gpu
