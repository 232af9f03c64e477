// Speed of the fabric and collective models at Llama 3 scale.
//
// Target (hwmodels task): a 16,384-GPU all-reduce over the llama3-24k fabric
// simulates in under a second; the 24,576-GPU fabric builds well under one.
#include <benchmark/benchmark.h>

#include "hwmodels/cluster_spec.h"
#include "hwmodels/collectives.h"
#include "hwmodels/fabric.h"

namespace {

using podsim::hwmodels::Algorithm;
using podsim::hwmodels::ClusterSpec;
using podsim::hwmodels::CollectiveOp;
using podsim::hwmodels::Fabric;

// Meta's Llama 3 RoCE cluster ([S35], hardware.md 4.1): H100, 8 GPUs per
// node, one 400 Gb/s NIC per GPU, rack = 2 nodes, pod = 192 racks = 384
// nodes at 1:1, 1:7 above the pods, 3072 nodes.
ClusterSpec llama3_24k() {
  ClusterSpec c;
  c.name = "llama3-24k-bench";
  c.gpu.name = "H100-SXM-80GB";
  c.gpu.has_nvls = true;
  c.nodes = 3072;
  c.gpus_per_node = 8;
  c.scale_up.bw_bytes_per_s = 450e9;
  c.scale_up.efficiency = 370.0 / 450.0;
  c.scale_up.latency_s = 1e-6;
  c.scale_out.nic_bw_bytes_per_s = 50e9;
  c.scale_out.efficiency = 47.0 / 50.0;
  c.scale_out.nics_per_node = 8;
  c.scale_out.latency_s = 1e-6;
  c.scale_out.tiers = {{"rack", 2, 1.0}, {"pod", 384, 1.0}, {"cluster", 0, 7.0}};
  return c;
}

void BM_BuildLlama24kFabric(benchmark::State& state) {
  const ClusterSpec spec = llama3_24k();
  for (auto _ : state) {
    Fabric f = Fabric::build(spec);
    benchmark::DoNotOptimize(f.link_count());
  }
}
BENCHMARK(BM_BuildLlama24kFabric)->Unit(benchmark::kMillisecond);

// Plan + closed-form tuning + one engine run of the chosen plan.
void BM_AllReduce16kGpus(benchmark::State& state) {
  const Fabric f = Fabric::build(llama3_24k());
  const auto group = podsim::hwmodels::gpu_range(0, 16384);
  const auto algorithm = static_cast<Algorithm>(state.range(0));
  size_t flows = 0;
  double busbw = 0;
  for (auto _ : state) {
    const auto r = podsim::hwmodels::predict_collective(f, CollectiveOp::kAllReduce, group, 1 << 30,
                                                        algorithm);
    flows = r.plan.flow_count();
    busbw = r.busbw_bytes_per_s;
  }
  state.counters["flows"] = static_cast<double>(flows);
  state.counters["busbw_GBps"] = busbw / 1e9;
}
BENCHMARK(BM_AllReduce16kGpus)
    ->Arg(static_cast<int>(Algorithm::kAuto))
    ->Arg(static_cast<int>(Algorithm::kRing))
    ->Arg(static_cast<int>(Algorithm::kTree))
    ->Unit(benchmark::kMillisecond);

// A data-parallel group strided across the cluster: one GPU per node on 2048
// nodes, crossing the 1:7 tier.
void BM_AllReduceStridedDpGroup(benchmark::State& state) {
  const Fabric f = Fabric::build(llama3_24k());
  std::vector<int64_t> group;
  for (int64_t node = 0; node < 2048; ++node) group.push_back(node * 8);
  for (auto _ : state) {
    const auto r =
        podsim::hwmodels::predict_collective(f, CollectiveOp::kAllReduce, group, 1 << 30);
    benchmark::DoNotOptimize(r.time_s);
  }
}
BENCHMARK(BM_AllReduceStridedDpGroup)->Unit(benchmark::kMillisecond);

}  // namespace
