// cuBLASLt GEMMs over a grid of shapes in bf16, fp16, tf32 and (sm_89+) fp8:
// achieved FLOP/s by shape. Layout "TN" (A row-major M x K, B stored N x K,
// both K-contiguous; D column-major M x N), as a Linear layer's forward uses.

#include <cublasLt.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "calibration/cuda/common.cuh"
#include "calibration/cuda/cublaslt.cuh"

namespace podsim::calibration::gpu {
namespace {

struct Shape {
  int64_t m, n, k;
};

struct GemmType {
  const char* name;
  cudaDataType_t ab;
  cudaDataType_t cd;
  cublasComputeType_t compute;
  size_t ab_bytes;
  size_t cd_bytes;
  int min_cc;
  double tolerance;  // |D - ref| <= tolerance * sum |a b|: output rounding (+ tf32 input rounding)
};

std::vector<Shape> gemm_shapes(bool quick) {
  std::vector<Shape> shapes;
  const std::vector<int64_t> mn =
      quick ? std::vector<int64_t>{512, 2048, 8192}
            : std::vector<int64_t>{256, 512, 1024, 2048, 4096, 8192, 16384};
  const std::vector<int64_t> ks =
      quick ? std::vector<int64_t>{512, 4096} : std::vector<int64_t>{256, 1024, 4096, 16384};
  for (int64_t s : mn) {
    for (int64_t k : ks) shapes.push_back({s, s, k});
  }
  // Transformer layers at 8192 tokens (Llama 3 8B and 70B, whole and split 8 ways
  // by tensor parallelism), and a weight-gradient GEMM (K = tokens).
  const std::vector<Shape> layers = {{8192, 6144, 4096},  {8192, 4096, 4096},  {8192, 28672, 4096},
                                     {8192, 4096, 14336}, {8192, 10240, 8192}, {8192, 57344, 8192},
                                     {8192, 8192, 28672}, {8192, 1280, 8192},  {8192, 8192, 1024},
                                     {8192, 7168, 8192},  {8192, 8192, 3584},  {4096, 4096, 8192},
                                     {8192, 8192, 8192}};
  if (quick) {
    shapes.push_back(layers[0]);
    shapes.push_back(layers[2]);
    shapes.push_back(layers[3]);
  } else {
    shapes.insert(shapes.end(), layers.begin(), layers.end());
  }
  return shapes;
}

template <class T>
double host_value(uint64_t seed, size_t index) {
  return static_cast<double>(random_value<T>(seed, index, -1.0f, 1.0f));
}

double read_output(const void* d, size_t index, cudaDataType_t type) {
  if (type == CUDA_R_32F) {
    float v;
    PODSIM_CUDA_CHECK(
        cudaMemcpy(&v, static_cast<const float*>(d) + index, sizeof v, cudaMemcpyDeviceToHost));
    return v;
  }
  if (type == CUDA_R_16F) {
    __half v;
    PODSIM_CUDA_CHECK(
        cudaMemcpy(&v, static_cast<const __half*>(d) + index, sizeof v, cudaMemcpyDeviceToHost));
    return static_cast<double>(__half2float(v));
  }
  __nv_bfloat16 v;
  PODSIM_CUDA_CHECK(cudaMemcpy(&v, static_cast<const __nv_bfloat16*>(d) + index, sizeof v,
                               cudaMemcpyDeviceToHost));
  return static_cast<double>(__bfloat162float(v));
}

// Random input value of element `index` of operand seeded `seed`, as the GPU holds it.
double input_value(cudaDataType_t type, uint64_t seed, size_t index) {
  switch (type) {
    case CUDA_R_16BF:
      return host_value<__nv_bfloat16>(seed, index);
    case CUDA_R_16F:
      return host_value<__half>(seed, index);
    case CUDA_R_8F_E4M3:
      return host_value<__nv_fp8_e4m3>(seed, index);
    default:
      return host_value<float>(seed, index);
  }
}

void fill_input(void* ptr, cudaDataType_t type, size_t n, uint64_t seed, cudaStream_t stream) {
  switch (type) {
    case CUDA_R_16BF:
      fill_random(static_cast<__nv_bfloat16*>(ptr), n, seed, -1.0f, 1.0f, stream);
      break;
    case CUDA_R_16F:
      fill_random(static_cast<__half*>(ptr), n, seed, -1.0f, 1.0f, stream);
      break;
    case CUDA_R_8F_E4M3:
      fill_random(static_cast<__nv_fp8_e4m3*>(ptr), n, seed, -1.0f, 1.0f, stream);
      break;
    default:
      fill_random(static_cast<float*>(ptr), n, seed, -1.0f, 1.0f, stream);
      break;
  }
}

}  // namespace

void measure_gemm(Context& ctx) {
  const std::vector<GemmType> types = {
      {"bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2, 80, 6e-3},
      {"fp16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2, 80, 2e-3},
      {"tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4, 80, 4e-3},
      {"fp8", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2, 89, 1e-2},
  };
  const std::vector<Shape> shapes = gemm_shapes(ctx.options.quick);
  LtHandle lt;
  const size_t workspace_bytes = size_t{64} << 20;
  DeviceBuffer<unsigned char> workspace(workspace_bytes);
  Preference pref(workspace_bytes);
  const uint64_t seed_a = 501, seed_b = 502;

  for (const GemmType& type : types) {
    if (ctx.cc() < type.min_cc) {
      ctx.raw.skipped.push_back(
          std::string("gemm.") + type.name + ": skipped (needs compute capability " +
          std::to_string(type.min_cc / 10) + "." + std::to_string(type.min_cc % 10) + ")");
      continue;
    }
    size_t max_a = 0, max_b = 0, max_d = 0;
    for (const Shape& s : shapes) {
      max_a = std::max(max_a, static_cast<size_t>(s.m * s.k));
      max_b = std::max(max_b, static_cast<size_t>(s.n * s.k));
      max_d = std::max(max_d, static_cast<size_t>(s.m * s.n));
    }
    DeviceBuffer<unsigned char> a(max_a * type.ab_bytes), b(max_b * type.ab_bytes),
        d(max_d * type.cd_bytes);
    fill_input(a.get(), type.ab, max_a, seed_a, ctx.stream);
    fill_input(b.get(), type.ab, max_b, seed_b, ctx.stream);

    Series series;
    series.name = std::string("gemm.") + type.name;
    series.work_unit = "flops";
    series.description =
        "cuBLASLt matmul D = A B^T (TN), best heuristic algorithm, fp32 accumulate, beta = 0; "
        "work = 2 m n k";
    series.attributes = {{"fit", "gemm_efficiency"},
                         {"dtype", type.name},
                         {"library", "cuBLASLt " + ctx.raw.provenance.cublas_version},
                         {"inputs", "uniform random in [-1, 1)"}};
    for (const Shape& s : shapes) {
      ctx.progress(series.name + " " + std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                   std::to_string(s.k));
      OpDesc op(type.compute);
      const cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
      PODSIM_CUBLAS_CHECK(
          cublasLtMatmulDescSetAttribute(op.d, CUBLASLT_MATMUL_DESC_TRANSA, &op_t, sizeof op_t));
      PODSIM_CUBLAS_CHECK(
          cublasLtMatmulDescSetAttribute(op.d, CUBLASLT_MATMUL_DESC_TRANSB, &op_n, sizeof op_n));
      Layout la(type.ab, s.k, s.m, s.k);
      Layout lb(type.ab, s.k, s.n, s.k);
      Layout ld(type.cd, s.m, s.n, s.m);
      cublasLtMatmulHeuristicResult_t heuristic{};
      int found = 0;
      const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt.h, op.d, la.l, lb.l, ld.l, ld.l,
                                                               pref.p, 1, &heuristic, &found);
      if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
        ctx.raw.errors.push_back(series.name + ": no cuBLASLt algorithm for " +
                                 std::to_string(s.m) + "x" + std::to_string(s.n) + "x" +
                                 std::to_string(s.k) + " (" + cublas_status_name(st) + ")");
        continue;
      }
      const float alpha = 1.0f, beta = 0.0f;
      auto enqueue = [&](int) {
        PODSIM_CUBLAS_CHECK(cublasLtMatmul(lt.h, op.d, &alpha, a.get(), la.l, b.get(), lb.l, &beta,
                                           d.get(), ld.l, d.get(), ld.l, &heuristic.algo,
                                           workspace.get(), workspace_bytes, ctx.stream));
      };
      Point p;
      p.params = {{"m", static_cast<double>(s.m)},
                  {"n", static_cast<double>(s.n)},
                  {"k", static_cast<double>(s.k)}};
      p.work = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
      p.times_s = time_repeats(ctx.stream, ctx.warmup(), ctx.repeats(), enqueue);
      // Check 8 sampled outputs against a host dot product of the same inputs.
      bool ok = true;
      for (uint64_t i = 0; i < 8; ++i) {
        const int64_t m = static_cast<int64_t>(mix64(601, i) % static_cast<uint64_t>(s.m));
        const int64_t n = static_cast<int64_t>(mix64(602, i) % static_cast<uint64_t>(s.n));
        double want = 0, scale = 0;
        for (int64_t k = 0; k < s.k; ++k) {
          const double x = input_value(type.ab, seed_a, static_cast<size_t>(m * s.k + k)) *
                           input_value(type.ab, seed_b, static_cast<size_t>(n * s.k + k));
          want += x;
          scale += std::abs(x);
        }
        const double got = read_output(d.get(), static_cast<size_t>(n * s.m + m), type.cd);
        ok = ok && std::abs(got - want) <= type.tolerance * scale;
      }
      p.check_passed = ok;
      series.points.push_back(std::move(p));
    }
    ctx.raw.series.push_back(std::move(series));
  }
}

}  // namespace podsim::calibration::gpu
