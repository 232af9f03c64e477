// SM FP32 throughput (FMA chains) and the SM clock under load (clock64 cycles
// of one SM over the kernel's CUDA-event time).

#include <algorithm>
#include <cmath>

#include "calibration/cuda/common.cuh"

namespace podsim::calibration::gpu {
namespace {

constexpr int kChains = 8;
constexpr float kMul = 0.99951171875f;  // 1 - 2^-11: the chains converge to kAdd / 2^-11
constexpr float kAdd = 0.00048828125f;  // 2^-11: so values stay near 1, never 0, inf or denormal

__global__ void fma_kernel(int iters, float mul, float add, float* __restrict__ out,
                           long long* __restrict__ cycles) {
  const size_t tid = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  float x[kChains];
#pragma unroll
  for (int j = 0; j < kChains; ++j) x[j] = uniform(301, tid * kChains + j, 0.5f, 1.5f);
  const long long t0 = clock64();
#pragma unroll 4
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int j = 0; j < kChains; ++j) x[j] = fmaf(x[j], mul, add);
  }
  const long long t1 = clock64();
  out[tid] = ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]));
  if (tid == 0) cycles[0] = t1 - t0;
}

// The same arithmetic on the host (std::fma is the IEEE fused multiply-add, as fmaf is).
float host_fma_result(size_t tid, int iters) {
  float x[kChains];
  for (int j = 0; j < kChains; ++j) x[j] = uniform(301, tid * kChains + j, 0.5f, 1.5f);
  for (int it = 0; it < iters; ++it) {
    for (int j = 0; j < kChains; ++j) x[j] = std::fma(x[j], kMul, kAdd);
  }
  return ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]));
}

}  // namespace

void measure_clock_and_fp32(Context& ctx) {
  ctx.progress("fp32: FMA throughput and SM clock");
  const int blocks = ctx.prop.multiProcessorCount * 4;  // one resident wave (1024 threads per SM)
  const int threads = 256;
  const int iters = ctx.options.quick ? (1 << 17) : (1 << 19);
  const size_t n = static_cast<size_t>(blocks) * threads;
  DeviceBuffer<float> out(n);
  DeviceBuffer<long long> cycles(1);
  std::vector<double> clock_hz;
  std::vector<double> times;
  Event start, stop;
  for (int r = 0; r < ctx.warmup() + ctx.repeats(); ++r) {
    PODSIM_CUDA_CHECK(cudaEventRecord(start.get(), ctx.stream));
    fma_kernel<<<blocks, threads, 0, ctx.stream>>>(iters, kMul, kAdd, out.get(), cycles.get());
    PODSIM_CUDA_CHECK_LAUNCH();
    PODSIM_CUDA_CHECK(cudaEventRecord(stop.get(), ctx.stream));
    PODSIM_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float ms = 0;
    PODSIM_CUDA_CHECK(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    if (r < ctx.warmup()) continue;
    const double t = static_cast<double>(ms) * 1e-3;
    times.push_back(t);
    clock_hz.push_back(static_cast<double>(cycles.read(0)) / t);
  }
  bool ok = true;
  for (size_t tid : {size_t{0}, size_t{1}, n / 2 + 7, n - 1}) {
    const float want = host_fma_result(tid, iters);
    const float got = out.read(tid);
    ok = ok && std::abs(got - want) <= 1e-6f * std::abs(want);
  }
  Series s;
  s.name = "fp32.fma";
  s.work_unit = "flops";
  s.description = "8 independent fmaf chains per thread, one resident wave; work = 2 FLOP per FMA";
  s.attributes = {{"fit", "none"}};
  Point p;
  p.params = {{"blocks", blocks}, {"threads", threads}, {"iters", iters}};
  p.work = 2.0 * kChains * static_cast<double>(iters) * static_cast<double>(n);
  p.times_s = times;
  p.check_passed = ok;
  const double rate = p.rate_per_s();
  s.points.push_back(p);
  ctx.raw.series.push_back(std::move(s));
  if (!ok) throw std::runtime_error("FMA results differ from the host's; FP32 rate not recorded");
  ctx.raw.scalars["fp32.fma.flops_per_s"] = rate;
  // cycles of one SM over the event time slightly underestimates the clock
  // (launch and tail are in the event time); the kernel runs ~20 ms, so < 1%.
  ctx.raw.provenance.sm_clock_hz_measured = median_of(clock_hz);
}

}  // namespace podsim::calibration::gpu
