#include "scenarios/input/schema.h"

#include <charconv>
#include <iterator>
#include <string>

#include "scenarios/input/presets.h"
#include "scenarios/input/schema_decl.h"
#include "scenarios/input/suggest.h"

namespace podsim::scenarios {

namespace {

using namespace decl;  // NOLINT(google-build-using-namespace): the table reads as a list
constexpr double kLeastMeasured = 1e-6;  // a measured value errors are relative to

// clang-format off
constexpr KeyDecl kScenarioKeys[] = {
  object("", kRequired, "a scenario: a model, a cluster, a training setup and a parallelism plan"),
  text("/name", kComputed, "the file name without .json", kNameLength, "label used in reports"),
  text("/notes", kOptional, "", kTextLength, "free text for people; ignored by the simulation"),

  preset_or_object("/model", "models", "the network being trained: a preset name or an object"),
  preset_base("/model/base", "models"),
  text("/model/name", kComputed, "the preset name, else \"custom\"", kNameLength, "label of the model"),
  text("/model/source", kOptional, "", kTextLength, "where the shape comes from"),
  integer("/model/layers", kRequired, "", 1, 1e5, "transformer layers"),
  integer("/model/hidden", kRequired, "", 1, 1 << 20, "model (embedding) width"),
  integer("/model/ffn_hidden", kRequired, "", 1, 1 << 24, "MLP inner width (dense layers)"),
  integer("/model/heads", kRequired, "", 1, 1 << 16, "attention (query) heads"),
  integer("/model/kv_heads", kComputed, "= heads", 1, 1 << 16,
          "key/value heads (grouped-query attention); must divide heads"),
  integer("/model/head_dim", kComputed, "= hidden / heads", 1, 1 << 16, "attention head size"),
  integer("/model/vocab", kRequired, "", 1, 1 << 28, "vocabulary size"),
  choice("/model/mlp", "\"swiglu\"", "gelu|swiglu", "MLP kind: gelu (2 matrices) or swiglu (3 matrices)"),
  choice("/model/norm", "\"rmsnorm\"", "layernorm|rmsnorm", "normalisation layer"),
  boolean("/model/tied_embeddings", "false", "input and output embeddings share one matrix"),
  boolean("/model/clamped_glu", "false",
          "the swiglu MLP clamps its two halves before the activation (gpt-oss swiglu_limit 7: "
          "gate <= 7, linear in [-7, 7]); what the clamp costs is the software's "
          "elementwise.activation_clamp (extension)"),
  object("/model/moe", kOptional, "mixture of experts: replaces the dense MLP of every layer"),
  integer("/model/moe/experts", kRequired, "", 1, 1 << 16, "routed experts per layer"),
  integer("/model/moe/top_k", kRequired, "", 1, 1 << 16, "experts each token is routed to"),
  integer("/model/moe/ffn_hidden", kComputed, "= /model/ffn_hidden", 1, 1 << 24,
          "MLP inner width of one expert"),
  integer("/model/moe/shared_experts", kDefault, "0", 0, 1 << 16,
          "experts every token goes through in addition"),
  integer("/model/moe/dense_layers", kDefault, "0", 0, 1e5,
          "leading layers with a dense MLP of /model/ffn_hidden (DeepSeek-V3: 3)"),
  integer("/model/moe/interleave_step", kDefault, "1", 1, 1e5,
          "every n-th layer is MoE (layers n-1, 2n-1, ...), the others dense (Llama 4 Maverick: 2)"),
  choice("/model/moe/load_balance", "\"learned\"", "forced|learned",
         "forced: tokens routed uniformly at random, as benchmarks force; learned: a trained "
         "router's imbalance (strategies/moe_imbalance.h)"),
  nullable_number("/model/moe/capacity_factor", 0, 1e3, true,
                  "tokens an expert takes, as a multiple of its even share; null/absent = dropless"),
  choice("/model/moe/balancing", "\"aux_loss\"", "aux_loss|loss_free",
         "how a learned router is balanced: an auxiliary loss, or DeepSeek-V3's loss-free "
         "expert bias (sets its skew; extension)"),
  number("/model/moe/max_violation", kOptional, "", 0, 100, false,
         "a learned router's MaxVio_global (max expert load / mean - 1); default: 0.52 aux_loss, "
         "0.04 loss_free (Wang et al. 2024; extension)"),
  integer("/model/moe/expert_groups", kDefault, "1", 1, 1 << 16,
          "consecutive expert groups for group-limited routing (DeepSeek-V3 n_group 8; extension)"),
  integer("/model/moe/groups_per_token", kDefault, "0", 0, 1 << 16,
          "groups a token's experts may lie in, 0 = no limit (DeepSeek-V3 topk_group 4; extension)"),
  boolean("/model/moe/router_fp32", "false",
          "router gating GEMM in fp32 (Megatron moe_router_dtype=fp32, as set for DeepSeek-V3; "
          "extension)"),
  object("/model/attention", kOptional, "attention variant (1.2): GQA/MHA, MLA, sliding windows"),
  choice("/model/attention/kind", "\"gqa\"", "mha|gqa|mla",
         "mha/gqa: heads, kv_heads, head_dim; mla: multi-head latent attention (DeepSeek-V2/V3)"),
  integer("/model/attention/q_lora_rank", kDefault, "0", 0, 1 << 20,
          "MLA query latent rank; 0 = queries projected directly"),
  integer("/model/attention/kv_lora_rank", kDefault, "0", 0, 1 << 20, "MLA key/value latent rank"),
  integer("/model/attention/qk_rope_head_dim", kDefault, "0", 0, 1 << 16,
          "MLA RoPE part of the query/key head (shared by all heads for keys)"),
  integer("/model/attention/qk_nope_head_dim", kDefault, "0", 0, 1 << 16,
          "MLA non-RoPE part of the query/key head"),
  integer("/model/attention/v_head_dim", kDefault, "0", 0, 1 << 16, "MLA value head size"),
  integer("/model/attention/sliding_window", kDefault, "0", 0, 1 << 27,
          "tokens a query sees in sliding-window layers; 0 = none"),
  integer("/model/attention/sliding_window_every", kDefault, "1", 1, 1e5,
          "layers i with i % n == 0 use the window (gpt-oss: 2)"),
  integer("/model/mtp_layers", kDefault, "0", 0, 64,
          "multi-token-prediction modules after the last layer (DeepSeek-V3: 1)"),

  preset_or_object("/cluster", "clusters", "the machine: a preset name or an object"),
  preset_base("/cluster/base", "clusters"),
  text("/cluster/name", kComputed, "the preset name, else \"custom\"", kNameLength, "label of the cluster"),
  text("/cluster/source", kOptional, "", kTextLength, "where the numbers come from"),
  preset_or_object("/cluster/gpu", "gpus", "the accelerator: a preset name or an object"),
  preset_base("/cluster/gpu/base", "gpus"),
  text("/cluster/gpu/name", kComputed, "the preset name, else \"custom\"", kNameLength, "label of the GPU"),
  text("/cluster/gpu/source", kOptional, "", kTextLength, "where the numbers come from"),
  object("/cluster/gpu/peak_flops", kRequired, "dense (no 2:4 sparsity) peak rates by number format"),
  quantity("/cluster/gpu/peak_flops/bf16", kDefault, "0", Dimension::kFlopsPerSecond, 0, 1e18, false,
           "bf16 tensor-core peak; 0 = not supported"),
  quantity("/cluster/gpu/peak_flops/fp16", kDefault, "0", Dimension::kFlopsPerSecond, 0, 1e18, false,
           "fp16 tensor-core peak; 0 = not supported"),
  quantity("/cluster/gpu/peak_flops/fp8", kDefault, "0", Dimension::kFlopsPerSecond, 0, 1e18, false,
           "fp8 tensor-core peak; 0 = not supported"),
  quantity("/cluster/gpu/peak_flops/int8", kDefault, "0", Dimension::kFlopsPerSecond, 0, 1e18, false,
           "int8 matrix peak (integer ops per second); 0 = not supported (v1.2)"),
  quantity("/cluster/gpu/peak_flops/fp4", kDefault, "0", Dimension::kFlopsPerSecond, 0, 1e18, false,
           "dense NVFP4 tensor-core peak (block-scaled, Blackwell); 0 = not supported (v1.2)"),
  quantity("/cluster/gpu/peak_flops/tf32", kDefault, "0", Dimension::kFlopsPerSecond, 0, 1e18, false,
           "tf32 tensor-core peak; 0 = not supported"),
  quantity("/cluster/gpu/peak_flops/fp32", kDefault, "0", Dimension::kFlopsPerSecond, 0, 1e18, false,
           "fp32 rate of the SM (non-tensor) units"),
  object("/cluster/gpu/hbm", kRequired, "device memory"),
  quantity("/cluster/gpu/hbm/capacity", kRequired, "", Dimension::kBytes, 0, kPeta, true,
           "HBM capacity per GPU"),
  quantity("/cluster/gpu/hbm/bandwidth", kRequired, "", Dimension::kBytesPerSecond, 0, kPeta, true,
           "HBM bandwidth per GPU"),
  object("/cluster/gpu/l2", kRequired, "last-level on-chip cache"),
  quantity("/cluster/gpu/l2/capacity", kRequired, "", Dimension::kBytes, 0, 1e12, true, "cache capacity"),
  quantity("/cluster/gpu/l2/bandwidth", kRequired, "", Dimension::kBytesPerSecond, 0, kPeta, true,
           "cache bandwidth"),
  integer("/cluster/gpu/sms", kRequired, "", 1, 1e5, "streaming multiprocessors (compute units on AMD)"),
  quantity("/cluster/gpu/clock", kRequired, "", Dimension::kHertz, 0, 1e11, true,
           "clock at which the tensor peak is quoted (extension)"),
  quantity("/cluster/gpu/launch_overhead", kRequired, "", Dimension::kSeconds, 0, 0.01, false,
           "host launch overhead of one kernel on a stream (extension)"),
  boolean("/cluster/gpu/has_nvls", "false", "NVLink SHARP in-switch reduction in the scale-up domain (extension)"),
  quantity("/cluster/gpu/board_power", kOptional, "", Dimension::kWatts, 0, 1e5, true,
           "board power the GPU's published GEMM measurements ran at (extension; presets: the rating)"),
  quantity("/cluster/gpu/host_link", kOptional, "", Dimension::kBytesPerSecond, 0, kPeta, true,
           "host memory <-> device link per GPU, one direction (PCIe, NVLink-C2C): the copies of "
           "parallelism.activation_offload run at this rate beside compute (extension); unset: "
           "those copies are not priced"),
  quantity("/cluster/gpu/power_limit", kComputed, "= board_power", Dimension::kWatts, 0, 1e5, true,
           "power the board is capped at; sets the clock its tensor cores sustain (v1.1); above the "
           "power model's 100 W static draw"),
  text("/cluster/gpu/profile", kDefault, "\"\"", kPathLength,
       "calibration profile (JSON) used instead of datasheet efficiency; empty = datasheet"),
  integer("/cluster/nodes", kRequired, "", 1, 1e7, "nodes (servers) in the cluster"),
  integer("/cluster/gpus_per_node", kRequired, "", 1, 1024, "GPUs per node"),
  object("/cluster/scale_up", kRequired, "the scale-up domain (NVLink / NVSwitch, Infinity Fabric, TPU ICI)"),
  quantity("/cluster/scale_up/bandwidth", kRequired, "", Dimension::kBytesPerSecond, 0, kPeta, true,
           "per GPU, per direction (a mesh or torus: all of its links together)"),
  quantity("/cluster/scale_up/latency", kDefault, "0", Dimension::kSeconds, 0, 1, false,
           "one hop: GPU -> switch -> GPU, one mesh or torus link; replaces NCCL's own 0.6 us "
           "NVLink hop in its per-step collective latencies"),
  integer("/cluster/scale_up/domain", kComputed, "= gpus_per_node (a torus: its slice)", 1, 1e6,
          "GPUs per scale-up domain"),
  choice("/cluster/scale_up/topology", "\"switch\"", "switch|mesh|torus",
         "switch: NVSwitch crossbar; mesh: a link between every pair of GPUs (AMD Infinity Fabric); "
         "torus: TPU ICI, one domain per slice (extension)"),
  object("/cluster/scale_up/torus", kOptional, "the grid of a TPU slice (topology torus; extension)"),
  integer("/cluster/scale_up/torus/dims", kDefault, "3", 2, 3, "axes of the torus (v5p, TPU7x: 3; v6e: 2)"),
  {"/cluster/scale_up/torus/shape", KeyKind::kString, kComputed,
   "the most balanced grid of the slice's chips", Dimension::kNone, 0, kNameLength, false, "grid",
   "axis lengths of each slice, x (fastest-varying chip id) first, e.g. \"8x16x12\""},
  {"/cluster/scale_up/torus/max_shape", KeyKind::kString, kOptional, "", Dimension::kNone, 0,
   kNameLength, false, "grid", "the largest slice (the pod's ICI extent, any axis order); derived shapes stay inside"},
  integer("/cluster/scale_up/torus/wrap_length", kDefault, "0", 0, 1e5,
          "an axis wraps around when its length is a multiple of this (v6e: 16, v5p: 4); 0 = never"),
  boolean("/cluster/scale_up/torus/wrap_needs_all_axes", "false",
          "wrap-around only when every axis is such a multiple (v5p, TPU7x: whole 4x4x4 cubes)"),
  number("/cluster/scale_up/efficiency", kDefault, "1", 0, 1, true,
         "fraction of the bandwidth payload reaches through NCCL (protocol overhead; extension)"),
  object("/cluster/scale_out", kOptional, "the scale-out network (InfiniBand / RoCE); required when nodes > 1"),
  quantity("/cluster/scale_out/nic_bandwidth", kRequired, "", Dimension::kBytesPerSecond, 0, kPeta, true,
           "per NIC, per direction"),
  integer("/cluster/scale_out/nics_per_node", kComputed, "= gpus_per_node", 1, 1024, "NICs per node"),
  quantity("/cluster/scale_out/latency", kDefault, "0", Dimension::kSeconds, 0, 1, false,
           "one switch hop, NIC to NIC"),
  number("/cluster/scale_out/efficiency", kDefault, "1", 0, 1, true,
         "fraction of the NIC bandwidth payload reaches through NCCL (extension)"),
  boolean("/cluster/scale_out/rail_optimized", "false",
          "NIC i of every node goes to the rail-i switch of the first tier (extension)"),
  {"/cluster/scale_out/tiers", KeyKind::kArray, kComputed,
   "one non-blocking tier over all nodes", Dimension::kNone, 1, 16, false, "",
   "switching tiers, innermost first"},
  object("/cluster/scale_out/tiers/*", kRequired, "one switching tier"),
  text("/cluster/scale_out/tiers/*/name", kRequired, "", kNameLength, "label of the tier (rack, pod, ...)"),
  integer("/cluster/scale_out/tiers/*/nodes", kDefault, "0", 0, 1e7,
          "nodes under one switch group of this tier; 0 = all nodes (the top tier)"),
  number("/cluster/scale_out/tiers/*/oversubscription", kDefault, "1", 0, 1000, true,
         "downlink:uplink capacity of the groups below into this tier (7 = 1:7)"),
  integer("/cluster/slices", kDefault, "1", 1, 1e6,
          "TPU slices joined over the data-centre network (scale_out); nodes split evenly (v1.2)"),
  number("/cluster/price_per_gpu_hour", kOptional, "", 0, 1e6, true, "dollars per GPU-hour, for cost reports"),
  text("/cluster/price_source", kOptional, "", kTextLength,
       "what price_per_gpu_hour is: a public list price (where, when) or else what (extension)"),
  // Reliability: failures that stop a synchronous job, per 1,000 days of each
  // part's runtime. Defaults: Kokolis et al. (arXiv 2410.21680) measured 5 per
  // 1,000 node-days on Meta's RSC A100 clusters; split by the shares of the
  // Llama 3 paper's Table 5 counts (of 419) over 8 GPUs and 8 NICs per node
  // (docs/goodput.md).
  object("/cluster/reliability", kOptional,
         "failure rates of the cluster's parts, per 1,000 days of each part's runtime (extension)"),
  text("/cluster/reliability/source", kOptional, "", kTextLength, "where the rates come from"),
  number("/cluster/reliability/gpu_per_1000_gpu_days", kDefault, "0.2834", 0, 1e6, false,
         "GPU failures (faulty GPU, SRAM, GPU system processor, thermal) per GPU"),
  number("/cluster/reliability/hbm_per_1000_gpu_days", kDefault, "0.1074", 0, 1e6, false,
         "GPU memory (HBM) failures per GPU"),
  number("/cluster/reliability/sdc_per_1000_gpu_days", kDefault, "0.00895", 0, 1e6, false,
         "silent data corruption caught and stopped for, per GPU"),
  number("/cluster/reliability/host_per_1000_node_days", kDefault, "0.1671", 0, 1e6, false,
         "host hardware (CPU, DRAM, SSD, power supply, chassis, IO board) per node"),
  number("/cluster/reliability/host_maintenance_per_1000_node_days", kDefault, "0.3819", 0, 1e6,
         false, "unplanned maintenance of a host, per node"),
  number("/cluster/reliability/software_per_1000_node_days", kDefault, "0.7518", 0, 1e6, false,
         "software bugs, dependencies and NCCL watchdog timeouts, per node"),
  number("/cluster/reliability/nic_per_1000_nic_days", kDefault, "0.01044", 0, 1e6, false,
         "NIC failures per NIC"),
  number("/cluster/reliability/network_per_1000_nic_days", kDefault, "0.05221", 0, 1e6, false,
         "network switch and cable failures, per NIC link"),
  number("/cluster/reliability/planned_per_day", kDefault, "0", 0, 1e4, false,
         "planned interruptions of the job per day (maintenance, configuration changes)"),
  object("/cluster/storage", kOptional, "where checkpoints are written (extension)"),
  quantity("/cluster/storage/write_bandwidth", kComputed, "= 651 MB/s per node",
           Dimension::kBytesPerSecond, 0, 1e18, true,
           "sustained write bandwidth a job's checkpoints get (Llama 3: 2 TB/s for 3,072 nodes)"),
  quantity("/cluster/storage/read_bandwidth", kComputed, "= write_bandwidth",
           Dimension::kBytesPerSecond, 0, 1e18, true,
           "sustained read bandwidth, for loading a checkpoint at a restart"),
  quantity("/cluster/storage/host_copy_bandwidth", kDefault, "\"52 GB/s\"",
           Dimension::kBytesPerSecond, 0, kPeta, true,
           "one GPU's copy of its state to pinned host memory (H100 PCIe Gen5, measured)"),

  integer("/gpus", kComputed, "= dp*tp*pp*cp", 1, kMaxDegree, "GPUs the job uses; must fit the cluster"),

  object("/training", kRequired, "batch, sequence, precision, optimizer"),
  integer("/training/seq_len", kRequired, "", 1, 1 << 27, "tokens per sequence"),
  integer("/training/global_batch", kRequired, "", 1, 1 << 30, "sequences per optimizer step"),
  integer("/training/micro_batch", kDefault, "1", 1, 1 << 30, "sequences per micro-batch on one pipeline"),
  choice("/training/precision", "\"bf16\"", "bf16|fp16|fp8|fp4|int8|fp32",
         "format of the matrix products (fp8, fp4, int8: the linears' products in that format, "
         "the rest bf16; fp4 needs a GPU with an fp4 peak)"),
  {"/training/precision_recipe", KeyKind::kEnum, kOptional, "", Dimension::kNone, 0, 0, false,
   "tensorwise|delayed|blockwise|mxfp8|nvfp4|aqt-int8|fp8_full",
   "how low-precision matrix products are scaled, with the cast, amax and scale kernels each "
   "operand costs (1.2): fp8 takes tensorwise, delayed, blockwise, mxfp8 (block-scaled GPUs) "
   "or fp8_full; fp4 takes nvfp4 (its default); int8 takes aqt-int8; unset: the software's "
   "fp8 recipe"},
  choice("/training/optimizer", "\"adam\"", "adam|sgd", "adam (fp32 master weights and two moments) or sgd"),

  object("/parallelism", kOptional, "how the work is split (all degrees default to 1)"),
  integer("/parallelism/dp", kDefault, "1", 1, kMaxDegree, "data-parallel degree"),
  integer("/parallelism/tp", kDefault, "1", 1, kMaxDegree, "tensor-parallel degree"),
  integer("/parallelism/pp", kDefault, "1", 1, kMaxDegree, "pipeline-parallel degree (stages)"),
  integer("/parallelism/cp", kDefault, "1", 1, kMaxDegree, "context-parallel degree"),
  integer("/parallelism/ep", kDefault, "1", 1, kMaxDegree,
          "expert-parallel degree; ep*expert_tp divides tp*cp*dp"),
  integer("/parallelism/expert_tp", kDefault, "1", 1, kMaxDegree,
          "tensor parallelism inside each expert (MoE parallel folding, 1.2)"),
  boolean("/parallelism/sequence_parallel", "false", "shard norm/dropout activations across the TP group"),
  integer("/parallelism/zero", kDefault, "0", 0, 3,
          "0 plain DP, 1 optimizer states sharded, 2 + gradients, 3 + weights (FSDP)"),
  integer("/parallelism/shard_group", kComputed, "= dp", 1, kMaxDegree,
          "HSDP: data-parallel ranks in one shard group; replicas across groups"),
  object("/parallelism/pipeline", kOptional, "pipeline schedule"),
  choice("/parallelism/pipeline/schedule", "\"1f1b\"",
         "gpipe|1f1b|interleaved_1f1b|zero_bubble|dualpipe", "pipeline schedule"),
  integer("/parallelism/pipeline/virtual_stages", kDefault, "1", 1, 1e5,
          "model chunks per GPU (interleaved_1f1b only)"),
  {"/parallelism/pipeline/layout", KeyKind::kTextOrArray, kOptional, "", Dimension::kNone, 1, 1e5,
   false, "", "layers per model chunk: an array of counts, or Megatron's layout string "
   "(\"Et|(tt|)*30L\": E embedding, t layer, m MTP, L loss, | stage boundary)"},
  integer("/parallelism/pipeline/layout/*", kRequired, "", 0, 1e5,
          "transformer layers of one model chunk"),
  object("/parallelism/context", kOptional, "context parallelism"),
  choice("/parallelism/context/algorithm", "\"ring\"", "ring|ulysses|all_gather",
         "how attention is split across the CP group"),
  {"/parallelism/recompute", KeyKind::kEnumOrObject, kDefault, "\"none\"", Dimension::kNone, 0, 0,
   false, "none|selective|full",
   "activation recomputation: none, selective (attention core), full, or {\"every\": C}"},
  integer("/parallelism/recompute/every", kRequired, "", 1, 1e5, "checkpoint every C layers"),
  enum_array("/parallelism/recompute_modules",
             "Megatron's selective-recompute modules (1.2; with recompute \"selective\"): "
             "core_attn, mlp, moe, shared_experts keep their input and recompute the rest; "
             "layernorm, moe_act, mla_up_proj free their output and recompute it"),
  choice("/parallelism/recompute_modules/*", "\"core_attn\"",
         "core_attn|mlp|moe|moe_act|layernorm|mla_up_proj|shared_experts",
         "a module recomputed in backward"),
  integer("/parallelism/recompute_layers", kDefault, "0", 0, 1e5,
          "first layers of every model chunk recomputed in full, the rest per recompute (1.2)"),
  enum_array("/parallelism/activation_offload",
             "tensors offloaded to host memory (MaxText names, 1.2): MaxText's custom remat "
             "policy -- these are saved on the host, everything else recomputed from the layer "
             "input; the copies run beside compute at cluster.gpu.host_link"),
  choice("/parallelism/activation_offload/*", "\"decoder_layer_input\"",
         "decoder_layer_input|context|mlpwi|mlpwi_0|mlpwi_1|mlpwo|query_proj|key_proj|"
         "value_proj|qkv_proj|out_proj",
         "a tensor offloaded after the forward pass and fetched back for the backward"),
  {"/parallelism/order", KeyKind::kString, kDefault, "\"tp-cp-ep-dp-pp\"", Dimension::kNone, 0, 64,
   false, "order", "rank layout, innermost first: a permutation of tp, cp, ep, dp, pp joined by '-'"},

  object("/options", kOptional, "overlap switches and model-level knobs"),
  object("/options/overlap", kOptional, "which communication may overlap compute"),
  boolean("/options/overlap/dp", "true", "data-parallel gradient reduction overlaps the backward pass"),
  boolean("/options/overlap/tp", "false",
          "tensor-parallel collectives overlap compute, as the software does it "
          "(software.tp_overlap; none, or no sequence parallelism: no effect)"),
  boolean("/options/overlap/pp", "true",
          "pipeline send/recv overlaps compute (not where software.pipeline.p2p is "
          "blocking_sync)"),
  boolean("/options/overlap/cp", "true", "context-parallel K/V exchange overlaps attention"),
  boolean("/options/flash_attention", "true", "fused attention: no s*s score matrix is kept"),
  integer("/options/dp_bucket_params", kDefault, "0", 0, 1e12,
          "parameters per gradient bucket; 0 = Megatron's max(40M, 1M x dp) (extension)"),
  integer("/options/fsdp_unit_layers", kDefault, "1", 1, 1e5,
          "transformer layers per ZeRO-3/FSDP unit, one all-gather each (extension)"),
  {"/options/grad_format", KeyKind::kEnum, kComputed, "the software's data_parallel.reduce_dtype",
   Dimension::kNone, 0, 0, false, "fp32|bf16",
   "format of accumulated gradients and their reduction (extension)"},
  optional_boolean("/options/zero2_reduce_every_micro_batch",
          "ZeRO-2: reduce-scatter gradients after every micro-batch (true) or once per step "
          "(false); unset: every micro-batch without pipeline parallelism (DeepSpeed, FSDP), "
          "once per step with it (torchtitan; DeepSpeed refuses ZeRO-2 with PP) (extension)"),
  object("/options/moe", kOptional,
         "how the framework moves tokens to the experts and overlaps the shared experts (extension)"),
  choice("/options/moe/dispatcher", "\"alltoall\"", "alltoall|fused",
         "alltoall: Megatron's NCCL all-to-all, a copy per token and destination GPU; fused: "
         "DeepEP/HybridEP (Megatron flex, DeepSeek's HAI-LLM), a copy per destination node "
         "forwarded over NVLink, on SMs of its own (extension)"),
  boolean("/options/moe/shared_expert_overlap", "false",
          "shared experts on their own stream beside dispatch and combine (Megatron "
          "--moe-shared-expert-overlap; extension)"),
  choice("/options/moe/dispatch_format", "\"bf16\"", "bf16|fp8",
         "format of the tokens a fused dispatch sends (DeepEP and DeepSeek-V3 dispatch fp8, "
         "combine bf16; extension)"),
  integer("/options/moe/dispatch_sms", kDefault, "0", 0, 1 << 12,
          "SMs the fused dispatch/combine kernels hold; 0 = the NCCL kernel's (DeepSeek-V3: 20, "
          "Megatron's DeepEP default 20, HybridEP 16; extension)"),
  choice("/options/simulation", "\"symmetric\"", "symmetric|every_rank",
         "symmetric: one representative per pipeline stage; every_rank: every GPU (extension)"),

  // Stragglers in the step (scenarios/step/, docs/goodput.md).
  object("/degraded", kOptional,
         "parts slower than their datasheet in the simulated step; the step is then simulated "
         "with every rank (extension)"),
  object("/degraded/gpu", kOptional, "one GPU whose compute runs slowly (throttling)"),
  integer("/degraded/gpu/rank", kRequired, "", 0, 1e9, "the slow GPU's rank in the job"),
  number("/degraded/gpu/slowdown", kRequired, "", 1, 1000, false,
         "how many times as long its compute kernels take"),
  object("/degraded/nic", kOptional, "one NIC below its rate (a degraded link)"),
  integer("/degraded/nic/rank", kRequired, "", 0, 1e9,
          "the rank whose NIC it is (the NIC its GPU sends and receives through)"),
  number("/degraded/nic/rate_fraction", kRequired, "", 0, 1, true,
         "the fraction of its rate the NIC keeps, both directions"),

  // The whole run (scenarios/run/, docs/goodput.md).
  object("/run", kOptional,
         "the whole training run: token budget, checkpoints, restarts, stragglers (extension)"),
  number("/run/tokens", kRequired, "", 0, 1e18, true, "tokens to train"),
  integer("/run/samples", kDefault, "1000", 1, 1e6, "runs sampled for the distribution"),
  integer("/run/seed", kDefault, "1", 0, 9007199254740992.0, "seed of the sampler (xoshiro256**)"),
  object("/run/checkpoint", kOptional, "checkpoint saves"),
  choice("/run/checkpoint/mode", "\"async\"", "sync|async",
         "async: training waits for the copy to host memory only; sync: until the write ends"),
  {"/run/checkpoint/interval", KeyKind::kEnumOrObject, kDefault, "\"daly\"", Dimension::kNone, 0, 0,
   false, "daly|young",
   "daly or young: the optimum for the job's failure rate; or {\"steps\": N} or "
   "{\"time\": \"30 min\"}"},
  integer("/run/checkpoint/interval/steps", kOptional, "", 1, 1e15, "steps between saves"),
  quantity("/run/checkpoint/interval/time", kOptional, "", Dimension::kSeconds, 0, 1e10, true,
           "time between saves, rounded to whole steps"),
  object("/run/restart", kOptional, "what an interruption costs besides the work it loses"),
  quantity("/run/restart/overhead", kDefault, "\"10 min\"", Dimension::kSeconds, 0, 1e7, false,
           "from the failure to training again, the checkpoint load excluded "
           "(Kokolis et al.: 5-20 min)"),
  quantity("/run/restart/requeue", kDefault, "\"0 s\"", Dimension::kSeconds, 0, 1e8, false,
           "waiting for replacement nodes or the scheduler (0: hot spares)"),
  object("/run/stragglers", kOptional, "GPUs that keep working, slowly"),
  number("/run/stragglers/node_fraction", kDefault, "0.005", 0, 1, false,
         "fraction of nodes with a slow GPU at any time (MegaScale: about 0.5%)"),
  number("/run/stragglers/gpu_slowdown", kDefault, "1.1", 1, 1000, false,
         "how many times as long a slow GPU takes for its compute (MegaScale: about 10%)"),
  quantity("/run/stragglers/mean_duration", kDefault, "\"4395 s\"", Dimension::kSeconds, 0, 1e9,
           true,
           "how long a slow GPU stays slow (FALCON: 10 s to 10 h; log-uniform mean)"),
};

constexpr KeyDecl kValidationKeys[] = {
  object("", kRequired, "a validation-case file"),
  text("/notes", kOptional, "", kTextLength, "free text for people"),
  {"/cases", KeyKind::kArray, kRequired, "", Dimension::kNone, 1, 100000, false, "",
   "measured runs to compare against"},
  object("/cases/*", kRequired, "one measured run"),
  text("/cases/*/id", kRequired, "", kNameLength, "unique id of the case"),
  text("/cases/*/source", kOptional, "", kTextLength, "paper, table"),
  {"/cases/*/scenario", KeyKind::kScenario, kRequired, "", Dimension::kNone, 0, 0, false, "",
   "the scenario that was run (the keys above)"},
  object("/cases/*/measured", kOptional, "what was measured (any subset)"),
  // Measured values start at 1e-6: an error relative to 1e-320 is infinite.
  number("/cases/*/measured/step_time_s", kOptional, "", kLeastMeasured, 1e9, false, "one optimizer step, seconds"),
  number("/cases/*/measured/tflops_per_gpu", kOptional, "", kLeastMeasured, 1e6, false, "model TFLOP/s per GPU"),
  number("/cases/*/measured/mfu", kOptional, "", kLeastMeasured, 1, false, "model FLOPs utilisation"),
  number("/cases/*/measured/memory_peak_gib", kOptional, "", kLeastMeasured, 1e6, false,
         "peak memory per GPU as the allocator reported it, GiB"),
  text("/cases/*/notes", kOptional, "", kTextLength, "what was derived or assumed"),
};
// clang-format on

std::string_view parent_of(std::string_view pattern) {
  const size_t slash = pattern.rfind('/');
  return slash == std::string_view::npos ? std::string_view() : pattern.substr(0, slash);
}

std::string_view last_segment(std::string_view pattern) {
  const size_t slash = pattern.rfind('/');
  return slash == std::string_view::npos ? pattern : pattern.substr(slash + 1);
}

std::string range_number(double value, const KeyDecl& decl) {
  if (decl.kind == KeyKind::kQuantity) {
    return format_number(value) + " " + std::string(dimension_unit(decl.dimension));
  }
  return format_number(value);
}

std::vector<std::string> split_allowed(std::string_view allowed) {
  std::vector<std::string> values;
  size_t start = 0;
  while (start <= allowed.size()) {
    const size_t bar = allowed.find('|', start);
    const size_t end = bar == std::string_view::npos ? allowed.size() : bar;
    values.emplace_back(allowed.substr(start, end - start));
    if (bar == std::string_view::npos) break;
    start = bar + 1;
  }
  return values;
}

}  // namespace

std::span<const KeyDecl> scenario_keys() {
  // The core table, then the software section (schema_software.cc).
  static const std::vector<KeyDecl> keys = [] {
    std::vector<KeyDecl> all(std::begin(kScenarioKeys), std::end(kScenarioKeys));
    const std::span<const KeyDecl> software = software_keys();
    all.insert(all.end(), software.begin(), software.end());
    return all;
  }();
  return keys;
}
std::span<const KeyDecl> validation_keys() { return kValidationKeys; }

std::vector<int> parse_grid(std::string_view text) {
  std::vector<int> axes;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t x = text.find('x', start);
    const std::string_view part =
        text.substr(start, x == std::string_view::npos ? std::string_view::npos : x - start);
    int a = 0;
    const auto [end, error] = std::from_chars(part.data(), part.data() + part.size(), a);
    if (part.empty() || part.size() > 6 || error != std::errc{} ||
        end != part.data() + part.size() || a < 1) {
      return {};
    }
    axes.push_back(a);
    if (x == std::string_view::npos) break;
    start = x + 1;
  }
  if (axes.size() < 2 || axes.size() > 3) return {};
  return axes;
}

