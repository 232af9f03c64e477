#pragma once

#include <cstdint>
#include <string_view>

namespace podsim::sim {

/// A number format of tensors and arithmetic. Domain-free (a format, not a
/// GPU feature): workload plans count bytes with it, hardware models pick the
/// unit's rate with it, and the two meet without depending on each other.
/// kFp4 is NVFP4's 4-bit E2M1 element (block scales counted apart by the
/// recipes that make it).
enum class NumberFormat : uint8_t { kFp32, kTf32, kBf16, kFp16, kFp8, kInt8, kFp4 };

inline constexpr int kNumberFormats = 7;

/// Bytes one element takes in memory (tf32 is stored as fp32).
constexpr double bytes_per_element(NumberFormat format) {
  switch (format) {
    case NumberFormat::kFp32:
    case NumberFormat::kTf32:
      return 4.0;
    case NumberFormat::kBf16:
    case NumberFormat::kFp16:
      return 2.0;
    case NumberFormat::kFp8:
    case NumberFormat::kInt8:
      return 1.0;
    case NumberFormat::kFp4:
      return 0.5;
  }
  return 4.0;
}

constexpr std::string_view to_string(NumberFormat format) {
  switch (format) {
    case NumberFormat::kFp32:
      return "fp32";
    case NumberFormat::kTf32:
      return "tf32";
    case NumberFormat::kBf16:
      return "bf16";
    case NumberFormat::kFp16:
      return "fp16";
    case NumberFormat::kFp8:
      return "fp8";
    case NumberFormat::kInt8:
      return "int8";
    case NumberFormat::kFp4:
      return "fp4";
  }
  return "fp32";
}

}  // namespace podsim::sim
