// The element-wise work of a layer as the training framework implements it
// (SoftwarePolicy::elementwise): norms, residual adds (with dropout),
// rotary embeddings, the grouped-K/V copy and MLP activations. Bytes are
// HBM traffic per instance, counted from each implementation's kernels
// (docs/research/kernels-host-power.md 2.1-2.5):
// - fused (Transformer Engine, apex, jit fusers; XLA): one kernel per piece,
//   reading its inputs and writing its outputs once;
// - eager (PyTorch ops as torchtitan and llm-foundry write them): one kernel
//   per op, each reading and writing HBM; torchtitan's RMSNorm and RoPE run
//   in fp32;
// - compiled (torch.compile per block, XLA): the fused kernels, with the
//   residual add and the next norm in one kernel and the grouped-K/V copy
//   folded into the rotary kernel (Inductor fuses every chain between extern
//   kernels; the block boundary keeps the last add apart); the norm kernels
//   stream at the software's compiled_norm_{forward,backward}_bandwidth of a
//   hand-written one. A rotary embedding written with complex numbers keeps
//   its eager kernels: Inductor generates no code for complex tensors and
//   runs those ops as ATen fallbacks (torch/_inductor/lowering.py,
//   unsupported_input_tensor; torchtitan issue #15).
#include <string>

#include "strategies/op_builder.h"