const KeyDecl* find_decl(std::span<const KeyDecl> table, std::string_view pattern) {
  for (const KeyDecl& decl : table) {
    if (decl.path == pattern) return &decl;
  }
  return nullptr;
}

std::vector<std::string> declared_children(std::span<const KeyDecl> table,
                                           std::string_view pattern) {
  std::vector<std::string> children;
  for (const KeyDecl& decl : table) {
    if (!decl.path.empty() && parent_of(decl.path) == pattern && last_segment(decl.path) != "*") {
      children.emplace_back(last_segment(decl.path));
    }
  }
  return children;
}

std::vector<std::string> patterns_ending_with(std::span<const KeyDecl> table,
                                              std::string_view key) {
  std::vector<std::string> patterns;
  for (const KeyDecl& decl : table) {
    if (!decl.path.empty() && last_segment(decl.path) == key) patterns.emplace_back(decl.path);
  }
  return patterns;
}

std::vector<std::string> allowed_values(const KeyDecl& decl) {
  switch (decl.kind) {
    case KeyKind::kEnum:
    case KeyKind::kEnumOrObject:
      return split_allowed(decl.allowed);
    case KeyKind::kPresetOrObject:
    case KeyKind::kPresetName:
      return builtin_presets().names(decl.allowed);
    default:
      return {};
  }
}

