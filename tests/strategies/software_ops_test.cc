// What a framework runs between the GEMMs: element-wise op lists (fused,
// eager, compiled) and the loss over the vocabulary, counted from each
// implementation's kernels (kernels-host-power.md 2.1-2.6).
#include <gtest/gtest.h>

#include <string>

#include "strategies/layout.h"
#include "strategies/model_counts.h"
#include "strategies/schedule.h"
#include "strategies/workload.h"
#include "tests/strategies/test_util.h"

namespace podsim::strategies {
namespace {

using testing::built_schedule;
using testing::preset_job;

/// Llama 3 8B, one sequence of 8192 tokens per micro-batch, no parallelism.
Job llama8b(const ElementwisePolicy& elementwise) {
  Job job = preset_job("llama3-8b", 8192, 8, 1);
  job.software.elementwise = elementwise;
  return job;
}

ElementwisePolicy torchtitan_eager() {
  ElementwisePolicy e;
  e.norm = NormImpl::kEagerFp32;
  e.rope = RopeImpl::kEagerFp32Complex;
  e.activation = ChainImpl::kEager;
  e.residual = ChainImpl::kEager;
  e.repeat_kv = true;
  return e;
}

/// Element-wise HBM bytes and kernels of one layer pass, in units of N =
/// tokens x hidden elements.
struct Tally {
  double bytes_per_n = 0;
  int kernels = 0;
};
Tally elementwise(const Job& job, Pass pass) {
  Tally t;
  const double n = 8192.0 * 4096.0;
  for (const Op& op : layer_ops(job, pass)) {
    if (op.kind != OpKind::kMemoryBound) continue;
    t.bytes_per_n += static_cast<double>(op.count) * op.memory.bytes / n;
    t.kernels += op.kernels * static_cast<int>(op.count);
  }
  return t;
}

TEST(ElementwiseOps, FusedLayerIsMegatronsKernelList) {
  // Norm 2 x 4N, RoPE over q and k (1.25 N) at 4 B, two residual adds of
  // 6N, SwiGLU over 3.5 N at 6 B: 46 N in 7 kernels (notes 2.2: ~46N).
  const Tally f = elementwise(llama8b({}), Pass::kForward);
  EXPECT_DOUBLE_EQ(f.bytes_per_n, 8 + 5 + 12 + 21);
  EXPECT_EQ(f.kernels, 6);
}

TEST(ElementwiseOps, EagerCostsMoreThanFusedAsTorchtitanWritesIt) {
  const Job eager = llama8b(torchtitan_eager());
  const Tally fwd = elementwise(eager, Pass::kForward);
  // fp32 RMSNorm 2 x 36, fp32 complex RoPE 20 x 1.25, repeat_kv of K and V
  // (read N/4, write N, bf16) 5, adds 2 x 6, SiLU + mul 10 x 3.5: 149 N in
  // 28 kernels (notes 2.1: ~149 N, ~27 kernels).
  EXPECT_DOUBLE_EQ(fwd.bytes_per_n, 72 + 25 + 5 + 12 + 35);
  EXPECT_EQ(fwd.kernels, 16 + 6 + 2 + 2 + 2);
  // Backward: ~290 N (norms 2 x 92, RoPE 25, repeat 5, branch sums 12,
  // SwiGLU 63).
  EXPECT_DOUBLE_EQ(elementwise(eager, Pass::kBackward).bytes_per_n, 184 + 25 + 5 + 12 + 63);
  EXPECT_GT(fwd.bytes_per_n, 3 * elementwise(llama8b({}), Pass::kForward).bytes_per_n);
}

TEST(ElementwiseOps, CompiledFusesTheChainsBetweenGemms) {
  ElementwisePolicy compiled = torchtitan_eager();
  compiled.compiled = true;
  compiled.rope = RopeImpl::kFused;  // a real-valued rotary, which Inductor fuses
  const Tally fwd = elementwise(llama8b(compiled), Pass::kForward);
  // norm 4, RoPE 5, expanded K and copied V 4, residual + norm 8, SwiGLU
  // 21, residual 6: 48 N (notes 2.3: ~49 N, ~6 kernels).
  EXPECT_DOUBLE_EQ(fwd.bytes_per_n, 4 + 5 + 4 + 8 + 21 + 6);
  EXPECT_EQ(fwd.kernels, 6);
  EXPECT_LT(fwd.bytes_per_n, elementwise(llama8b(torchtitan_eager()), Pass::kForward).bytes_per_n);
}

TEST(ElementwiseOps, ComplexRopeKeepsItsEagerKernelsUnderCompile) {
  // Inductor runs complex tensors as ATen fallbacks: torchtitan's complex
  // RoPE costs under compile what it costs eager (20 x 1.25 N, 3 kernels per
  // tensor each way), where a real-valued one is fused (4 x 1.25 N, 1 kernel).
  ElementwisePolicy complex_rope = torchtitan_eager();
  complex_rope.compiled = true;
  ElementwisePolicy real_rope = complex_rope;
  real_rope.rope = RopeImpl::kFused;
  for (const Pass pass : {Pass::kForward, Pass::kBackward}) {
    const Tally with_complex = elementwise(llama8b(complex_rope), pass);
    const Tally with_real = elementwise(llama8b(real_rope), pass);
    EXPECT_DOUBLE_EQ(with_complex.bytes_per_n - with_real.bytes_per_n, 25 - 5);
    EXPECT_EQ(with_complex.kernels - with_real.kernels, 6 - 1);
  }
}

TEST(ElementwiseOps, OnlyACompilersNormKernelsRunAtItsNormBandwidths) {
  ElementwisePolicy compiled = torchtitan_eager();
  compiled.compiled = true;
  compiled.compiled_norm_forward_bandwidth = 0.8;
  compiled.compiled_norm_backward_bandwidth = 0.4;
  ElementwisePolicy eager = torchtitan_eager();
  eager.compiled_norm_forward_bandwidth = 0.8;  // no compiler: the values are not used
  eager.compiled_norm_backward_bandwidth = 0.4;
  for (const Pass pass : {Pass::kForward, Pass::kBackward}) {
    const double norm_fraction = pass == Pass::kForward ? 0.8 : 0.4;
    int compiled_norms = 0;
    for (const Op& op : layer_ops(llama8b(compiled), pass)) {
      if (op.kind != OpKind::kMemoryBound) continue;
      const bool norm = op.name.find("norm") != std::string::npos;
      EXPECT_DOUBLE_EQ(op.memory.bandwidth_fraction, norm ? norm_fraction : 1.0) << op.name;
      compiled_norms += norm ? 1 : 0;
    }
    EXPECT_GT(compiled_norms, 0);
    for (const Op& op : layer_ops(llama8b(eager), pass)) {
      EXPECT_DOUBLE_EQ(op.memory.bandwidth_fraction, 1.0) << op.name;
    }
  }
}

/// The final norm's HBM bytes per element (forward, backward) and forward kernels.
struct NormCost {
  double forward_bytes_per_element = 0, backward_bytes_per_element = 0;
  int forward_kernels = 0;
};
NormCost final_norm(const Job& job) {
  NormCost c;
  const double elems = 8192.0 * 4096.0;
  for (const Pass pass : {Pass::kForward, Pass::kBackward}) {
    for (const Op& op : head_ops(job, pass)) {
      if (op.name.rfind("final_norm", 0) != 0) continue;
      if (pass == Pass::kForward) {
        c.forward_bytes_per_element = op.memory.bytes / elems;
        c.forward_kernels = op.kernels;
      } else {
        c.backward_bytes_per_element = op.memory.bytes / elems;
      }
    }
  }
  return c;
}

TEST(ElementwiseOps, APerBlockCompilerLeavesTheFinalNormEager) {
  // torch.compile per TransformerBlock (compiled_block_calls) does not reach
  // the norm before the head: torchtitan's fp32 RMSNorm runs as its 8 eager
  // kernels (36 B per element, 92 backward); XLA compiles the whole step.
  ElementwisePolicy e = torchtitan_eager();
  e.compiled = true;
  Job per_block = llama8b(e);
  per_block.software.compiled_block_calls = true;
  Job whole_step = llama8b(e);
  whole_step.software.compiled_block_calls = false;
  const NormCost eager_norm = final_norm(llama8b(torchtitan_eager()));
  const NormCost outside = final_norm(per_block);
  EXPECT_DOUBLE_EQ(outside.forward_bytes_per_element, 36);
  EXPECT_DOUBLE_EQ(outside.backward_bytes_per_element, 92);
  EXPECT_EQ(outside.forward_kernels, eager_norm.forward_kernels);
  const NormCost compiled = final_norm(whole_step);
  EXPECT_DOUBLE_EQ(compiled.forward_bytes_per_element, 4);  // read and write bf16
  EXPECT_DOUBLE_EQ(compiled.backward_bytes_per_element, 10);
  EXPECT_EQ(compiled.forward_kernels, 1);
  // Inside the blocks both compile the norms alike.
  EXPECT_DOUBLE_EQ(elementwise(per_block, Pass::kForward).bytes_per_n,
                   elementwise(whole_step, Pass::kForward).bytes_per_n);
}

double loss_bytes_per_logit(LossImpl loss) {
  Job job = preset_job("llama3-8b", 8192, 8, 1);
  job.software.loss = loss;
  const double logits = 8192.0 * 128256.0;
  double bytes = 0;
  for (const Pass pass : {Pass::kForward, Pass::kBackward}) {
    for (const Op& op : head_ops(job, pass)) {
      if (op.name.rfind("cross_entropy", 0) == 0) bytes += op.memory.bytes / logits;
    }
  }
  return bytes;
}

TEST(LossOps, Fp32LogitsCostWhatTheirKernelsMove) {
  EXPECT_DOUBLE_EQ(loss_bytes_per_logit(LossImpl::kVocabParallelFp32), 52);
  EXPECT_DOUBLE_EQ(loss_bytes_per_logit(LossImpl::kFp32Upcast), 48);  // notes 2.6: ~44-52
  EXPECT_DOUBLE_EQ(loss_bytes_per_logit(LossImpl::kFused), 6);        // notes 2.6: ~6
}

/// fp8 cast kernels of one layer pass, in units of N = tokens x hidden.
Tally fp8_casts(const Job& job, Pass pass) {
  Tally t;
  const double n = 8192.0 * 4096.0;
  for (const Op& op : layer_ops(job, pass)) {
    if (op.name.find("fp8_cast") == std::string::npos) continue;
    t.bytes_per_n += static_cast<double>(op.count) * op.memory.bytes / n;
    t.kernels += op.kernels * static_cast<int>(op.count);
  }
  return t;
}

TEST(Fp8Ops, TransformerEngineCastsWhatItsNormsDoNotWrite) {
  Job job = llama8b({});
  EXPECT_EQ(fp8_casts(job, Pass::kForward).kernels, 0);  // bf16: no casts
  job.training.precision = sim::NumberFormat::kFp8;
  // Cast-transpose at 4 B per element of the inputs of attn_out (N) and fc2
  // (3.5 N); the norms write the qkv and fc1 inputs in fp8; weights cached.
  const Tally fwd = fp8_casts(job, Pass::kForward);
  EXPECT_DOUBLE_EQ(fwd.bytes_per_n, 4 * (1 + 3.5));
  EXPECT_EQ(fwd.kernels, 2);
  // Output gradients of attn_out (N), qkv (1.5 N), fc2 (N), fc1 (7 N).
  const Tally bwd = fp8_casts(job, Pass::kBackward);
  EXPECT_DOUBLE_EQ(bwd.bytes_per_n, 4 * (1 + 1.5 + 1 + 7));
  EXPECT_EQ(bwd.kernels, 4);
  for (const Op& op : layer_ops(job, Pass::kForward)) {
    if (op.name == "qkv") {
      EXPECT_EQ(op.format, sim::NumberFormat::kFp8);
    }
  }
  for (const Op& op : head_ops(job, Pass::kForward)) {
    if (op.name == "logits") {
      EXPECT_EQ(op.format, sim::NumberFormat::kBf16);  // the output layer stays bf16
    }
  }
}

TEST(Fp8Ops, TorchaoDynamicScalingCastsInputsAndWeightsEveryCall) {
  Job job = llama8b(torchtitan_eager());
  job.training.precision = sim::NumberFormat::kFp8;
  job.software.fp8.recipe = Fp8Recipe::kTorchaoDynamic;
  job.software.fp8.casts = ChainImpl::kEager;
  job.software.fp8.cast_fused_with_norm = false;
  job.software.fp8.weight_cast = WeightCast::kPerCall;
  // Inputs: qkv N, attn_out N, fc1 N, fc2 3.5 N; weights (in units of N =
  // 8192 x 4096): 6144 + 4096 + 28672 + 14336 columns of 4096 over 8192 rows.
  const double weights = (6144.0 + 4096 + 28672 + 14336) / 8192;
  const Tally eager = fp8_casts(job, Pass::kForward);
  EXPECT_DOUBLE_EQ(eager.bytes_per_n, 19 * (6.5 + weights));
  EXPECT_EQ(eager.kernels, 6 * 8);
  job.software.fp8.casts = ChainImpl::kFused;  // compiled: amax pass + cast
  EXPECT_DOUBLE_EQ(fp8_casts(job, Pass::kForward).bytes_per_n, 6 * (6.5 + weights));
  // A framework without fp8 runs the GEMMs in bf16 and casts nothing.
  job.software.fp8.recipe = Fp8Recipe::kNone;
  EXPECT_EQ(fp8_casts(job, Pass::kForward).kernels, 0);
  for (const Op& op : layer_ops(job, Pass::kForward)) {
    if (op.name == "qkv") {
      EXPECT_EQ(op.format, sim::NumberFormat::kBf16);
    }
  }
}

}  // namespace
}  // namespace podsim::strategies

