#pragma once

#include <string_view>

#include "strategies/job.h"
#include "strategies/presets.h"

namespace podsim::strategies::testing {

/// A job on a preset model with the given batch; plan left at defaults.
inline Job preset_job(std::string_view model, int64_t seq_len, int64_t global_batch,
                      int64_t micro_batch = 1) {
  Job job;
  job.model = *model_preset(model);
  job.training.seq_len = seq_len;
  job.training.global_batch = global_batch;
  job.training.micro_batch = micro_batch;
  return job;
}

}  // namespace podsim::strategies::testing
