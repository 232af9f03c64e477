// `podsim sweep` and `podsim run --trace/--timeline` as a user runs them,
// and the same sweep under `mpirun -np 2`, byte for byte.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "run_binary.h"

namespace podsim::tools_test {
namespace {

using nlohmann::json;

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// 16 H100 of the SuperPOD preset and an 8-layer model: over 500 valid
/// plans, swept in well under a second.
std::string small_scenario_file() {
  return write_temp("sweep_small.json", R"({"name": "small sweep",
    "model": {"layers": 8, "hidden": 1024, "ffn_hidden": 4096, "heads": 16, "kv_heads": 4,
              "vocab": 32000},
    "cluster": {"base": "dgx-h100-superpod", "nodes": 2}, "gpus": 16,
    "training": {"seq_len": 2048, "global_batch": 32, "micro_batch": 1},
    "parallelism": {"tp": 2, "pp": 2, "dp": 4, "sequence_parallel": true}})");
}

TEST(SweepCli, JsonHasTheContractKeysAndTheTopK) {
  const RunResult r = run_podsim({"sweep", small_scenario_file(), "--json", "--top", "7"}, 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_GE(j.at("plans_total").get<uint64_t>(), 500u);
  EXPECT_EQ(j.at("plans_total").get<uint64_t>(),
            j.at("plans_pruned_memory").get<uint64_t>() +
                j.at("plans_skipped_by_bound").get<uint64_t>() +
                j.at("plans_simulated").get<uint64_t>());
  ASSERT_EQ(j.at("results").size(), 7u);
  const json& best = j.at("results").at(0);
  EXPECT_EQ(best.at("plan").at("gpus"), 16);
  EXPECT_EQ(best.at("plan").at("gpu"), "h100-sxm-80g");
  EXPECT_GT(best.at("cost_usd").get<double>(), 0);
  EXPECT_EQ(j.at("baseline").at("plan").at("tp"), 2);
  // The time summary goes to stderr, never into the result.
  EXPECT_NE(r.err.find("plans/s"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("plans/s"), std::string::npos);
}

TEST(SweepCli, GpuCountsAndTypesAndFilesInOut) {
  const std::filesystem::path out = std::filesystem::path(::testing::TempDir()) / "sweep_out";
  std::filesystem::remove_all(out);
  const RunResult r =
      run_podsim({"sweep", small_scenario_file(), "--gpus", "8,16", "--gpu-types",
                  "h100-sxm-80g,b200", "--out", out.string(), "--top", "3", "--tokens", "1e10"},
                 120);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("target: 8 x b200"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("target: 16 x h100-sxm-80g"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Pareto front"), std::string::npos);
  const std::string csv = read_file(out / "results.csv");
  EXPECT_EQ(csv.rfind("rank,gpu,gpus,tp,", 0), 0u) << csv.substr(0, 80);
  EXPECT_NE(csv.find(",b200,"), std::string::npos);
  const std::string html = read_file(out / "report.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (const char* outside : {"http:", "https:", "src=", "@import", "url("}) {
    EXPECT_EQ(html.find(outside), std::string::npos) << outside;
  }
}

TEST(SweepCli, HardwareTypesSideBySide) {
  // GPU presets in the scenario's network and cluster presets with their own.
  const RunResult r =
      run_podsim({"sweep", small_scenario_file(), "--gpu-types",
                  "h100-sxm-80g,dgx-b200,mi355x-8x,tpu-v6e-pod", "--top", "3", "--json"},
                 240);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  const json& best = j.at("best_per_target");
  ASSERT_EQ(best.size(), 4u);
  for (size_t t = 0; t < best.size(); ++t) {
    ASSERT_FALSE(best[t].at("best").is_null()) << best[t];
    EXPECT_EQ(best[t].at("best").at("plan").at("gpu"), best[t].at("gpu"));
    // No plan of that target is faster than its best.
    for (const json& res : j.at("results")) {
      if (res.at("plan").at("gpu") != best[t].at("gpu")) continue;
      EXPECT_GE(res.at("step_time_s").get<double>(),
                best[t].at("best").at("step_time_s").get<double>());
    }
  }
  EXPECT_EQ(best[3].at("gpu"), "tpu-v6e-pod");
  EXPECT_TRUE(j.at("targets").at(3).at("list_price").get<bool>());  // $2.70 per chip-hour
  EXPECT_FALSE(j.at("targets").at(2).at("list_price").get<bool>());
  // The TPU chip named as a GPU runs on its pod, once with the pod.
  const RunResult text = run_podsim({"sweep", small_scenario_file(), "--gpu-types",
                                     "h100-sxm-80g,tpu-v6e,tpu-v6e-pod", "--top", "2"},
                                    240);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const size_t tpu = text.out.find("target: 16 x tpu-v6e");
  ASSERT_NE(tpu, std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("target: 16 x tpu-v6e-pod"), tpu) << text.out;
  EXPECT_EQ(text.out.find("target: 16 x tpu-v6e", tpu + 1), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("tpu-v6e named: no preset puts it in a switch"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("Best plan per GPU type and count"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("$2.70/GPU-h (list)"), std::string::npos) << text.out;
}

TEST(SweepCli, TheBestPlanPerGpuTypeComesFirstUnderATitleOfWhatWasSwept) {
  const std::filesystem::path out = std::filesystem::path(::testing::TempDir()) / "sweep_types";
  std::filesystem::remove_all(out);
  const RunResult r = run_podsim({"sweep", small_scenario_file(), "--gpu-types",
                                  "h100-sxm-80g,b200", "--top", "3", "--out", out.string()},
                                 240);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The title names what was swept, not the scenario's own hardware.
  const std::string first_line = r.out.substr(0, r.out.find('\n'));
  EXPECT_NE(first_line.find("16 GPUs of h100-sxm-80g or b200"), std::string::npos) << first_line;
  const size_t table = r.out.find("Best plan per GPU type and count");
  ASSERT_NE(table, std::string::npos) << r.out;
  EXPECT_LT(table, r.out.find("Top 3"));
  // One row per type, whichever is faster overall.
  const std::string best = r.out.substr(table, r.out.find("Top 3") - table);
  EXPECT_NE(best.find("h100-sxm-80g"), std::string::npos) << best;
  EXPECT_NE(best.find("b200"), std::string::npos) << best;
  // Ties are stated with the error and where it comes from.
  EXPECT_NE(r.out.find("validation MAPE of family"), std::string::npos) << r.out;

  const std::string html = read_file(out / "report.html");
  const size_t h1 = html.find("<h1>");
  ASSERT_NE(h1, std::string::npos);
  EXPECT_NE(html.substr(h1, html.find("</h1>") - h1).find("h100-sxm-80g or b200"),
            std::string::npos);
  const size_t html_best = html.find("<h2>Best plan per GPU type and count</h2>");
  ASSERT_NE(html_best, std::string::npos);
  EXPECT_LT(html_best, html.find("<h2>Ranked plans</h2>"));
  EXPECT_LT(html_best, html.find("<svg"));
  // One GPU count: step time and cost per GPU type as labelled bars.
  EXPECT_NE(html.find("Step time and cost per GPU type"), std::string::npos);
  EXPECT_EQ(html.find("<h2>Best plan per GPU count</h2>"), std::string::npos);
  const std::string csv = read_file(out / "results.csv");
  EXPECT_NE(csv.substr(0, csv.find('\n')).find(",collapsed_into_rank,tied_with_best"),
            std::string::npos);
}

TEST(SweepCli, FixAndMinHeadroomNarrowThePlansAndBadValuesExitTwo) {
  const RunResult r = run_podsim({"sweep", small_scenario_file(), "--json", "--top", "3", "--fix",
                                  "tp=2", "--fix", "zero=1", "--min-headroom", "40GiB"},
                                 240);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_FALSE(j.at("results").empty());
  for (const json& res : j.at("results")) {
    EXPECT_EQ(res.at("plan").at("tp"), 2);
    EXPECT_EQ(res.at("plan").at("zero"), 1);
    EXPECT_GE(res.at("memory_headroom_bytes").get<double>(), 40.0 * (1 << 30));
  }
  for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--fix", "tq=2"}, "--fix: unknown key 'tq' (did you mean 'tp'?"},
           {{"--fix", "cp_algorithm=rings"}, "ring, ulysses or all_gather"},
           {{"--min-headroom", "4"}, "--min-headroom: a bare number is a fraction"}}) {
    std::vector<std::string> argv{"sweep", small_scenario_file()};
    argv.insert(argv.end(), args.begin(), args.end());
    const RunResult bad = run_podsim(argv);
    EXPECT_EQ(bad.exit_code, 2) << says;
    EXPECT_NE(bad.err.find(says), std::string::npos) << bad.err;
    EXPECT_FALSE(looks_like_a_crash(bad.err)) << bad.err;
  }
}

TEST(SweepCli, AScenarioWhosePlanIsInvalidIsSweptWithAWarning) {
  // tp=3 divides neither the 16 heads nor the 4 KV heads.
  const std::string file = write_temp("sweep_bad_plan.json", R"({"name": "bad plan",
    "model": {"layers": 8, "hidden": 1024, "ffn_hidden": 4096, "heads": 16, "kv_heads": 4,
              "vocab": 32000},
    "cluster": {"base": "dgx-h100-superpod", "nodes": 2}, "gpus": 12,
    "training": {"seq_len": 2048, "global_batch": 32, "micro_batch": 1},
    "parallelism": {"tp": 3, "pp": 1, "dp": 4}})");
  const RunResult r = run_podsim({"sweep", file, "--gpus", "16", "--top", "2"}, 240);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("warning"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/parallelism/tp"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("Top 2"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("own plan is invalid"), std::string::npos) << r.out;
  // `run` still refuses it.
  EXPECT_EQ(run_podsim({"run", file}).exit_code, 2);
}

TEST(SweepCli, AGpuCountWithNoValidPlanSaysSo) {
  // 88 = 8 x 11: the factor 11 can only go to pp, and the model has 8 layers.
  const RunResult r = run_podsim({"sweep", small_scenario_file(), "--gpus", "88"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("0 valid plans"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("No valid plan"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("No plan fits in memory"), std::string::npos) << r.out;
}

TEST(SweepCli, BadArgumentsExitTwoWithTheReason) {
  const std::string file = small_scenario_file();
  const RunResult counts = run_podsim({"sweep", file, "--gpus", "16x"});
  EXPECT_EQ(counts.exit_code, 2);
  EXPECT_NE(counts.err.find("--gpus needs GPU counts"), std::string::npos) << counts.err;
  const RunResult odd = run_podsim({"sweep", file, "--gpus", "12"});
  EXPECT_EQ(odd.exit_code, 2);
  EXPECT_NE(odd.err.find("/sweep/gpus: 12 GPUs is not a whole number"), std::string::npos)
      << odd.err;
  const RunResult gpu = run_podsim({"sweep", file, "--gpu-types", "h100-sxm-8g"});
  EXPECT_EQ(gpu.exit_code, 2);
  EXPECT_NE(gpu.err.find("/sweep/gpu-types"), std::string::npos) << gpu.err;
  const RunResult top = run_podsim({"sweep", file, "--top", "0"});
  EXPECT_EQ(top.exit_code, 2);
  // Program_options reads "-1" into an unsigned option as 4294967295 threads.
  const RunResult jobs = run_podsim({"sweep", file, "--jobs", "-1"});
  EXPECT_EQ(jobs.exit_code, 2);
  EXPECT_NE(jobs.err.find("--jobs: must be between 0"), std::string::npos) << jobs.err;
  const RunResult micro = run_podsim({"sweep", file, "--micro-batches", "0,2"});
  EXPECT_EQ(micro.exit_code, 2);
  EXPECT_NE(micro.err.find("--micro-batches"), std::string::npos) << micro.err;
  for (const RunResult* r : {&counts, &odd, &gpu, &top, &jobs, &micro}) {
    EXPECT_FALSE(looks_like_a_crash(r->err)) << r->err;
  }
  const RunResult help = run_podsim({"sweep", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--gpu-types"), std::string::npos);
}

TEST(RunPictures, TraceAndTimelineFiles) {
  const std::string file = write_temp("pipeline.json", R"({"name": "pipeline",
    "model": "llama3-8b", "cluster": {"base": "dgx-h100-superpod", "nodes": 4},
    "training": {"seq_len": 4096, "global_batch": 32, "micro_batch": 1},
    "parallelism": {"tp": 2, "pp": 4, "dp": 4, "sequence_parallel": true,
                    "pipeline": {"schedule": "1f1b"}}})");
  const std::string trace = ::testing::TempDir() + "/step_trace.json";
  const std::string svg = ::testing::TempDir() + "/step_timeline.svg";
  const RunResult r = run_podsim({"run", file, "--trace", trace, "--timeline", svg, "--json"}, 60);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json report = json::parse(r.out);
  const json t = json::parse(read_file(trace));
  EXPECT_EQ(t.at("otherData").at("scenario"), "pipeline");
  size_t processes = 0;
  for (const json& e : t.at("traceEvents")) processes += e.at("name") == "process_name" ? 1 : 0;
  EXPECT_EQ(processes, 4u);  // one representative per stage
  const std::string picture = read_file(svg);
  EXPECT_EQ(picture.rfind("<?xml", 0), 0u);
  EXPECT_NE(picture.find("data-task="), std::string::npos);
  // The pictures do not change the report.
  const RunResult plain = run_podsim({"run", file, "--json"}, 60);
  EXPECT_EQ(plain.out, r.out);
  const RunResult bad = run_podsim({"run", file, "--trace", "/nonexistent-dir/t.json"}, 60);
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("cannot write /nonexistent-dir/t.json"), std::string::npos) << bad.err;
}

/// stdout of a shell command, and its exit status.
std::pair<std::string, int> shell(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {out, -1};
  std::array<char, 65536> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  const int raw = pclose(pipe);
  return {out, WIFEXITED(raw) ? WEXITSTATUS(raw) : -1};
}

TEST(SweepMpi, TwoProcessesPrintTheSingleProcessBytes) {
  if (shell("command -v mpirun >/dev/null 2>&1 && echo yes").first != "yes\n") {
    GTEST_SKIP() << "mpirun not found on PATH: the MPI comparison needs OpenMPI's launcher";
  }
  const std::string file = small_scenario_file();
  const RunResult single = run_podsim({"sweep", file, "--json", "--jobs", "2"}, 120);
  ASSERT_EQ(single.exit_code, 0) << single.err;
  ASSERT_GE(json::parse(single.out).at("plans_total").get<uint64_t>(), 500u);
  const std::string err = ::testing::TempDir() + "/sweep_mpi_err.txt";
  // Under the sanitizer build, LeakSanitizer reports what OpenMPI's plugins
  // keep past MPI_Finalize (allocations in unloaded modules, not podsim's):
  // leak checking is off for the MPI processes only; ASan still checks them.
  const auto [out, status] = shell(
      "ASAN_OPTIONS=\"${ASAN_OPTIONS}:detect_leaks=0\" timeout 300 mpirun -np 2 "
      "--allow-run-as-root --oversubscribe " +
      std::string(PODSIM_BINARY) + " sweep " + file + " --json --jobs 1 2>" + err);
  const std::string errors = read_file(err);
  if (errors.find("on 1 process") != std::string::npos) {
    GTEST_SKIP() << "this podsim was built without MPI (each process ran the whole sweep)";
  }
  ASSERT_EQ(status, 0) << errors;
  EXPECT_NE(errors.find("on 2 processes"), std::string::npos) << errors;
  EXPECT_EQ(out, single.out);
}

}  // namespace
}  // namespace podsim::tools_test
