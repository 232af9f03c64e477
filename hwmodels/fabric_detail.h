// Helpers the fabric's construction and its validation share (internal to
// hwmodels/: fabric.cc and fabric_validate.cc).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hwmodels/fabric.h"

namespace podsim::hwmodels::fabric_detail {

/// A rate as "%.4g GB/s".
std::string format_rate(double bytes_per_s);

/// The nodes a fabric builds: those of GPUs 0..options.gpus-1, in whole
/// NVLink domains (all nodes when options.gpus is 0).
int64_t built_nodes(const ClusterSpec& spec, const FabricOptions& options);

/// A torus shape as "16x16x24".
std::string shape_text(const std::vector<int>& shape);

}  // namespace podsim::hwmodels::fabric_detail
