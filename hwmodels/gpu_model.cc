#include "hwmodels/gpu_model.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/ceil_div.h"

namespace podsim::hwmodels {
namespace {

// Granularity of a tensor-core MMA instruction in M and N (wgmma m64nNk16).
constexpr int64_t kMmaM = 64;
constexpr int64_t kMmaN = 8;

double element_bytes(sim::NumberFormat format) { return sim::bytes_per_element(format); }

}  // namespace

GemmEfficiency gemm_efficiency(const KernelEfficiency& params, int sms, const GemmShape& shape,
                               sim::NumberFormat format) {
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0 || shape.batch <= 0) {
    throw std::invalid_argument(
        "gemm_efficiency: GEMM dimensions must be positive (m=" + std::to_string(shape.m) +
        " n=" + std::to_string(shape.n) + " k=" + std::to_string(shape.k) +
        " batch=" + std::to_string(shape.batch) + ")");
  }
  if (sms <= 0) throw std::invalid_argument("gemm_efficiency: GpuSpec::sms must be positive");
  if (params.gemm_tile_m <= 0 || params.gemm_tile_n <= 0) {
    throw std::invalid_argument("gemm_efficiency: tile sizes must be positive");
  }
  GemmEfficiency eff;
  eff.plateau = params.plateau(format);
  // A problem narrower than the tile gets a narrower kernel: the BLAS picks
  // its kernel per shape (a GEMV for n = 1), and no kernel pads a dimension
  // past the next multiple of its MMA instruction (Hopper wgmma is m64nNk16
  // with N a multiple of 8 up to 256: PTX ISA, "Asynchronous Warpgroup Level
  // Matrix Multiply-Accumulate"). Without this a GEMV would be charged for a
  // 256-column tile and come out compute-bound.
  const int64_t tile_m = std::min<int64_t>(params.gemm_tile_m, ceil_div(shape.m, kMmaM) * kMmaM);
  const int64_t tile_n = std::min<int64_t>(params.gemm_tile_n, ceil_div(shape.n, kMmaN) * kMmaN);
  eff.tiles = shape.batch * ceil_div(shape.m, tile_m) * ceil_div(shape.n, tile_n);
  eff.waves = ceil_div(eff.tiles, sms);
  // Useful output over what the waves could compute: idle SMs in the last
  // wave and the padding of ragged edge tiles both cost.
  const double useful = static_cast<double>(shape.m) * static_cast<double>(shape.n) *
                        static_cast<double>(shape.batch);
  const double capacity = static_cast<double>(eff.waves) * sms * static_cast<double>(tile_m) *
                          static_cast<double>(tile_n);
  eff.wave = useful / capacity;
  const double k = static_cast<double>(shape.k);
  eff.k_ramp = k / (k + std::max(0.0, params.gemm_k_overhead));
  return eff;
}

KernelCost& KernelCost::operator+=(const KernelCost& other) {
  // The dominant kernel of a sequence names the bound.
  const bool other_dominates = other.time_s > time_s;
  time_s += other.time_s;
  flops += other.flops;
  bytes += other.bytes;
  compute_s += other.compute_s;
  memory_s += other.memory_s;
  kernels += other.kernels;
  if (other_dominates) {
    bound = other.bound;
    efficiency = other.efficiency;
  }
  if (other.source == ParamSource::kProfile) source = ParamSource::kProfile;
  return *this;
}

double causal_block_fill(const AttentionShape& s, int64_t tile) {
  if (!s.causal) return 1.0;
  // A flash kernel works in tile x tile blocks of the score matrix: a block
  // the causal diagonal crosses is computed whole and masked (FlashAttention-2
  // and -3 skip only the blocks entirely above the diagonal). Query tile i
  // (the last q_len positions, aligned at the end of the keys) computes every
  // key block up to the one holding its last row's last key.
  const int64_t offset = s.kv_len - s.q_len;
  double computed = 0;
  for (int64_t row0 = 0; row0 < s.q_len; row0 += tile) {
    const int64_t rows = std::min(tile, s.q_len - row0);
    const int64_t keys = std::clamp<int64_t>(row0 + rows + offset, 0, s.kv_len);
    int64_t end = std::min(ceil_div(keys, tile) * tile, s.kv_len);
    int64_t begin = 0;
    if (s.window > 0) {  // key blocks before the first row's window are skipped
      begin = std::max<int64_t>(0, row0 + offset + 1 - s.window) / tile * tile;
    }
    computed += static_cast<double>(rows) * static_cast<double>(std::max<int64_t>(0, end - begin));
  }
  return computed > 0 ? attention_pairs(s) / computed : 1.0;
}