namespace podsim::strategies::ops {

namespace {

// torchtitan's RMSNorm in fp32 (torchtitan/models/norms.py l.96-101 @9dec370):
// float() r2 w4, pow r4 w4, mean r4, +eps, rsqrt (tiny), x*r r4 w4, type_as
// r4 w2, *weight r2 w2 = 8 kernels, 36 B per element. Backward from the
// autograd formulas of those ops (weight-mul 12, cast 6, mul 24, mean 4, pow
// ~28, fp32 grad accumulation 12, final cast 6): ~14 kernels, ~92 B (an
// estimate to check with torch.profiler, kernels-host-power.md 2.1).
constexpr double kEagerNormBytes = 36, kEagerNormBwdBytes = 92;
constexpr int32_t kEagerNormKernels = 8, kEagerNormBwdKernels = 14;
// RoPE per tensor: float() r2 w4, complex multiply r4 w4, type_as r4 w2 =
// 3 kernels, 20 B per element (model.py l.108-113); backward the same. Under
// torch.compile too: the complex multiply is an ATen fallback between the
// two casts, which Inductor cannot fuse across it.
constexpr double kEagerRopeBytes = 20;
constexpr int32_t kEagerRopeKernels = 3;
// SwiGLU eager: silu r2 w2, mul r4 w2 = 2 kernels, 10 B per ffn element;
// backward ~3 kernels, 18 B (model.py l.253).
constexpr double kEagerSwigluBytes = 10, kEagerSwigluBwdBytes = 18;
constexpr int32_t kEagerSwigluBwdKernels = 3;

// A clamped GLU's clamp as PyTorch ops of its own, counted from Megatron-Core's
// weighted_bias_quick_geglu_impl (fused_bias_geglu.py l.410-431 @d98e8a6), per
// element of the activation's output (each half of its input has as many):
// forward x_glu.clamp(max) r e w e, x_linear.clamp(min, max) r e w e, cat
// r 2e w 2e = 3 kernels, 8e bytes. Backward from autograd's formulas
// (clamp_backward: where(mask, grad, 0) with 1-byte masks; split's backward
// a cat; cat's backward views): le + where 3e + 2, ge + le + logical_and_ +
// where 4e + 6, cat 4e = 7 kernels, 11e + 8 bytes. The clamp keeps its
// input, the activation the clamped copy: 2e bytes saved per element more.
// Passes: bytes per output element in units of e.
constexpr double kEagerClampPasses = 8, kEagerClampBwdPasses = 11, kEagerClampBwdMaskBytes = 8;
constexpr int32_t kEagerClampKernels = 3, kEagerClampBwdKernels = 7;

bool compiled(const Job& job) { return job.software.elementwise.compiled; }
/// Whether the compiler covers code in `region`: a per-block compiler
/// (compiled_block_calls) leaves what is around the blocks eager.
bool compiled(const Job& job, CodeRegion region) {
  return compiled(job) && (region == CodeRegion::kBlock || !job.software.compiled_block_calls);
}
// What a compiler's normalization kernels stream against hand-written ones
// (1 where no compiler generates them).
double norm_forward_bandwidth(const Job& job, CodeRegion region) {
  return compiled(job, region) ? job.software.elementwise.compiled_norm_forward_bandwidth : 1.0;
}
double norm_backward_bandwidth(const Job& job, CodeRegion region) {
  return compiled(job, region) ? job.software.elementwise.compiled_norm_backward_bandwidth : 1.0;
}
bool eager(ChainImpl impl, const Job& job) { return impl == ChainImpl::kEager && !compiled(job); }

double hidden_elements(const RankShape& r) { return d(r.norm_tokens) * d(r.hidden); }

}  // namespace

void norm_forward(const Job& job, const RankShape& r, Builder& b, const char* name,
                  CodeRegion region) {
  const double elems = hidden_elements(r);
  const bool fp32_eager =
      job.software.elementwise.norm == NormImpl::kEagerFp32 && !compiled(job, region);
  Op& op = fp32_eager
               ? b.memory(name, kEagerNormBytes * elems, norm_flops(job) * elems, kEagerNormKernels)
               : b.memory(name, 2 * elems * r.e, norm_flops(job) * elems);
  op.memory.bandwidth_fraction = norm_forward_bandwidth(job, region);
  op.saved_bytes = elems * r.e;
}

void norm_backward(const Job& job, const RankShape& r, Builder& b, const char* name,
                   CodeRegion region) {
  const double elems = hidden_elements(r);
  const double flops = kBackwardFlopsFactor * norm_flops(job) * elems;
  if (job.software.elementwise.norm == NormImpl::kEagerFp32 && !compiled(job, region)) {
    b.memory(name, kEagerNormBwdBytes * elems, flops, kEagerNormBwdKernels);
  } else {
    b.memory(name, 5 * elems * r.e, flops).memory.bandwidth_fraction =
        norm_backward_bandwidth(job, region);
  }
}

void residual_forward(const Job& job, const RankShape& r, Builder& b, const char* name) {
  const double elems = hidden_elements(r);
  const double flops = (kResidualFlops + (r.dropout ? kDropoutFlops : 0.0)) * elems;
  // Fused bias-dropout-add reads two tensors and writes one (and the mask);
  // eager, the dropout is a kernel of its own before the add.
  const bool eager_ops = eager(job.software.elementwise.residual, job) && r.dropout;
  const double dropout_pass = eager_ops ? 2 * elems * r.e : 0.0;
  Op& op = b.memory(name, 3 * elems * r.e + (r.dropout ? elems : 0.0) + dropout_pass, flops,
                    eager_ops ? 2 : 1);
  op.saved_bytes = r.dropout ? elems : 0.0;
}

void residual_backward(const Job& job, const RankShape& r, Builder& b, const char* name) {
  const double elems = hidden_elements(r);
  const bool eager_ops = eager(job.software.elementwise.residual, job);
  // Eager autograd adds the two branches' gradients at the residual's fork
  // (read 2, write 1); fused kernels fold that into the norm's backward.
  const double sum = eager_ops ? 3 * elems * r.e : 0.0;
  const double dropout = r.dropout ? elems * (2 * r.e + 1) : 0.0;
  const int32_t kernels = (eager_ops ? 1 : 0) + (r.dropout ? 1 : 0);
  if (kernels == 0) return;  // the gradient passes to both branches unchanged
  b.memory(name, sum + dropout, kDropoutFlops * elems, kernels);
}

void residual_norm_forward(const Job& job, const RankShape& r, Builder& b, const char* residual,
                           const char* norm) {
  if (!compiled(job)) {
    residual_forward(job, r, b, residual);
    norm_forward(job, r, b, norm);
    return;
  }
  // One kernel: read x and the block output, write the sum and its norm.
  const double elems = hidden_elements(r);
  const double flops =
      (kResidualFlops + (r.dropout ? kDropoutFlops : 0.0) + norm_flops(job)) * elems;
  Op& op = b.memory(std::string(residual) + "_" + norm, 4 * elems * r.e + (r.dropout ? elems : 0.0),
                    flops);
  op.memory.bandwidth_fraction = norm_forward_bandwidth(job, CodeRegion::kBlock);
  op.saved_bytes = elems * r.e + (r.dropout ? elems : 0.0);
}

namespace {

/// Elements of the rotated q and k, and of a K (or V) tensor before and
/// after the copy to the full head count.
struct RopeSizes {
  double qk = 0, kv = 0, full = 0;
  bool repeat = false;
};
RopeSizes rope_sizes(const Job& job, const RankShape& r) {
  RopeSizes s;
  const double tokens = d(r.tokens), dh = d(r.head_dim);
  s.qk = tokens * d(r.heads + r.kv_heads) * dh;
  s.kv = tokens * d(r.kv_heads) * dh;
  s.full = tokens * d(r.heads) * dh;
  s.repeat = job.software.elementwise.repeat_kv && r.kv_heads < r.heads;
  return s;
}

}  // namespace

void rope_forward(const Job& job, const RankShape& r, Builder& b) {
  if (r.learned_positions) return;
  const RopeSizes s = rope_sizes(job, r);
  if (job.software.elementwise.rope == RopeImpl::kEagerFp32Complex) {
    b.memory("rope", kEagerRopeBytes * s.qk, kRopeFlops * s.qk, 2 * kEagerRopeKernels);
  } else {
    b.memory("rope", 2 * s.qk * r.e, kRopeFlops * s.qk);
  }
  if (!s.repeat) return;
  if (compiled(job)) {
    // K is written expanded by the rotary's last kernel (full - kv more
    // elements written) and V copied (kv read, full written): one more kernel.
    b.memory("repeat_kv", 2 * s.full * r.e, 0);
  } else {
    // expand + reshape of K and V: read the grouped heads, write them all.
    b.memory("repeat_kv", 2 * (s.kv + s.full) * r.e, 0, 2);
  }
}

void rope_backward(const Job& job, const RankShape& r, Builder& b) {
  if (r.learned_positions) return;
  const RopeSizes s = rope_sizes(job, r);
  // The gradient of the copy sums the repeated heads back.
  if (s.repeat) {
    b.memory("repeat_kv_bwd", 2 * (s.kv + s.full) * r.e, s.full, compiled(job) ? 1 : 2);
  }
  if (job.software.elementwise.rope == RopeImpl::kEagerFp32Complex) {
    b.memory("rope_bwd", kEagerRopeBytes * s.qk, kRopeFlops * s.qk, 2 * kEagerRopeKernels);
  } else {
    b.memory("rope_bwd", 2 * s.qk * r.e, kRopeFlops * s.qk);
  }
}

namespace {

bool eager_clamp(const Job& job) {
  if (!job.model.clamped_glu) return false;
  const ElementwisePolicy& e = job.software.elementwise;
  return e.activation_clamp == ClampImpl::kEager || eager(e.activation, job);
}

}  // namespace

Op* clamp_forward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                  double elements) {
  if (!eager_clamp(job)) return nullptr;
  Op& op = b.memory(name, kEagerClampPasses * r.e * elements, 2 * elements, kEagerClampKernels);
  op.saved_bytes = 2 * elements * r.e;
  return &op;
}

