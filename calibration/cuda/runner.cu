// Runs the benchmark sections in order, recording provenance; a failing
// section becomes an error line and the run goes on unless the CUDA context
// is lost.

#include <cublasLt.h>

#include <chrono>
#include <ctime>

#include "calibration/cuda/common.cuh"

#if PODSIM_HAVE_NCCL
#include <nccl.h>
#endif

namespace podsim::calibration::gpu {
namespace {

std::string version_string(int v) {
  // CUDA encodes 13.0 as 13000.
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

Provenance read_provenance(const RunOptions& options, const cudaDeviceProp& prop,
                           int device_count) {
  Provenance p;
  p.gpu_name = prop.name;
  p.compute_capability_major = prop.major;
  p.compute_capability_minor = prop.minor;
  p.sm_count = prop.multiProcessorCount;
  p.device_count = device_count;
  p.hbm_bytes = static_cast<double>(prop.totalGlobalMem);
  p.l2_bytes = static_cast<double>(prop.l2CacheSize);
  p.memory_bus_width_bits = prop.memoryBusWidth;
  int clock_khz = 0, mem_clock_khz = 0;
  // cudaDeviceProp lost clockRate in CUDA 13: ask the attributes.
  PODSIM_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, options.device));
  PODSIM_CUDA_CHECK(
      cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, options.device));
  p.sm_clock_hz_reported = clock_khz * 1e3;
  p.mem_clock_hz_reported = mem_clock_khz * 1e3;
  const SoftwareVersions versions = software_versions();
  p.driver_version = versions.driver;
  p.runtime_version = versions.runtime;
  p.cublas_version = versions.cublas;
  p.nccl_version = versions.nccl;
  p.date_utc = utc_now();
  p.command_line = options.command_line;
  p.podsim_version = options.podsim_version;
  p.quick = options.quick;
  return p;
}

struct Section {
  const char* name;
  void (*run)(Context&);
};

}  // namespace

SoftwareVersions software_versions() {
  SoftwareVersions v;
  int driver = 0, runtime = 0;
  PODSIM_CUDA_CHECK(cudaDriverGetVersion(&driver));
  PODSIM_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  v.driver = version_string(driver);
  v.runtime = version_string(runtime);
  const size_t lt = cublasLtGetVersion();  // major * 10000 + minor * 100 + patch
  v.cublas = std::to_string(lt / 10000) + "." + std::to_string((lt % 10000) / 100) + "." +
             std::to_string(lt % 100);
#if PODSIM_HAVE_NCCL
  int nccl = 0;
  if (ncclGetVersion(&nccl) == ncclSuccess) {
    // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
    v.nccl = std::to_string(nccl / 10000) + "." + std::to_string((nccl % 10000) / 100) + "." +
             std::to_string(nccl % 100);
  }
#endif
  return v;
}

std::string device_unavailable_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return cudaGetErrorString(e);
  }
  if (n == 0) return "no CUDA devices found";
  return "";
}

RawMeasurements run_calibration(const RunOptions& options) {
  cudaDeviceProp prop{};
  const int count = select_device(options.device, prop);

  RawMeasurements raw;
  raw.provenance = read_provenance(options, prop, count);
  Stream stream;
  Context ctx{options, raw, prop, options.device, stream.get()};

  // Cheap and robust first; our own tensor-core kernels last, so that a kernel
  // that breaks the context costs nothing already measured.
  const Section sections[] = {
      {"fp32", measure_clock_and_fp32},
      {"hbm", measure_hbm},
      {"l2", measure_l2},
      {"launch", measure_launch},
      {"host copies", measure_host_copies},
      {"layers", measure_layers},
      {"gemm", measure_gemm},
      {"multi-gpu", measure_multi_gpu},
      {"attention", measure_attention},
      {"tensor peaks", measure_tensor_peaks},
  };
  const auto t0 = std::chrono::steady_clock::now();
  for (const Section& section : sections) {
    ctx.progress(std::string("== ") + section.name);
    const bool lost =
        run_section(section.name, options.device, raw.errors, [&] { section.run(ctx); });
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ctx.progress(std::string("   ") + section.name + " done at " +
                 std::to_string(static_cast<int>(elapsed)) + " s");
    if (options.checkpoint) options.checkpoint(raw);
    if (lost) {
      raw.errors.push_back("run stopped after '" + std::string(section.name) +
                           "': the CUDA context is lost; later sections were not measured");
      if (options.checkpoint) options.checkpoint(raw);
      break;
    }
  }
  return raw;
}

}  // namespace podsim::calibration::gpu