double attention_pairs(const AttentionShape& s) {
  const double q = static_cast<double>(s.q_len);
  const double kv = static_cast<double>(s.kv_len);
  if (!s.causal) return q * kv;
  if (s.window > 0) {
    // Query i sees min(window, i + kv - q + 1) keys, none when that is < 1:
    // rows [a, b) on the ramp see first + i keys each, the rest see window.
    const double w = static_cast<double>(s.window);
    const double first = kv - q + 1;  // keys query 0 would see without a window
    const double a = std::clamp(1.0 - first, 0.0, q);
    const double b = std::clamp(w - first, a, q);
    return (b - a) * first + (a + b - 1) * (b - a) / 2 + (q - b) * w;
  }
  // Query i (0-based among the last q positions) sees keys j <= i + (kv - q),
  // at most kv of them: sum_i min(kv, i + kv - q + 1).
  const double offset = kv - q + 1;  // keys seen by query 0
  if (offset >= 1) return q * offset + q * (q - 1) / 2;
  // More queries than keys: the first (q - kv) rows see fewer than one key
  // under this alignment, i.e. none.
  const double rows = kv;  // rows that see 1..kv keys
  return rows * (rows + 1) / 2;
}

double tensor_power_ratio(double watts, double reference_watts) {
  constexpr double kExponent = 2;  // a
  if (!(reference_watts > kPowerModelStaticW) || !(watts > 0)) return 1.0;
  return std::pow(
      std::max(0.0, watts - kPowerModelStaticW) / (reference_watts - kPowerModelStaticW),
      1.0 / kExponent);
}

double tensor_power_factor(const GpuSpec& gpu) {
  const double cap = gpu.power_limit_w;
  if (!(cap > 0) || cap >= gpu.board_power_w) return 1.0;
  const double factor = tensor_power_ratio(cap, gpu.board_power_w);
  // A factor of 0 would price every matrix product at no time at all.
  if (!(factor > 0)) {
    std::ostringstream what;
    what << gpu.name << ": a power limit of " << cap
         << " W is at or below the power model's static draw (" << kPowerModelStaticW << " W)";
    throw std::invalid_argument(what.str());
  }
  return factor;
}

GpuModel::GpuModel(GpuSpec gpu) : gpu_(std::move(gpu)), power_factor_(tensor_power_factor(gpu_)) {
  params_ = default_kernel_efficiency(gpu_);
}

GpuModel::GpuModel(GpuSpec gpu, KernelEfficiency params)
    : gpu_(std::move(gpu)), params_(std::move(params)), power_factor_(tensor_power_factor(gpu_)) {
  const std::vector<SpecProblem> problems = validate(params_, gpu_);
  if (!problems.empty()) {
    std::string msg = "kernel efficiency parameters for " + gpu_.name + " are invalid:";
    for (const SpecProblem& p : problems) msg += "\n  " + p.to_string();
    throw std::invalid_argument(msg);
  }
}

double GpuModel::achievable_bandwidth(double bytes) const {
  if (bytes <= gpu_.l2_capacity_bytes && gpu_.l2_bw_bytes_per_s > 0) {
    return gpu_.l2_bw_bytes_per_s * params_.l2_fraction;
  }
  return gpu_.hbm_bw_bytes_per_s * params_.hbm_fraction;
}

KernelCost GpuModel::finish(double flops, double bytes, double peak_flops, double efficiency,
                            double bandwidth, double fixed_s) const {
  KernelCost cost;
  cost.flops = flops;
  cost.bytes = bytes;
  cost.efficiency = efficiency;
  cost.kernels = 1;
  cost.source = params_.source;
  cost.compute_s =
      (flops > 0 && peak_flops > 0 && efficiency > 0) ? flops / (peak_flops * efficiency) : 0.0;
  cost.memory_s = (bytes > 0 && bandwidth > 0) ? fixed_s + bytes / bandwidth : 0.0;
  const double body = std::max(cost.compute_s, cost.memory_s);
  cost.time_s = body + params_.launch_overhead_s;
  if (body < params_.launch_overhead_s) {
    cost.bound = KernelBound::kLaunch;
  } else {
    cost.bound = cost.compute_s >= cost.memory_s ? KernelBound::kCompute : KernelBound::kMemory;
  }
  return cost;
}

