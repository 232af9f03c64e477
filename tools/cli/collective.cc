#include "tools/cli/collective.h"

#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <exception>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hwmodels/collectives.h"
#include "sim/format_fixed.h"
#include "tools/cli/commands.h"

namespace podsim::cli {
namespace {

namespace po = boost::program_options;
using hwmodels::Algorithm;
using hwmodels::CollectiveOp;
using hwmodels::CollectiveResult;

/// 4 significant digits: "1.126e+30", not 31 digits.
std::string significant(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

nlohmann::ordered_json row_json(const std::string& cluster, CollectiveOp op, int64_t gpus,
                                const CollectiveResult& r) {
  nlohmann::ordered_json j;
  j["cluster"] = cluster;
  j["op"] = std::string(hwmodels::to_string(op));
  j["gpus"] = gpus;
  j["bytes"] = r.plan.bytes;
  j["algorithm"] = std::string(hwmodels::to_string(r.plan.algorithm));
  j["protocol"] = std::string(hwmodels::to_string(r.plan.protocol));
  j["time_s"] = r.time_s;
  j["algbw_bytes_per_s"] = r.algbw_bytes_per_s;
  j["busbw_bytes_per_s"] = r.busbw_bytes_per_s;
  j["flows"] = r.plan.flow_count();
  j["phases"] = r.plan.phases.size();
  return j;
}

// nccl-tests prints size, count, type, redop, root, time (us), algbw, busbw.
void print_table(std::ostream& out, const std::string& cluster, CollectiveOp op, int64_t gpus,
                 const std::vector<CollectiveResult>& rows) {
  out << "# podsim collective: " << hwmodels::to_string(op) << " over " << gpus << " GPUs of "
      << cluster << " (simulated)\n";
  char line[256];
  std::snprintf(line, sizeof line, "#%14s %12s %8s %6s %6s %12s %8s %8s  %s\n", "size", "count",
                "type", "redop", "root", "time", "algbw", "busbw", "algorithm");
  out << line;
  std::snprintf(line, sizeof line, "#%14s %12s %8s %6s %6s %12s %8s %8s\n", "(B)", "(elements)", "",
                "", "", "(us)", "(GB/s)", "(GB/s)");
  out << line;
  const bool reduces = op == CollectiveOp::kAllReduce || op == CollectiveOp::kReduceScatter;
  const bool rooted = op == CollectiveOp::kBroadcast;
  for (const CollectiveResult& r : rows) {
    std::snprintf(line, sizeof line, " %14.0f %12.0f %8s %6s %6d %12s %8s %8s  %s/%s\n",
                  r.plan.bytes, std::floor(r.plan.bytes / 4), "float", reduces ? "sum" : "none",
                  rooted ? 0 : -1, format_fixed(r.time_s * 1e6, 2).c_str(),
                  format_fixed(r.algbw_bytes_per_s / 1e9, 2).c_str(),
                  format_fixed(r.busbw_bytes_per_s / 1e9, 2).c_str(),
                  std::string(hwmodels::to_string(r.plan.algorithm)).c_str(),
                  std::string(hwmodels::to_string(r.plan.protocol)).c_str());
    out << line;
  }
}

}  // namespace

int run_collective_command(int argc, char** argv, const CollectiveCliHooks& hooks,
                           std::ostream& out, std::ostream& err) {
  po::options_description desc(
      "podsim collective: simulate one NCCL-style collective on a cluster's fabric\nOptions");
  desc.add_options()("help,h", "show this help")("cluster", po::value<std::string>(),
                                                 "cluster preset (required)")(
      "op", po::value<std::string>()->default_value("all_reduce"),
      "all_reduce | all_gather | reduce_scatter | all_to_all | broadcast | send_recv")(
      "bytes", po::value<std::string>()->default_value("1GiB"),
      "size, nccl-tests convention (all_gather/reduce_scatter: total)")(
      "gpus", po::value<int64_t>(), "GPUs 0..N-1 of the cluster (default: one node)")(
      "algo", po::value<std::string>()->default_value("auto"),
      "auto | ring | tree | hierarchical | nvls | direct")("json", "print JSON")(
      "sweep", "sizes from --min-bytes to --max-bytes, doubling")(
      "min-bytes", po::value<std::string>()->default_value("8"), "sweep start")(
      "max-bytes", po::value<std::string>()->default_value("8GiB"), "sweep end")(
      "profile", po::value<std::string>(),
      "calibration profile whose peer-to-peer / NCCL measurements replace the scale-up "
      "link efficiency");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    err << "podsim collective: " << e.what() << "\n" << desc;
    return 2;
  }
  if (const std::optional<std::string> empty = cli::option_with_empty_value(vm, desc)) {
    err << "podsim collective: --" << *empty << " needs a value, got an empty one\n";
    return 2;
  }
  if (vm.count("help")) {
    out << desc;
    return 0;
  }
  if (!vm.count("cluster")) {
    err << "podsim collective: --cluster is required (a preset name; see `podsim presets`)\n";
    return 2;
  }
  const std::string cluster_name = vm["cluster"].as<std::string>();
  std::string error;
  std::optional<hwmodels::ClusterSpec> cluster;
  cluster = hooks.cluster(cluster_name, error);
  if (!cluster) {
    err << "podsim collective: --cluster " << cluster_name << ": " << error << "\n";
    return 2;
  }
  std::vector<std::string> profile_notes;
  if (vm.count("profile")) {
    if (!hooks.profile(vm["profile"].as<std::string>(), *cluster, profile_notes, error)) {
      err << "podsim collective: --profile: " << error << "\n";
      return 2;
    }
  }
  const auto op = hwmodels::parse_collective_op(vm["op"].as<std::string>());
  if (!op) {
    err << "podsim collective: --op " << vm["op"].as<std::string>()
        << ": unknown (all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, "
           "send_recv)\n";
    return 2;
  }
  const auto algo = hwmodels::parse_algorithm(vm["algo"].as<std::string>());
  if (!algo) {
    err << "podsim collective: --algo " << vm["algo"].as<std::string>()
        << ": unknown (auto, ring, tree, hierarchical, nvls, direct)\n";
    return 2;
  }
  const auto& parse = hooks.bytes;
  auto bytes_of = [&](const char* option) -> std::optional<double> {
    std::string why;
    const std::optional<double> v = parse(vm[option].as<std::string>(), why);
    if (!v) err << "podsim collective: --" << option << ": " << why << "\n";
    return v;
  };
  const int64_t gpus =
      vm.count("gpus") ? vm["gpus"].as<int64_t>() : static_cast<int64_t>(cluster->gpus_per_node);
  std::vector<double> sizes;
  if (vm.count("sweep")) {
    const auto lo = bytes_of("min-bytes");
    const auto hi = bytes_of("max-bytes");
    if (!lo || !hi) return 2;
    sizes = hwmodels::doubling_sizes(*lo, *hi);
    if (sizes.empty()) {
      err << "podsim collective: --min-bytes must be > 0 and <= --max-bytes\n";
      return 2;
    }
  } else {
    const auto b = bytes_of("bytes");
    if (!b) return 2;
    sizes = {*b};
  }

