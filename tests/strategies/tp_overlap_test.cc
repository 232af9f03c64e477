// Tensor-parallel communication overlap as the software runs it
// (SoftwarePolicy::tp_overlap with options.overlap_tp): which collectives of a
// layer sit beside which GEMM, the SMs their kernels hold and the chunks the
// GEMM is cut into (TE userbuffers' defaults, PyTorch AsyncTP, XLA's collective
// matmul).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "strategies/workload.h"
#include "tests/strategies/test_util.h"

namespace podsim::strategies {
namespace {

using testing::preset_job;

/// Llama 3 8B at tp 4 with sequence parallelism and TP overlap asked for.
Job tp4(TpOverlap method) {
  Job job = preset_job("llama3-8b", 8192, 8, 1);
  job.plan.tp = 4;
  job.plan.sequence_parallel = true;
  job.options.overlap_tp = true;
  job.software.tp_overlap = method;
  return job;
}

const Op& named(const std::vector<Op>& ops, const std::string& name) {
  for (const Op& op : ops) {
    if (op.name == name) return op;
  }
  ADD_FAILURE() << "no op " << name;
  static const Op none;
  return none;
}

/// The op a collective is paired with ("" when it is not).
std::string partner(const std::vector<Op>& ops, const std::string& name) {
  const int32_t target = named(ops, name).collective.overlap_op;
  return target < 0 ? "" : ops[static_cast<size_t>(target)].name;
}

TEST(TpOverlap, UserbuffersRunTransformerEnginesDefaultMethods) {
  const Job job = tp4(TpOverlap::kTeUserbuffers);
  const std::vector<Op> fwd = layer_ops(job, Pass::kForward);
  // ring_exchange: the all-gather before QKV in tp steps on 1 SM, the GEMM
  // in tp chunks beside it.
  const Op& gather = named(fwd, "attn_input_gather");
  EXPECT_EQ(partner(fwd, "attn_input_gather"), "qkv");
  EXPECT_EQ(gather.collective.kernel_sms, 1);
  EXPECT_EQ(gather.collective.gemm_chunks, 4);
  // pipeline: the reduce-scatter after the MLP's second GEMM, 4 chunks on 16 SMs.
  const Op& reduce = named(fwd, "mlp_reduce");
  EXPECT_EQ(partner(fwd, "mlp_reduce"), "mlp_fc2");
  EXPECT_EQ(reduce.collective.kernel_sms, 16);
  EXPECT_EQ(reduce.collective.gemm_chunks, 4);

  const std::vector<Op> bwd = layer_ops(job, Pass::kBackward);
  // ring_exchange in the backward: dY gathered beside the row-parallel dgrad.
  EXPECT_EQ(partner(bwd, "attn_out_dout_gather"), "attn_out_dgrad");
  EXPECT_EQ(named(bwd, "attn_out_dout_gather").collective.kernel_sms, 1);
  // bulk: the column-parallel pairs keep their GEMM whole, on 16 SMs.
  EXPECT_EQ(partner(bwd, "qkv_input_regather"), "qkv_dgrad");
  EXPECT_EQ(named(bwd, "qkv_input_regather").collective.kernel_sms, 16);
  EXPECT_EQ(named(bwd, "qkv_dgrad_reduce").collective.gemm_chunks, 1);
  EXPECT_EQ(partner(bwd, "qkv_dgrad_reduce"), "qkv_wgrad");
}

TEST(TpOverlap, AsyncTpMovesShardsWithCopyEnginesAndLeavesBulkPairsToNccl) {
  const Job job = tp4(TpOverlap::kAsyncTp);
  const std::vector<Op> fwd = layer_ops(job, Pass::kForward);
  for (const char* name : {"attn_input_gather", "attn_reduce", "mlp_input_gather", "mlp_reduce"}) {
    EXPECT_EQ(named(fwd, name).collective.kernel_sms, 0) << name;
    EXPECT_EQ(named(fwd, name).collective.gemm_chunks, 4) << name;
  }
  const std::vector<Op> bwd = layer_ops(job, Pass::kBackward);
  EXPECT_EQ(named(bwd, "mlp_fc2_dout_gather").collective.kernel_sms, 0);
  EXPECT_EQ(partner(bwd, "mlp_fc2_dout_gather"), "mlp_fc2_dgrad");
  // Gathering a weight gradient's contraction dimension is not a pattern
  // AsyncTP fuses: an NCCL kernel, as without the overlap.
  EXPECT_EQ(named(bwd, "mlp_fc1_input_regather").collective.kernel_sms, -1);
  EXPECT_EQ(named(bwd, "mlp_fc1_input_regather").collective.gemm_chunks, 1);
}

TEST(TpOverlap, XlaCollectiveMatmulDecomposesTheGathersInFrontOfEinsums) {
  // MaxText's TP recipes on TPU: all-gather + einsum decomposed, the
  // reduce-scatter after an einsum not (maxtext-tpu's patterns).
  Job job = tp4(TpOverlap::kXlaCollectiveMatmul);
  job.software.tp_overlap_patterns.reduce_scatter = false;
  const std::vector<Op> fwd = layer_ops(job, Pass::kForward);
  // The all-gathers feeding QKV and the MLP's first einsum: collective-permutes
  // over ICI DMA beside tp partial einsums.
  for (const char* name : {"attn_input_gather", "mlp_input_gather"}) {
    EXPECT_EQ(named(fwd, name).collective.kernel_sms, 0) << name;
    EXPECT_EQ(named(fwd, name).collective.gemm_chunks, 4) << name;
  }
  EXPECT_EQ(partner(fwd, "attn_input_gather"), "qkv");
  // The reduce-scatters after the row-parallel einsums stay blocking.
  for (const char* name : {"attn_reduce", "mlp_reduce"}) {
    EXPECT_EQ(partner(fwd, name), "") << name;
    EXPECT_EQ(named(fwd, name).collective.gemm_chunks, 1) << name;
  }
  const std::vector<Op> bwd = layer_ops(job, Pass::kBackward);
  EXPECT_EQ(partner(bwd, "mlp_fc2_dout_gather"), "mlp_fc2_dgrad");
  EXPECT_EQ(named(bwd, "mlp_fc2_dout_gather").collective.gemm_chunks, 4);
  EXPECT_EQ(named(bwd, "mlp_fc1_input_regather").collective.gemm_chunks, 1);

  // --xla_tpu_decompose_einsum_reduce_scatter as well: the reduce-scatters too.
  job.software.tp_overlap_patterns.reduce_scatter = true;
  const std::vector<Op> both = layer_ops(job, Pass::kForward);
  EXPECT_EQ(partner(both, "mlp_reduce"), "mlp_fc2");
  EXPECT_EQ(named(both, "mlp_reduce").collective.gemm_chunks, 4);
}

TEST(TpOverlap, EachPipelinedPatternCanBeSwitchedOff) {
  // Megatron-Core's tp_comm_overlap_ag / tp_comm_overlap_rs: without the
  // all-gather pattern the gathers block (forward) or stand alone (the
  // backward's dY gather); without the reduce-scatter pattern the forward
  // reductions block. The bulk backward pairs stay beside their GEMM.
  Job no_ag = tp4(TpOverlap::kTeUserbuffers);
  no_ag.software.tp_overlap_patterns.all_gather = false;
  const std::vector<Op> fwd = layer_ops(no_ag, Pass::kForward);
  EXPECT_EQ(partner(fwd, "attn_input_gather"), "");
  EXPECT_EQ(partner(fwd, "mlp_reduce"), "mlp_fc2");
  const std::vector<Op> bwd = layer_ops(no_ag, Pass::kBackward);
  EXPECT_EQ(partner(bwd, "attn_out_dout_gather"), "");
  EXPECT_EQ(partner(bwd, "qkv_input_regather"), "qkv_dgrad");
  EXPECT_EQ(named(bwd, "qkv_input_regather").collective.kernel_sms, 16);

  Job no_rs = tp4(TpOverlap::kTeUserbuffers);
  no_rs.software.tp_overlap_patterns.reduce_scatter = false;
  const std::vector<Op> fwd_rs = layer_ops(no_rs, Pass::kForward);
  EXPECT_EQ(partner(fwd_rs, "attn_input_gather"), "qkv");
  EXPECT_EQ(partner(fwd_rs, "mlp_reduce"), "");
  EXPECT_EQ(named(fwd_rs, "mlp_reduce").collective.kernel_sms, -1);
}

TEST(TpOverlap, WithoutItOnlyMegatronsBackwardPairsOverlapOnNccl) {
  Job job = tp4(TpOverlap::kTeUserbuffers);
  job.options.overlap_tp = false;
  const std::vector<Op> fwd = layer_ops(job, Pass::kForward);
  EXPECT_EQ(partner(fwd, "attn_input_gather"), "");
  EXPECT_EQ(partner(fwd, "mlp_reduce"), "");
  const std::vector<Op> bwd = layer_ops(job, Pass::kBackward);
  EXPECT_EQ(partner(bwd, "attn_out_dout_gather"), "");
  EXPECT_EQ(partner(bwd, "qkv_input_regather"), "qkv_dgrad");
  for (const Op& op : bwd) {
    if (op.kind != OpKind::kCollective) continue;
    EXPECT_EQ(op.collective.kernel_sms, -1) << op.name;
    EXPECT_EQ(op.collective.gemm_chunks, 1) << op.name;
  }
}

TEST(TpOverlap, NeedsTheSoftwaresOverlapAndSequenceParallelism) {
  // Whatever the plan asks (a sweep's plans too): software without an
  // overlap, or TP without sequence parallelism, leaves the forward
  // collectives blocking and the backward's dY gather alone.
  Job none = tp4(TpOverlap::kNone);
  Job no_sp = tp4(TpOverlap::kTeUserbuffers);
  no_sp.plan.sequence_parallel = false;
  for (const Job& job : {none, no_sp}) {
    const std::vector<Op> fwd = layer_ops(job, Pass::kForward);
    for (const Op& op : fwd) {
      if (op.kind != OpKind::kCollective) continue;
      EXPECT_EQ(op.collective.overlap_op, -1) << op.name;
    }
    for (const Op& op : layer_ops(job, Pass::kBackward)) {
      if (op.kind != OpKind::kCollective) continue;
      EXPECT_EQ(op.collective.kernel_sms, -1) << op.name;
      EXPECT_EQ(op.collective.gemm_chunks, 1) << op.name;
    }
  }
  EXPECT_EQ(partner(layer_ops(none, Pass::kBackward), "attn_out_dout_gather"), "");
}

TEST(TpOverlap, TheOutputLayerOutsideTheBlocksKeepsNcclCollectives) {
  // Megatron's output layer is not a TE module; torchtitan compiles the
  // blocks only: their TP overlap does not reach the vocabulary projection.
  for (const TpOverlap method : {TpOverlap::kTeUserbuffers, TpOverlap::kAsyncTp}) {
    const Job job = tp4(method);
    const std::vector<Op> fwd = head_ops(job, Pass::kForward);
    EXPECT_EQ(partner(fwd, "head_input_gather"), "");
    EXPECT_EQ(named(fwd, "head_input_gather").collective.kernel_sms, -1);
    const std::vector<Op> bwd = head_ops(job, Pass::kBackward);
    EXPECT_EQ(named(bwd, "logits_input_regather").collective.kernel_sms, -1);
  }
}

TEST(TpOverlap, MultiTokenPredictionLayersKeepTheirPairsBesideTheHead) {
  // The MTP module's ops are its own projection and block followed by the
  // shared head (forward) or preceded by it (backward): each overlapped
  // collective still names the GEMM its block paired it with.
  Job job = tp4(TpOverlap::kTeUserbuffers);
  job.model.mtp_layers = 1;
  for (const Pass pass : {Pass::kForward, Pass::kBackward, Pass::kBackwardInput}) {
    const std::vector<Op> ops = mtp_ops(job, pass);
    int32_t pairs = 0;
    for (const Op& op : ops) {
      if (op.kind != OpKind::kCollective || op.collective.overlap_op < 0) continue;
      ++pairs;
      ASSERT_LT(static_cast<size_t>(op.collective.overlap_op), ops.size()) << op.name;
      EXPECT_EQ(ops[static_cast<size_t>(op.collective.overlap_op)].kind, OpKind::kGemm) << op.name;
    }
    EXPECT_GT(pairs, 0);
  }
  EXPECT_EQ(partner(mtp_ops(job, Pass::kBackward), "mlp_fc2_dout_gather"), "mlp_fc2_dgrad");
  EXPECT_EQ(partner(mtp_ops(job, Pass::kForward), "attn_input_gather"), "qkv");
}

}  // namespace
}  // namespace podsim::strategies
