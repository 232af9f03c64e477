// What a layer runs again before its backward, and what it keeps meanwhile,
// under each framework's recompute policy: Megatron's attention core and
// --recompute-modules, torchtitan's op-level save list, MaxText's named
// remat with host offload, full recompute.
#include <string>
#include <utility>
#include <vector>

#include "strategies/op_builder.h"
#include "strategies/workload.h"

namespace podsim::strategies {

using ops::filter_ops;

namespace {

/// torchtitan's op-level selective checkpointing (parallelize_llama.py
/// _save_list and _custom_policy @9dec370): in each block the outputs of the
/// 1st, 3rd, 5th, ... aten.mm are saved -- torchtitan's separate wq, wk, wv,
/// wo, w1, w3, w2, in that order, so wq, wv, w1 and w2 (GeLU: wq, wv, w1) --
/// with SDPA's and the reduce-scatters'; everything else runs again before
/// the backward, element-wise ops included. torchao Float8 linears call
/// _scaled_mm, which the list does not name: every linear runs again.
std::vector<Op> matmul_save_list(const Job& job, const RankShape& r, std::vector<Op> ops) {
  // torchao's Float8Linear calls _scaled_mm, which the save list misses.
  const bool float8 =
      ops::quantized_linears(job) && job.software.fp8.recipe == Fp8Recipe::kTorchaoDynamic;
  const bool swiglu = job.model.mlp == MlpKind::kSwiglu;
  auto recompute_columns = [&](const Op& op) -> int64_t {
    if (float8) return op.gemm.n;
    if (op.name == "qkv") return r.kv_heads * r.head_dim;         // wk only
    if (op.name == "mlp_fc1") return swiglu ? op.gemm.n / 2 : 0;  // w3 only
    if (op.name == "mlp_fc2") return swiglu ? 0 : op.gemm.n;
    return op.gemm.n;  // wo, and any other matrix product
  };
  for (Op& op : ops) {
    if (op.kind != OpKind::kGemm || op.attention_core) continue;
    const int64_t n = recompute_columns(op);
    op.flops *= static_cast<double>(n) / static_cast<double>(op.gemm.n);
    op.gemm.n = n;
  }
  return filter_ops(ops, [](const Op& op) {
    if (op.attention_core) return false;  // SDPA saved (and its CP exchanges)
    if (op.kind == OpKind::kGemm) return op.gemm.n > 0;
    if (op.kind == OpKind::kCollective) {
      return op.collective.kind != CollectiveKind::kReduceScatter;
    }
    return true;
  });
}

// ---- Megatron's --recompute-modules (transformer_config.py recompute_modules,
// megatron/core/transformer/moe/README.md "Fine-grained Recomputation"):
// core_attn, mlp, moe and shared_experts checkpoint their module (its input
// kept, everything inside recomputed); layernorm, moe_act and mla_up_proj are
// output-discarding (CheckpointWithoutOutput): the module's output is freed
// after the forward and computed again before the backward needs it.

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
bool has(uint32_t modules, RecomputeModule m) { return (modules & module_bit(m)) != 0; }
bool is_norm(const Op& op) { return op.name == "attn_norm" || op.name == "mlp_norm"; }
bool is_mla_up(const Op& op) {
  return op.name == "mla_q_up" || op.name == "mla_kv_up" || op.name == "rope";
}
bool is_moe_act(const Op& op) {
  return op.name == "moe_expert_clamp" || op.name == "moe_expert_swiglu" ||
         op.name == "moe_expert_gelu";
}
bool is_dense_mlp(const Op& op) {
  return starts_with(op.name, "mlp_") && op.name != "mlp_norm" && op.name != "mlp_residual";
}
/// The op runs again under the selected modules.
bool recomputed_by_modules(const Op& op, uint32_t m, bool mla) {
  return (has(m, RecomputeModule::kCoreAttn) && op.attention_core) ||
         (has(m, RecomputeModule::kLayerNorm) && is_norm(op)) ||
         (has(m, RecomputeModule::kMlaUpProj) && mla && is_mla_up(op)) ||
         (has(m, RecomputeModule::kMlp) && is_dense_mlp(op)) ||
         (has(m, RecomputeModule::kMoe) && op.moe_part != MoePart::kNone) ||
         (has(m, RecomputeModule::kMoeAct) && is_moe_act(op)) ||
         (has(m, RecomputeModule::kSharedExperts) && op.moe_part == MoePart::kShared);
}
/// The first op of a checkpointed module keeps its input (the checkpoint's).
bool module_input(const Op& op) {
  return op.name == "mlp_fc1" || op.name == "moe_router" || op.name == "moe_shared_fc1";
}
/// Bytes of `op`'s saved tensors the selected modules free after the forward.
double discarded_by_modules(const Op& op, uint32_t m, bool mla) {
  double out = 0;
  // Checkpointed modules keep their input only.
  const bool checkpointed =
      (has(m, RecomputeModule::kMlp) && is_dense_mlp(op)) ||
      (has(m, RecomputeModule::kMoe) && op.moe_part != MoePart::kNone) ||
      (has(m, RecomputeModule::kSharedExperts) && op.moe_part == MoePart::kShared);
  if (checkpointed && !module_input(op)) out += op.saved_bytes;
  // Output-discarding modules: the freed output is the next op's saved input.
  // The norms' outputs are what the first GEMM after each norm saves.
  if (has(m, RecomputeModule::kLayerNorm) &&
      (op.name == "qkv" || op.name == "mla_q_down" || op.name == "mla_q_proj" ||
       op.name == "mla_kv_down" || module_input(op))) {
    out += op.saved_bytes;
  }
  // The activation's output is the saved input of the second expert GEMM;
  // the checkpointed function's own saved tensors (a clamp's) go too.
  if (has(m, RecomputeModule::kMoeAct) &&
      (op.name == "moe_expert_fc2" || op.name == "moe_expert_clamp")) {
    out += op.saved_bytes;
  }
  // MLA's up-projections (and RoPE) make the attention core's q, k and v.
  if (has(m, RecomputeModule::kMlaUpProj) && mla && op.attention_core) out += op.saved_bytes;
  return std::min(out, op.saved_bytes);
}

// ---- MaxText's custom remat with host offload (layers/decoders.py
// remat_policy "custom": jax.checkpoint_policies.save_and_offload_only_these_names,
// offload_dst "pinned_host"; the names are checkpoint_name()s in
// layers/attentions.py and linears.py): the named tensors are saved to host
// memory, everything else is recomputed from the layer's input, which the
// scan over layers keeps unless decoder_layer_input is offloaded too.

bool offloads(uint32_t bits, OffloadTensor t) { return (bits & offload_bit(t)) != 0; }

/// Columns of a forward GEMM whose output is offloaded (not recomputed).
int64_t offloaded_columns(const Job& job, const RankShape& r, const Op& op, uint32_t bits) {
  const bool qkv_all = offloads(bits, OffloadTensor::kQkvProj);
  if (op.name == "qkv") {
    int64_t n = 0;
    if (qkv_all || offloads(bits, OffloadTensor::kQueryProj)) n += r.heads * r.head_dim;
    if (qkv_all || offloads(bits, OffloadTensor::kKeyProj)) n += r.kv_heads * r.head_dim;
    if (qkv_all || offloads(bits, OffloadTensor::kValueProj)) n += r.kv_heads * r.head_dim;
    return std::min(n, op.gemm.n);
  }
  if (op.name == "attn_out") return offloads(bits, OffloadTensor::kOutProj) ? op.gemm.n : 0;
  if (op.name == "mlp_fc1") {
    if (job.model.mlp != MlpKind::kSwiglu) {
      return offloads(bits, OffloadTensor::kMlpWi0) ? op.gemm.n : 0;
    }
    int64_t n = 0;
    if (offloads(bits, OffloadTensor::kMlpWi0)) n += op.gemm.n / 2;
    if (offloads(bits, OffloadTensor::kMlpWi1)) n += op.gemm.n / 2;
    return n;
  }
  if (op.name == "mlp_fc2") return offloads(bits, OffloadTensor::kMlpWo) ? op.gemm.n : 0;
  return 0;
}

std::vector<Op> offload_recompute(const Job& job, const RankShape& r, std::vector<Op> ops) {
  const uint32_t bits = job.plan.activation_offload;
  for (Op& op : ops) {
    if (op.kind != OpKind::kGemm || op.attention_core) continue;
    const int64_t n = op.gemm.n - offloaded_columns(job, r, op, bits);
    op.flops *= static_cast<double>(n) / static_cast<double>(op.gemm.n);
    op.gemm.n = n;
  }
  const bool context_saved = offloads(bits, OffloadTensor::kContext);
  return filter_ops(ops, [context_saved](const Op& op) {
    if (op.attention_core) return !context_saved;
    if (op.kind == OpKind::kGemm) return op.gemm.n > 0;
    return true;
  });
}

double offloaded_bytes(const Job& job, const RankShape& r, const std::vector<Op>& forward) {
  const uint32_t bits = job.plan.activation_offload;
  double total = 0;
  if (offloads(bits, OffloadTensor::kDecoderLayerInput)) {
    total += d(r.norm_tokens) * d(r.hidden) * r.e;
  }
  for (const Op& op : forward) {
    if (op.kind == OpKind::kGemm && !op.attention_core) {
      total += d(op.gemm.m) * d(offloaded_columns(job, r, op, bits)) * d(op.gemm.batch) * r.e;
    }
    if (op.attention_core && op.kind == OpKind::kAttention &&
        offloads(bits, OffloadTensor::kContext)) {
      total += d(r.tokens) * d(op.attention.heads * op.attention.head_dim) * r.e;
    }
  }
  return total;
}

std::vector<Op> as_recompute(std::vector<Op> ops) {
  for (Op& op : ops) {
    op.role = OpRole::kRecompute;
    op.model_flops = 0;
    op.saved_bytes = 0;
    op.saved_core_bytes = 0;
  }
  return ops;
}

}  // namespace

bool named_recompute_policy(const Job& job) {
  return job.plan.activation_offload != 0 ||
         (job.plan.recompute.mode == RecomputeMode::kSelective && job.plan.recompute.modules != 0);
}

PolicyTensors policy_tensors(const Job& job, const std::vector<Op>& forward) {
  const RankShape r = rank_shape(job);
  PolicyTensors t;
  if (job.plan.activation_offload != 0) {
    // On the device: the layer input, unless it goes to the host too; what
    // the recompute brings back is the whole layer's (counted whole).
    if (!offloads(job.plan.activation_offload, OffloadTensor::kDecoderLayerInput)) {
      t.kept.push_back(d(r.norm_tokens) * d(r.hidden) * r.e);
    }
    for (const Op& op : forward) {
      for (int64_t i = 0; i < op.count; ++i) {
        if (op.saved_bytes > 0) t.recomputed.push_back(op.saved_bytes);
        if (op.saved_core_bytes > 0) t.recomputed.push_back(op.saved_core_bytes);
      }
    }
    t.offloaded_bytes = offloaded_bytes(job, r, forward);
    return t;
  }
  const uint32_t m = job.plan.recompute.modules;
  const bool mla = job.model.attention.kind == AttentionKind::kMla;
  for (const Op& op : forward) {
    const double dropped = discarded_by_modules(op, m, mla);
    for (int64_t i = 0; i < op.count; ++i) {
      if (op.saved_bytes - dropped > 0) t.kept.push_back(op.saved_bytes - dropped);
      if (dropped > 0) t.recomputed.push_back(dropped);
      if (op.saved_core_bytes > 0) {
        (has(m, RecomputeModule::kCoreAttn) ? t.recomputed : t.kept).push_back(op.saved_core_bytes);
      }
    }
  }
  return t;
}

namespace ops {

std::vector<Op> recomputed_forward(const Job& job, const RankShape& r, const LayerKind& kind,
                                   std::vector<Op> forward) {
  if (kind.full_recompute) return as_recompute(std::move(forward));
  if (job.plan.activation_offload != 0) {
    return as_recompute(offload_recompute(job, r, std::move(forward)));
  }
  if (named_recompute_policy(job)) {
    const uint32_t m = job.plan.recompute.modules;
    const bool mla = job.model.attention.kind == AttentionKind::kMla;
    return as_recompute(
        filter_ops(forward, [m, mla](const Op& op) { return recomputed_by_modules(op, m, mla); }));
  }
  switch (job.plan.recompute.mode) {
    case RecomputeMode::kNone:
      return {};
    case RecomputeMode::kSelective:
      if (job.software.selective == SelectiveRecompute::kMatmulSaveList) {
        return as_recompute(matmul_save_list(job, r, std::move(forward)));
      }
      return as_recompute(filter_ops(forward, [](const Op& op) { return op.attention_core; }));
    case RecomputeMode::kFull:
    case RecomputeMode::kEvery:
      return as_recompute(std::move(forward));
  }
  return {};
}

}  // namespace ops

}  // namespace podsim::strategies
