// The cross-field checks of a scenario: each needs several keys at once,
// names the path to change and a fix, and is skipped when one of its inputs
// was already wrong (one mistake, one problem).
#include <algorithm>
#include <optional>
#include <string>

#include "scenarios/input/quantity.h"
#include "scenarios/input/spec_builder.h"
#include "strategies/pipeline_layout.h"

namespace podsim::scenarios::reader_detail {

void SpecBuilder::check_job(ScenarioSpec& s) {
  check_gpus(s);
  check_tensor_parallel(s);
  resolve_asym_layout(s);
  check_pipeline();
  check_batch();
  check_context(s);
  check_experts(s);
  check_sharding(s);
  check_precision(s);
}

void SpecBuilder::check_gpus(ScenarioSpec& s) {
  if (!(dp_ && tp_ && pp_ && cp_)) return;
  const std::optional<int64_t> product = checked_product({*dp_, *tp_, *pp_, *cp_});
  const std::string degrees =
      "dp*tp*pp*cp = " + num(*dp_) + "*" + num(*tp_) + "*" + num(*pp_) + "*" + num(*cp_);
  if (!product || *product > 100'000'000) {
    problem("/parallelism", degrees + " is more than 100,000,000 GPUs",
            "check the parallel degrees");
    return;
  }
  const bool gpus_given = given("/gpus");
  const std::optional<int64_t> gpus = gpus_given ? integer("/gpus") : product;
  if (gpus_given && gpus && *gpus != *product) {
    problem("/gpus", "gpus=" + num(*gpus) + " but " + degrees + " = " + num(*product),
            "set gpus to " + num(*product) + " or change the degrees so they multiply to " +
                num(*gpus));
  }
  s.gpus = *product;
  if (nodes_ && gpus_per_node_) {
    const int64_t capacity = *nodes_ * *gpus_per_node_;
    if (*product > capacity) {
      const int64_t needed = (*product + *gpus_per_node_ - 1) / *gpus_per_node_;
      problem(gpus_given ? "/gpus" : "/parallelism",
              "the job needs " + num(*product) + " GPUs but the cluster has " + num(*nodes_) +
                  " nodes x " + num(*gpus_per_node_) + " = " + num(capacity),
              "use a cluster with at least " + num(needed) + " nodes, e.g. {\"base\": \"" +
                  preset_name("/cluster") + "\", \"nodes\": " + num(needed) + "}, or fewer GPUs");
    }
  }
  if (tp_ && domain_ && *tp_ > *domain_) {
    warn("tp=" + num(*tp_) + " spans more than one scale-up domain (" + num(*domain_) +
         " GPUs): tensor-parallel traffic crosses the scale-out network");
  }
}

void SpecBuilder::check_tensor_parallel(const ScenarioSpec& s) {
  if (!tp_) return;
  const int64_t tp = *tp_;
  if (heads_ && *heads_ % tp != 0) {
    problem("/parallelism/tp", "tp=" + num(tp) + " does not divide heads=" + num(*heads_),
            "choose tp from " + divisors_text(*heads_));
  }
  if (kv_heads_ && *kv_heads_ % tp != 0 && tp % *kv_heads_ != 0) {
    // Accepted: tp divides kv_heads (KV heads split across TP ranks) or
    // kv_heads divides tp (each KV head replicated on tp/kv_heads ranks, as
    // Megatron does for GQA); anything else leaves ranks with partial heads.
    problem("/parallelism/tp",
            "tp=" + num(tp) + " and kv_heads=" + num(*kv_heads_) + ": neither divides the other",
            "KV heads are split when tp divides kv_heads and replicated when kv_heads divides "
            "tp: use tp from " +
                divisors_text(*kv_heads_) + " or a multiple of " + num(*kv_heads_));
  }
  if (ffn_ && *ffn_ % tp != 0) {
    problem(
        "/parallelism/tp", "tp=" + num(tp) + " does not divide ffn_hidden=" + num(*ffn_),
        "the MLP is split column-wise across TP ranks: choose tp from " + divisors_text(*ffn_, 8));
  }
  if (s.model.moe && s.model.moe->ffn_hidden % tp != 0) {
    problem(
        "/parallelism/tp",
        "tp=" + num(tp) + " does not divide the expert ffn_hidden=" + num(s.model.moe->ffn_hidden),
        "experts are split across TP ranks like the dense MLP");
  }
  const bool sequence_parallel = s.plan.sequence_parallel;
  if (sequence_parallel && tp == 1) {
    warn("sequence_parallel has no effect with tp=1");
  }
  if (sequence_parallel && seq_len_ && cp_ && *seq_len_ % *cp_ == 0 &&
      (*seq_len_ / *cp_) % tp != 0) {
    problem("/training/seq_len",
            "sequence parallelism splits the " + num(*seq_len_ / *cp_) +
                " tokens of each CP rank across tp=" + num(tp) + " ranks, which does not divide",
            "use seq_len a multiple of cp*tp = " + num(*cp_ * tp));
  }
}

void SpecBuilder::resolve_asym_layout(ScenarioSpec& s) {
  if (!asym_embed_loss_ || !layers_ || !pp_) return;
  const int64_t v = s.plan.schedule == strategies::PipelineSchedule::kInterleavedOneFOneB
                        ? virtual_stages_.value_or(1)
                        : 1;
  const int64_t chunks = *pp_ * v;
  s.plan.layout = strategies::asym_embed_loss_layout(*layers_, chunks, s.model.mtp_layers);
  if (s.plan.layout.empty()) {
    problem("/parallelism/pipeline/layout",
            "\"asym-embed-loss\" counts the embedding and the loss as one layer each, so "
            "layers+2 = " +
                num(*layers_ + 2) + " must split evenly into pp*virtual_stages = " + num(chunks) +
                " chunks",
            "choose pp and virtual_stages whose product divides " + num(*layers_ + 2) +
                ", or give the layout as an array of layer counts");
  }
}

void SpecBuilder::check_pipeline() {
  if (!pp_ || !layers_) return;
  if (schedule_ == "dualpipe") {
    check_dualpipe();
    return;
  }
  // An explicit layout may leave chunks without layers; strategies checks
  // that it places every layer once.
  if (layout_given_) return;
  if (*pp_ > *layers_) {
    problem("/parallelism/pp",
            "pp=" + num(*pp_) + " exceeds layers=" + num(*layers_) +
                ": every stage needs at least one layer",
            "use pp <= " + num(*layers_));
    return;
  }
  if (!virtual_stages_) return;
  const int64_t v = *virtual_stages_;
  if (v > 1 && schedule_ != "interleaved_1f1b") {
    problem("/parallelism/pipeline/virtual_stages",
            "virtual_stages=" + num(v) + " needs schedule interleaved_1f1b (schedule is " +
                schedule_ + ")",
            "set /parallelism/pipeline/schedule to \"interleaved_1f1b\", or virtual_stages to 1");
    return;
  }
  if (v > 1 && *pp_ == 1) {
    // Interleaving splits a GPU's layers into chunks other stages run in
    // between; with one stage there are none (and no sends between chunks).
    problem("/parallelism/pipeline/virtual_stages",
            "virtual_stages=" + num(v) + " needs pipeline parallelism, but pp=1",
            "set virtual_stages to 1 (with pp=1 the layers run in sequence), or pp > 1");
    return;
  }
  if (v * *pp_ > *layers_) {
    problem("/parallelism/pipeline/virtual_stages",
            "virtual_stages*pp = " + num(v) + "*" + num(*pp_) + " = " + num(v * *pp_) +
                " model chunks exceed layers=" + num(*layers_),
            "every chunk needs a layer: use virtual_stages <= " + num(*layers_ / *pp_));
    return;
  }
  if (schedule_ == "interleaved_1f1b" && *pp_ > 1 && global_batch_ && micro_batch_ && dp_) {
    const std::optional<int64_t> per_step = checked_product({*dp_, *micro_batch_});
    if (per_step && *global_batch_ % *per_step == 0) {
      const int64_t micro_batches = *global_batch_ / *per_step;
      if (micro_batches % *pp_ != 0) {
        problem("/training/global_batch",
                "interleaved 1F1B runs micro-batches in groups of pp=" + num(*pp_) + ", but " +
                    "global_batch/(dp*micro_batch) = " + num(micro_batches) + " is not a multiple",
                "use global_batch " + nearest_multiples(*global_batch_, *per_step * *pp_) +
                    ", or the 1f1b schedule");
      }
    }
  }
  if (*layers_ % (v * *pp_) != 0) {
    warn("layers=" + num(*layers_) + " do not split evenly into pp*virtual_stages = " +
         num(v * *pp_) + " chunks: stages are uneven");
  }
  if (schedule_ == "interleaved_1f1b" && *pp_ == 1) {
    warn("interleaved_1f1b with pp=1 is a plain sequence of micro-batches (no pipeline)");
  }
}

void SpecBuilder::check_dualpipe() {
  // dualpipe.py asserts an even number of ranks and of chunks (micro-
  // batches), at least twice the ranks.
  if (*pp_ < 2 || *pp_ % 2 != 0) {
    problem("/parallelism/pp", "dualpipe needs an even number of stages, got pp=" + num(*pp_),
            "use pp = " + num(std::max<int64_t>(2, *pp_ + *pp_ % 2)));
    return;
  }
  if (virtual_stages_ && *virtual_stages_ != 1) {
    problem("/parallelism/pipeline/virtual_stages",
            "dualpipe places two stages on every rank itself; virtual_stages must be 1",
            "drop virtual_stages");
    return;
  }
  if (!layout_given_ && *pp_ > *layers_) {
    problem("/parallelism/pp", "pp=" + num(*pp_) + " exceeds layers=" + num(*layers_),
            "use pp <= " + num(*layers_));
    return;
  }
  if (!global_batch_ || !micro_batch_ || !dp_) return;
  const std::optional<int64_t> per_step = checked_product({*dp_, *micro_batch_});
  if (!per_step || *global_batch_ % *per_step != 0) return;  // check_batch reports it
  const int64_t micro_batches = *global_batch_ / *per_step;
  if (micro_batches % 2 != 0 || micro_batches < 2 * *pp_) {
    problem("/training/global_batch",
            "dualpipe feeds half the micro-batches from each end and needs an even number of "
            "them, at least 2*pp = " +
                num(2 * *pp_) + "; global_batch/(dp*micro_batch) = " + num(micro_batches),
            "use global_batch " +
                nearest_multiples(std::max(*global_batch_, 2 * *pp_ * *per_step), 2 * *per_step));
  }
}

void SpecBuilder::check_batch() {
  if (!global_batch_ || !micro_batch_ || !dp_) return;
  const std::optional<int64_t> per_step = checked_product({*dp_, *micro_batch_});
  if (!per_step || *global_batch_ % *per_step != 0) {
    const std::string step = per_step ? num(*per_step) : std::string("more than 2^62");
    problem("/training/global_batch",
            num(*global_batch_) + " is not divisible by dp*micro_batch = " + num(*dp_) + "*" +
                num(*micro_batch_) + " = " + step,
            per_step ? "use global_batch " + nearest_multiples(*global_batch_, *per_step) +
                           ", or change dp or micro_batch"
                     : "check dp and micro_batch");
  }
}

void SpecBuilder::check_context(const ScenarioSpec& s) {
  if (!cp_ || !seq_len_ || *cp_ == 1) return;
  const int64_t cp = *cp_;
  if (!s.options.flash_attention) {
    problem("/options/flash_attention",
            "context parallelism (cp=" + num(cp) + ") needs flash attention",
            "set /options/flash_attention to true, or cp to 1");
  }
  if (context_ != "ulysses") {
    // Ring and all-gather split each sequence into 2*cp chunks, pairing
    // early and late chunks so the causal work is even (as Llama 3 does).
    if (*seq_len_ % (2 * cp) != 0) {
      problem("/training/seq_len",
              "seq_len=" + num(*seq_len_) + " is not divisible by 2*cp = " + num(2 * cp) + " (" +
                  context_ + " attention splits each sequence into 2*cp chunks for load balance)",
              "use seq_len " + nearest_multiples(*seq_len_, 2 * cp) + ", or another cp");
    }
  } else if (*seq_len_ % cp != 0) {
    problem("/training/seq_len", "seq_len=" + num(*seq_len_) + " is not divisible by cp=" + num(cp),
            "use seq_len " + nearest_multiples(*seq_len_, cp) + ", or another cp");
  }
  if (context_ == "ulysses" && heads_ && tp_ && *heads_ % *tp_ == 0) {
    const int64_t heads_per_tp = *heads_ / *tp_;
    if (heads_per_tp % cp != 0) {
      problem(
          "/parallelism/cp",
          "ulysses needs cp to divide the heads of one TP rank (heads/tp = " + num(heads_per_tp) +
              "), cp=" + num(cp) + " does not",
          "choose cp from " + divisors_text(heads_per_tp) + ", or the ring / all_gather algorithm");
    }
    if (kv_heads_) {
      // KV heads fewer than cp are replicated across the CP group (as for
      // GQA under TP); otherwise they must split evenly.
      const int64_t kv_per_tp = std::max<int64_t>(1, *kv_heads_ / *tp_);
      if (kv_per_tp % cp != 0 && cp % kv_per_tp != 0) {
        problem("/parallelism/cp",
                "ulysses: kv_heads per TP rank = " + num(kv_per_tp) + " and cp=" + num(cp) +
                    ": neither divides the other",
                "KV heads are split when cp divides them and replicated when they divide cp");
      }
    }
  }
}

void SpecBuilder::check_experts(const ScenarioSpec& s) {
  if (!ep_) return;
  const int64_t ep = *ep_;
  if (ep > 1 && !s.model.moe) {
    problem("/parallelism/ep", "ep=" + num(ep) + " needs a mixture-of-experts model",
            "give /model/moe or set ep to 1");
    return;
  }
  if (s.model.moe && s.model.moe->experts > 0 && s.model.moe->experts % ep != 0) {
    problem("/parallelism/ep",
            "ep=" + num(ep) + " does not divide experts=" + num(s.model.moe->experts),
            "choose ep from " + divisors_text(s.model.moe->experts));
  }
  const int64_t etp = expert_tp_.value_or(1);
  if (etp > 1 && !s.model.moe) {
    problem("/parallelism/expert_tp", "expert_tp=" + num(etp) + " needs a mixture-of-experts model",
            "give /model/moe or set expert_tp to 1");
    return;
  }
  if (s.model.moe && s.model.moe->ffn_hidden > 0 && s.model.moe->ffn_hidden % etp != 0) {
    problem(
        "/parallelism/expert_tp",
        "expert_tp=" + num(etp) + " does not divide moe.ffn_hidden=" + num(s.model.moe->ffn_hidden),
        "choose expert_tp from " + divisors_text(s.model.moe->ffn_hidden));
  }
  if (dp_ && cp_ && tp_) {
    // MoE parallel folding (Megatron-Core): the experts regroup the
    // tp*cp*dp ranks of a stage as expert_tp x ep x expert-data-parallel.
    const int64_t stage_ranks = *tp_ * *cp_ * *dp_;
    if (stage_ranks % (ep * etp) != 0) {
      problem("/parallelism/ep",
              "ep*expert_tp = " + num(ep) + "*" + num(etp) +
                  " does not divide tp*cp*dp = " + num(stage_ranks) +
                  " (MoE parallel folding regroups a stage's ranks as expert_tp x ep x "
                  "expert-dp)",
              "choose ep*expert_tp from " + divisors_text(stage_ranks));
    }
  }
  if (s.model.moe && tp_ && *tp_ > 1 && seq_len_ && micro_batch_ && cp_ &&
      (*micro_batch_ * *seq_len_ / *cp_) % *tp_ != 0) {
    problem("/parallelism/tp",
            "an MoE layer routes micro_batch*seq_len/cp tokens split over tp, and " +
                num(*micro_batch_ * *seq_len_ / *cp_) + " is not divisible by tp=" + num(*tp_),
            "choose tp from " + divisors_text(*micro_batch_ * *seq_len_ / *cp_));
  }
}

void SpecBuilder::check_sharding(const ScenarioSpec& s) {
  if (!given("/parallelism/shard_group")) return;
  const std::optional<int64_t> group = integer("/parallelism/shard_group");
  if (!group) return;
  if (dp_ && cp_ && (*dp_ * *cp_) % *group != 0) {
    // FSDP shards over the data- and context-parallel ranks (they hold the
    // same weights), as the schedule builds it.
    problem("/parallelism/shard_group",
            "shard_group=" + num(*group) + " does not divide dp*cp = " + num(*dp_ * *cp_),
            "choose shard_group from " + divisors_text(*dp_ * *cp_));
  }
  if (s.plan.zero == 0 && *group > 1) {
    problem("/parallelism/shard_group", "a shard group needs sharding, but zero=0",
            "set /parallelism/zero to 3 for HSDP, or drop shard_group");
  }
}

void SpecBuilder::check_precision(const ScenarioSpec& s) {
  using strategies::PrecisionRecipe;
  const PrecisionRecipe recipe = s.training.recipe;
  // Which training.precision each recipe scales (Megatron's Fp8Recipe and
  // Fp4Recipe, MaxText's quantization=int8).
  const bool fp8_recipe = recipe == PrecisionRecipe::kDelayed ||
                          recipe == PrecisionRecipe::kTensorwise ||
                          recipe == PrecisionRecipe::kBlockwise ||
                          recipe == PrecisionRecipe::kMxfp8 || recipe == PrecisionRecipe::kFp8Full;
  const sim::NumberFormat wanted = fp8_recipe                            ? sim::NumberFormat::kFp8
                                   : recipe == PrecisionRecipe::kNvfp4   ? sim::NumberFormat::kFp4
                                   : recipe == PrecisionRecipe::kAqtInt8 ? sim::NumberFormat::kInt8
                                                                         : s.training.precision;
  if (!recipe_.empty() && wanted != s.training.precision) {
    problem("/training/precision_recipe",
            "recipe " + recipe_ + " scales " + std::string(sim::to_string(wanted)) +
                " matrix products, but training.precision is " + precision_,
            "set /training/precision to \"" + std::string(sim::to_string(wanted)) +
                "\", or choose a recipe of " + precision_ +
                " (fp8: tensorwise, delayed, blockwise, mxfp8, fp8_full; fp4: nvfp4; int8: "
                "aqt-int8)");
    return;
  }
  if (!gpu_usable_) return;
  const hwmodels::GpuSpec& gpu = s.cluster.gpu;
  if (s.training.precision == sim::NumberFormat::kFp4 && gpu.peak(sim::NumberFormat::kFp4) <= 0) {
    problem("/training/precision",
            "fp4 (NVFP4) matrix products need block-scaled FP4 tensor cores, and the GPU '" +
                gpu.name + "' has no fp4 rate",
            "use a Blackwell GPU (b200, b300, gb200, gb300), train in fp8, or give "
            "/cluster/gpu/peak_flops/fp4");
    return;
  }
  if (recipe == PrecisionRecipe::kMxfp8 && gpu.peak(sim::NumberFormat::kFp4) <= 0) {
    // MXFP8's E8M0 block scales are applied by the tensor cores themselves
    // (TE mxfp8.rst: Blackwell and later); the datasheet's fp4 rate is the
    // mark of those block-scaled units.
    problem("/training/precision_recipe",
            "mxfp8 needs tensor cores that apply block scales (Blackwell), and the GPU '" +
                gpu.name + "' has none (no fp4 rate)",
            "use tensorwise, delayed or blockwise fp8 on this GPU");
    return;
  }
  if (gpu.peak(s.training.precision) <= 0) {
    problem("/cluster/gpu/peak_flops/" + precision_,
            "training.precision is " + precision_ + " but the GPU '" + gpu.name + "' has no " +
                precision_ + " rate (0)",
            "choose another /training/precision, or give the GPU's " + precision_ + " peak");
  }
  const bool low_bit = s.training.precision == sim::NumberFormat::kFp8 ||
                       s.training.precision == sim::NumberFormat::kFp4 ||
                       s.training.precision == sim::NumberFormat::kInt8;
  if (low_bit && gpu.peak(sim::NumberFormat::kBf16) <= 0) {
    problem("/cluster/gpu/peak_flops/bf16",
            precision_ +
                " training keeps everything but the matrix products in bf16, and the GPU has no "
                "bf16 rate",
            "give the GPU's bf16 peak");
  }
  if (recipe == PrecisionRecipe::kFp8Full) {
    warn(
        "training.precision_recipe fp8_full: attention is priced at its bf16 rate (the fp8 "
        "attention kernels' speed is not modelled); the linears scale as delayed fp8");
  } else if (s.software.fp8.attention && s.training.precision == sim::NumberFormat::kFp8) {
    warn(
        "software.fp8.attention: attention is priced at its bf16 rate (the fp8 attention "
        "kernels' speed is not modelled)");
  }
}

// Upper bounds no hardware reaches, each with room above the fastest part
// of the presets (presets/gpus.json, clusters.json), so that only a unit
// slip crosses them: the contract reads a bare number in SI base units, so
// "nic_bandwidth": 400e9 meant as 400 Gb/s is 400 GB/s = 3.2 Tb/s.
namespace {
/// Per NIC per direction: 1.6 Tb/s, twice ConnectX-8's 800 Gb/s (dgx-b300).
constexpr double kMaxNicBytesPerS = 1.6e12 / 8;
/// 20 TB/s, 2.5 times B200's and MI355X's 8 TB/s of HBM3e.
constexpr double kMaxHbmBytesPerS = 20e12;
/// 10 PFLOP/s dense in any format, twice GB300's fp8 (5 PFLOP/s dense).
constexpr double kMaxDenseFlopsPerS = 10e15;
}  // namespace

void SpecBuilder::check_plausible(ScenarioSpec& s) {
  auto caution = [&](const std::string& path, std::string message, std::string hint) {
    add_problem(s.input_warnings, {prefix_ + path, std::move(message), std::move(hint)});
  };
  const double nic = s.cluster.scale_out.nic_bw_bytes_per_s;
  if (nic > kMaxNicBytesPerS) {
    caution("/cluster/scale_out/nic_bandwidth",
            format_bandwidth(nic) + " (" + format_number(nic * 8 / 1e9) +
                " Gb/s) per NIC is more than any NIC (at most 1.6 Tb/s = 200 GB/s)",
            "a number without a unit is bytes/s; if you meant " + format_number(nic / 1e9) +
                " Gb/s (bits), write \"" + format_number(nic / 1e9) + " Gb/s\"");
  }
  const double hbm = s.cluster.gpu.hbm_bw_bytes_per_s;
  if (hbm > kMaxHbmBytesPerS) {
    caution("/cluster/gpu/hbm/bandwidth",
            format_bandwidth(hbm) + " of HBM bandwidth is more than any GPU has (at most 20 TB/s)",
            "a number without a unit is bytes/s; write the unit, e.g. \"3.35 TB/s\" (H100) or "
            "\"8 TB/s\" (B200)");
  }
  for (const char* key : {"fp32", "tf32", "bf16", "fp16", "fp8", "int8"}) {
    const std::string path = std::string("/cluster/gpu/peak_flops/") + key;
    const double flops = number(path).value_or(0);
    if (flops > kMaxDenseFlopsPerS) {
      caution(path,
              format_flops_rate(flops) + " " + key +
                  " is more than any GPU computes (at most 10 PFLOP/s dense)",
              "give the dense rate (datasheets often quote sparse, twice dense) with its unit, "
              "e.g. \"989 TFLOP/s\" (H100 bf16)");
    }
  }
  for (const Problem& note : doc_.notes) add_problem(s.input_warnings, note);
}

}  // namespace podsim::scenarios::reader_detail
