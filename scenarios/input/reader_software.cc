// The `software` section of a scenario, read through its declared keys
// (schema_software.cc) into a SoftwareSpec, every mechanism with its source.
#include <cstdio>
#include <string>
#include <utility>

#include "scenarios/input/spec_builder.h"

namespace podsim::scenarios::reader_detail {

namespace {

constexpr const char* kSetInScenario = "set in the scenario";

}  // namespace

std::string SpecBuilder::mechanism_source(const std::string& path) const {
  const size_t slash = path.rfind('/');
  const std::string source_path = path.substr(0, slash) + "/sources" + path.substr(slash);
  if (doc_.overridden.contains(path) && !doc_.overridden.contains(source_path)) {
    return kSetInScenario;
  }
  const auto it = doc_.values.find(source_path);
  if (it != doc_.values.end()) {
    if (const std::string* text = std::get_if<std::string>(&it->second)) return *text;
  }
  return doc_.overridden.contains(path) ? kSetInScenario : "";
}

void SpecBuilder::build_software(SoftwareSpec& s) {
  using namespace strategies;  // NOLINT(google-build-using-namespace): the enums read as a table
  s.name = text("/software/name").value_or(preset_name("/software"));
  s.source = text("/software/source").value_or("");

  // Each mechanism is read once, recorded with its value text and source.
  auto record = [&](const std::string& path, std::string value) {
    s.mechanisms.push_back({path, std::move(value), mechanism_source(path)});
  };
  auto choice = [&](const std::string& path) {
    const std::optional<std::string> value = text(path);
    if (value) record(path, *value);
    return value;
  };
  auto yes = [&](const std::string& path, bool fallback) {
    const std::optional<bool> value = flag(path);
    if (value) record(path, *value ? "true" : "false");
    return value.value_or(fallback);
  };
  auto seconds = [&](const std::string& path, double fallback) {
    const std::optional<double> value = number(path);
    if (value) record(path, format_seconds(*value));
    return value.value_or(fallback);
  };
  auto count = [&](const std::string& path, int64_t fallback) {
    const std::optional<int64_t> value = integer(path);
    if (value) record(path, num(*value));
    return value.value_or(fallback);
  };

  using hwmodels::AttentionKernel;
  const std::pair<const char*, AttentionKernel> kernels[] = {
      {"unfused", AttentionKernel::kUnfused}, {"fa2", AttentionKernel::kFlash2},
      {"fa3", AttentionKernel::kFlash3},      {"cudnn", AttentionKernel::kCudnn},
      {"triton", AttentionKernel::kTriton},   {"te", AttentionKernel::kTransformerEngine},
      {"sdpa", AttentionKernel::kSdpa}};
  s.attention = pick(choice("/software/attention/kernel"), kernels, s.attention);
  s.fused_softmax_max_keys =
      count("/software/attention/fused_softmax_max_keys", s.fused_softmax_max_keys);
  const std::pair<const char*, CpMerge> merges[] = {{"fused_16bit", CpMerge::kFused16Bit},
                                                    {"eager_fp32", CpMerge::kEagerFp32}};
  s.cp_merge = pick(choice("/software/attention/cp_merge"), merges, s.cp_merge);

  ElementwisePolicy& e = s.elementwise;
  const std::pair<const char*, ChainImpl> chains[] = {{"fused", ChainImpl::kFused},
                                                      {"eager", ChainImpl::kEager}};
  const std::pair<const char*, NormImpl> norms[] = {{"fused", NormImpl::kFused},
                                                    {"eager_fp32", NormImpl::kEagerFp32}};
  const std::pair<const char*, RopeImpl> ropes[] = {
      {"fused", RopeImpl::kFused}, {"eager_fp32_complex", RopeImpl::kEagerFp32Complex}};
  e.norm = pick(choice("/software/elementwise/norm"), norms, e.norm);
  e.rope = pick(choice("/software/elementwise/rope"), ropes, e.rope);
  e.activation = pick(choice("/software/elementwise/activation"), chains, e.activation);
  const std::pair<const char*, ClampImpl> clamps[] = {
      {"with_activation", ClampImpl::kWithActivation}, {"eager", ClampImpl::kEager}};
  e.activation_clamp =
      pick(choice("/software/elementwise/activation_clamp"), clamps, e.activation_clamp);
  e.residual = pick(choice("/software/elementwise/residual"), chains, e.residual);
  e.repeat_kv = yes("/software/elementwise/repeat_kv", e.repeat_kv);
  e.compiled = yes("/software/elementwise/compiled", e.compiled);
  const std::pair<const char*, double*> norm_bandwidths[] = {
      {"/software/elementwise/compiled_norm_forward_bandwidth", &e.compiled_norm_forward_bandwidth},
      {"/software/elementwise/compiled_norm_backward_bandwidth",
       &e.compiled_norm_backward_bandwidth}};
  for (const auto& [path, field] : norm_bandwidths) {
    if (const std::optional<double> fraction = number(path)) {
      record(path, format_number(*fraction));
      *field = *fraction;
    }
  }

  const std::pair<const char*, LossImpl> losses[] = {
      {"vocab_parallel_fp32", LossImpl::kVocabParallelFp32},
      {"fp32_upcast", LossImpl::kFp32Upcast},
      {"fused", LossImpl::kFused}};
  s.loss = pick(choice("/software/loss/implementation"), losses, s.loss);

  hwmodels::HostCost& h = s.host;
  h.dispatch_forward_s = seconds("/software/host/dispatch_forward", h.dispatch_forward_s);
  h.dispatch_backward_s = seconds("/software/host/dispatch_backward", h.dispatch_backward_s);
  h.compiled_region_call_s =
      seconds("/software/host/compiled_region_call", h.compiled_region_call_s);
  h.unit_hook_s = seconds("/software/host/unit_hook", h.unit_hook_s);
  h.sync_s = seconds("/software/host/sync", h.sync_s);
  h.rank_list_entry_s = seconds("/software/host/rank_list_entry", h.rank_list_entry_s);
  h.dtensor_dispatch_s = seconds("/software/host/dtensor_dispatch", h.dtensor_dispatch_s);
  using hwmodels::CudaGraphs;
  const std::pair<const char*, CudaGraphs> graphs[] = {
      {"none", CudaGraphs::kNone},
      {"per_layer", CudaGraphs::kPerLayer},
      {"full_iteration", CudaGraphs::kFullIteration}};
  h.graphs = pick(choice("/software/host/cuda_graphs"), graphs, h.graphs);

  const std::pair<const char*, P2pMode> p2p[] = {{"async", P2pMode::kAsync},
                                                 {"blocking_sync", P2pMode::kBlockingSync}};
  s.p2p = pick(choice("/software/pipeline/p2p"), p2p, s.p2p);
  const std::pair<const char*, PipelineGradSync> grad_syncs[] = {
      {"in_last_backward", PipelineGradSync::kInLastBackward},
      {"after_last_backward", PipelineGradSync::kAfterLastBackward}};
  s.pipeline_grad_sync =
      pick(choice("/software/pipeline/grad_sync"), grad_syncs, s.pipeline_grad_sync);

  DataParallelPolicy& d = s.data_parallel;
  const std::pair<const char*, GradReduce> reduces[] = {
      {"overlapped", GradReduce::kOverlapped}, {"after_backward", GradReduce::kAfterBackward}};
  const std::pair<const char*, sim::NumberFormat> formats[] = {{"fp32", sim::NumberFormat::kFp32},
                                                               {"bf16", sim::NumberFormat::kBf16}};
  const std::pair<const char*, ParamGather> gathers[] = {{"bucket", ParamGather::kBucket},
                                                         {"unit", ParamGather::kUnit},
                                                         {"parameter", ParamGather::kParameter}};
  const std::pair<const char*, BackwardPrefetch> prefetches[] = {{"pre", BackwardPrefetch::kPre},
                                                                 {"post", BackwardPrefetch::kPost},
                                                                 {"none", BackwardPrefetch::kNone}};
  d.grad_reduce = pick(choice("/software/data_parallel/grad_reduce"), reduces, d.grad_reduce);
  d.reduce_format = pick(choice("/software/data_parallel/reduce_dtype"), formats, d.reduce_format);
  d.param_gather = pick(choice("/software/data_parallel/param_gather"), gathers, d.param_gather);
  d.forward_prefetch = yes("/software/data_parallel/forward_prefetch", d.forward_prefetch);
  d.backward_prefetch =
      pick(choice("/software/data_parallel/backward_prefetch"), prefetches, d.backward_prefetch);
  d.shared_collective_stream =
      yes("/software/data_parallel/shared_collective_stream", d.shared_collective_stream);
  d.regather_for_recompute =
      yes("/software/data_parallel/regather_for_recompute", d.regather_for_recompute);
  d.copies_on_compute_stream =
      yes("/software/data_parallel/copies_on_compute_stream", d.copies_on_compute_stream);
  d.persist_below_params =
      count("/software/data_parallel/persist_below_params", d.persist_below_params);

  const std::pair<const char*, SelectiveRecompute> selective[] = {
      {"attention_core", SelectiveRecompute::kAttentionCore},
      {"matmul_save_list", SelectiveRecompute::kMatmulSaveList}};
  s.selective = pick(choice("/software/recompute/selective"), selective, s.selective);

  Fp8Policy& f = s.fp8;
  const std::pair<const char*, Fp8Recipe> recipes[] = {
      {"none", Fp8Recipe::kNone},
      {"te_delayed", Fp8Recipe::kTeDelayed},
      {"torchao_dynamic", Fp8Recipe::kTorchaoDynamic}};
  const std::pair<const char*, WeightCast> casts[] = {{"per_step", WeightCast::kPerStep},
                                                      {"per_call", WeightCast::kPerCall}};
  f.recipe = pick(choice("/software/fp8/recipe"), recipes, f.recipe);
  f.casts = pick(choice("/software/fp8/casts"), chains, f.casts);
  f.cast_fused_with_norm = yes("/software/fp8/cast_fused_with_norm", f.cast_fused_with_norm);
  f.output_layer = yes("/software/fp8/output_layer", f.output_layer);
  f.attention = yes("/software/fp8/attention", f.attention);
  f.weight_cast = pick(choice("/software/fp8/weight_cast"), casts, f.weight_cast);
  f.amax_all_reduce = yes("/software/fp8/amax_all_reduce", f.amax_all_reduce);
  const std::pair<const char*, Fp8Accumulation> accumulations[] = {
      {"promoted", Fp8Accumulation::kPromoted}, {"fast", Fp8Accumulation::kFast}};
  f.gradient_accumulation =
      pick(choice("/software/fp8/gradient_accumulation"), accumulations, f.gradient_accumulation);

  const std::pair<const char*, TpOverlap> overlaps[] = {
      {"none", TpOverlap::kNone},
      {"te_userbuffers", TpOverlap::kTeUserbuffers},
      {"async_tp", TpOverlap::kAsyncTp},
      {"xla_collective_matmul", TpOverlap::kXlaCollectiveMatmul}};
  s.tp_overlap = pick(choice("/software/tp_overlap/method"), overlaps, s.tp_overlap);
  TpOverlapPatterns& patterns = s.tp_overlap_patterns;
  patterns.all_gather = yes("/software/tp_overlap/all_gather", patterns.all_gather);
  patterns.reduce_scatter = yes("/software/tp_overlap/reduce_scatter", patterns.reduce_scatter);
  s.tp_shards_activations =
      yes("/software/tensor_parallel/shard_activations", s.tp_shards_activations);

  OptimizerPolicy& o = s.optimizer;
  const std::pair<const char*, OptimizerImpl> optimizers[] = {{"fused", OptimizerImpl::kFused},
                                                              {"foreach", OptimizerImpl::kForeach},
                                                              {"for_loop", OptimizerImpl::kForLoop},
                                                              {"xla", OptimizerImpl::kXla}};
  o.implementation =
      pick(choice("/software/optimizer/implementation"), optimizers, o.implementation);
  const std::optional<double> extra = number("/software/optimizer/extra_bytes_per_param");
  if (extra) {
    record("/software/optimizer/extra_bytes_per_param", format_number(*extra));
    o.extra_bytes_per_param = *extra;
  }
  o.clip_host_sync = yes("/software/optimizer/clip_host_sync", o.clip_host_sync);
  o.dtensor_params = yes("/software/optimizer/dtensor_params", o.dtensor_params);

  const std::pair<const char*, MemoryCounter> counters[] = {
      {"reserved", MemoryCounter::kReserved}, {"allocated", MemoryCounter::kAllocated}};
  s.memory_counter = pick(choice("/software/memory/reported"), counters, s.memory_counter);
  const std::pair<const char*, DeviceAllocator> allocators[] = {
      {"caching", DeviceAllocator::kCaching}, {"xla", DeviceAllocator::kXla}};
  s.allocator = pick(choice("/software/memory/allocator"), allocators, s.allocator);
  MemoryPolicy& m = s.memory;
  const std::pair<const char*, ParamStorage> storage[] = {
      {"weights_and_master", ParamStorage::kWeightsAndMaster},
      {"master_only", ParamStorage::kMasterOnly}};
  const std::pair<const char*, GradBuffers> buffers[] = {{"persistent", GradBuffers::kPersistent},
                                                         {"per_step", GradBuffers::kPerStep}};
  const std::pair<const char*, WeightGrads> weight_grads[] = {
      {"into_main_grad", WeightGrads::kIntoMainGrad},
      {"autograd_then_copy", WeightGrads::kAutogradThenCopy}};
  const std::pair<const char*, GatheredWeights> gathered[] = {
      {"beside_shard", GatheredWeights::kBesideShard},
      {"full_copy", GatheredWeights::kFullCopy},
      {"copy_out", GatheredWeights::kCopyOut},
      {"flat_side_stream", GatheredWeights::kFlatSideStream}};
  const std::pair<const char*, StageOutputs> outputs[] = {
      {"deallocated", StageOutputs::kDeallocated},
      {"kept_until_backward", StageOutputs::kKeptUntilBackward},
      {"kept_until_step_end", StageOutputs::kKeptUntilStepEnd}};
  m.param_storage = pick(choice("/software/memory/param_storage"), storage, m.param_storage);
  m.grad_buffers = pick(choice("/software/memory/grad_buffers"), buffers, m.grad_buffers);
  m.weight_grads = pick(choice("/software/memory/weight_grads"), weight_grads, m.weight_grads);
  m.gathered_weights =
      pick(choice("/software/memory/gathered_weights"), gathered, m.gathered_weights);
  m.stage_outputs = pick(choice("/software/memory/stage_outputs"), outputs, m.stage_outputs);
  const std::pair<const char*, ReceiveBuffers> receives[] = {
      {"per_transfer", ReceiveBuffers::kPerTransfer},
      {"per_micro_batch", ReceiveBuffers::kPerMicroBatch}};
  m.receive_buffers = pick(choice("/software/memory/receive_buffers"), receives, m.receive_buffers);

  MoePolicy& moe = s.moe;
  moe.dispatch_host_sync = yes("/software/moe/dispatch_host_sync", moe.dispatch_host_sync);
  moe.expert_gemm_streams = count("/software/moe/expert_gemm_streams", moe.expert_gemm_streams);
}

}  // namespace podsim::scenarios::reader_detail
