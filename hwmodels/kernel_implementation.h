#pragma once

#include <cstdint>

#include "hwmodels/attention_kernels.h"

namespace podsim::hwmodels {

// The kernel-implementation face of a training framework (a `software`
// preset, scenario-format.md v1.1): which attention kernel it calls, what its
// host spends issuing kernels, and how its overlapped tensor-parallel
// collectives occupy the GPU. What the framework runs and when is
// strategies::SoftwarePolicy; scenarios/step composes both from the preset.

/// Kernels replayed from CUDA graphs instead of issued one by one.
enum class CudaGraphs : uint8_t { kNone, kPerLayer, kFullIteration };

/// What the host spends issuing work, seconds. The GPU waits when its
/// kernels are shorter than their issue.
struct HostCost {
  double dispatch_forward_s = 5e-6;   ///< per kernel issued by forward / optimizer code
  double dispatch_backward_s = 4e-6;  ///< per kernel issued by the autograd engine
  double compiled_region_call_s = 0;  ///< per call into a compiled region (guards, cache lookup)
  double unit_hook_s = 0;             ///< per sharded unit per pass: the framework's hooks
  double sync_s = 20e-6;              ///< one host synchronisation (drains the run-ahead)
  /// Per rank of the group, per collective called with a list of per-rank
  /// tensors: building that rank's view (the framework's loop) and the copy
  /// between it and NCCL's flat buffer.
  double rank_list_entry_s = 0;
  double dtensor_dispatch_s = 0;  ///< per tensor per DTensor-dispatched op
  CudaGraphs graphs = CudaGraphs::kNone;
  /// One cudaGraphLaunch: 41 us for a graph of 72 us of kernels
  /// (pytorch#150488's breakdown, kernels-host-power.md 3.1).
  double graph_launch_s = 41e-6;
};

/// The kernel-implementation face of a software preset.
struct KernelImplementation {
  AttentionKernel attention = AttentionKernel::kTransformerEngine;
  HostCost host;
};

}  // namespace podsim::hwmodels