  std::vector<CollectiveResult> rows;
  try {
    rows = hwmodels::collective_sweep(*cluster, *op, gpus, sizes, *algo);
  } catch (const std::invalid_argument& e) {
    err << "podsim collective: " << e.what() << "\n";
    return 2;
  }
  for (const CollectiveResult& r : rows) {
    if (std::isinf(r.time_s)) {
      err << "podsim collective: --" << (vm.count("sweep") ? "max-bytes" : "bytes") << ": "
          << hwmodels::to_string(*op) << " of " << significant(r.plan.bytes) << " B over " << gpus
          << " GPUs outlasts the simulated clock (" << hooks.clock_limit
          << "); give a smaller size\n";
      return 2;
    }
  }
  for (const std::string& note : profile_notes)
    err << "podsim collective: profile: " << note << "\n";

  if (vm.count("json")) {
    if (vm.count("sweep")) {
      nlohmann::ordered_json all = nlohmann::ordered_json::array();
      for (const CollectiveResult& r : rows) all.push_back(row_json(cluster->name, *op, gpus, r));
      out << all.dump(2) << "\n";
    } else {
      out << row_json(cluster->name, *op, gpus, rows.front()).dump(2) << "\n";
    }
    return 0;
  }
  if (vm.count("sweep")) {
    print_table(out, cluster->name, *op, gpus, rows);
    return 0;
  }
  const CollectiveResult& r = rows.front();
  out << hwmodels::to_string(*op) << " of " << significant(r.plan.bytes) << " B over " << gpus
      << " GPUs of " << cluster->name << " (" << hwmodels::to_string(r.plan.algorithm) << "/"
      << hwmodels::to_string(r.plan.protocol) << ")\n"
      << "  time   " << format_fixed(r.time_s * 1e6, 2) << " us\n"
      << "  algbw  " << format_fixed(r.algbw_bytes_per_s / 1e9, 2) << " GB/s\n"
      << "  busbw  " << format_fixed(r.busbw_bytes_per_s / 1e9, 2) << " GB/s\n";
  return 0;
}

}  // namespace podsim::cli