std::string allowed_text(const KeyDecl& decl) {
  switch (decl.kind) {
    case KeyKind::kEnum:
      return join_list(split_allowed(decl.allowed), 100);
    case KeyKind::kEnumOrObject:
      return join_list(split_allowed(decl.allowed), 100) + " or an object";
    case KeyKind::kPresetOrObject:
    case KeyKind::kPresetName:
      return "presets: " + join_list(builtin_presets().names(decl.allowed), 100);
    case KeyKind::kInteger:
    case KeyKind::kNumber:
    case KeyKind::kQuantity: {
      const std::string low = range_number(decl.min, decl);
      const std::string high = range_number(decl.max, decl);
      return (decl.min_exclusive ? "> " + low + ", <= " : low + " .. ") + high;
    }
    case KeyKind::kArray:
      return format_number(decl.min) + " .. " + format_number(decl.max) + " elements";
    case KeyKind::kTextOrArray:
      return "a string, or " + format_number(decl.min) + " .. " + format_number(decl.max) +
             " elements";
    case KeyKind::kString:
      if (decl.allowed == "order") return "permutation of tp, cp, ep, dp, pp";
      if (decl.allowed == "grid") return "2 or 3 positive integers joined by 'x'";
      return "at most " + format_number(decl.max) + " bytes";
    case KeyKind::kTextMap:
      return "keys: the group's other keys";
    case KeyKind::kObject:
    case KeyKind::kScenario:
    case KeyKind::kBool:
      return "";
  }
  return "";
}