Op* clamp_backward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                   double elements) {
  if (!eager_clamp(job)) return nullptr;
  return &b.memory(name, (kEagerClampBwdPasses * r.e + kEagerClampBwdMaskBytes) * elements,
                   3 * elements, kEagerClampBwdKernels);
}

void activation_forward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                        double rows, int64_t ffn) {
  const double out = rows * d(ffn);
  if (job.model.mlp == MlpKind::kSwiglu) {
    clamp_forward(job, r, b, name + "_clamp", out);
    const bool eager_ops = eager(job.software.elementwise.activation, job);
    Op& op = eager_ops ? b.memory(name + "_swiglu", kEagerSwigluBytes * out, kSwigluFlops * out, 2)
                       : b.memory(name + "_swiglu", 3 * out * r.e, kSwigluFlops * out);
    op.saved_bytes = 2 * out * r.e;
  } else {
    // GeLU is one kernel either way (F.gelu or the jit bias-GeLU; a bias
    // rides in the linear's epilogue).
    b.memory(name + "_bias_gelu", 2 * out * r.e, kGeluFlops * out).saved_bytes = out * r.e;
  }
}

void activation_backward(const Job& job, const RankShape& r, Builder& b, const std::string& name,
                         double rows, int64_t ffn) {
  const double out = rows * d(ffn);
  if (job.model.mlp == MlpKind::kSwiglu) {
    const double flops = kBackwardFlopsFactor * kSwigluFlops * out;
    if (eager(job.software.elementwise.activation, job)) {
      b.memory(name + "_swiglu_bwd", kEagerSwigluBwdBytes * out, flops, kEagerSwigluBwdKernels);
    } else {
      b.memory(name + "_swiglu_bwd", 5 * out * r.e, flops);
    }
    clamp_backward(job, r, b, name + "_clamp_bwd", out);
  } else {
    b.memory(name + "_gelu_bwd", 3 * out * r.e, kBackwardFlopsFactor * kGeluFlops * out);
  }
}