namespace podsim::strategies {
namespace {

/// GEMM FLOPs and attention ops a "selective" recompute runs again.
struct Recomputed {
  double gemm_flops = 0;
  int attention = 0;
  double elementwise_bytes = 0;
};
Recomputed recomputed(const Job& job) {
  Recomputed out;
  for (const Op& op : layer_ops(job, Pass::kRecompute)) {
    if (op.kind == OpKind::kGemm) out.gemm_flops += op.flops;
    if (op.kind == OpKind::kAttention) ++out.attention;
    if (op.kind == OpKind::kMemoryBound) out.elementwise_bytes += op.memory.bytes;
  }
  return out;
}

TEST(Fp8Accumulation, GradientGemmsOfPerTensorRecipesPromoteTheirSums) {
  Job job = llama8b({});
  job.training.precision = sim::NumberFormat::kFp8;
  // Counts the fp8 GEMMs of a pass and those of them that promote.
  auto promoting = [](const Job& j, Pass pass) {
    std::pair<int, int> fp8_and_promoting{0, 0};
    for (const Op& op : layer_ops(j, pass)) {
      if (op.kind != OpKind::kGemm || op.format != sim::NumberFormat::kFp8) continue;
      ++fp8_and_promoting.first;
      if (promotes_fp8_accumulation(j, op)) ++fp8_and_promoting.second;
    }
    return fp8_and_promoting;
  };
  // TE delayed scaling: fprop fast, dgrad and wgrad of all four linears promoted.
  EXPECT_EQ(promoting(job, Pass::kForward), std::make_pair(4, 0));
  EXPECT_EQ(promoting(job, Pass::kBackward), std::make_pair(8, 8));
  job.plan.recompute.mode = RecomputeMode::kFull;
  EXPECT_EQ(promoting(job, Pass::kRecompute), std::make_pair(4, 0));
  // torchao's tensor-wise scaling does the same (slow accumulation for grads).
  job.software.fp8.recipe = Fp8Recipe::kTorchaoDynamic;
  EXPECT_EQ(promoting(job, Pass::kBackward), std::make_pair(8, 8));
  // A framework that keeps fast accumulation everywhere.
  job.software.fp8.gradient_accumulation = Fp8Accumulation::kFast;
  EXPECT_EQ(promoting(job, Pass::kBackward), std::make_pair(8, 0));
  // Block-scaled recipes are priced at their own (per-tensor) rate.
  job.software.fp8.gradient_accumulation = Fp8Accumulation::kPromoted;
  job.training.recipe = PrecisionRecipe::kBlockwise;
  EXPECT_EQ(promoting(job, Pass::kBackward), std::make_pair(8, 0));
  // bf16 GEMMs never promote.
  job.training.recipe = PrecisionRecipe::kSoftware;
  job.training.precision = sim::NumberFormat::kBf16;
  EXPECT_EQ(promoting(job, Pass::kBackward), std::make_pair(0, 0));
}

TEST(OptimizerOps, EachFrameworkUpdatesAsItsOptimizerIsWritten) {
  Job job = llama8b({});
  const double params = 1e9, tensors = 291;  // one rank's shard of Llama 3 8B's 291 tensors
  auto step = [&](const Job& j) {
    const std::vector<Op> ops = optimizer_ops(j, params, tensors);
    EXPECT_EQ(ops.size(), 2u);
    EXPECT_EQ(ops[0].name, "grad_norm");  // every gradient read once
    EXPECT_DOUBLE_EQ(ops[0].memory.bytes, params * grad_element_bytes(j));
    return ops[1];
  };
  // Megatron-Core: fused Adam (28 B), the 16-bit copy of the shard (6 B) as
  // a second kernel, and clipping's .item() before the update is issued.
  job.software.optimizer = {OptimizerImpl::kFused, 6, true, false};
  Op op = step(job);
  EXPECT_DOUBLE_EQ(op.memory.bytes, params * (28 + 6));
  EXPECT_EQ(op.kernels, 48 + 1);  // ceil(1e9 / (320 x 65,536)) multi-tensor launches + the copy
  EXPECT_TRUE(op.host_sync);
  EXPECT_DOUBLE_EQ(optimizer_dtensor_dispatches(job, tensors), 0);
  // torchtitan: torch.optim.AdamW(foreach=True), 8 foreach ops, 80 B; no
  // host sync; every op of the norm and the update dispatched through
  // DTensor tensor by tensor.
  job.software.optimizer = {OptimizerImpl::kForeach, 0, false, true};
  op = step(job);
  EXPECT_DOUBLE_EQ(op.memory.bytes, params * 80);
  EXPECT_EQ(op.kernels, 8 * 48);
  EXPECT_FALSE(op.host_sync);
  EXPECT_DOUBLE_EQ(optimizer_dtensor_dispatches(job, tensors), tensors * 9);
  // Composer's DecoupledAdamW: 9 kernels per tensor, 88 B.
  job.software.optimizer = {OptimizerImpl::kForLoop, 0, false, false};
  op = step(job);
  EXPECT_DOUBLE_EQ(op.memory.bytes, params * 88);
  EXPECT_EQ(op.kernels, 9 * 291);
  // optax under XLA: one fused update per leaf, 28 B.
  job.software.optimizer = {OptimizerImpl::kXla, 0, false, false};
  op = step(job);
  EXPECT_DOUBLE_EQ(op.memory.bytes, params * 28);
  EXPECT_EQ(op.kernels, 291);
  // 16-bit gradients (options.grad_format) are read at 2 B wherever they are read.
  job.options.grad_format = sim::NumberFormat::kBf16;
  job.software.optimizer = {OptimizerImpl::kForeach, 0, false, false};
  EXPECT_DOUBLE_EQ(step(job).memory.bytes, params * (72 + 2 * 2));
}

TEST(FsdpCopies, Fsdp2CopiesOutEachGatherAndCopiesInEachReductionOnTheComputeStream) {
  Job job = llama8b({});
  job.plan.dp = 8;
  job.plan.zero = 3;
  job.plan.recompute.mode = RecomputeMode::kFull;
  job.software.data_parallel.copies_on_compute_stream = true;
  const double params = layer_parameters(job).total();
  // Bytes of the named op in one layer's work of `pass` (0 when absent).
  auto bytes = [&](const Job& j, Pass pass, const std::string& name) {
    double total = 0;
    for (const Segment& seg : make_work(j, pass, 1, false, false).segments) {
      for (const Op& op : seg.ops) {
        if (op.name == name) total += static_cast<double>(seg.repeat * op.count) * op.memory.bytes;
      }
    }
    return total;
  };
  // Split the flat bf16 all-gather output into the parameters: read 2 B, write 2 B.
  EXPECT_DOUBLE_EQ(bytes(job, Pass::kForward, "fsdp_copy_out"), params * 4);
  EXPECT_DOUBLE_EQ(bytes(job, Pass::kBackward, "fsdp_copy_out"), params * 4);
  // The recompute uses the backward's gather.
  EXPECT_DOUBLE_EQ(bytes(job, Pass::kRecompute, "fsdp_copy_out"), 0);
  // bf16 gradients cast into the fp32 reduce-scatter input: read 2 B, write 4 B.
  EXPECT_DOUBLE_EQ(bytes(job, Pass::kBackward, "fsdp_copy_in"), params * 6);
  EXPECT_DOUBLE_EQ(bytes(job, Pass::kForward, "fsdp_copy_in"), 0);
  // Frameworks whose collectives write in place, and plans without ZeRO-3.
  Job in_place = job;
  in_place.software.data_parallel.copies_on_compute_stream = false;
  EXPECT_DOUBLE_EQ(bytes(in_place, Pass::kBackward, "fsdp_copy_in"), 0);
  Job zero1 = job;
  zero1.plan.zero = 1;
  EXPECT_DOUBLE_EQ(bytes(zero1, Pass::kForward, "fsdp_copy_out"), 0);
}

TEST(SelectiveRecompute, MegatronRecomputesTheAttentionCore) {
  Job job = testing::preset_job("llama3-8b", 8192, 8, 1);
  job.plan.recompute.mode = RecomputeMode::kSelective;
  const Recomputed r = recomputed(job);
  EXPECT_EQ(r.attention, 1);
  EXPECT_EQ(r.gemm_flops, 0);
  EXPECT_EQ(r.elementwise_bytes, 0);
}

TEST(SelectiveRecompute, TorchtitanKeepsEveryOtherMatmulAndRecomputesTheRest) {
  Job job = llama8b(torchtitan_eager());
  job.plan.recompute.mode = RecomputeMode::kSelective;
  job.software.selective = SelectiveRecompute::kMatmulSaveList;
  const Recomputed r = recomputed(job);
  // wq, wv, w1, w2 and SDPA are saved; wk (4096 x 1024), wo (4096 x 4096)
  // and w3 (4096 x 14336) run again, with every element-wise op.
  EXPECT_EQ(r.attention, 0);
  EXPECT_DOUBLE_EQ(r.gemm_flops, 2.0 * 8192 * 4096 * (1024 + 4096 + 14336));
  EXPECT_DOUBLE_EQ(r.elementwise_bytes, 149.0 * 8192 * 4096);
  // torchao Float8 linears are _scaled_mm, not in the save list: all of them again.
  job.training.precision = sim::NumberFormat::kFp8;
  job.software.fp8.recipe = Fp8Recipe::kTorchaoDynamic;
  EXPECT_DOUBLE_EQ(recomputed(job).gemm_flops,
                   2.0 * 8192 * 4096 * (4096 + 2 * 1024 + 4096 + 3 * 14336));
}

/// The amax all-reduces of one rank's tasks of `kind`: (bytes, stage ranks)
/// per task that has one.
std::vector<std::pair<double, size_t>> amax_reductions(const Schedule& s, size_t ri,
                                                       TaskKind kind) {
  std::vector<std::pair<double, size_t>> out;
  for (const Task& t : s.rank_tasks(ri)) {
    if (t.kind != kind || t.work < 0) continue;
    for (const Segment& seg : s.works[static_cast<size_t>(t.work)].segments) {
      for (const Op& op : seg.ops) {
        if (op.kind != OpKind::kCollective || op.collective.group != InWorkGroup::kStage) continue;
        EXPECT_EQ(op.collective.kind, CollectiveKind::kAllReduce);
        EXPECT_EQ(seg.repeat, 1);
        out.emplace_back(op.collective.bytes, s.layout.group(t.rank, GroupKind::kStage).size());
      }
    }
  }
  return out;
}

/// Llama 3 8B cut to 8 layers on tp 2, dp 2, pp 2 with 2 virtual stages:
/// 2 layers per chunk, 8 micro-batches.
Job fp8_pipeline_job() {
  Job job = testing::preset_job("llama3-8b", 1024, 16);
  job.model.layers = 8;
  job.plan.tp = 2;
  job.plan.dp = 2;
  job.plan.pp = 2;
  job.plan.virtual_stages = 2;
  job.plan.schedule = PipelineSchedule::kInterleavedOneFOneB;
  job.training.precision = sim::NumberFormat::kFp8;
  return job;
}

TEST(Fp8Amax, DelayedScalingReducesOncePerChunkAndPassOverTheWholeStage) {
  const Job job = fp8_pipeline_job();
  const Schedule s = built_schedule(job, Scope::kRepresentatives);
  const int64_t chunk_passes = micro_batches(job) * job.plan.virtual_stages;  // 8 x 2
  // Per chunk: 2 layers x 4 fp8 GEMMs (qkv, attn_out, fc1, fc2), one fp32
  // amax per tensor: 3 per GEMM forward, 2 backward; over tp x dp = 4 ranks.
  for (size_t ri = 0; ri < s.ranks.size(); ++ri) {
    const auto forward = amax_reductions(s, ri, TaskKind::kForward);
    const auto backward = amax_reductions(s, ri, TaskKind::kBackward);
    ASSERT_EQ(static_cast<int64_t>(forward.size()), chunk_passes);
    ASSERT_EQ(static_cast<int64_t>(backward.size()), chunk_passes);
    EXPECT_DOUBLE_EQ(forward[0].first, 4.0 * 3 * 4 * 2);
    EXPECT_DOUBLE_EQ(backward[0].first, 4.0 * 2 * 4 * 2);
    EXPECT_EQ(forward[0].second, 4u);
  }
}

TEST(Fp8Amax, OnlyDelayedScalingWithTheReductionOnPaysIt) {
  Job job = fp8_pipeline_job();
  job.plan.recompute.mode = RecomputeMode::kFull;  // a recompute does not reduce
  EXPECT_TRUE(amax_reductions(built_schedule(job, Scope::kRepresentatives), 0, TaskKind::kRecompute)
                  .empty());
  EXPECT_FALSE(
      amax_reductions(built_schedule(job, Scope::kRepresentatives), 0, TaskKind::kForward).empty());
  Job bf16 = fp8_pipeline_job();
  bf16.training.precision = sim::NumberFormat::kBf16;
  EXPECT_TRUE(amax_reductions(built_schedule(bf16, Scope::kRepresentatives), 0, TaskKind::kForward)
                  .empty());
  Job current = fp8_pipeline_job();
  current.training.recipe = PrecisionRecipe::kTensorwise;  // local scales
  EXPECT_TRUE(
      amax_reductions(built_schedule(current, Scope::kRepresentatives), 0, TaskKind::kForward)
          .empty());
  Job off = fp8_pipeline_job();
  off.software.fp8.amax_all_reduce = false;
  EXPECT_TRUE(amax_reductions(built_schedule(off, Scope::kRepresentatives), 0, TaskKind::kBackward)
                  .empty());
}

TEST(Fp8Amax, CurrentScalingReducesEachSequenceParallelOperandsAmaxOverTp) {
  // Float8CurrentScaling with SP: the qkv and fc1 inputs (column-parallel)
  // forward, the attn_out and fc2 output gradients (row-parallel) backward,
  // one fp32 amax all-reduced over the TP group before each cast.
  Job job = fp8_pipeline_job();
  job.plan.sequence_parallel = true;
  job.training.recipe = PrecisionRecipe::kTensorwise;
  auto tp_amaxes = [](const Job& j, Pass pass) {
    std::vector<std::string> names;
    for (const Op& op : layer_ops(j, pass)) {
      if (op.kind != OpKind::kCollective || op.name.find("amax") == std::string::npos) continue;
      EXPECT_EQ(op.collective.dim, Dim::kTp);
      EXPECT_DOUBLE_EQ(op.collective.bytes, 4);
      names.push_back(op.name);
    }
    return names;
  };
  EXPECT_EQ(
      tp_amaxes(job, Pass::kForward),
      (std::vector<std::string>{"qkv_input_amax_all_reduce", "mlp_fc1_input_amax_all_reduce"}));
  EXPECT_EQ(
      tp_amaxes(job, Pass::kBackward),
      (std::vector<std::string>{"mlp_fc2_grad_amax_all_reduce", "attn_out_grad_amax_all_reduce"}));
  job.plan.sequence_parallel = false;  // every TP rank casts the whole tensor
  EXPECT_TRUE(tp_amaxes(job, Pass::kForward).empty());
  job.plan.sequence_parallel = true;
  job.training.recipe = PrecisionRecipe::kSoftware;  // delayed: scales from the history
  EXPECT_TRUE(tp_amaxes(job, Pass::kBackward).empty());
}

/// Llama 3 8B over a ring of `cp` ranks: 8192 tokens, 32 query and 8 K/V
/// heads of 128.
Job ring_job(int64_t cp, CpMerge merge, bool repeat_kv) {
  Job job = preset_job("llama3-8b", 8192, 8);
  job.plan.cp = cp;
  job.plan.dp = 8 / cp;
  job.plan.context = ContextAlgorithm::kRing;
  job.software.cp_merge = merge;
  job.software.elementwise.repeat_kv = repeat_kv;
  return job;
}

/// The named op of one layer pass (fails the test when absent).
Op find_op(const Job& job, Pass pass, const std::string& name) {
  for (const Op& op : layer_ops(job, pass)) {
    if (op.name == name) return op;
  }
  ADD_FAILURE() << name << " not in the layer";
  return {};
}

TEST(CpMerge, TransformerEngineMergesInSixteenBitsOnePassPerStep) {
  // cp 2: 4096 local tokens, output 4096 x 4096 elements (O), K+V half of
  // that. Forward, per output element: zero 2 B, the local step's fused
  // correction 6 B, the remote step's 6 B over 3/4 of the output on average
  // (4.5 B), its contiguous half-K/V copy 1 B x K/V / O = 0.5: 13 B.
  const double o = 4096.0 * 4096.0;
  const Job te = ring_job(2, CpMerge::kFused16Bit, false);
  const Op merge = find_op(te, Pass::kForward, "cp_merge");
  EXPECT_DOUBLE_EQ(merge.memory.bytes / o, 13.0);
  EXPECT_TRUE(merge.attention_core);  // recomputed with the core attention
  // Backward: dQ and dK/dV accumulated in 16 bits, K/V and dK/dV passed on.
  EXPECT_DOUBLE_EQ(find_op(te, Pass::kBackward, "cp_kv_dkv_exchange").collective.bytes,
                   4096.0 * 2048.0 * (2 + 2));
  // No ring, no merge.
  const Job alone = ring_job(1, CpMerge::kFused16Bit, false);
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    for (const Op& op : layer_ops(alone, pass))
      EXPECT_EQ(op.name.find("cp_merge"), std::string::npos);
  }
}

TEST(CpMerge, PyTorchRingUpcastsMergesAndRotatesFp32Gradients) {
  // Forward per output element: upcast of the local block (6 B) and the
  // result cast back (6 B); the remote step upcasts and merges 3/4 of the
  // output (0.75 x (6 + 32)) and a half-query step's clone and copy-back (6 B
  // on average): 46.5 B; K and V concatenated for the send: 4 B x K/V / O.
  const double o = 4096.0 * 4096.0;
  const Job torch = ring_job(2, CpMerge::kEagerFp32, false);
  EXPECT_DOUBLE_EQ(find_op(torch, Pass::kForward, "cp_merge").memory.bytes / o, 46.5 + 2.0);
  // repeat_kv before SDPA: the ring carries all 32 heads' K and V, 4x.
  const Job expanded = ring_job(2, CpMerge::kEagerFp32, true);
  EXPECT_DOUBLE_EQ(find_op(expanded, Pass::kForward, "cp_merge").memory.bytes / o, 46.5 + 8.0);
  EXPECT_DOUBLE_EQ(find_op(expanded, Pass::kForward, "cp_kv_exchange").collective.bytes,
                   4096.0 * 8192.0 * 2);
  // Backward: K/V in bf16 and dK/dV in fp32 on the ring.
  EXPECT_DOUBLE_EQ(find_op(torch, Pass::kBackward, "cp_kv_dkv_exchange").collective.bytes,
                   4096.0 * 2048.0 * (2 + 4));
  // Eager fp32 moves more than TE's fused merge, and more per element as the
  // ring grows (one more remote step each).
  const Job te = ring_job(2, CpMerge::kFused16Bit, false);
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    const std::string name = pass == Pass::kForward ? "cp_merge" : "cp_merge_bwd";
    EXPECT_GT(find_op(torch, pass, name).memory.bytes, 2 * find_op(te, pass, name).memory.bytes);
    const Job ring4 = ring_job(4, CpMerge::kEagerFp32, false);
    EXPECT_GT(find_op(ring4, pass, name).memory.bytes / (o / 2),
              find_op(torch, pass, name).memory.bytes / o);
  }
}

}  // namespace
}  // namespace podsim::strategies
