#include "scenarios/step/moe_dispatch.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace podsim::scenarios {
namespace {

/// log C(n, k) for real n >= k >= 0.
double log_choose(double n, double k) {
  return std::lgamma(n + 1) - std::lgamma(k + 1) - std::lgamma(n - k + 1);
}

/// Probability that none of k experts drawn without replacement from
/// `pool` falls among the `inside` experts of one domain.
double misses(double pool, double inside, double k) {
  if (pool - inside < k) return 0.0;
  return std::exp(log_choose(pool - inside, k) - log_choose(pool, k));
}

}  // namespace

double remote_domains_per_token(const strategies::MoeShape& moe, int64_t domains) {
  if (domains <= 1) return 0.0;
  const double e = static_cast<double>(moe.experts), k = static_cast<double>(moe.top_k);
  const double n = static_cast<double>(domains);
  const double per_domain = e / n;
  double touched = 0;
  const int64_t groups = moe.groups_per_token > 0 ? moe.expert_groups : 1;
  const int64_t chosen = moe.groups_per_token > 0 ? moe.groups_per_token : 1;
  if (groups <= domains) {
    // Each group spans domains/groups whole domains: the chosen groups'
    // domains are the candidates, experts uniform over chosen * E/groups.
    const double pool = static_cast<double>(chosen) * e / static_cast<double>(groups);
    const double candidates = static_cast<double>(chosen) * n / static_cast<double>(groups);
    touched = candidates * (1 - misses(pool, per_domain, k));
  } else {
    // groups/domains groups per domain: the chosen groups a domain holds are
    // hypergeometric; the domain is touched unless all k experts miss them.
    const int64_t per = groups / domains;
    const double g = static_cast<double>(groups), c = static_cast<double>(chosen);
    const double pool = c * e / g;
    for (int64_t j = 1; j <= std::min(per, chosen); ++j) {
      const double jd = static_cast<double>(j);
      const double p_j =
          std::exp(log_choose(static_cast<double>(per), jd) +
                   log_choose(g - static_cast<double>(per), c - jd) - log_choose(g, c));
      touched += n * p_j * (1 - misses(pool, jd * e / g, k));
    }
  }
  // By symmetry the token's own domain is one of the touched ones with
  // probability touched / n.
  return touched * (n - 1) / n;
}

double fused_dispatch_time(const hwmodels::Fabric& fabric, const hwmodels::CollectiveParams& params,
                           const std::vector<int64_t>& group,
                           const strategies::TokenDispatch& dispatch,
                           const strategies::MoeShape& moe, double load) {
  std::map<int64_t, std::vector<int64_t>> by_domain;
  for (const int64_t rank : group) by_domain[fabric.domain_of(rank)].push_back(rank);
  const double copies = dispatch.tokens * static_cast<double>(dispatch.top_k);
  const double nvlink_bytes = copies * dispatch.token_bytes * load;
  const std::vector<int64_t>& home = by_domain.begin()->second;
  auto all_to_all = [&](const std::vector<int64_t>& members, double bytes) {
    if (members.size() <= 1 || bytes <= 0) return 0.0;
    return hwmodels::predict_collective(fabric, hwmodels::CollectiveOp::kAllToAll, members, bytes,
                                        hwmodels::Algorithm::kAuto, params)
        .time_s;
  };
  const double nvlink_s = all_to_all(home, nvlink_bytes);
  const auto domains = static_cast<int64_t>(by_domain.size());
  if (domains == 1) return nvlink_s;
  // The network leg: each member sends its deduplicated tokens to its peers
  // at the same position in the other domains (an all-to-all's buffer
  // includes the share that stays, hence n / (n - 1)).
  std::vector<int64_t> rail;
  for (const auto& [domain, members] : by_domain) rail.push_back(members.front());
  const double n = static_cast<double>(domains);
  const double network_bytes =
      dispatch.tokens * remote_domains_per_token(moe, domains) * dispatch.token_bytes * load;
  const double network_s = all_to_all(rail, network_bytes * n / (n - 1));
  return std::max(network_s, nvlink_s);
}

}  // namespace podsim::scenarios
