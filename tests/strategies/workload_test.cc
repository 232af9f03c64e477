#include "strategies/workload.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "strategies/model_counts.h"
#include "tests/strategies/model_presets.h"
#include "tests/strategies/test_util.h"

namespace podsim::strategies {
namespace {

using testing::preset_job;

double billions_rounded(double params, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(params / 1e9 * scale) / scale;
}

// hardware.md section 5 derives these totals with the standard count
// (attention + MLP matrices + norms + embeddings); we reproduce them exactly.
TEST(Parameters, LlamaPresetsMatchHardwareMd) {
  // Llama 3 8B by hand: per layer 2*4096^2 (q,o) + 2*4096*1024 (k,v)
  // + 3*4096*14336 (SwiGLU) + 2*4096 (norms) = 218,112,000; x32, plus two
  // 128256x4096 tables and the final norm.
  const ParamCount p8 = count_parameters(*testing::model_preset("llama3-8b"), 8192);
  EXPECT_DOUBLE_EQ(p8.per_layer, 218'112'000.0);
  EXPECT_DOUBLE_EQ(p8.total, 8'030'261'248.0);
  EXPECT_DOUBLE_EQ(billions_rounded(p8.total, 2), 8.03);
  EXPECT_DOUBLE_EQ(
      billions_rounded(count_parameters(*testing::model_preset("llama3-70b"), 8192).total, 2),
      70.55);
  EXPECT_DOUBLE_EQ(count_parameters(*testing::model_preset("llama3-70b"), 8192).total,
                   70'553'706'496.0);
  EXPECT_DOUBLE_EQ(
      billions_rounded(count_parameters(*testing::model_preset("llama3-405b"), 8192).total, 2),
      405.85);
  EXPECT_DOUBLE_EQ(
      billions_rounded(count_parameters(*testing::model_preset("llama2-7b"), 4096).total, 2), 6.74);
  EXPECT_DOUBLE_EQ(
      billions_rounded(count_parameters(*testing::model_preset("llama2-70b"), 4096).total, 2),
      68.98);
  const ParamCount mix = count_parameters(*testing::model_preset("mixtral-8x7b"), 4096);
  EXPECT_DOUBLE_EQ(billions_rounded(mix.total, 1), 46.7);
  EXPECT_DOUBLE_EQ(billions_rounded(mix.active, 1), 12.9);
  EXPECT_EQ(p8.biases, 0.0);
}

TEST(Parameters, Gpt3MatchesHardwareMd) {
  const ParamCount p = count_parameters(*testing::model_preset("gpt3-175b"), 2048);
  // 96 layers x 12 h^2 + tied 50257 x h table + 2048 x h positions + norms.
  const double h = 12288;
  EXPECT_DOUBLE_EQ(p.per_layer_matmul, 12 * h * h);
  EXPECT_DOUBLE_EQ(billions_rounded(p.total_excluding_biases(), 1), 174.6);
  EXPECT_DOUBLE_EQ(p.output, 0.0);  // tied
  EXPECT_GT(p.biases, 0.0);
  EXPECT_LT(p.biases, 2e7);
}

TEST(Flops, ForwardGemmFlopsAreTwiceMatmulParamsTimesTokens) {
  for (const char* name : {"llama3-8b", "gpt3-175b", "mixtral-8x7b"}) {
    Job job = preset_job(name, 2048, 8);
    const ParamCount p = count_parameters(job.model, 2048);
    const Work fwd = make_work(job, Pass::kForward, job.model.layers, true, true);
    double gemm = 0;
    for (const Segment& s : fwd.segments) {
      for (const Op& op : s.ops) {
        if (op.kind == OpKind::kGemm) gemm += static_cast<double>(s.repeat * op.count) * op.flops;
      }
    }
    const double tokens = 2048;
    const double matmul_params =
        static_cast<double>(job.model.layers) * p.per_layer_matmul + p.embedding;
    EXPECT_NEAR(gemm / (2 * matmul_params * tokens), 1.0, 1e-12) << name;
  }
}

TEST(Flops, BackwardModelFlopsAreTwiceForward) {
  for (const char* name : {"llama3-8b", "gpt3-175b", "mixtral-8x7b"}) {
    Job job = preset_job(name, 4096, 8);
    job.plan.tp = 2;
    job.plan.sequence_parallel = true;
    const double f = make_work(job, Pass::kForward, 3, true, true).model_flops();
    const double b = make_work(job, Pass::kBackward, 3, true, true).model_flops();
    EXPECT_NEAR(b / f, 2.0, 1e-12) << name;
    const double bi = make_work(job, Pass::kBackwardInput, 3, true, true).model_flops();
    const double bw = make_work(job, Pass::kBackwardWeight, 3, true, true).model_flops();
    EXPECT_NEAR((bi + bw) / b, 1.0, 1e-12) << name;
  }
}

TEST(Flops, CausalAttentionCountsHalfTheScores) {
  Job job = preset_job("gpt3-175b", 2048, 8);
  const std::vector<Op> fwd = layer_ops(job, Pass::kForward);
  double attn_model = 0, attn_hw = 0;
  for (const Op& op : fwd) {
    if (op.kind == OpKind::kAttention) {
      attn_model += op.model_flops;
      attn_hw += op.flops;
    }
  }
  // QK^T and PV: 2 * 2*s*s*d per head, halved by the causal mask.
  const double s = 2048, heads = 96, dh = 128;
  EXPECT_DOUBLE_EQ(attn_model, 4 * s * s * dh * heads / 2);
  EXPECT_DOUBLE_EQ(attn_hw, attn_model);
  // Without flash the s*s products run in full; model FLOPs stay the same.
  job.options.flash_attention = false;
  double model = 0, hw = 0;
  for (const Op& op : layer_ops(job, Pass::kForward)) {
    if (op.attention_core && op.kind == OpKind::kGemm) {
      model += op.model_flops;
      hw += op.flops;
    }
  }
  EXPECT_DOUBLE_EQ(model, attn_model);
  EXPECT_DOUBLE_EQ(hw, 2 * attn_model);
}

double total_model_flops_over_ranks(const Job& job) {
  double total = 0;
  const double ranks_per_stage = static_cast<double>(job.plan.tp * job.plan.cp * job.plan.dp);
  for (int64_t s = 0; s < job.plan.pp; ++s) {
    for (const ChunkInfo& c : stage_chunks(job, s)) {
      total +=
          static_cast<double>(micro_batches(job)) * ranks_per_stage *
          (make_work(job, Pass::kForward, c.layers(), c.has_embedding, c.has_head).model_flops() +
           make_work(job, Pass::kBackward, c.layers(), c.has_embedding, c.has_head).model_flops());
    }
  }
  return total;
}

// The model FLOPs are counted on the unsharded model; summing every rank's
// sharded work must give the same number when the shards divide evenly (ring
// CP's balanced chunks included).
TEST(Flops, ShardedWorkSumsToModelFlops) {
  for (ContextAlgorithm algo :
       {ContextAlgorithm::kRing, ContextAlgorithm::kAllGather, ContextAlgorithm::kUlysses}) {
    Job job = preset_job("llama3-8b", 8192, 16);
    job.plan.tp = 2;
    job.plan.cp = 4;
    job.plan.pp = 2;
    job.plan.dp = 2;
    job.plan.context = algo;
    job.plan.sequence_parallel = true;
    ASSERT_TRUE(validate(job).empty());
    EXPECT_NEAR(total_model_flops_over_ranks(job) / model_flops_per_step(job), 1.0, 1e-12);
  }
  // MoE, and KV heads replicated (tp 16 > 8 KV heads), with and without SP:
  // work a rank repeats for its TP peers counts as model FLOPs once.
  for (bool sp : {false, true}) {
    Job moe = preset_job("mixtral-8x7b", 4096, 16);
    moe.plan.tp = 2;
    moe.plan.dp = 4;
    moe.plan.ep = 4;
    moe.plan.sequence_parallel = sp;
    ASSERT_TRUE(validate(moe).empty());
    EXPECT_NEAR(total_model_flops_over_ranks(moe) / model_flops_per_step(moe), 1.0, 1e-12);
    Job gqa = preset_job("llama3-70b", 4096, 4);
    gqa.plan.tp = 16;
    gqa.plan.sequence_parallel = sp;
    ASSERT_TRUE(validate(gqa).empty());
    EXPECT_NEAR(total_model_flops_over_ranks(gqa) / model_flops_per_step(gqa), 1.0, 1e-12);
  }
}

TEST(Flops, ConventionsAgreeWhereTheyShould) {
  // The exact count is 6 x (matrix parameters, output layer included) per
  // token plus 12 l (heads*head_dim) s per token halved for causal attention.
  Job job = preset_job("llama3-8b", 8192, 4);
  const ParamCount p = count_parameters(job.model, 8192);
  const double tokens = 4.0 * 8192, l = 32, hq = 4096, s = 8192, v = 128256, h = 4096;
  const double exact = model_flops_per_step(job);
  EXPECT_NEAR(exact / (tokens * (6 * (l * p.per_layer_matmul + v * h) + 6 * l * hq * s)), 1.0,
              1e-12);
  // 6N without embeddings (N = layers + final norm), halved attention term.
  EXPECT_NEAR(flops_6n_convention(job, false, true) /
                  (tokens * (6 * (l * p.per_layer + p.final_norm) + 6 * l * hq * s)),
              1.0, 1e-12);
  EXPECT_NEAR(flops_6n_convention(job, true, false) / (tokens * (6 * p.total + 12 * l * hq * s)),
              1.0, 1e-12);
  // Megatron eq. 3 = B s (96 l h^2 + 16 l h s + 6 V h): 4 passes of the
  // layers (full recompute), non-causal attention, 3 of the logits layer.
  Job gpt = preset_job("gpt3-175b", 2048, 8);
  const double gh = 12288, gl = 96, gs = 2048, gv = 50257;
  EXPECT_NEAR(flops_megatron_sc21(gpt) /
                  (8 * gs * (4.0 / 3.0 * (72 * gl * gh * gh + 12 * gl * gh * gs) + 6 * gv * gh)),
              1.0, 1e-12);
}

TEST(Flops, HardwareFlopsIncludeRecompute) {
  Job job = preset_job("gpt3-175b", 2048, 64);
  job.plan.tp = 8;
  job.plan.pp = 8;
  job.plan.dp = 1;
  job.options.flash_attention = false;
  const double none = hardware_flops_per_step(job);
  job.plan.recompute.mode = RecomputeMode::kFull;
  const double full = hardware_flops_per_step(job);
  // Full recompute adds one forward of the layers (not the head): with the
  // non-flash core executed in full, hardware = model + extra s^2 half.
  EXPECT_GT(full, none);
  const double layer_fwd = make_work(job, Pass::kForward, 96, false, false).matmul_flops();
  EXPECT_NEAR((full - none) / (layer_fwd * 64 * 8), 1.0, 1e-12);
}

struct CollectiveTally {
  std::map<std::pair<Dim, CollectiveKind>, int64_t> count;
  std::map<std::pair<Dim, CollectiveKind>, double> bytes;
};
CollectiveTally tally(const std::vector<Op>& ops) {
  CollectiveTally t;
  for (const Op& op : ops) {
    if (op.kind != OpKind::kCollective) continue;
    const auto key = std::make_pair(op.collective.dim, op.collective.kind);
    t.count[key] += op.count;
    t.bytes[key] += static_cast<double>(op.count) * op.collective.bytes;
  }
  return t;
}

TEST(Collectives, MegatronTensorParallelTwoAllReducesEachWay) {
  Job job = preset_job("gpt3-175b", 2048, 8);
  job.plan.tp = 8;
  const double activation = 2048.0 * 12288 * 2;  // s b h, bf16
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    const CollectiveTally t = tally(layer_ops(job, pass));
    EXPECT_EQ(t.count.size(), 1u);
    EXPECT_EQ((t.count.at({Dim::kTp, CollectiveKind::kAllReduce})), 2);
    EXPECT_DOUBLE_EQ((t.bytes.at({Dim::kTp, CollectiveKind::kAllReduce})), 2 * activation);
  }
  job.plan.tp = 1;
  EXPECT_TRUE(tally(layer_ops(job, Pass::kForward)).count.empty());
}

TEST(Collectives, SequenceParallelGathersAndScatters) {
  Job job = preset_job("gpt3-175b", 2048, 8);
  job.plan.tp = 8;
  job.plan.sequence_parallel = true;
  const CollectiveTally f = tally(layer_ops(job, Pass::kForward));
  EXPECT_EQ((f.count.at({Dim::kTp, CollectiveKind::kAllGather})), 2);
  EXPECT_EQ((f.count.at({Dim::kTp, CollectiveKind::kReduceScatter})), 2);
  EXPECT_EQ(f.count.count({Dim::kTp, CollectiveKind::kAllReduce}), 0u);
  // Backward: gather dY before each row-parallel dgrad, re-gather each
  // column-parallel input for its wgrad, reduce-scatter each column dgrad.
  const CollectiveTally b = tally(layer_ops(job, Pass::kBackward));
  EXPECT_EQ((b.count.at({Dim::kTp, CollectiveKind::kAllGather})), 4);
  EXPECT_EQ((b.count.at({Dim::kTp, CollectiveKind::kReduceScatter})), 2);
  // Same bytes as the all-reduces they replace: AG + RS of s b h each.
  EXPECT_DOUBLE_EQ((f.bytes.at({Dim::kTp, CollectiveKind::kAllGather})), 2 * 2048.0 * 12288 * 2);
  // The re-gathers serve the weight gradients: zero-bubble W carries them.
  const CollectiveTally w = tally(layer_ops(job, Pass::kBackwardWeight));
  EXPECT_EQ((w.count.at({Dim::kTp, CollectiveKind::kAllGather})), 2);
  for (const Op& op : layer_ops(job, Pass::kBackwardInput)) {
    EXPECT_NE(op.role, OpRole::kWeightGrad) << op.name;
  }
}

TEST(Collectives, ContextParallelAlgorithms) {
  Job job = preset_job("llama3-70b", 32768, 8);
  job.plan.cp = 4;
  const double kv_chunk = 32768.0 / 4 * 2 * 8 * 128 * 2;  // local K and V, bf16
  // Ring: cp-1 K/V exchanges, each paired step by step with an attention
  // block of the same count; cp attention blocks in all.
  const std::vector<Op> ring = layer_ops(job, Pass::kForward);
  const CollectiveTally t = tally(ring);
  EXPECT_EQ((t.count.at({Dim::kCp, CollectiveKind::kSendRecv})), 3);
  EXPECT_DOUBLE_EQ((t.bytes.at({Dim::kCp, CollectiveKind::kSendRecv})), 3 * kv_chunk);
  int64_t blocks = 0;
  for (const Op& op : ring) {
    if (op.kind == OpKind::kAttention) blocks += op.count;
    if (op.kind == OpKind::kCollective && op.collective.dim == Dim::kCp) {
      ASSERT_GE(op.collective.overlap_op, 0);
      const Op& partner = ring[static_cast<size_t>(op.collective.overlap_op)];
      EXPECT_EQ(partner.kind, OpKind::kAttention);
      EXPECT_EQ(partner.count, op.count);
    }
  }
  EXPECT_EQ(blocks, 4);
  // Ring backward passes K/V and dK/dV: twice the bytes.
  EXPECT_DOUBLE_EQ(
      (tally(layer_ops(job, Pass::kBackward)).bytes.at({Dim::kCp, CollectiveKind::kSendRecv})),
      6 * kv_chunk);
  job.plan.context = ContextAlgorithm::kUlysses;
  EXPECT_EQ((tally(layer_ops(job, Pass::kForward)).count.at({Dim::kCp, CollectiveKind::kAllToAll})),
            2);
  job.plan.context = ContextAlgorithm::kAllGather;
  const CollectiveTally ag = tally(layer_ops(job, Pass::kForward));
  EXPECT_EQ((ag.count.at({Dim::kCp, CollectiveKind::kAllGather})), 1);
  EXPECT_DOUBLE_EQ((ag.bytes.at({Dim::kCp, CollectiveKind::kAllGather})), 4 * kv_chunk);
  const CollectiveTally agb = tally(layer_ops(job, Pass::kBackward));
  EXPECT_EQ((agb.count.at({Dim::kCp, CollectiveKind::kReduceScatter})), 1);
}

TEST(Collectives, ExpertParallelDispatchAndCombine) {
  Job job = preset_job("mixtral-8x7b", 4096, 8);
  job.plan.dp = 4;
  job.plan.ep = 4;
  job.model.moe->capacity_factor = 1.0;         // no expert takes more than its even share
  const double routed = 4096.0 * 2 * 4096 * 2;  // tokens x top_k x hidden, bf16
  const double probs = 4096.0 * 2 * 4;          // tokens x top_k, fp32
  for (Pass pass : {Pass::kForward, Pass::kBackward}) {
    const CollectiveTally t = tally(layer_ops(job, pass));
    // Tokens there and back, and the probabilities' own all-to-all.
    EXPECT_EQ((t.count.at({Dim::kEp, CollectiveKind::kAllToAll})), 3);
    EXPECT_DOUBLE_EQ((t.bytes.at({Dim::kEp, CollectiveKind::kAllToAll})), 2 * routed + probs);
  }
  // Even load: each of the 2 local experts gets tokens*top_k/2 rows.
  auto fc1 = [&]() {
    for (const Op& op : layer_ops(job, Pass::kForward)) {
      if (op.name == "moe_expert_fc1") return op;
    }
    return Op{};
  };
  EXPECT_EQ(fc1().gemm.batch, 2);
  EXPECT_EQ(fc1().gemm.m, 4096 * 2 / 2);
  EXPECT_EQ(fc1().gemm.n, 2 * 14336);
  // A trained router loads the busiest rank more; the even shape is kept
  // beside it to price the excess, and model FLOPs stay those of even load.
  const double even_model_flops = fc1().model_flops;
  job.model.moe->capacity_factor.reset();
  job.model.moe->load_balance = LoadBalance::kLearned;
  const Op learned = fc1();
  EXPECT_GT(learned.gemm.m, 4096);
  EXPECT_EQ(learned.balanced_gemm.m, 4096);
  EXPECT_GT(learned.imbalance, 1.0);
  EXPECT_DOUBLE_EQ(learned.model_flops, even_model_flops);
  EXPECT_GT(learned.flops, even_model_flops);
}

TEST(Recompute, PassesHoldWhatTheModeRecomputes) {
  Job job = preset_job("llama3-8b", 8192, 8);
  job.plan.tp = 2;
  EXPECT_TRUE(layer_ops(job, Pass::kRecompute).empty());
  job.plan.recompute.mode = RecomputeMode::kSelective;
  const std::vector<Op> selective = layer_ops(job, Pass::kRecompute);
  ASSERT_EQ(selective.size(), 1u);
  EXPECT_EQ(selective[0].kind, OpKind::kAttention);
  EXPECT_EQ(selective[0].model_flops, 0.0);
  job.plan.recompute.mode = RecomputeMode::kFull;
  const std::vector<Op> full = layer_ops(job, Pass::kRecompute);
  const std::vector<Op> fwd = layer_ops(job, Pass::kForward);
  ASSERT_EQ(full.size(), fwd.size());  // the TP all-reduces run again too
  double flops = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    EXPECT_EQ(full[i].name, fwd[i].name);
    EXPECT_EQ(full[i].role, OpRole::kRecompute);
    flops += full[i].flops - fwd[i].flops;
  }
  EXPECT_EQ(flops, 0.0);
}

// DeepSpeed's 2021 ZeRO-3 on GPT-3 175B: the four weight matrices of a layer
// are partitioned (its biases and LayerNorms, at most 4h = 49,152 elements,
// stay under the 100,000-element persistence threshold), each gathered after
// two synchronisations from a list of one view per rank; the backward gathers
// again after the recompute and reduce-scatters each gradient the same way.
TEST(HostWork, DeepSpeedZero3PerParameterListsGrowWithTheGroup) {
  Job job = preset_job("gpt3-175b", 2048, 1536, 2);
  job.plan.dp = 768;
  job.plan.zero = 3;
  job.plan.recompute.mode = RecomputeMode::kFull;
  DataParallelPolicy& dp = job.software.data_parallel;
  dp.param_gather = ParamGather::kParameter;
  dp.persist_below_params = 100'000;
  dp.regather_for_recompute = true;
  const HostWork fwd = make_work(job, Pass::kForward, 1, false, false).host;
  const HostWork rec = make_work(job, Pass::kRecompute, 1, false, false).host;
  const HostWork bwd = make_work(job, Pass::kBackward, 1, false, false).host;
  EXPECT_EQ(fwd.hooked_units, 4);
  EXPECT_EQ(fwd.syncs, 8);
  EXPECT_EQ(fwd.rank_list_entries, 4.0 * 768);
  EXPECT_EQ(rec.rank_list_entries, 4.0 * 768);
  EXPECT_EQ(bwd.syncs, 8);
  EXPECT_EQ(bwd.rank_list_entries, 8.0 * 768);  // gathers and reduce-scatters
  dp.regather_for_recompute = false;            // the recompute's gather serves the backward
  EXPECT_EQ(make_work(job, Pass::kBackward, 1, false, false).host.syncs, 0);
  job.plan.dp = 1536;
  EXPECT_EQ(make_work(job, Pass::kForward, 1, false, false).host.rank_list_entries, 4.0 * 1536);
  dp.param_gather = ParamGather::kUnit;  // FSDP: flat buffers, no per-rank lists
  EXPECT_EQ(make_work(job, Pass::kForward, 1, false, false).host.rank_list_entries, 0.0);
}

}  // namespace
}  // namespace podsim::strategies
