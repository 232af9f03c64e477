#pragma once

// cuBLASLt pieces shared by the GEMM benchmark and the executor: RAII for
// the handle and descriptors, and a row-major GEMM (the layout of PyTorch and
// Megatron tensors) with its algorithm chosen once.

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>

#include "calibration/cuda/check.h"

namespace podsim::calibration::gpu {

// RAII for the cuBLASLt descriptors.
struct LtHandle {
  cublasLtHandle_t h = nullptr;
  LtHandle() { PODSIM_CUBLAS_CHECK(cublasLtCreate(&h)); }
  ~LtHandle() {
    if (h) cublasLtDestroy(h);
  }
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
};
struct OpDesc {
  cublasLtMatmulDesc_t d = nullptr;
  OpDesc(cublasComputeType_t compute) {
    PODSIM_CUBLAS_CHECK(cublasLtMatmulDescCreate(&d, compute, CUDA_R_32F));
  }
  ~OpDesc() {
    if (d) cublasLtMatmulDescDestroy(d);
  }
  OpDesc(const OpDesc&) = delete;
  OpDesc& operator=(const OpDesc&) = delete;
};
struct Layout {
  cublasLtMatrixLayout_t l = nullptr;
  Layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld) {
    PODSIM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, type, static_cast<uint64_t>(rows),
                                                   static_cast<uint64_t>(cols), ld));
  }
  ~Layout() {
    if (l) cublasLtMatrixLayoutDestroy(l);
  }
  Layout(const Layout&) = delete;
  Layout& operator=(const Layout&) = delete;
};
struct Preference {
  cublasLtMatmulPreference_t p = nullptr;
  explicit Preference(size_t workspace) {
    PODSIM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&p));
    const uint64_t ws = workspace;
    PODSIM_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
        p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  }
  ~Preference() {
    if (p) cublasLtMatmulPreferenceDestroy(p);
  }
  Preference(const Preference&) = delete;
  Preference& operator=(const Preference&) = delete;
};

/// Row-major C[m x n] = op(A)[m x k] op(B)[k x n] (+ C when `accumulate`),
/// bf16 inputs, fp32 accumulation. A is stored [m x k], or [k x m] when
/// trans_a; B is stored [k x n], or [n x k] when trans_b; C is bf16, or fp32
/// when c_fp32. `alignment` is the largest power of two (<= 256) dividing
/// every operand's address, for the algorithm heuristic.
struct RowMajorGemmSpec {
  int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  bool c_fp32 = false;
  bool accumulate = false;
  int alignment = 256;
};

/// Largest power of two <= 256 dividing `address`.
int pointer_alignment(const void* address);

/// One GEMM configuration with the algorithm cuBLASLt's heuristic picked.
/// The row-major product is run as its column-major transpose: C^T = op(B)^T
/// op(A)^T, so cuBLASLt sees m' = n, n' = m.
class RowMajorGemm {
 public:
  /// Throws CudaError when cuBLASLt has no algorithm for it.
  RowMajorGemm(cublasLtHandle_t lt, const RowMajorGemmSpec& spec, size_t workspace_bytes);
  RowMajorGemm(const RowMajorGemm&) = delete;
  RowMajorGemm& operator=(const RowMajorGemm&) = delete;

  void run(const void* a, const void* b, void* c, void* workspace, cudaStream_t stream) const;
  const RowMajorGemmSpec& spec() const { return spec_; }

 private:
  cublasLtHandle_t lt_;
  RowMajorGemmSpec spec_;
  size_t workspace_bytes_;
  OpDesc desc_;
  Layout a_layout_, b_layout_, c_layout_;
  cublasLtMatmulAlgo_t algo_{};
};

}  // namespace podsim::calibration::gpu