KernelCost GpuModel::gemm_time(const GemmShape& shape, sim::NumberFormat format,
                               GemmAccumulation accumulation) const {
  const double peak = gpu_.peak(format);
  if (!(peak > 0) || !(params_.plateau(format) > 0)) {
    throw std::invalid_argument("gemm_time: " + gpu_.name + " has no " +
                                std::string(sim::to_string(format)) +
                                " matrix rate (GpuSpec peak or KernelEfficiency plateau is 0)");
  }
  const GemmEfficiency eff = gemm_efficiency(params_, gpu_.sms, shape, format);
  const double m = static_cast<double>(shape.m);
  const double n = static_cast<double>(shape.n);
  const double k = static_cast<double>(shape.k);
  const double batch = static_cast<double>(shape.batch);
  const double flops = 2.0 * m * n * k * batch;
  // A, B read once and C written once: the minimum traffic; a well-tiled GEMM
  // re-reads operands from L2, not HBM. 8-bit GEMMs write a 16-bit C (fp8:
  // Transformer Engine / cuBLASLt output bf16; int8: AQT dequantizes the
  // int32 accumulator to bf16), others C in their format.
  const double out_bytes = element_bytes(format) < 2.0 ? 2.0 : element_bytes(format);
  const double bytes = ((m * k + k * n) * element_bytes(format) + m * n * out_bytes) * batch;
  const double bandwidth = gpu_.hbm_bw_bytes_per_s * params_.hbm_fraction;
  const double promotion =
      format == sim::NumberFormat::kFp8 && accumulation == GemmAccumulation::kPromoted
          ? params_.fp8_promoted_accumulation_slowdown
          : 1.0;
  return finish(flops, bytes, peak, eff.total() * power_factor_ / promotion, bandwidth,
                params_.mem_latency_s);
}

KernelCost GpuModel::gemm_time(int64_t m, int64_t n, int64_t k, int64_t batch,
                               sim::NumberFormat format, GemmAccumulation accumulation) const {
  return gemm_time(GemmShape{m, n, k, batch}, format, accumulation);
}

namespace {

void check_attention_shape(const AttentionShape& s) {
  if (s.batch <= 0 || s.heads <= 0 || s.kv_heads <= 0 || s.q_len <= 0 || s.kv_len <= 0 ||
      s.head_dim <= 0 || s.heads % s.kv_heads != 0) {
    throw std::invalid_argument(
        "attention_time: batch, heads, kv_heads, q_len, kv_len, head_dim must be positive and "
        "kv_heads must divide heads");
  }
}

/// What one flash kernel call does: FLOPs, HBM bytes, and its grid's wave
/// quantisation (forward tiles the queries, backward the keys).
struct FlashWork {
  double flops = 0;
  double bytes = 0;
  double wave = 1;
  double mean_keys = 0;  ///< keys a query attends to, on average
};

FlashWork flash_work(const AttentionShape& s, Pass pass, double element_bytes, int tile_rows,
                     int sms) {
  const double b = static_cast<double>(s.batch);
  const double h = static_cast<double>(s.heads);
  const double q = static_cast<double>(s.q_len);
  const double d = static_cast<double>(s.head_dim);
  const double q_bytes = b * q * h * d * element_bytes;  // Q, O, dO, dQ each
  const double kv_bytes =
      b * static_cast<double>(s.kv_len) * static_cast<double>(s.kv_heads) * d * element_bytes;
  const double lse_bytes = b * h * q * 4.0;  // fp32 log-sum-exp per row
  FlashWork w;
  const double pairs = attention_pairs(s);
  const double fwd_flops = 4.0 * b * h * d * pairs;  // QK^T and PV, 2 FLOP per MAC
  // Backward: QK^T recompute, dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q:
  // five matrix products against the forward's two.
  w.flops = pass == Pass::kForward ? fwd_flops : 2.5 * fwd_flops;
  w.bytes = pass == Pass::kForward ? 2 * q_bytes + 2 * kv_bytes + lse_bytes
                                   : 4 * q_bytes + 4 * kv_bytes + lse_bytes;  // +O,dO,dQ / dK,dV
  const int64_t rows = pass == Pass::kForward ? s.q_len : s.kv_len;
  const int64_t tile = std::max(1, tile_rows);
  const int64_t ctas = s.batch * s.heads * ceil_div(rows, tile);
  const int64_t units = std::max(1, sms);
  const int64_t waves = ceil_div(ctas, units);
  w.wave = static_cast<double>(ctas) / static_cast<double>(waves * units);
  w.mean_keys = pairs / q;
  return w;
}

}  // namespace