std::string_view kind_text(const KeyDecl& decl) {
  switch (decl.kind) {
    case KeyKind::kObject:
      return "object";
    case KeyKind::kArray:
      return "array";
    case KeyKind::kTextOrArray:
      return "string or array";
    case KeyKind::kPresetOrObject:
      return "preset name or object";
    case KeyKind::kPresetName:
      return "preset name";
    case KeyKind::kEnumOrObject:
      return "string or object";
    case KeyKind::kScenario:
      return "scenario object";
    case KeyKind::kTextMap:
      return "object of strings";
    case KeyKind::kInteger:
      return "integer";
    case KeyKind::kNumber:
      return "number";
    case KeyKind::kQuantity:
      switch (decl.dimension) {
        case Dimension::kBytes:
          return "size";
        case Dimension::kSeconds:
          return "time";
        case Dimension::kBytesPerSecond:
          return "bandwidth";
        case Dimension::kFlopsPerSecond:
          return "compute rate";
        case Dimension::kHertz:
          return "frequency";
        case Dimension::kWatts:
          return "power";
        case Dimension::kNone:
          return "number";
      }
      return "number";
    case KeyKind::kBool:
      return "boolean";
    case KeyKind::kString:
      return "string";
    case KeyKind::kEnum:
      return "enum";
  }
  return "";
}

std::string default_text(const KeyDecl& decl) {
  switch (decl.presence) {
    case Presence::kRequired:
      return "(required)";
    case Presence::kOptional:
      return "(none)";
    case Presence::kDefault:
    case Presence::kComputed:
      return std::string(decl.default_value);
  }
  return "";
}

}  // namespace podsim::scenarios
