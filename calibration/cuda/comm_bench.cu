// Two or more GPUs: peer-to-peer copies (GPU 0 <-> GPU 1) and NCCL collectives
// across all visible GPUs, one thread driving every GPU inside
// ncclGroupStart/End. Sizes and busbw follow nccl-tests' definitions.

#include <algorithm>
#include <cmath>
#include <memory>

#include "calibration/cuda/common.cuh"
#include "calibration/cuda/multi_gpu.cuh"

namespace podsim::calibration::gpu {
namespace {

void enable_peer(int from, int to) {
  DeviceScope scope(from);
  const cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
  if (e == cudaErrorPeerAccessAlreadyEnabled) {
    cudaGetLastError();  // clear the non-sticky error
    return;
  }
  PODSIM_CUDA_CHECK(e);
}

// Bytes equal at a few sampled offsets (the source holds random floats).
bool same_samples(const void* a, const void* b, size_t bytes) {
  for (size_t i = 0; i < 16; ++i) {
    const size_t off = (mix64(951, i) % (bytes / 4)) * 4;
    float x = 0, y = 0;
    PODSIM_CUDA_CHECK(
        cudaMemcpy(&x, static_cast<const unsigned char*>(a) + off, 4, cudaMemcpyDefault));
    PODSIM_CUDA_CHECK(
        cudaMemcpy(&y, static_cast<const unsigned char*>(b) + off, 4, cudaMemcpyDefault));
    if (x != y) return false;
  }
  return true;
}

void measure_p2p(Context& ctx) {
  int can01 = 0, can10 = 0;
  PODSIM_CUDA_CHECK(cudaDeviceCanAccessPeer(&can01, 0, 1));
  PODSIM_CUDA_CHECK(cudaDeviceCanAccessPeer(&can10, 1, 0));
  if (!can01 || !can10) {
    ctx.raw.skipped.push_back(
        "p2p: GPU 0 and GPU 1 cannot access each other (no NVLink/PCIe peer path); skipped");
    return;
  }
  enable_peer(0, 1);
  enable_peer(1, 0);
  const size_t max_bytes = ctx.options.quick ? (size_t{256} << 20) : (size_t{1} << 30);
  DeviceScope on0(0);
  DeviceBuffer<float> a0(max_bytes / 4), b0(max_bytes / 4);
  Stream s0;
  fill_random(a0.get(), a0.size(), 961, -1.0f, 1.0f, s0.get());
  PODSIM_CUDA_CHECK(cudaStreamSynchronize(s0.get()));
  PODSIM_CUDA_CHECK(cudaSetDevice(1));
  DeviceBuffer<float> a1(max_bytes / 4), b1(max_bytes / 4);
  Stream s1;
  fill_random(a1.get(), a1.size(), 962, -1.0f, 1.0f, s1.get());
  PODSIM_CUDA_CHECK(cudaStreamSynchronize(s1.get()));
  Event done1;
  PODSIM_CUDA_CHECK(cudaSetDevice(0));
  Event go;

  for (const bool bidir : {false, true}) {
    Series s;
    s.name = bidir ? "p2p.bidir" : "p2p.unidir";
    s.work_unit = "bytes";
    s.description =
        bidir ? "cudaMemcpyPeerAsync GPU0->GPU1 and GPU1->GPU0 at once; work = bytes both ways"
              : "cudaMemcpyPeerAsync GPU0->GPU1; work = bytes copied";
    s.attributes = {{"fit", "alpha_beta"}};
    for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
      ctx.progress(s.name + " " + format_bytes(static_cast<double>(bytes)));
      Point p;
      p.params = {{"bytes", static_cast<double>(bytes)}};
      p.work = static_cast<double>(bytes) * (bidir ? 2 : 1);
      p.times_s = time_repeats(s0.get(), ctx.warmup(), ctx.repeats(), [&](int) {
        if (bidir) {
          // s1 starts with s0 and s0 waits for s1: the events around s0 span both copies.
          PODSIM_CUDA_CHECK(cudaEventRecord(go.get(), s0.get()));
          PODSIM_CUDA_CHECK(cudaStreamWaitEvent(s1.get(), go.get(), 0));
          PODSIM_CUDA_CHECK(cudaMemcpyPeerAsync(b0.get(), 0, a1.get(), 1, bytes, s1.get()));
          PODSIM_CUDA_CHECK(cudaEventRecord(done1.get(), s1.get()));
        }
        PODSIM_CUDA_CHECK(cudaMemcpyPeerAsync(b1.get(), 1, a0.get(), 0, bytes, s0.get()));
        if (bidir) PODSIM_CUDA_CHECK(cudaStreamWaitEvent(s0.get(), done1.get(), 0));
      });
      PODSIM_CUDA_CHECK(cudaDeviceSynchronize());
      p.check_passed = same_samples(a0.get(), b1.get(), bytes) &&
                       (!bidir || same_samples(a1.get(), b0.get(), bytes));
      s.points.push_back(std::move(p));
    }
    ctx.raw.series.push_back(std::move(s));
  }
}

#if PODSIM_HAVE_NCCL

void measure_nccl(Context& ctx, int n) {
  int version = 0;
  PODSIM_NCCL_CHECK(ncclGetVersion(&version));
  const size_t max_bytes = ctx.options.quick ? (size_t{256} << 20) : (size_t{1} << 30);
  CollectiveRunner runner(n, max_bytes, ncclFloat);
  const char* names[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
  const double factors[] = {2.0 * (n - 1) / n, static_cast<double>(n - 1) / n,
                            static_cast<double>(n - 1) / n, static_cast<double>(n - 1) / n};
  for (int ci = 0; ci < 4; ++ci) {
    const Coll coll = static_cast<Coll>(ci);
    Series s;
    s.name = "nccl." + std::string(names[ci]) + ".n" + std::to_string(n);
    s.work_unit = "bytes";
    s.description = std::string("NCCL ") + names[ci] + " over " + std::to_string(n) +
                    " GPUs, fp32; bytes = nccl-tests size (the full buffer); work = bytes, "
                    "so beta_per_s is the algbw asymptote and busbw = algbw * busbw_factor";
    s.attributes = {{"fit", "alpha_beta"},
                    {"busbw_factor", std::to_string(factors[ci])},
                    {"nccl_version", std::to_string(version)}};
    for (size_t bytes = size_t{4} << 10; bytes <= max_bytes; bytes *= 4) {
      if (bytes / 4 / static_cast<size_t>(n) == 0) continue;
      ctx.progress(s.name + " " + format_bytes(static_cast<double>(bytes)));
      Point p;
      p.params = {{"bytes", static_cast<double>(bytes)}, {"ranks", n}};
      p.work = static_cast<double>(bytes);
      p.times_s = runner.time(coll, bytes, ctx.warmup(), ctx.repeats());
      p.check_passed = runner.check(coll, bytes);
      s.points.push_back(std::move(p));
    }
    ctx.raw.series.push_back(std::move(s));
  }
}

#endif  // PODSIM_HAVE_NCCL

}  // namespace

void measure_multi_gpu(Context& ctx) {
  int n = 0;
  PODSIM_CUDA_CHECK(cudaGetDeviceCount(&n));
  if (n < 2) {
    ctx.raw.skipped.push_back(
        "multi-gpu: skipped (p2p and NCCL need 2 or more GPUs; this machine has " +
        std::to_string(n) + ")");
    return;
  }
  measure_p2p(ctx);
#if PODSIM_HAVE_NCCL
  measure_nccl(ctx, n);
#else
  ctx.raw.skipped.push_back("nccl: skipped (podsim was built without NCCL)");
#endif
}

}  // namespace podsim::calibration::gpu
