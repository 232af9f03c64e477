// podsim sweep [FILE] [--gpus N,...] [--gpu-types NAME,...] [--top K] [--tokens N] [--json]
//              [--out DIR] [--jobs N] ...
//
// Every valid parallel plan of a scenario's model and training setup, ranked.
// Under OpenMPI (mpirun -np N podsim sweep ...) the plans are split across
// the processes and rank 0 prints the same bytes a single process would.
#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#ifdef PODSIM_HAVE_MPI
#include <mpi.h>
#endif

#include "scenarios/input/reader.h"
#include "scenarios/report/sweep_report.h"
#include "scenarios/step/simulate.h"
#include "scenarios/sweep/space_options.h"
#include "scenarios/sweep/sweep.h"
#include "scenarios/validate/nearest_family.h"
#include "tools/cli/commands.h"

namespace podsim::cli {
namespace {

/// More worker threads than this is a typo, not a machine.
constexpr int64_t kMaxJobs = 4096;
/// More plans than this is no ranking to read (--no-bounds simulates them all).
constexpr int64_t kMaxTop = 10000;
/// glibc's largest allowed mmap threshold (32 MiB on 64-bit) and a trim
/// threshold well above a sweep's working set.
constexpr int kMallocMmapThresholdBytes = 32 << 20;
constexpr int kMallocTrimThresholdBytes = 1 << 30;

namespace po = boost::program_options;

/// The MPI world when the process was launched by OpenMPI's mpirun with more
/// than one process; otherwise a world of one that never touches MPI (a
/// plain run needs no MPI runtime).
class MpiWorld {
 public:
  MpiWorld() {
#ifdef PODSIM_HAVE_MPI
    const char* launched = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (launched == nullptr || std::atoi(launched) <= 1) return;
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized == 0) {
      MPI_Init(nullptr, nullptr);
      owned_ = true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
#endif
  }
  ~MpiWorld() {
#ifdef PODSIM_HAVE_MPI
    if (owned_) MPI_Finalize();
#endif
  }
  MpiWorld(const MpiWorld&) = delete;
  MpiWorld& operator=(const MpiWorld&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  /// Every process's bytes, in rank order.
  std::vector<std::string> all_gather(const std::string& mine) const {
#ifdef PODSIM_HAVE_MPI
    if (size_ > 1) {
      if (mine.size() > static_cast<size_t>(std::numeric_limits<int>::max())) {
        throw std::length_error("sweep: a process's results exceed one MPI message");
      }
      const int count = static_cast<int>(mine.size());
      std::vector<int> counts(static_cast<size_t>(size_));
      MPI_Allgather(&count, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
      std::vector<int> displacements(static_cast<size_t>(size_), 0);
      long long total = 0;
      for (size_t i = 0; i < counts.size(); ++i) {
        if (total > std::numeric_limits<int>::max()) {
          throw std::length_error("sweep: the gathered results exceed one MPI message");
        }
        displacements[i] = static_cast<int>(total);
        total += counts[i];
      }
      std::string all(static_cast<size_t>(total), '\0');
      MPI_Allgatherv(mine.data(), count, MPI_CHAR, all.data(), counts.data(), displacements.data(),
                     MPI_CHAR, MPI_COMM_WORLD);
      std::vector<std::string> out;
      for (size_t i = 0; i < counts.size(); ++i) {
        out.push_back(
            all.substr(static_cast<size_t>(displacements[i]), static_cast<size_t>(counts[i])));
      }
      return out;
    }
#endif
    return {mine};
  }

 private:
  int rank_ = 0;
  int size_ = 1;
  bool owned_ = false;
};

/// "1024,2048" -> {1024, 2048}; false on anything else.
bool parse_counts(const std::string& text, std::vector<int64_t>& out) {
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos ||
        item.size() > 12) {
      return false;
    }
    out.push_back(std::stoll(item));
  }
  return !out.empty();
}

std::vector<std::string> split_names(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

/// "1:05" (minutes and seconds), "1:02:05" past an hour, "?" when unknown.
std::string clock_text(double seconds) {
  if (seconds < 0) return "?";
  const auto s = static_cast<long long>(seconds + 0.5);
  char text[32];
  if (s >= 3600) {
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", s / 3600, s / 60 % 60, s % 60);
  } else {
    std::snprintf(text, sizeof text, "%lld:%02lld", s / 60, s % 60);
  }
  return text;
}

/// The sweep's progress on standard error: on a terminal a bar redrawn in
/// place (plans settled, plans simulated, time left); otherwise, for logs and
/// pipes, one line every few seconds. While the sweep screens its plans it
/// says how far the screening is and the time that has left; after it, the
/// time left comes from the sweep and never climbs
/// (SweepProgressInfo::seconds_left).
class ProgressReport {
 public:
  ProgressReport(std::ostream& err, bool terminal)
      : err_(err), terminal_(terminal), start_(Clock::now()), last_(start_) {}
  void update(const scenarios::SweepProgressInfo& info) {
    const Clock::time_point now = Clock::now();
    const auto interval = terminal_ ? std::chrono::milliseconds(100) : std::chrono::seconds(5);
    if (info.done < info.total && now - last_ < interval) return;
    if (!terminal_ && info.done >= info.total) return;  // the summary line follows
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const std::string left = time_left(info);
    char line[200];
    if (terminal_) {
      constexpr int kWidth = 30;
      const int filled = info.total > 0 ? static_cast<int>(kWidth * static_cast<double>(info.done) /
                                                           static_cast<double>(info.total))
                                        : kWidth;
      std::snprintf(line, sizeof line, "\rsweep [%s%s] %llu/%llu plans, %llu simulated, %s",
                    std::string(static_cast<size_t>(filled), '#').c_str(),
                    std::string(static_cast<size_t>(kWidth - filled), '-').c_str(),
                    static_cast<unsigned long long>(info.done),
                    static_cast<unsigned long long>(info.total),
                    static_cast<unsigned long long>(info.simulated), left.c_str());
      // A shorter line than the last one redrawn over it is padded, so
      // that none of the old one's tail stays on screen.
      std::string text = line;
      widest_ = std::max(widest_, text.size());
      text.resize(widest_, ' ');
      err_ << text << std::flush;
      shown_ = true;
      return;
    }
    std::snprintf(
        line, sizeof line,
        "podsim sweep: %llu/%llu plans settled, %llu simulated, %s elapsed, %s\n",
        static_cast<unsigned long long>(info.done), static_cast<unsigned long long>(info.total),
        static_cast<unsigned long long>(info.simulated), clock_text(elapsed).c_str(), left.c_str());
    err_ << line << std::flush;
  }
  void finish() {
    if (shown_) err_ << "\n";
  }

 private:
  using Clock = std::chrono::steady_clock;
  /// "0:38 left", or while screening "screening 23%, 2:13 left to screen".
  static std::string time_left(const scenarios::SweepProgressInfo& info) {
    if (!info.screening()) return clock_text(info.seconds_left) + " left";
    const auto percent = static_cast<int>(100.0 * static_cast<double>(info.screened) /
                                          static_cast<double>(info.to_screen));
    return "screening " + std::to_string(percent) + "%, " +
           clock_text(info.screening_seconds_left) + " left to screen";
  }
  std::ostream& err_;
  bool terminal_;
  Clock::time_point start_, last_;
  size_t widest_ = 0;
  bool shown_ = false;
};

bool write_file(const std::filesystem::path& path, const std::string& text, CommandIo& io) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) {
    io.err << "podsim sweep: cannot write " << path.string() << "\n";
    return false;
  }
  return true;
}

/// Per target, the model's measured error there: the step-time MAPE of the
/// nearest published family (nearest_family.h), each family simulated once.
std::vector<std::optional<scenarios::TargetModelError>> model_errors(
    const scenarios::ScenarioSpec& scenario, const std::vector<scenarios::SweepTarget>& targets) {
  const std::vector<scenarios::ValidationCase> cases = scenarios::builtin_validation_cases();
  std::map<std::string, std::optional<scenarios::FamilyError>> measured;
  std::vector<std::optional<scenarios::TargetModelError>> out;
  for (const scenarios::SweepTarget& t : targets) {
    const scenarios::ScenarioSpec on_target = scenarios::candidate_scenario(
        scenario, t, {0, scenario.plan, scenario.training.micro_batch});
    std::optional<scenarios::FamilyError> family = scenarios::nearest_family(on_target, cases);
    if (!family) {
      out.emplace_back();
      continue;
    }
    auto it = measured.find(family->label());
    if (it == measured.end()) {
      scenarios::FamilyError f = *family;
      const bool ran = scenarios::measure_family_error(
          f, cases, [](const scenarios::ScenarioSpec& spec) { return scenarios::simulate(spec); });
      it = measured.emplace(family->label(), ran ? std::optional(f) : std::nullopt).first;
    }
    if (!it->second) {
      out.emplace_back();
      continue;
    }
    out.push_back(scenarios::TargetModelError{it->second->mape, family->label(), it->second->cases,
                                              family->basis});
  }
  return out;
}

}  // namespace

