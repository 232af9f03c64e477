#include <algorithm>
#include <cmath>

#include "calibration/cuda/multi_gpu.cuh"

namespace podsim::calibration::gpu {

#if PODSIM_HAVE_NCCL

Comms::Comms(int n) : comms_(static_cast<size_t>(n), nullptr) {
  std::vector<int> devs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) devs[static_cast<size_t>(i)] = i;
  PODSIM_NCCL_CHECK(ncclCommInitAll(comms_.data(), n, devs.data()));
}

Comms::~Comms() {
  for (ncclComm_t c : comms_) {
    if (c != nullptr) ncclCommDestroy(c);
  }
}

struct CollectiveRunner::Rank {
  DeviceBuffer<unsigned char> send, recv;
  Stream stream;
};

namespace {

uint64_t rank_seed(int rank) { return 971 + static_cast<uint64_t>(rank); }

}  // namespace

CollectiveRunner::CollectiveRunner(int n, size_t max_bytes, ncclDataType_t type)
    : comms_(n), type_(type), element_bytes_(type == ncclBfloat16 ? 2 : 4) {
  if (type != ncclFloat && type != ncclBfloat16) {
    throw std::runtime_error("CollectiveRunner: only fp32 and bf16 data");
  }
  for (int r = 0; r < n; ++r) {
    DeviceScope scope(r);
    auto rank = std::make_unique<Rank>();
    rank->send = DeviceBuffer<unsigned char>(max_bytes);
    rank->recv = DeviceBuffer<unsigned char>(max_bytes);
    const size_t elements = max_bytes / element_bytes_;
    if (type == ncclBfloat16) {
      fill_random(reinterpret_cast<__nv_bfloat16*>(rank->send.get()), elements, rank_seed(r), -1.0f,
                  1.0f, rank->stream.get());
    } else {
      fill_random(reinterpret_cast<float*>(rank->send.get()), elements, rank_seed(r), -1.0f, 1.0f,
                  rank->stream.get());
    }
    PODSIM_CUDA_CHECK(cudaStreamSynchronize(rank->stream.get()));
    ranks_.push_back(std::move(rank));
  }
}

CollectiveRunner::~CollectiveRunner() {
  // Buffers and streams belong to their devices: free each with it current.
  for (size_t r = 0; r < ranks_.size(); ++r) {
    cudaSetDevice(static_cast<int>(r));
    ranks_[r].reset();
  }
  cudaSetDevice(0);
}

void CollectiveRunner::issue(Coll coll, size_t bytes) {
  const int n = ranks();
  const size_t total = bytes / element_bytes_;  // elements of the full buffer
  const size_t chunk = total / static_cast<size_t>(n);
  PODSIM_NCCL_CHECK(ncclGroupStart());
  for (int r = 0; r < n; ++r) {
    Rank& rk = *ranks_[static_cast<size_t>(r)];
    cudaStream_t st = rk.stream.get();
    unsigned char* send = rk.send.get();
    unsigned char* recv = rk.recv.get();
    switch (coll) {
      case Coll::kAllReduce:
        PODSIM_NCCL_CHECK(ncclAllReduce(send, recv, total, type_, ncclSum, comms_[r], st));
        break;
      case Coll::kAllGather:
        PODSIM_NCCL_CHECK(ncclAllGather(send, recv, chunk, type_, comms_[r], st));
        break;
      case Coll::kReduceScatter:
        PODSIM_NCCL_CHECK(ncclReduceScatter(send, recv, chunk, type_, ncclSum, comms_[r], st));
        break;
      case Coll::kAllToAll:
        for (int q = 0; q < n; ++q) {
          const size_t off = static_cast<size_t>(q) * chunk * element_bytes_;
          PODSIM_NCCL_CHECK(ncclSend(send + off, chunk, type_, q, comms_[r], st));
          PODSIM_NCCL_CHECK(ncclRecv(recv + off, chunk, type_, q, comms_[r], st));
        }
        break;
    }
  }
  PODSIM_NCCL_CHECK(ncclGroupEnd());
}

