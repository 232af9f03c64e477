#include <string>

#include "calibration/cuda/cublaslt.cuh"

namespace podsim::calibration::gpu {
namespace {

// The stored matrix of an operand in column-major terms: a row-major
// [rows x cols] tensor is a column-major [cols x rows] one with ld = cols.
struct Stored {
  int64_t rows, cols, ld;
};

// A' = B of the column-major call C^T = op(B)^T op(A)^T.
Stored stored_b(const RowMajorGemmSpec& s) {
  // trans_b: B stored row-major [n x k] = column-major [k x n], used transposed.
  return s.trans_b ? Stored{s.k, s.n, s.k} : Stored{s.n, s.k, s.n};
}
// B' = A.
Stored stored_a(const RowMajorGemmSpec& s) {
  return s.trans_a ? Stored{s.m, s.k, s.m} : Stored{s.k, s.m, s.k};
}

void set_attribute(cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t attribute,
                   uint32_t value) {
  PODSIM_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(p, attribute, &value, sizeof value));
}

}  // namespace

int pointer_alignment(const void* address) {
  const auto bits = reinterpret_cast<uintptr_t>(address);
  int alignment = 256;
  while (alignment > 1 && bits % static_cast<uintptr_t>(alignment) != 0) alignment /= 2;
  return alignment;
}

RowMajorGemm::RowMajorGemm(cublasLtHandle_t lt, const RowMajorGemmSpec& spec,
                           size_t workspace_bytes)
    : lt_(lt),
      spec_(spec),
      workspace_bytes_(workspace_bytes),
      desc_(CUBLAS_COMPUTE_32F),
      a_layout_(CUDA_R_16BF, stored_b(spec).rows, stored_b(spec).cols, stored_b(spec).ld),
      b_layout_(CUDA_R_16BF, stored_a(spec).rows, stored_a(spec).cols, stored_a(spec).ld),
      c_layout_(spec.c_fp32 ? CUDA_R_32F : CUDA_R_16BF, spec.n, spec.m, spec.n) {
  const cublasOperation_t op_a = spec.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_b = spec.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  PODSIM_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(desc_.d, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a));
  PODSIM_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(desc_.d, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b));
  Preference pref(workspace_bytes);
  const auto alignment = static_cast<uint32_t>(spec.alignment);
  set_attribute(pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignment);
  set_attribute(pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignment);
  set_attribute(pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignment);
  set_attribute(pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignment);
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(lt_, desc_.d, a_layout_.l, b_layout_.l, c_layout_.l,
                                     c_layout_.l, pref.p, 1, &heuristic, &found);
  if (st != CUBLAS_STATUS_SUCCESS || found == 0) {
    throw CudaError("cuBLASLt has no algorithm for the row-major GEMM " + std::to_string(spec.m) +
                        "x" + std::to_string(spec.n) + "x" + std::to_string(spec.k) + " (" +
                        cublas_status_name(st) + ")",
                    /*sticky=*/false);
  }
  algo_ = heuristic.algo;
}

void RowMajorGemm::run(const void* a, const void* b, void* c, void* workspace,
                       cudaStream_t stream) const {
  const float alpha = 1.0f, beta = spec_.accumulate ? 1.0f : 0.0f;
  PODSIM_CUBLAS_CHECK(cublasLtMatmul(lt_, desc_.d, &alpha, b, a_layout_.l, a, b_layout_.l, &beta, c,
                                     c_layout_.l, c, c_layout_.l, &algo_, workspace,
                                     workspace_bytes_, stream));
}

}  // namespace podsim::calibration::gpu
