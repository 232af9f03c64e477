#include "scenarios/step/software.h"

#include <optional>
#include <string>

namespace podsim::scenarios {

strategies::SoftwarePolicy software_policy(const ScenarioSpec& spec) {
  const SoftwareSpec& s = spec.software;
  strategies::SoftwarePolicy p;
  p.elementwise = s.elementwise;
  p.compiled_block_calls = s.elementwise.compiled && s.host.compiled_region_call_s > 0;
  p.loss = s.loss;
  p.selective = s.selective;
  p.fused_softmax_max_keys = s.fused_softmax_max_keys;
  p.cp_merge = s.cp_merge;
  p.pipeline_grad_sync = s.pipeline_grad_sync;
  p.data_parallel = s.data_parallel;
  p.fp8 = s.fp8;
  p.tp_overlap = s.tp_overlap;
  p.tp_overlap_patterns = s.tp_overlap_patterns;
  p.optimizer = s.optimizer;
  p.memory = s.memory;
  p.moe = s.moe;
  return p;
}

strategies::Job job_of(const ScenarioSpec& spec, const strategies::ParallelPlan& plan) {
  strategies::Job job{spec.model, spec.training, plan, spec.options, software_policy(spec)};
  // Scores stay out of HBM only when the option allows it and the framework
  // has a flash kernel.
  job.options.flash_attention = spec.options.flash_attention &&
                                spec.software.attention != hwmodels::AttentionKernel::kUnfused;
  return job;
}

hwmodels::KernelImplementation kernel_implementation(const ScenarioSpec& spec) {
  const SoftwareSpec& s = spec.software;
  hwmodels::KernelImplementation k;
  k.attention = s.attention;
  // torchtitan's context parallelism runs SDPA under sdpa_kernel([FLASH,
  // EFFICIENT]) ("TODO: support cuDNN backend", torchtitan/utils.py l.209-216
  // @9dec370): the flash backend whatever the GPU.
  if (s.attention == hwmodels::AttentionKernel::kSdpa && spec.plan.cp > 1) {
    k.attention = hwmodels::AttentionKernel::kFlash2;
  }
  k.host = s.host;
  return k;
}

std::vector<Problem> software_problems(const ScenarioSpec& spec) {
  std::vector<Problem> out;
  const hwmodels::GpuArch arch = hwmodels::gpu_arch(spec.cluster.gpu);
  const hwmodels::AttentionKernel kernel =
      hwmodels::resolve(kernel_implementation(spec).attention, arch);
  if (const std::optional<std::string> why = hwmodels::unavailable(kernel, arch)) {
    out.push_back({"/software/attention/kernel",
                   *why + ", and the cluster's GPU is " + spec.cluster.gpu.name,
                   "choose a kernel the GPU has (fa2, cudnn, te, sdpa)"});
  }
  return out;
}

}  // namespace podsim::scenarios