KernelCost GpuModel::attention_time(const AttentionShape& s, Pass pass, bool flash,
                                    sim::NumberFormat format) const {
  check_attention_shape(s);
  const double e = element_bytes(format);
  const double b = static_cast<double>(s.batch);
  const double h = static_cast<double>(s.heads);
  const double q = static_cast<double>(s.q_len);
  const double kv = static_cast<double>(s.kv_len);

  if (flash) {
    const double peak = gpu_.peak(format);
    const double plateau =
        pass == Pass::kForward ? params_.attn_fwd_plateau : params_.attn_bwd_plateau;
    if (!(peak > 0) || !(plateau > 0)) {
      throw std::invalid_argument("attention_time: " + gpu_.name + " has no " +
                                  std::string(sim::to_string(format)) + " flash-attention rate");
    }
    const FlashWork w = flash_work(s, pass, e, params_.attn_tile, gpu_.sms);
    const double ramp = w.mean_keys / (w.mean_keys + std::max(0.0, params_.attn_kv_half));
    return finish(w.flops, w.bytes, peak,
                  power_factor_ * plateau * w.wave * ramp *
                      causal_block_fill(s, std::max(1, params_.attn_tile)),
                  gpu_.hbm_bw_bytes_per_s * params_.hbm_fraction, params_.mem_latency_s);
  }

  // Non-flash (Megatron 2021): explicit score tensor of b*h*q*kv elements.
  const int64_t bh = s.batch * s.heads;
  const double scores = b * h * q * kv;
  // Softmax (fused scale+mask+softmax) reads scores, writes probabilities;
  // dropout reads them and writes the dropped copy and a 1-byte mask. FLOPs
  // ~5 per element (scale, max, exp, sum, divide).
  const double softmax_bytes = 2 * scores * e;
  const double dropout_bytes = scores * (2 * e + 1);
  KernelCost cost;
  if (pass == Pass::kForward) {
    cost += gemm_time(GemmShape{s.q_len, s.kv_len, s.head_dim, bh}, format);  // S = QK^T
    cost += memory_bound_time(softmax_bytes, 5 * scores, format);
    if (s.dropout) cost += memory_bound_time(dropout_bytes, scores, format);
    cost += gemm_time(GemmShape{s.q_len, s.head_dim, s.kv_len, bh}, format);  // O = PV
  } else {
    cost += gemm_time(GemmShape{s.kv_len, s.head_dim, s.q_len, bh}, format);  // dV = P^T dO
    cost += gemm_time(GemmShape{s.q_len, s.kv_len, s.head_dim, bh}, format);  // dP = dO V^T
    // Dropout backward reads dP and the mask, writes; softmax backward reads
    // P and dP, writes dS.
    if (s.dropout) cost += memory_bound_time(scores * (2 * e + 1), scores, format);
    cost += memory_bound_time(3 * scores * e, 4 * scores, format);
    cost += gemm_time(GemmShape{s.q_len, s.head_dim, s.kv_len, bh}, format);  // dQ = dS K
    cost += gemm_time(GemmShape{s.kv_len, s.head_dim, s.q_len, bh}, format);  // dK = dS^T Q
  }
  return cost;
}

