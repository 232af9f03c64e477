// Kernel launch overhead (on a stream and replayed from a CUDA graph) and
// pinned host<->device copies.

#include <chrono>
#include <cstring>

#include "calibration/cuda/common.cuh"

namespace podsim::calibration::gpu {
namespace {

__global__ void tick_kernel(unsigned long long* counter) {
  if (threadIdx.x == 0) atomicAdd(counter, 1ull);
}

class Graph {
 public:
  ~Graph() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    if (graph_ != nullptr) cudaGraphDestroy(graph_);
  }
  cudaGraph_t* graph() { return &graph_; }
  cudaGraphExec_t* exec() { return &exec_; }
  cudaGraphExec_t get() const { return exec_; }

 private:
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

Series launch_series(const char* name, const char* description) {
  Series s;
  s.name = name;
  s.work_unit = "launches";
  s.description = description;
  s.attributes = {{"fit", "alpha_beta"}, {"kernel", "1 block x 32 threads, one atomic increment"}};
  return s;
}

}  // namespace

void measure_launch(Context& ctx) {
  DeviceBuffer<unsigned long long> counter(1);
  const std::vector<int> counts = {1, 2, 4, 8, 16, 32, 64, 128, 256};
  const int calls = ctx.warmup() + ctx.repeats();

  Series stream_series =
      launch_series("launch.stream",
                    "n kernels launched back to back on one stream, CUDA-event time of the batch; "
                    "1 / beta_per_s = time per kernel");
  for (int n : counts) {
    ctx.progress("launch: " + std::to_string(n) + " kernels on a stream");
    PODSIM_CUDA_CHECK(cudaMemsetAsync(counter.get(), 0, sizeof(unsigned long long), ctx.stream));
    Point p;
    p.params = {{"kernels", n}};
    p.work = n;
    p.times_s = time_repeats(ctx.stream, ctx.warmup(), ctx.repeats(), [&](int) {
      for (int i = 0; i < n; ++i) {
        tick_kernel<<<1, 32, 0, ctx.stream>>>(counter.get());
        PODSIM_CUDA_CHECK_LAUNCH();
      }
    });
    p.check_passed = counter.read(0) ==
                     static_cast<unsigned long long>(calls) * static_cast<unsigned long long>(n);
    stream_series.points.push_back(std::move(p));
  }
  ctx.raw.series.push_back(std::move(stream_series));

  Series graph_series = launch_series(
      "launch.graph",
      "a CUDA graph of n kernels replayed with cudaGraphLaunch, CUDA-event time per replay; "
      "alpha_s = graph launch, 1 / beta_per_s = time per kernel inside the graph");
  for (int n : counts) {
    ctx.progress("launch: CUDA graph of " + std::to_string(n) + " kernels");
    Graph graph;
    PODSIM_CUDA_CHECK(cudaStreamBeginCapture(ctx.stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < n; ++i) tick_kernel<<<1, 32, 0, ctx.stream>>>(counter.get());
    const cudaError_t launch_error = cudaGetLastError();
    PODSIM_CUDA_CHECK(cudaStreamEndCapture(ctx.stream, graph.graph()));
    PODSIM_CUDA_CHECK(launch_error);
    PODSIM_CUDA_CHECK(cudaGraphInstantiate(graph.exec(), *graph.graph(), 0));
    PODSIM_CUDA_CHECK(cudaMemsetAsync(counter.get(), 0, sizeof(unsigned long long), ctx.stream));
    Point p;
    p.params = {{"kernels", n}};
    p.work = n;
    p.times_s = time_repeats(ctx.stream, ctx.warmup(), ctx.repeats(), [&](int) {
      PODSIM_CUDA_CHECK(cudaGraphLaunch(graph.get(), ctx.stream));
    });
    p.check_passed = counter.read(0) ==
                     static_cast<unsigned long long>(calls) * static_cast<unsigned long long>(n);
    graph_series.points.push_back(std::move(p));
  }
  ctx.raw.series.push_back(std::move(graph_series));

  // Host (CPU) cost of one cudaLaunchKernel, wall clock, queue not full.
  ctx.progress("launch: host cost per launch");
  PODSIM_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
  const int host_launches = 256;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < host_launches; ++i) tick_kernel<<<1, 32, 0, ctx.stream>>>(counter.get());
  const auto t1 = std::chrono::steady_clock::now();
  PODSIM_CUDA_CHECK_LAUNCH();
  PODSIM_CUDA_CHECK(cudaStreamSynchronize(ctx.stream));
  ctx.raw.scalars["launch.host_enqueue_s"] =
      std::chrono::duration<double>(t1 - t0).count() / host_launches;
}

void measure_host_copies(Context& ctx) {
  const size_t max_bytes = ctx.options.quick ? (size_t{256} << 20) : (size_t{1} << 30);
  PinnedBuffer src(max_bytes), back(max_bytes);
  DeviceBuffer<unsigned char> dev(max_bytes);
  // Random bytes (not zeros) so that a wrong copy cannot pass.
  auto* words = reinterpret_cast<uint64_t*>(src.get());
  for (size_t i = 0; i < max_bytes / 8; ++i) words[i] = mix64(901, i);
  for (const bool h2d : {true, false}) {
    Series s;
    s.name = h2d ? "copy.h2d" : "copy.d2h";
    s.work_unit = "bytes";
    s.description = std::string("cudaMemcpyAsync ") + (h2d ? "host->device" : "device->host") +
                    " from/to pinned host memory; work = bytes copied";
    s.attributes = {{"fit", "alpha_beta"}};
    for (size_t bytes = 4096; bytes <= max_bytes; bytes *= 4) {
      ctx.progress(s.name + " " + format_bytes(static_cast<double>(bytes)));
      if (!h2d) PODSIM_CUDA_CHECK(cudaMemcpy(dev.get(), src.get(), bytes, cudaMemcpyHostToDevice));
      Point p;
      p.params = {{"bytes", static_cast<double>(bytes)}};
      p.work = static_cast<double>(bytes);
      p.times_s = time_repeats(ctx.stream, ctx.warmup(), ctx.repeats(), [&](int) {
        if (h2d) {
          PODSIM_CUDA_CHECK(
              cudaMemcpyAsync(dev.get(), src.get(), bytes, cudaMemcpyHostToDevice, ctx.stream));
        } else {
          PODSIM_CUDA_CHECK(
              cudaMemcpyAsync(back.get(), dev.get(), bytes, cudaMemcpyDeviceToHost, ctx.stream));
        }
      });
      if (h2d) PODSIM_CUDA_CHECK(cudaMemcpy(back.get(), dev.get(), bytes, cudaMemcpyDeviceToHost));
      p.check_passed = std::memcmp(back.get(), src.get(), bytes) == 0;
      std::memset(back.get(), 0, bytes);
      s.points.push_back(std::move(p));
    }
    ctx.raw.series.push_back(std::move(s));
  }
}

}  // namespace podsim::calibration::gpu
