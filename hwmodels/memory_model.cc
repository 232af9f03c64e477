#include "hwmodels/memory_model.h"

#include <algorithm>

namespace podsim::hwmodels {

double MemoryModel::reserved_bytes() const {
  double total = 0;
  for (const MemoryReservation& r : reserved) total += r.bytes;
  return total;
}

double MemoryModel::usable_bytes() const {
  return std::max(0.0, capacity_bytes - reserved_bytes());
}

MemoryModel memory_model(const GpuSpec& gpu, const MemoryReservationParams& p) {
  MemoryModel m;
  m.capacity_bytes = gpu.hbm_capacity_bytes;
  m.reserved.push_back({"cuda_context", p.cuda_context_bytes,
                        "CUDA context with lazy loading, ~300-400 MB (pytorch#107667, #109888)"});
  m.reserved.push_back({"cublas_workspace", p.cublas_workspace_bytes,
                        "PyTorch default CUBLAS_WORKSPACE_CONFIG :4096:8 per stream, 2 streams"});
  const double nccl = static_cast<double>(p.nccl_communicators) * p.nccl_channels *
                      p.nccl_peers_per_channel * p.nccl_buffer_bytes;
  m.reserved.push_back(
      {"nccl_buffers", nccl, "communicators x channels x peers x NCCL_BUFFSIZE (4 MiB default)"});
  // Fragmentation applies to what the allocator manages: the rest.
  const double rest = std::max(0.0, m.capacity_bytes - m.reserved_bytes());
  m.reserved.push_back({"fragmentation", rest * p.fragmentation_fraction,
                        "assumed fraction of the allocator's memory lost to fragmentation"});
  return m;
}

}  // namespace podsim::hwmodels
