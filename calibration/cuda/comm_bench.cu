// Two or more GPUs: peer-to-peer copies (GPU 0 <-> GPU 1) and NCCL collectives
// across all visible GPUs, one thread driving every GPU inside
// ncclGroupStart/End. Sizes and busbw follow nccl-tests' definitions.

#include <algorithm>
#include <cmath>
#include <memory>

#include "calibration/cuda/common.cuh"

#if PODSIM_HAVE_NCCL
#include <nccl.h>
#endif

namespace podsim::calibration::gpu {
namespace {

// Makes `device` current for a scope and restores the previous one.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    PODSIM_CUDA_CHECK(cudaGetDevice(&previous_));
    PODSIM_CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceScope() { cudaSetDevice(previous_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

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

#define PODSIM_NCCL_CHECK(call)                                                             \
  do {                                                                                      \
    const ncclResult_t podsim_nr_ = (call);                                                 \
    if (podsim_nr_ != ncclSuccess) {                                                        \
      throw CudaError(std::string(#call) + " failed at " + __FILE__ + ":" +                 \
                          std::to_string(__LINE__) + ": " + ncclGetErrorString(podsim_nr_), \
                      false);                                                               \
    }                                                                                       \
  } while (0)

class Comms {
 public:
  explicit Comms(int n) : comms_(static_cast<size_t>(n), nullptr) {
    std::vector<int> devs(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) devs[static_cast<size_t>(i)] = i;
    PODSIM_NCCL_CHECK(ncclCommInitAll(comms_.data(), n, devs.data()));
  }
  ~Comms() {
    for (ncclComm_t c : comms_) {
      if (c != nullptr) ncclCommDestroy(c);
    }
  }
  Comms(const Comms&) = delete;
  Comms& operator=(const Comms&) = delete;
  ncclComm_t operator[](int i) const { return comms_[static_cast<size_t>(i)]; }

 private:
  std::vector<ncclComm_t> comms_;
};

enum class Coll : int { kAllReduce = 0, kAllGather = 1, kReduceScatter = 2, kAllToAll = 3 };

struct Rank {
  DeviceBuffer<float> send, recv;
  std::unique_ptr<Stream> stream;
  std::vector<Event> start, stop;
};

// Value at index i of rank r's send buffer.
float send_value(int r, size_t i) {
  return random_value<float>(971 + static_cast<uint64_t>(r), i, -1.0f, 1.0f);
}

bool check_collective(Coll coll, int n, const std::vector<Rank>& ranks, size_t total_floats) {
  const size_t chunk = total_floats / static_cast<size_t>(n);
  for (uint64_t sidx = 0; sidx < 8; ++sidx) {
    const int r = static_cast<int>(mix64(981, sidx) % static_cast<uint64_t>(n));
    double got = 0, want = 0;
    if (coll == Coll::kAllReduce) {
      const size_t i = mix64(982, sidx) % total_floats;
      for (int q = 0; q < n; ++q) want += send_value(q, i);
      got = ranks[static_cast<size_t>(r)].recv.read(i);
    } else if (coll == Coll::kAllGather) {
      const size_t i = mix64(982, sidx) % total_floats;  // recv[q * chunk + j] = send_q[j]
      want = send_value(static_cast<int>(i / chunk), i % chunk);
      got = ranks[static_cast<size_t>(r)].recv.read(i);
    } else if (coll == Coll::kReduceScatter) {
      const size_t j = mix64(982, sidx) % chunk;  // recv_r[j] = sum_q send_q[r * chunk + j]
      for (int q = 0; q < n; ++q) want += send_value(q, static_cast<size_t>(r) * chunk + j);
      got = ranks[static_cast<size_t>(r)].recv.read(j);
    } else {
      const size_t i =
          mix64(982, sidx) % total_floats;  // recv_r[q * chunk + j] = send_q[r * chunk + j]
      want = send_value(static_cast<int>(i / chunk), static_cast<size_t>(r) * chunk + i % chunk);
      got = ranks[static_cast<size_t>(r)].recv.read(i);
    }
    if (!(std::abs(got - want) <= 1e-5 * n + 1e-6)) return false;
  }
  return true;
}

void measure_nccl(Context& ctx, int n) {
  int version = 0;
  PODSIM_NCCL_CHECK(ncclGetVersion(&version));
  Comms comms(n);
  const size_t max_bytes = ctx.options.quick ? (size_t{256} << 20) : (size_t{1} << 30);
  const char* names[] = {"all_reduce", "all_gather", "reduce_scatter", "all_to_all"};
  const double factors[] = {2.0 * (n - 1) / n, static_cast<double>(n - 1) / n,
                            static_cast<double>(n - 1) / n, static_cast<double>(n - 1) / n};
  std::vector<Rank> ranks(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    DeviceScope scope(r);
    Rank& rk = ranks[static_cast<size_t>(r)];
    rk.send = DeviceBuffer<float>(max_bytes / 4);
    rk.recv = DeviceBuffer<float>(max_bytes / 4);
    rk.stream = std::make_unique<Stream>();
    for (int i = 0; i < ctx.repeats(); ++i) {
      rk.start.emplace_back();
      rk.stop.emplace_back();
    }
    fill_random(rk.send.get(), rk.send.size(), 971 + static_cast<uint64_t>(r), -1.0f, 1.0f,
                rk.stream->get());
  }
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
      const size_t total = bytes / 4;  // floats in the full buffer
      const size_t chunk = total / static_cast<size_t>(n);
      if (chunk == 0) continue;
      ctx.progress(s.name + " " + format_bytes(static_cast<double>(bytes)));
      const auto issue = [&]() {
        PODSIM_NCCL_CHECK(ncclGroupStart());
        for (int r = 0; r < n; ++r) {
          const Rank& rk = ranks[static_cast<size_t>(r)];
          cudaStream_t st = rk.stream->get();
          switch (coll) {
            case Coll::kAllReduce:
              PODSIM_NCCL_CHECK(ncclAllReduce(rk.send.get(), rk.recv.get(), total, ncclFloat,
                                              ncclSum, comms[r], st));
              break;
            case Coll::kAllGather:
              PODSIM_NCCL_CHECK(
                  ncclAllGather(rk.send.get(), rk.recv.get(), chunk, ncclFloat, comms[r], st));
              break;
            case Coll::kReduceScatter:
              PODSIM_NCCL_CHECK(ncclReduceScatter(rk.send.get(), rk.recv.get(), chunk, ncclFloat,
                                                  ncclSum, comms[r], st));
              break;
            case Coll::kAllToAll:
              for (int q = 0; q < n; ++q) {
                PODSIM_NCCL_CHECK(ncclSend(rk.send.get() + static_cast<size_t>(q) * chunk, chunk,
                                           ncclFloat, q, comms[r], st));
                PODSIM_NCCL_CHECK(ncclRecv(rk.recv.get() + static_cast<size_t>(q) * chunk, chunk,
                                           ncclFloat, q, comms[r], st));
              }
              break;
          }
        }
        PODSIM_NCCL_CHECK(ncclGroupEnd());
      };
      for (int w = 0; w < ctx.warmup(); ++w) issue();
      for (int i = 0; i < ctx.repeats(); ++i) {
        for (int r = 0; r < n; ++r) {
          DeviceScope scope(r);
          PODSIM_CUDA_CHECK(
              cudaEventRecord(ranks[static_cast<size_t>(r)].start[static_cast<size_t>(i)].get(),
                              ranks[static_cast<size_t>(r)].stream->get()));
        }
        issue();
        for (int r = 0; r < n; ++r) {
          DeviceScope scope(r);
          PODSIM_CUDA_CHECK(
              cudaEventRecord(ranks[static_cast<size_t>(r)].stop[static_cast<size_t>(i)].get(),
                              ranks[static_cast<size_t>(r)].stream->get()));
        }
      }
      Point p;
      p.params = {{"bytes", static_cast<double>(bytes)}, {"ranks", n}};
      p.work = static_cast<double>(bytes);
      for (int i = 0; i < ctx.repeats(); ++i) {
        double t = 0;  // the collective ends when its slowest rank does
        for (int r = 0; r < n; ++r) {
          DeviceScope scope(r);
          PODSIM_CUDA_CHECK(cudaEventSynchronize(
              ranks[static_cast<size_t>(r)].stop[static_cast<size_t>(i)].get()));
          float ms = 0;
          PODSIM_CUDA_CHECK(cudaEventElapsedTime(
              &ms, ranks[static_cast<size_t>(r)].start[static_cast<size_t>(i)].get(),
              ranks[static_cast<size_t>(r)].stop[static_cast<size_t>(i)].get()));
          t = std::max(t, static_cast<double>(ms) * 1e-3);
        }
        p.times_s.push_back(t);
      }
      p.check_passed = check_collective(coll, n, ranks, chunk * static_cast<size_t>(n));
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