int sweep_command(const std::vector<std::string>& args, CommandIo& io) {
  po::options_description visible;
  visible.add_options()("gpus", po::value<std::string>()->value_name("N,..."),
                        "GPU counts to try (default: the scenario's)")(
      "gpu-types", po::value<std::string>()->value_name("NAME,..."),
      "GPU or cluster presets to try, e.g. h100-sxm-80g,h200-sxm-141g,b200; a unique prefix or "
      "common name will do (h100,h200,b200); a GPU goes into the scenario's cluster, or onto "
      "its own cluster preset where no preset puts it in that kind of node (TPU, MI355X against "
      "NVSwitch) (default: the scenario's)")(
      "top", po::value<int64_t>()->default_value(10)->value_name("K"),
      "plans to show; plans that cannot reach the top K of their hardware are skipped")(
      "tokens", po::value<double>()->value_name("N"),
      "tokens to train, for the time and cost columns (default: the scenario's run.tokens, "
      "else 1e12)")("json", "print the result as one JSON object")(
      "out", po::value<std::string>()->value_name("DIR"),
      "also write DIR/results.csv (every simulated plan) and DIR/report.html")(
      "jobs", po::value<int64_t>()->default_value(0)->value_name("N"),
      "worker threads (default: all cores)")(
      "max-tp", po::value<int64_t>()->value_name("N"),
      "largest tensor-parallel degree (default: the scale-up domain)")(
      "max-cp", po::value<int64_t>()->value_name("N"),
      "largest context-parallel degree (default: seq_len / 1024)")(
      "micro-batches", po::value<std::string>()->value_name("N,..."),
      "micro-batch sizes to try (default 1,2,4,8)")(
      "no-bounds", "simulate every plan that can fit (slow; the same top K)")(
      "exact-rank",
      "also simulate every plan that may beat the scenario's own plan, so its rank is exact")(
      "fix", po::value<std::vector<std::string>>()->composing()->value_name("KEY=VALUE"),
      "pin one swept setting (repeatable): tp, cp, pp, dp, ep, expert_tp, cp_algorithm, zero, "
      "shard_group, schedule, virtual_stages, recompute, micro_batch; e.g. --fix tp=8 --fix "
      "cp_algorithm=ulysses")(
      "min-headroom", po::value<std::string>()->value_name("SIZE|FRACTION"),
      "rank only plans that leave this much GPU memory free, e.g. 4GiB or 0.1 (of the "
      "capacity)")("quiet", "no progress display");
  po::variables_map values;
  if (const std::optional<int> status = parse_file_arguments(
          "sweep",
          "podsim sweep [FILE] [--gpus N,...] [--gpu-types NAME,...] [--top K] [--tokens N] "
          "[--json] [--out DIR] [--jobs N]",
          "Keeps the scenario's model and training setup (global batch, sequence length, "
          "precision) and tries every valid parallel plan (tp, cp, pp, dp, ep, ZeRO/FSDP/HSDP, "
          "micro-batch, pipeline schedule, virtual stages, recompute) on each GPU count and GPU "
          "type, ranked by step time, with MFU, memory headroom, exposed communication and the "
          "time and dollars to train --tokens tokens. Plans that cannot fit in memory are "
          "pruned and plans that cannot reach the top K are skipped, both by provable lower "
          "bounds (docs/sweep.md). Without FILE, sweeps the built-in default scenario. Under "
          "mpirun the plans are split across the processes.",
          visible, args, values, io)) {
    return *status;
  }
  // Every simulated plan builds and frees an engine of tens of MB. With
  // glibc's default thresholds each of those blocks is mmapped and handed
  // back to the kernel, so every simulation page-faults its memory in again
  // (a sixth of the 70B sweep's time): keep freed memory in the heap instead.
  mallopt(M_MMAP_THRESHOLD, kMallocMmapThresholdBytes);
  mallopt(M_TRIM_THRESHOLD, kMallocTrimThresholdBytes);
  MpiWorld world;
  const bool leader = world.rank() == 0;
  std::ostringstream discard;
  CommandIo quiet_io{discard, discard};
  CommandIo& out_io = leader ? io : quiet_io;

  const bool has_file = values.count("file") != 0;
  const std::string label =
      has_file ? values["file"].as<std::string>() : std::string(scenarios::kDefaultScenarioLabel);
  // The sweep ignores the scenario's own plan when it is invalid: it tries
  // the others and says so.
  scenarios::ReadOptions read_options;
  read_options.plan_problems_as_warnings = true;
  scenarios::Result<scenarios::ScenarioSpec> read =
      has_file ? scenarios::read_scenario_file(label, read_options)
               : scenarios::read_default_scenario();
  if (!read.ok()) {
    print_problems(out_io.err, label, read.problems());
    return kExitBadInput;
  }
  const scenarios::ScenarioSpec& scenario = read.value();
  print_input_warnings(out_io.err, label, scenario.input_warnings);
  for (const scenarios::Problem& p : scenario.plan_problems) {
    out_io.err << "podsim sweep: warning: " << label << ": the scenario's own plan is invalid ("
               << p.to_string() << "); it is left out and the other plans are swept\n";
  }

  std::vector<int64_t> counts;
  if (values.count("gpus") != 0) {
    if (!parse_counts(values["gpus"].as<std::string>(), counts)) {
      out_io.err << "podsim sweep: --gpus needs GPU counts separated by commas, e.g. "
                    "1024,2048,4096\n";
      return kExitBadInput;
    }
  } else {
    counts.push_back(scenario.gpus);
  }
  std::vector<std::optional<scenarios::SweepHardware>> gpus;
  std::vector<scenarios::Problem> problems;
  if (values.count("gpu-types") != 0) {
    const std::vector<std::string> names = split_names(values["gpu-types"].as<std::string>());
    if (names.empty()) {
      out_io.err << "podsim sweep: --gpu-types needs GPU or cluster preset names separated by "
                    "commas ('podsim presets' lists them)\n";
      return kExitBadInput;
    }
    for (const std::string& name : names) {
      scenarios::Result<scenarios::SweepHardware> gpu = scenarios::sweep_hardware_preset(name);
      if (gpu.ok()) {
        // "h100,H100 SXM" name one preset, and "tpu-v6e,tpu-v6e-pod" one
        // cluster: sweep it once.
        scenarios::SweepHardware placed = scenarios::placed_for(scenario, gpu.value());
        const bool repeated = std::any_of(
            gpus.begin(), gpus.end(), [&](const auto& g) { return g && g->name == placed.name; });
        if (!repeated) gpus.emplace_back(std::move(placed));
      } else {
        problems.insert(problems.end(), gpu.problems().begin(), gpu.problems().end());
      }
    }
  } else {
    gpus.emplace_back(std::nullopt);
  }
  std::vector<scenarios::SweepTarget> targets;
  for (const auto& gpu : gpus) {
    for (int64_t count : counts) {
      scenarios::Result<scenarios::SweepTarget> t =
          scenarios::make_sweep_target(scenario, count, gpu);
      if (t.ok()) {
        targets.push_back(t.value());
      } else {
        problems.insert(problems.end(), t.problems().begin(), t.problems().end());
      }
    }
  }

  scenarios::SweepOptions options;
  // Signed, then range-checked: Program_options reads "-1" as 2^64-1 for an
  // unsigned option, and a top K that large turns the bounds off.
  const int64_t top = values["top"].as<int64_t>();
  if (top < 1 || top > kMaxTop) {
    problems.push_back(
        {"--top", "must be between 1 and " + std::to_string(kMaxTop), "e.g. --top 10"});
  } else {
    options.top_k = static_cast<size_t>(top);
  }
  options.tokens = values.count("tokens") != 0 ? values["tokens"].as<double>()
                                               : scenario.run.tokens.value_or(1e12);
  // Read as a signed number: Program_options turns "-1" into 4294967295 for
  // an unsigned option.
  const int64_t jobs = values["jobs"].as<int64_t>();
  if (jobs < 0 || jobs > kMaxJobs) {
    problems.push_back({"--jobs", "must be between 0 (all cores) and " + std::to_string(kMaxJobs),
                        "e.g. --jobs 8"});
  } else {
    options.jobs = static_cast<unsigned>(jobs);
  }
  options.use_bounds = values.count("no-bounds") == 0;
  options.exact_baseline_rank = values.count("exact-rank") != 0;
  if (values.count("max-tp") != 0) options.space.max_tp = values["max-tp"].as<int64_t>();
  if (values.count("max-cp") != 0) options.space.max_cp = values["max-cp"].as<int64_t>();
  if (values.count("micro-batches") != 0) {
    options.space.micro_batches.clear();
    if (!parse_counts(values["micro-batches"].as<std::string>(), options.space.micro_batches)) {
      problems.push_back({"--micro-batches", "needs sizes separated by commas", "e.g. 1,2,4"});
    } else if (*std::min_element(options.space.micro_batches.begin(),
                                 options.space.micro_batches.end()) < 1) {
      problems.push_back({"--micro-batches", "every size must be at least 1", "e.g. 1,2,4"});
    }
  }
  if (values.count("fix") != 0) {
    std::vector<std::string> pinned;
    for (const std::string& item : values["fix"].as<std::vector<std::string>>()) {
      if (auto problem = scenarios::apply_sweep_fix(item, options.space, pinned)) {
        problems.push_back(*problem);
      }
    }
  }
  if (values.count("min-headroom") != 0) {
    scenarios::Result<scenarios::HeadroomRequirement> headroom =
        scenarios::parse_min_headroom(values["min-headroom"].as<std::string>());
    if (headroom.ok()) {
      options.min_headroom = headroom.value();
    } else {
      problems.insert(problems.end(), headroom.problems().begin(), headroom.problems().end());
    }
  }
  if (!(options.tokens > 0) || !std::isfinite(options.tokens)) {
    problems.push_back({"--tokens", "must be a positive number of tokens", "e.g. 1e12"});
  }
  for (const auto& [key, value] :
       {std::pair<const char*, int64_t>{"--max-tp", options.space.max_tp},
        {"--max-cp", options.space.max_cp}}) {
    if (values.count(key + 2) != 0 && value < 1) {
      problems.push_back({key, "must be at least 1", ""});
    }
  }
  std::filesystem::path out_dir;
  if (values.count("out") != 0) {
    out_dir = values["out"].as<std::string>();
    std::error_code ec;
    if (leader) std::filesystem::create_directories(out_dir, ec);
    if (ec) {
      problems.push_back(
          {"--out", "cannot create directory '" + out_dir.string() + "'", ec.message()});
    }
  }
  if (!problems.empty()) {
    print_problems(out_io.err, "sweep", problems);
    return kExitBadInput;
  }

  options.partition_rank = world.rank();
  options.partition_size = world.size();
  options.exchange = [&world](const std::string& mine) { return world.all_gather(mine); };
  ProgressReport progress(io.err, isatty(STDERR_FILENO) != 0);
  if (leader && values.count("quiet") == 0) {
    options.progress = [&progress](const scenarios::SweepProgressInfo& info) {
      progress.update(info);
    };
  }
  const auto start = std::chrono::steady_clock::now();
  scenarios::Result<scenarios::SweepOutcome> run = scenarios::run_sweep(scenario, targets, options);
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  progress.finish();
  if (!run.ok()) {
    print_problems(out_io.err, "sweep", run.problems());
    return kExitBadInput;
  }
  scenarios::SweepOutcome& outcome = run.value();
  // Only the leader reports, so only it simulates the validation family.
  if (leader) scenarios::mark_ties(outcome, model_errors(scenario, outcome.targets));
  const std::vector<std::string> space =
      scenarios::describe_sweep_space(scenario, outcome.targets, options.space);
  out_io.out << (values.count("json") != 0
                     ? scenarios::sweep_json_text(scenario, outcome, space)
                     : scenarios::format_sweep_text(scenario, outcome, space));
  if (!out_dir.empty() && leader) {
    if (!write_file(out_dir / "results.csv", scenarios::sweep_csv(outcome), io) ||
        !write_file(out_dir / "report.html", scenarios::sweep_html(scenario, outcome, space), io)) {
      return kExitBadInput;
    }
  }
  char line[200];
  std::snprintf(line, sizeof line,
                "podsim sweep: %llu plans in %.1f s (%.0f plans/s; %llu simulated) on %d "
                "process%s\n",
                static_cast<unsigned long long>(outcome.plans_total), wall,
                wall > 0 ? static_cast<double>(outcome.plans_total) / wall : 0.0,
                static_cast<unsigned long long>(outcome.plans_simulated), world.size(),
                world.size() == 1 ? "" : "es");
  out_io.err << line;
  return kExitOk;
}

}  // namespace podsim::cli
