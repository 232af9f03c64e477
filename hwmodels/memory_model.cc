#include "hwmodels/memory_model.h"

#include <algorithm>

namespace podsim::hwmodels {

double MemoryModel::outside_bytes() const {
  double total = 0;
  for (const MemoryReservation& r : outside) total += r.bytes;
  return total;
}

double MemoryModel::runtime_bytes() const {
  double total = outside_bytes();
  for (const MemoryReservation& r : workspaces) total += r.bytes;
  return total;
}

double MemoryModel::allocator_limit_bytes() const {
  return std::max(0.0, capacity_bytes - outside_bytes());
}

bool runs_cuda(const ClusterSpec& cluster) {
  return cluster.scale_up.topology != ScaleUpTopology::kTorus;
}

MemoryModel memory_model(const GpuSpec& gpu, const MemoryReservationParams& p) {
  MemoryModel m;
  m.capacity_bytes = gpu.hbm_capacity_bytes;
  if (!p.cuda_runtime) return m;
  m.outside.push_back({"cuda_context", p.cuda_context_bytes,
                       "CUDA context with lazy loading, ~300-400 MB (pytorch#86509, #109888)"});
  double nccl = 0;
  for (const NcclCommunicator& c : p.nccl_communicators) {
    nccl += static_cast<double>(c.channels) * c.connections * p.nccl_connection_bytes;
  }
  m.outside.push_back({"nccl_buffers", nccl,
                       "per communicator: channels x incoming connections x (Simple 4 MiB + LL128 "
                       "4.69 MiB + LL 0.5 MiB), nccl computeBuffSizes"});
  for (int h = 0; h < p.cublas_handles; ++h) {
    m.workspaces.push_back({"cublas_workspace", p.cublas_workspace_bytes,
                            "CUBLAS_WORKSPACE_CONFIG :4096:8 per handle (forward and autograd "
                            "threads), from PyTorch's caching allocator"});
  }
  return m;
}

MemoryModel memory_model(const ClusterSpec& cluster) {
  MemoryReservationParams params;
  params.cuda_runtime = runs_cuda(cluster);
  return memory_model(cluster.gpu, params);
}

}  // namespace podsim::hwmodels
