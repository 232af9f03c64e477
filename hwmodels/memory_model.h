#pragma once

#include <string>
#include <vector>

#include "hwmodels/gpu_spec.h"

namespace podsim::hwmodels {

/// One slice of GPU memory that is gone before the model gets any.
struct MemoryReservation {
  std::string name;  ///< "cuda_context", "nccl_buffers", "fragmentation", ...
  double bytes = 0;
  std::string basis;  ///< where the number comes from
};

/// Inputs of the reservation estimate, plain data with defaults and sources.
struct MemoryReservationParams {
  /// CUDA context with lazy module loading (CUDA >= 11.7): ~300-400 MB seen
  /// by PyTorch users (pytorch/pytorch#107667, #109888, NVIDIA's ptrblck).
  double cuda_context_bytes = 400e6;
  /// cuBLAS workspaces: PyTorch's default CUBLAS_WORKSPACE_CONFIG on Hopper
  /// is 8 x 4 MiB per handle; one handle per stream, two streams assumed.
  double cublas_workspace_bytes = 2 * 8 * 4.0 * 1024 * 1024;
  /// NCCL: communicators x channels x peers x buffer. NCCL_BUFFSIZE defaults
  /// to 4 MiB (Simple protocol buffer, NCCL docs); ring channels talk to 2
  /// peers. 16 channels and 4 communicators (TP, PP, DP, one spare) are
  /// assumptions typical of 3D-parallel training, not measurements.
  int nccl_communicators = 4;
  int nccl_channels = 16;
  int nccl_peers_per_channel = 2;
  double nccl_buffer_bytes = 4.0 * 1024 * 1024;
  /// Allocator fragmentation as a fraction of what is left: an assumption
  /// (no measurement in hardware.md); PyTorch's caching allocator keeps
  /// reserved-but-unallocated blocks of a few percent in long training runs.
  double fragmentation_fraction = 0.05;
};

/// Capacity per GPU and what is reserved before the model gets any.
struct MemoryModel {
  double capacity_bytes = 0;  ///< GpuSpec::hbm_capacity_bytes
  std::vector<MemoryReservation> reserved;

  double reserved_bytes() const;
  /// capacity - reserved (never negative).
  double usable_bytes() const;
};

/// The reservation estimate for `gpu` (terms in the order: CUDA context,
/// cuBLAS workspace, NCCL buffers, fragmentation of the remainder).
MemoryModel memory_model(const GpuSpec& gpu,
                         const MemoryReservationParams& params = MemoryReservationParams{});

}  // namespace podsim::hwmodels
