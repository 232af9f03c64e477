// The speed and memory targets of issue 15, measured as a user meets them:
// the podsim binary started as a separate process, timed from start to exit,
// with its peak resident memory (wait4's ru_maxrss, what /usr/bin/time -v
// reports) and, for a step, the engine events it processed per second.
//
// Each benchmark and its target (idle 2-core machine):
// - Cli_Run_Llama3_405B_24kH100_EveryRank (tools/benchmarks/inputs/llama3-405b-24k.json,
//   --every-rank): under 10 s and 2 GB, on one core;
// - Cli_Run_Llama3_405B_16kH100_EveryRank (the default scenario, --every-rank): under 6 s;
// - Cli_Run_Gpt3_175B_1024A100_EveryRank (scenarios/examples/gpt3-175b-selene.json,
//   --every-rank): under 0.5 s and 100 MB;
// - Cli_Run_Default (podsim run: symmetric): under 0.2 s and 60 MB;
// - Cli_Sweep_Llama3_70B_1024H100 (scenarios/examples/llama3-70b-1024-h100.json): under 10 s
//   on 2 cores;
// - Cli_Sweep_Llama3_70B_2048H100 (the same with --gpus 2048): under 20 s and 1 GB.
//
// Run: tools/bench --benchmark_filter=Cli
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#ifndef PODSIM_SOURCE_DIR
#define PODSIM_SOURCE_DIR "."
#endif
#ifndef PODSIM_BINARY_DIR
#define PODSIM_BINARY_DIR "."
#endif

extern char** environ;

namespace {

struct ChildRun {
  int status = -1;
  double wall_s = 0;
  double cpu_s = 0;  ///< user + system
  double peak_rss_mb = 0;
  std::string out;  ///< standard output
};

/// Runs `podsim ARGS` from the source directory, standard output to a file
/// that is read back, standard error discarded.
ChildRun run_podsim(const std::vector<std::string>& args) {
  ChildRun r;
  const std::string binary = std::string(PODSIM_BINARY_DIR) + "/podsim";
  char out_path[] = "/tmp/podsim_bench_XXXXXX";
  const int out_fd = mkstemp(out_path);
  if (out_fd < 0) return r;
  close(out_fd);
  std::vector<std::string> argv_text{binary};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path, O_WRONLY | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addchdir_np(&actions, PODSIM_SOURCE_DIR);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned == 0) {
    rusage usage{};
    wait4(pid, &r.status, 0, &usage);
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    r.cpu_s = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
              1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
    r.peak_rss_mb = static_cast<double>(usage.ru_maxrss) / 1024.0;  // Linux: KiB
  }
  std::ifstream in(out_path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  r.out = text.str();
  std::remove(out_path);
  return r;
}

void report(benchmark::State& state, const ChildRun& r) {
  state.SetIterationTime(r.wall_s);
  state.counters["wall_s"] = r.wall_s;
  state.counters["cpu_s"] = r.cpu_s;
  state.counters["peak_rss_MB"] = r.peak_rss_mb;
}

/// `podsim run ARGS --json`: also the engine events per second of wall time.
void cli_run(benchmark::State& state, std::vector<std::string> args) {
  args.insert(args.begin(), "run");
  args.push_back("--json");
  for (auto _ : state) {
    const ChildRun r = run_podsim(args);
    if (r.status != 0) {
      state.SkipWithError("podsim run failed");
      return;
    }
    report(state, r);
    const auto json = nlohmann::json::parse(r.out, nullptr, false);
    const double events = json.is_object() ? json.value("engine_events", 0.0) : 0.0;
    state.counters["events"] = events;
    state.counters["events_per_s"] = r.wall_s > 0 ? events / r.wall_s : 0.0;
  }
}

void cli_sweep(benchmark::State& state, std::vector<std::string> args) {
  args.insert(args.begin(), "sweep");
  args.push_back("--json");
  args.push_back("--quiet");
  for (auto _ : state) {
    const ChildRun r = run_podsim(args);
    if (r.status != 0) {
      state.SkipWithError("podsim sweep failed");
      return;
    }
    report(state, r);
    const auto json = nlohmann::json::parse(r.out, nullptr, false);
    if (json.is_object()) {
      state.counters["plans"] = json.value("plans_total", 0.0);
      state.counters["simulated"] = json.value("plans_simulated", 0.0);
    }
  }
}

void BM_Cli_Run_Llama3_405B_24kH100_EveryRank(benchmark::State& state) {
  cli_run(state, {"tools/benchmarks/inputs/llama3-405b-24k.json", "--every-rank"});
}
void BM_Cli_Run_Llama3_405B_16kH100_EveryRank(benchmark::State& state) {
  cli_run(state, {"--every-rank"});
}
void BM_Cli_Run_Gpt3_175B_1024A100_EveryRank(benchmark::State& state) {
  cli_run(state, {"scenarios/examples/gpt3-175b-selene.json", "--every-rank"});
}
void BM_Cli_Run_Default(benchmark::State& state) { cli_run(state, {}); }
// One slow GPU: the step runs on its pipeline replica (16 ranks), not on
// every rank (docs/goodput.md, "Stragglers in the step").
void BM_Cli_Run_Llama3_405B_16kH100_SlowGpu(benchmark::State& state) {
  cli_run(state, {"tools/benchmarks/inputs/llama3-405b-16k-slow-gpu.json"});
}
void BM_Cli_Sweep_Llama3_70B_1024H100(benchmark::State& state) {
  cli_sweep(state, {"scenarios/examples/llama3-70b-1024-h100.json"});
}
void BM_Cli_Sweep_Llama3_70B_2048H100(benchmark::State& state) {
  cli_sweep(state, {"scenarios/examples/llama3-70b-1024-h100.json", "--gpus", "2048"});
}

BENCHMARK(BM_Cli_Run_Llama3_405B_24kH100_EveryRank)
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kSecond);
BENCHMARK(BM_Cli_Run_Llama3_405B_16kH100_EveryRank)
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kSecond);
BENCHMARK(BM_Cli_Run_Gpt3_175B_1024A100_EveryRank)
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Cli_Run_Default)->UseManualTime()->Iterations(5)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Cli_Run_Llama3_405B_16kH100_SlowGpu)
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Cli_Sweep_Llama3_70B_1024H100)
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kSecond);
BENCHMARK(BM_Cli_Sweep_Llama3_70B_2048H100)
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace
