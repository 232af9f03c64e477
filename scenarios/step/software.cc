#include "scenarios/step/software.h"

namespace podsim::scenarios {

strategies::SoftwarePolicy software_policy(const ScenarioSpec& spec) {
  const SoftwareSpec& s = spec.software;
  strategies::SoftwarePolicy p;
  p.elementwise = s.elementwise;
  p.loss = s.loss;
  p.selective = s.selective;
  p.fused_softmax_max_keys = s.fused_softmax_max_keys;
  p.p2p = s.p2p;
  p.data_parallel = s.data_parallel;
  p.fp8 = s.fp8;
  p.tp_overlap = s.tp_overlap;
  p.optimizer = s.optimizer;
  return p;
}

strategies::Job job_of(const ScenarioSpec& spec, const strategies::ParallelPlan& plan) {
  return strategies::Job{spec.model, spec.training, plan, spec.options, software_policy(spec)};
}

hwmodels::KernelImplementation kernel_implementation(const ScenarioSpec& spec) {
  const SoftwareSpec& s = spec.software;
  hwmodels::KernelImplementation k;
  k.attention = s.attention;
  k.host = s.host;
  switch (s.tp_overlap) {
    case strategies::TpOverlap::kNone:
      k.tp_overlap = hwmodels::TpOverlapKernels::kNccl;
      break;
    case strategies::TpOverlap::kTeUserbuffers:
      k.tp_overlap = hwmodels::TpOverlapKernels::kTeUserbuffers;
      break;
    case strategies::TpOverlap::kAsyncTp:
      k.tp_overlap = hwmodels::TpOverlapKernels::kCopyEngine;
      break;
  }
  return k;
}

}  // namespace podsim::scenarios