KernelCost GpuModel::attention_time(const AttentionShape& s, Pass pass, AttentionKernel kernel,
                                    sim::NumberFormat format) const {
  check_attention_shape(s);
  const GpuArch arch = gpu_arch(gpu_);
  const AttentionKernel k = resolve(kernel, arch);
  if (const std::optional<std::string> why = unavailable(k, arch)) {
    throw std::invalid_argument("attention_time: " + *why + "; " + gpu_.name + " has none");
  }
  if (k == AttentionKernel::kUnfused) return attention_time(s, pass, false, format);
  if (!s.causal || s.kv_len <= s.q_len) return flash_kernel_time(s, pass, k, format);
  // Queries at the end of longer keys: every query sees the first kv - q
  // keys (a non-causal block) and then a causal square; one kernel.
  AttentionShape block = s;
  block.causal = false;
  block.kv_len = s.kv_len - s.q_len;
  AttentionShape square = s;
  square.kv_len = s.q_len;
  KernelCost cost = flash_kernel_time(block, pass, k, format);
  cost += flash_kernel_time(square, pass, k, format);
  cost.time_s -= params_.launch_overhead_s;
  cost.kernels = 1;
  return cost;
}

KernelCost GpuModel::flash_kernel_time(const AttentionShape& s, Pass pass, AttentionKernel kernel,
                                       sim::NumberFormat format) const {
  const double peak = gpu_.peak(format);
  const double plateau = params_.plateau(sim::NumberFormat::kBf16);
  if (!(peak > 0) || !(plateau > 0)) {
    throw std::invalid_argument("attention_time: " + gpu_.name + " has no " +
                                std::string(sim::to_string(format)) + " attention rate");
  }
  const int64_t keys = s.causal ? std::min(s.q_len, s.kv_len) : s.kv_len;
  const AttentionBenchmark bench = attention_benchmark(kernel, gpu_arch(gpu_), s.head_dim, keys,
                                                       s.causal, pass == Pass::kBackward);
  const FlashWork w = flash_work(s, pass, element_bytes(format), params_.attn_tile, gpu_.sms);
  // The benchmarks' grid: 16k tokens of hidden 2048, i.e. 128 query (or key)
  // tiles of 128 per head x 2048 / head_dim heads, many waves.
  AttentionShape grid;
  grid.batch = 1;
  grid.heads = std::max<int64_t>(1, 2048 / s.head_dim);
  grid.kv_heads = grid.heads;
  grid.q_len = grid.kv_len = 16384;
  grid.head_dim = s.head_dim;
  const double bench_wave = flash_work(grid, pass, 2, params_.attn_tile, gpu_.sms).wave;
  const double wave = std::min(1.0, w.wave / bench_wave);
  // Below the benchmarks' shortest sequence the per-tile fixed work grows.
  auto ramp = [&](double keys_per_query) {
    return keys_per_query / (keys_per_query + std::max(0.0, params_.attn_kv_half));
  };
  const double short_ramp = keys < 512 ? ramp(w.mean_keys) / ramp(s.causal ? 256.0 : 512.0) : 1.0;
  const double efficiency = bench.fraction_of_peak * (plateau / bench.reference_gemm_plateau) *
                            power_factor_ * wave * std::min(1.0, short_ramp);
  return finish(w.flops, w.bytes, peak, efficiency, gpu_.hbm_bw_bytes_per_s * params_.hbm_fraction,
                params_.mem_latency_s);
}

KernelCost GpuModel::memory_bound_time(double bytes, double flops, sim::NumberFormat /*format*/,
                                       double bandwidth_fraction) const {
  if (bytes < 0 || flops < 0) {
    throw std::invalid_argument("memory_bound_time: bytes and flops must be >= 0");
  }
  if (!(bandwidth_fraction > 0 && bandwidth_fraction <= 1)) {
    throw std::invalid_argument("memory_bound_time: bandwidth_fraction must be in (0, 1]");
  }
  // Elementwise arithmetic runs on the SM FP32 units whatever the storage
  // format (bf16/fp16 are widened); the format only changes the bytes, which
  // the caller counted.
  const double simt = gpu_.peak(sim::NumberFormat::kFp32);
  return finish(flops, bytes, simt, params_.simt_fraction,
                bandwidth_fraction * achievable_bandwidth(bytes), params_.mem_latency_s);
}

}  // namespace podsim::hwmodels
