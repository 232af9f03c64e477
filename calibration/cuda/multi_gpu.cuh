#pragma once

// Pieces for work across the GPUs of one machine, shared by the multi-GPU
// calibration benchmarks and the executor: a device scope, and (with NCCL)
// communicators and a timed, checked collective over devices 0..n-1 driven
// by one thread inside ncclGroupStart/End. Sizes follow nccl-tests.

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "calibration/cuda/common.cuh"

#if PODSIM_HAVE_NCCL
#include <nccl.h>
#endif

namespace podsim::calibration::gpu {

/// Makes `device` current for a scope and restores the previous one.
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

/// The collectives the benchmarks and the executor time.
enum class Coll : int { kAllReduce = 0, kAllGather = 1, kReduceScatter = 2, kAllToAll = 3 };

#if PODSIM_HAVE_NCCL

#define PODSIM_NCCL_CHECK(call)                                                                   \
  do {                                                                                            \
    const ncclResult_t podsim_nr_ = (call);                                                       \
    if (podsim_nr_ != ncclSuccess) {                                                              \
      throw ::podsim::calibration::gpu::CudaError(std::string(#call) + " failed at " + __FILE__ + \
                                                      ":" + std::to_string(__LINE__) + ": " +     \
                                                      ncclGetErrorString(podsim_nr_),             \
                                                  false);                                         \
    }                                                                                             \
  } while (0)

/// One communicator per device 0..n-1 (ncclCommInitAll).
class Comms {
 public:
  explicit Comms(int n);
  ~Comms();
  Comms(const Comms&) = delete;
  Comms& operator=(const Comms&) = delete;
  ncclComm_t operator[](int i) const { return comms_[static_cast<size_t>(i)]; }
  int size() const { return static_cast<int>(comms_.size()); }

 private:
  std::vector<ncclComm_t> comms_;
};

/// Send and receive buffers of `max_bytes` on each of devices 0..n-1, the
/// send buffers filled with random values of `type` (ncclFloat or
/// ncclBfloat16; rank r seeded 971 + r), and a stream per device.
class CollectiveRunner {
 public:
  CollectiveRunner(int n, size_t max_bytes, ncclDataType_t type);
  ~CollectiveRunner();
  CollectiveRunner(const CollectiveRunner&) = delete;
  CollectiveRunner& operator=(const CollectiveRunner&) = delete;

  int ranks() const { return comms_.size(); }
  /// Seconds of `repeats` calls of `coll` of `bytes` (the nccl-tests size)
  /// after `warmup`: each call's time is the longest over ranks between CUDA
  /// events around it on that rank's stream.
  std::vector<double> time(Coll coll, size_t bytes, int warmup, int repeats);
  /// The last call's output matches a host computation at 8 sampled places.
  bool check(Coll coll, size_t bytes) const;

 private:
  struct Rank;
  void issue(Coll coll, size_t bytes);
  double send_value(int rank, size_t index) const;
  double recv_value(int rank, size_t index) const;

  Comms comms_;
  ncclDataType_t type_;
  size_t element_bytes_;
  std::vector<std::unique_ptr<Rank>> ranks_;
};

#endif  // PODSIM_HAVE_NCCL

}  // namespace podsim::calibration::gpu
