#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hwmodels/kernel_implementation.h"
#include "strategies/software.h"

namespace podsim::scenarios {

/// One mechanism of a software stack as read: its key, its value as text
/// and where the value comes from.
struct Mechanism {
  std::string path;    ///< "/software/attention/kernel"
  std::string value;   ///< "te", "5 us", "true"
  std::string source;  ///< the preset's source, or "set in the scenario"
};

/// The allocator statistic a framework logs as its peak memory (memory group).
enum class MemoryCounter : uint8_t { kReserved, kAllocated };
/// What holds the framework's device memory (memory group).
enum class DeviceAllocator : uint8_t {
  /// PyTorch's CUDACachingAllocator: freed blocks stay reserved in its
  /// segments, so the device holds the reserved peak.
  kCaching,
  /// XLA: buffers are assigned when the step is compiled, so the device
  /// holds the step's live peak and no cache of freed blocks.
  kXla,
};

/// The `software` section as read (scenario-format.md v1.1): the training
/// framework that runs the plan, group by group as the JSON has it. The
/// step composes it with the rest of the scenario into the strategies'
/// SoftwarePolicy and the hardware models' KernelImplementation
/// (scenarios/step/software.h).
struct SoftwareSpec {
  std::string name = "megatron-core";  ///< the preset, or "custom"
  std::string source;

  hwmodels::AttentionKernel attention = hwmodels::AttentionKernel::kTransformerEngine;
  int64_t fused_softmax_max_keys = 4096;
  strategies::CpMerge cp_merge = strategies::CpMerge::kFused16Bit;
  strategies::ElementwisePolicy elementwise;
  strategies::LossImpl loss = strategies::LossImpl::kVocabParallelFp32;
  hwmodels::HostCost host;  ///< with host.graphs, the host group's cuda_graphs
  strategies::P2pMode p2p = strategies::P2pMode::kAsync;
  strategies::PipelineGradSync pipeline_grad_sync = strategies::PipelineGradSync::kInLastBackward;
  strategies::DataParallelPolicy data_parallel;
  strategies::SelectiveRecompute selective = strategies::SelectiveRecompute::kAttentionCore;
  strategies::Fp8Policy fp8;
  strategies::TpOverlap tp_overlap = strategies::TpOverlap::kTeUserbuffers;
  strategies::TpOverlapPatterns tp_overlap_patterns;
  /// Tensor parallelism always shards the activations between its regions
  /// (the reader then runs a tp > 1 plan with sequence parallelism).
  bool tp_shards_activations = false;
  strategies::OptimizerPolicy optimizer;
  MemoryCounter memory_counter = MemoryCounter::kReserved;
  DeviceAllocator allocator = DeviceAllocator::kCaching;
  strategies::MemoryPolicy memory;
  strategies::MoePolicy moe;

  /// Every mechanism in declaration order, with its source.
  std::vector<Mechanism> mechanisms;
};

}  // namespace podsim::scenarios
