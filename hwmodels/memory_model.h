#pragma once

#include <string>
#include <vector>

#include "hwmodels/cluster_spec.h"
#include "hwmodels/gpu_spec.h"

namespace podsim::hwmodels {

/// One slice of GPU memory the model's tensors do not get.
struct MemoryReservation {
  std::string name;  ///< "cuda_context", "nccl_buffers", "cublas_workspace"
  double bytes = 0;
  std::string basis;  ///< where the number comes from
};

/// One NCCL communicator a rank belongs to.
struct NcclCommunicator {
  int channels = 0;     ///< rings (collectives) or channels per peer (send/recv)
  int connections = 1;  ///< peers a channel receives from: 1 on a ring, each peer for send/recv
};

/// Inputs of the reservation estimate, plain data with defaults and sources.
struct MemoryReservationParams {
  /// CUDA context with lazy module loading (CUDA >= 11.7, PyTorch's default
  /// since 1.13): ~300-400 MB seen by PyTorch users (pytorch/pytorch#86509:
  /// 287 MB lazy against 667 MB eager; #109888, NVIDIA's ptrblck: "around
  /// 400MB"). Outside the caching allocator.
  double cuda_context_bytes = 400e6;
  /// cuBLAS workspace per handle: PyTorch's default CUBLAS_WORKSPACE_CONFIG
  /// on Hopper and later, :4096:8 = 8 x 4 MiB. PyTorch keeps one handle per
  /// thread and stream and takes the workspace from its caching allocator;
  /// forward (the Python thread) and backward (autograd's device thread)
  /// each have one.
  double cublas_workspace_bytes = 8 * 4.0 * 1024 * 1024;
  int cublas_handles = 2;
  /// NCCL buffers, cudaMalloc'd by NCCL outside the allocator: per channel
  /// and incoming connection one buffer per protocol (nccl src/init.cc
  /// computeBuffSizes): Simple NCCL_BUFFSIZE 4 MiB, LL128 120 x 640 x 8
  /// steps x 8 B = 4.69 MiB, LL 8 x 512 x 8 steps x 16 B = 0.5 MiB.
  double nccl_connection_bytes = (4.0 + 4.6875 + 0.5) * 1024 * 1024;
  std::vector<NcclCommunicator> nccl_communicators;
  /// The devices run CUDA (or HIP) with NCCL (RCCL) and cuBLAS, whose
  /// context, buffers and workspaces are reserved. False on a TPU: its
  /// collectives are XLA's ICI transfers, which need no library buffers,
  /// and the TPU runtime's own reserve is already out of the chip's usable
  /// capacity (the GPU preset's hbm.capacity is what XLA's limit reports).
  bool cuda_runtime = true;
};

/// Whether `cluster`'s devices run the CUDA stack (a TPU slice, wired as a
/// torus of ICI links, runs XLA's TPU runtime instead).
bool runs_cuda(const ClusterSpec& cluster);

/// Capacity per GPU, what lives outside the framework's caching allocator
/// (never in torch.cuda.memory_reserved), and the library workspaces the
/// allocator serves before the model's tensors.
struct MemoryModel {
  double capacity_bytes = 0;  ///< GpuSpec::hbm_capacity_bytes
  std::vector<MemoryReservation> outside;
  std::vector<MemoryReservation> workspaces;

  double outside_bytes() const;
  /// Outside plus workspaces: what the runtime holds before any tensor of
  /// the model (a lower bound of what a run needs beyond its tensors).
  double runtime_bytes() const;
  /// What the allocator can get: capacity - outside (never negative).
  double allocator_limit_bytes() const;
};

/// The reservation estimate for `gpu` (outside: CUDA context, NCCL buffers;
/// workspaces: cuBLAS).
MemoryModel memory_model(const GpuSpec& gpu,
                         const MemoryReservationParams& params = MemoryReservationParams{});
/// The same for a GPU of `cluster`, with the runtime its devices run and no
/// NCCL communicator yet (what every plan on it reserves at least).
MemoryModel memory_model(const ClusterSpec& cluster);

}  // namespace podsim::hwmodels
