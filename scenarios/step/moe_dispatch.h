#pragma once

#include <cstdint>
#include <vector>

#include "hwmodels/collectives.h"
#include "hwmodels/fabric.h"
#include "strategies/model.h"
#include "strategies/workload.h"

namespace podsim::scenarios {

// DeepEP-style token dispatch and combine (DeepSeek-V3 section 3.2.2;
// DeepEP's normal kernels; Megatron's flex dispatcher): a token crosses the
// network once per destination NVLink domain -- not once per destination
// GPU as an NCCL all-to-all does -- and is forwarded to its experts' GPUs
// inside that domain over NVLink; the two legs are pipelined in one kernel.

/// Expected NVLink domains other than its own that one token's top_k experts
/// lie in, when an EP group spans `domains` domains of equal size holding
/// consecutive experts: uniformly random experts (forced balance), or under
/// group-limited routing (expert_groups / groups_per_token, DeepSeek-V3's
/// node-limited routing) uniformly random groups and experts within them.
double remote_domains_per_token(const strategies::MoeShape& moe, int64_t domains);

/// Seconds one fused dispatch (or combine) among `group` takes, priced alone:
/// the larger of its network leg (an all-to-all among the members at the
/// same position in each domain, deduplicated by domain) and its NVLink leg
/// (an all-to-all inside a domain of every token copy), `load` the busiest
/// rank's share over the even one.
double fused_dispatch_time(const hwmodels::Fabric& fabric, const hwmodels::CollectiveParams& params,
                           const std::vector<int64_t>& group,
                           const strategies::TokenDispatch& dispatch,
                           const strategies::MoeShape& moe, double load);

}  // namespace podsim::scenarios