namespace {

/// Whether the fp8 casts take last step's amax history (TE delayed scaling),
/// as the recipe or, where the recipe is the software's, its preset says.
bool delayed_scaling(const Job& job) {
  switch (job.training.recipe) {
    case PrecisionRecipe::kDelayed:
    case PrecisionRecipe::kFp8Full:
      return true;
    case PrecisionRecipe::kSoftware:
      return job.software.fp8.recipe == Fp8Recipe::kTeDelayed;
    default:
      return false;
  }
}

/// HBM bytes per element and kernels of one cast of a 16-bit GEMM operand
/// into the low-precision format (with the second layout wgrad or dgrad
/// needs), by recipe. Block scales add their bytes: one per 32 elements
/// (MXFP8, E8M0), one per 16 (NVFP4, E4M3), four per 128 (blockwise, fp32).
struct CastKernels {
  double bytes;
  int32_t kernels;
};
CastKernels cast_kernels(const Job& job) {
  const Fp8Policy& fp8 = job.software.fp8;
  switch (job.training.recipe) {
    case PrecisionRecipe::kDelayed:
    case PrecisionRecipe::kFp8Full:
      // TE cast_transpose with last step's scale, the amax taken in the same
      // kernel (transformer_engine/common/recipe DelayedScaling): read 2,
      // write 1 + 1 (the fp8 tensor and its transpose).
      return {4, 1};
    case PrecisionRecipe::kTensorwise:
      // TE Float8CurrentScaling: the scale needs this tensor's amax before
      // the cast, so one reduction pass (read 2) and then cast_transpose
      // (read 2, write 1 + 1) (TE docs fp8_current_scaling.rst; TE's
      // gemm_profiling.rst measures quantization at ~17% of an H200 FP8
      // layer's autocast time, docs/research/moe.md 6).
      return {6, 2};
    case PrecisionRecipe::kBlockwise:
      // TE Float8BlockScaling: amax per 1x128 block (128x128 for weights)
      // local to the tile, so one kernel reads 2 and writes the rowwise and
      // the transposed columnwise copies, 1 + 1, with an fp32 scale per 128
      // elements each (quantize_transpose_vector_blockwise; TE
      // fp8_blockwise_scaling.rst).
      return {2 + 2 + 2 * 4.0 / 128, 1};
    case PrecisionRecipe::kMxfp8:
      // TE MXFP8BlockScaling: one kernel writes the rowwise and columnwise
      // (1x32 blocks along each dimension) fp8 copies and their E8M0 scales,
      // the scale swizzle fused (TE mxfp8.rst; TE PR 2019).
      return {2 + 2 + 2.0 / 32, 1};
    case PrecisionRecipe::kNvfp4:
      // TE NVFP4BlockScaling: the per-tensor fp32 scale needs a global amax
      // pass (read 2), and the columnwise operand of the wgrad GEMM goes
      // through a 16x16 random Hadamard transform whose amax is taken anew
      // (read 2); one quantize kernel reads 2 and writes the 4-bit rowwise
      // and columnwise copies with an E4M3 scale per 16 elements each
      // (recipe docstring; NVIDIA, "Pretraining LLMs with NVFP4",
      // arXiv:2509.25149, section 4).
      return {2 + 2 + 2 + 2 * (0.5 + 1.0 / 16), 3};
    case PrecisionRecipe::kAqtInt8:
      // AQT int8 (MaxText quantizations.py _get_int8_quant_config,
      // aqt config_v3): a per-channel max reduction (read 2), then scale,
      // round and cast (read 2, write 1), each operand of each dot_general,
      // fused by XLA into neighbouring fusions.
      return {5, 2};
    case PrecisionRecipe::kSoftware:
      break;
  }
  if (fp8.casts == ChainImpl::kEager) {
    // torchao dynamic scaling, eager (float8_utils.py tensor_to_amax,
    // to_fp8_saturated): abs r2 w2, amax r2; x * scale r2 w2, clamp r2 w2,
    // to(float8) r2 w1; the transposed operand made contiguous for
    // _scaled_mm r1 w1 (frameworks-sharding-memory.md 3).
    return {19, 6};
  }
  if (delayed_scaling(job)) return {4, 1};  // as kDelayed above
  // Dynamic scaling fused by a compiler: the amax must be known before the
  // cast, so one reduction pass (r2) and one cast kernel writing both
  // layouts (r2 w1 + 1).
  return {6, 2};
}

}  // namespace