std::vector<double> CollectiveRunner::time(Coll coll, size_t bytes, int warmup, int repeats) {
  const int n = ranks();
  for (int w = 0; w < warmup; ++w) issue(coll, bytes);
  // Events belong to the device current when they are created.
  std::vector<std::vector<Event>> start(static_cast<size_t>(n)), stop(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) {
    DeviceScope scope(r);
    for (int i = 0; i < repeats; ++i) {
      start[static_cast<size_t>(r)].emplace_back();
      stop[static_cast<size_t>(r)].emplace_back();
    }
  }
  for (int i = 0; i < repeats; ++i) {
    for (int r = 0; r < n; ++r) {
      DeviceScope scope(r);
      PODSIM_CUDA_CHECK(cudaEventRecord(start[static_cast<size_t>(r)][static_cast<size_t>(i)].get(),
                                        ranks_[static_cast<size_t>(r)]->stream.get()));
    }
    issue(coll, bytes);
    for (int r = 0; r < n; ++r) {
      DeviceScope scope(r);
      PODSIM_CUDA_CHECK(cudaEventRecord(stop[static_cast<size_t>(r)][static_cast<size_t>(i)].get(),
                                        ranks_[static_cast<size_t>(r)]->stream.get()));
    }
  }
  std::vector<double> out;
  for (int i = 0; i < repeats; ++i) {
    double t = 0;  // the collective ends when its slowest rank does
    for (int r = 0; r < n; ++r) {
      DeviceScope scope(r);
      const Event& a = start[static_cast<size_t>(r)][static_cast<size_t>(i)];
      const Event& b = stop[static_cast<size_t>(r)][static_cast<size_t>(i)];
      PODSIM_CUDA_CHECK(cudaEventSynchronize(b.get()));
      float ms = 0;
      PODSIM_CUDA_CHECK(cudaEventElapsedTime(&ms, a.get(), b.get()));
      t = std::max(t, static_cast<double>(ms) * 1e-3);
    }
    out.push_back(t);
  }
  // Destroy the events with their devices current.
  for (int r = 0; r < n; ++r) {
    DeviceScope scope(r);
    start[static_cast<size_t>(r)].clear();
    stop[static_cast<size_t>(r)].clear();
  }
  return out;
}

double CollectiveRunner::send_value(int rank, size_t index) const {
  return type_ == ncclBfloat16
             ? static_cast<double>(random_value<__nv_bfloat16>(rank_seed(rank), index, -1.0f, 1.0f))
             : static_cast<double>(random_value<float>(rank_seed(rank), index, -1.0f, 1.0f));
}

double CollectiveRunner::recv_value(int rank, size_t index) const {
  const unsigned char* p = ranks_[static_cast<size_t>(rank)]->recv.get() + index * element_bytes_;
  if (type_ == ncclBfloat16) {
    __nv_bfloat16 v;
    PODSIM_CUDA_CHECK(cudaMemcpy(&v, p, sizeof v, cudaMemcpyDeviceToHost));
    return static_cast<double>(__bfloat162float(v));
  }
  float v = 0;
  PODSIM_CUDA_CHECK(cudaMemcpy(&v, p, sizeof v, cudaMemcpyDeviceToHost));
  return static_cast<double>(v);
}

bool CollectiveRunner::check(Coll coll, size_t bytes) const {
  const int n = ranks();
  const size_t total = bytes / element_bytes_;
  const size_t chunk = total / static_cast<size_t>(n);
  if (chunk == 0) return false;
  // fp32 sums of n values in [-1, 1); bf16 rounds the partial sums between
  // ring steps (at most n-1 times, each within |sum| 2^-9 <= n 2^-9).
  const double tol = type_ == ncclBfloat16 ? 1.5 * n * n / 512.0 + 1e-6 : 1e-5 * n + 1e-6;
  for (uint64_t sidx = 0; sidx < 8; ++sidx) {
    const int r = static_cast<int>(mix64(981, sidx) % static_cast<uint64_t>(n));
    double got = 0, want = 0;
    if (coll == Coll::kAllReduce) {
      const size_t i = mix64(982, sidx) % (chunk * static_cast<size_t>(n));
      for (int q = 0; q < n; ++q) want += send_value(q, i);
      got = recv_value(r, i);
    } else if (coll == Coll::kAllGather) {
      const size_t i = mix64(982, sidx) % (chunk * static_cast<size_t>(n));
      want = send_value(static_cast<int>(i / chunk), i % chunk);  // recv[q chunk + j] = send_q[j]
      got = recv_value(r, i);
    } else if (coll == Coll::kReduceScatter) {
      const size_t j = mix64(982, sidx) % chunk;  // recv_r[j] = sum_q send_q[r chunk + j]
      for (int q = 0; q < n; ++q) want += send_value(q, static_cast<size_t>(r) * chunk + j);
      got = recv_value(r, j);
    } else {
      // recv_r[q chunk + j] = send_q[r chunk + j]
      const size_t i = mix64(982, sidx) % (chunk * static_cast<size_t>(n));
      want = send_value(static_cast<int>(i / chunk), static_cast<size_t>(r) * chunk + i % chunk);
      got = recv_value(r, i);
    }
    if (!(std::abs(got - want) <= tol)) return false;
  }
  return true;
}

#endif  // PODSIM_HAVE_NCCL

}  // namespace podsim::calibration::gpu