void fp8_forward_casts(const Job& job, Builder& b, const std::string& name, double input_elements,
                       double weight_elements, bool after_norm) {
  if (!quantized_linears(job)) return;
  const Fp8Policy& fp8 = job.software.fp8;
  const CastKernels cast = cast_kernels(job);
  if (!(after_norm && fp8.cast_fused_with_norm)) {
    b.memory(name + "_input_fp8_cast", cast.bytes * input_elements, input_elements, cast.kernels);
  }
  // Cached weights (WeightCast::kPerStep) are cast once per optimizer step,
  // 4 B per weight: nothing per micro-batch.
  if (fp8.weight_cast == WeightCast::kPerCall) {
    b.memory(name + "_weight_fp8_cast", cast.bytes * weight_elements, weight_elements,
             cast.kernels);
  }
}

void fp8_grad_cast(const Job& job, Builder& b, const std::string& name, double elements) {
  if (!quantized_linears(job)) return;
  const CastKernels cast = cast_kernels(job);
  b.memory(name + "_grad_fp8_cast", cast.bytes * elements, elements, cast.kernels);
}

namespace {

constexpr double kAmaxBytes = 4;  // one fp32 amax

}  // namespace

void fp8_sequence_parallel_amax(const Job& job, const RankShape& r, Builder& b,
                                const std::string& name) {
  if (job.training.precision != sim::NumberFormat::kFp8 || !quantized_linears(job) ||
      job.training.recipe != PrecisionRecipe::kTensorwise || !r.sp) {
    return;
  }
  // TE Float8CurrentScaling: with sequence_parallel the column-parallel
  // input quantizer and the row-parallel grad-output quantizer get
  // with_amax_reduction over tp_group (module/linear.py, layernorm_linear.py,
  // layernorm_mlp.py _customize_quantizers_float8_current_scaling); the C++
  // quantizer all-reduces the fp32 amax (MAX) and waits before the cast
  // (csrc quantizer.cpp Float8CurrentScalingQuantizer).
  b.collective(name + "_amax_all_reduce", Dim::kTp, CollectiveKind::kAllReduce, kAmaxBytes);
}

std::vector<Op> fp8_amax_reduction_ops(const Job& job, double gemms, bool forward) {
  if (job.training.precision != sim::NumberFormat::kFp8 || !quantized_linears(job) ||
      !delayed_scaling(job) || !job.software.fp8.amax_all_reduce || !(gemms > 0)) {
    return {};
  }
  // One fp32 amax per fp8 tensor with Megatron's amax_history_len 1: per
  // GEMM 3 forward (input, weight, output), 2 backward (output and input
  // gradients) (TE module/base.py set_meta_tensor).
  const double amaxes = (forward ? 3.0 : 2.0) * gemms;
  // FP8GlobalStateManager.reduce_and_update_fp8_tensors (TE fp8.py @v1.11
  // l.313-375): torch.cat of the region's amaxes (read and write them), a
  // blocking all_reduce(MAX, async_op=False) that the compute stream waits
  // for, over Megatron's amax group tp x dp x cp
  // (get_amax_reduction_group(with_context_parallel=True), transformer_block.py),
  // then one fused_amax_and_scale_update_after_reduction kernel (reads the
  // amaxes, the history and the scales; writes history and scales).
  const RankShape r = rank_shape(job);
  Builder b(r, forward ? OpRole::kForward : OpRole::kInputGrad);
  b.memory("fp8_amax_cat", 2 * kAmaxBytes * amaxes, 0);
  b.stage_collective("fp8_amax_all_reduce", CollectiveKind::kAllReduce, kAmaxBytes * amaxes,
                     job.plan.tp * job.plan.cp * job.plan.dp);
  b.memory("fp8_scale_update", 5 * kAmaxBytes * amaxes, amaxes);
  return b.take();
}

}  // namespace podsim::strategies::ops

namespace podsim::strategies {

bool promotes_fp8_accumulation(const Job& job, const Op& op) {
  if (op.kind != OpKind::kGemm || op.format != sim::NumberFormat::kFp8) return false;
  if (op.role != OpRole::kInputGrad && op.role != OpRole::kWeightGrad) return false;
  if (job.software.fp8.gradient_accumulation != Fp8Accumulation::kPromoted) return false;
  switch (job.training.recipe) {
    case PrecisionRecipe::kSoftware:
    case PrecisionRecipe::kDelayed:
    case PrecisionRecipe::kTensorwise:
    case PrecisionRecipe::kFp8Full:
      return true;
    default:
      return false;
  }
}

}  // namespace podsim::strategies
