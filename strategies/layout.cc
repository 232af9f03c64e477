#include "strategies/layout.h"

#include <algorithm>

namespace podsim::strategies {
namespace {
size_t idx(Dim d) { return static_cast<size_t>(d); }
}  // namespace

Layout::Layout(const ParallelPlan& plan)
    : tp_(plan.tp),
      cp_(plan.cp),
      dp_(plan.dp),
      pp_(plan.pp),
      ep_(plan.ep),
      etp_(plan.expert_tp),
      shard_(plan.shard_group > 0 ? plan.shard_group : plan.dp * plan.cp),
      world_(plan.tp * plan.cp * plan.dp * plan.pp) {
  int64_t stride = 1;
  for (Dim d : plan.order) {
    if (d == Dim::kEp) continue;
    stride_[idx(d)] = stride;
    stride *= d == Dim::kTp ? tp_ : d == Dim::kCp ? cp_ : d == Dim::kDp ? dp_ : pp_;
  }
}

Coords Layout::coords(int64_t rank) const {
  Coords c;
  c.tp = (rank / stride_[idx(Dim::kTp)]) % tp_;
  c.cp = (rank / stride_[idx(Dim::kCp)]) % cp_;
  c.dp = (rank / stride_[idx(Dim::kDp)]) % dp_;
  c.pp = (rank / stride_[idx(Dim::kPp)]) % pp_;
  const int64_t q = c.tp + tp_ * (c.cp + cp_ * c.dp);
  c.etp = q % etp_;
  c.ep = (q / etp_) % ep_;
  c.edp = q / (etp_ * ep_);
  return c;
}

int64_t Layout::from_stage_index(int64_t q, int64_t pp) const {
  return rank({q % tp_, (q / tp_) % cp_, 0, q / (tp_ * cp_), pp, 0, 0});
}

int64_t Layout::rank(const Coords& c) const {
  return c.tp * stride_[idx(Dim::kTp)] + c.cp * stride_[idx(Dim::kCp)] +
         c.dp * stride_[idx(Dim::kDp)] + c.pp * stride_[idx(Dim::kPp)];
}

int64_t Layout::group_size(GroupKind kind) const {
  switch (kind) {
    case GroupKind::kTp:
      return tp_;
    case GroupKind::kCp:
      return cp_;
    case GroupKind::kDp:
      return dp_;
    case GroupKind::kDpCp:
      return dp_ * cp_;
    case GroupKind::kEp:
      return ep_;
    case GroupKind::kExpertDp:
      return tp_ * dp_ * cp_ / (ep_ * etp_);
    case GroupKind::kExpertTp:
      return etp_;
    case GroupKind::kExpertTpEp:
      return etp_ * ep_;
    case GroupKind::kPp:
      return pp_;
    case GroupKind::kShard:
      return shard_;
    case GroupKind::kReplica:
      return dp_ * cp_ / shard_;
    case GroupKind::kEmbedding:
      return pp_ > 1 ? 2 : 1;
    case GroupKind::kStage:
      return tp_ * cp_ * dp_;
  }
  return 1;
}

std::vector<int64_t> Layout::group(int64_t rank, GroupKind kind) const {
  const Coords c = coords(rank);
  std::vector<int64_t> out;
  auto with = [&](Coords x) { out.push_back(this->rank(x)); };
  // The dp x cp index j = cp + cp_size * dp and back.
  const int64_t j = c.cp + cp_ * c.dp;
  auto expert = [&](int64_t etp, int64_t ep, int64_t edp) {
    return from_stage_index(etp + etp_ * (ep + ep_ * edp), c.pp);
  };
  auto at_j = [&](int64_t jj) {
    Coords x = c;
    x.cp = jj % cp_;
    x.dp = jj / cp_;
    with(x);
  };
  switch (kind) {
    case GroupKind::kTp:
      for (int64_t i = 0; i < tp_; ++i) with({i, c.cp, 0, c.dp, c.pp, 0, 0});
      break;
    case GroupKind::kCp:
      for (int64_t i = 0; i < cp_; ++i) with({c.tp, i, 0, c.dp, c.pp, 0, 0});
      break;
    case GroupKind::kDp:
      for (int64_t i = 0; i < dp_; ++i) with({c.tp, c.cp, 0, i, c.pp, 0, 0});
      break;
    case GroupKind::kDpCp:
      for (int64_t i = 0; i < dp_ * cp_; ++i) at_j(i);
      break;
    case GroupKind::kEp:
      for (int64_t i = 0; i < ep_; ++i) out.push_back(expert(c.etp, i, c.edp));
      break;
    case GroupKind::kExpertDp:
      for (int64_t i = 0; i < group_size(kind); ++i) out.push_back(expert(c.etp, c.ep, i));
      break;
    case GroupKind::kExpertTp:
      for (int64_t i = 0; i < etp_; ++i) out.push_back(expert(i, c.ep, c.edp));
      break;
    case GroupKind::kExpertTpEp:
      for (int64_t i = 0; i < ep_; ++i) {
        for (int64_t t = 0; t < etp_; ++t) out.push_back(expert(t, i, c.edp));
      }
      break;
    case GroupKind::kPp:
      for (int64_t i = 0; i < pp_; ++i) with({c.tp, c.cp, 0, c.dp, i, 0, 0});
      break;
    case GroupKind::kShard:
      for (int64_t i = 0; i < shard_; ++i) at_j((j / shard_) * shard_ + i);
      break;
    case GroupKind::kReplica:
      for (int64_t i = 0; i < dp_ * cp_ / shard_; ++i) at_j(i * shard_ + j % shard_);
      break;
    case GroupKind::kEmbedding:
      with({c.tp, c.cp, 0, c.dp, 0, 0, 0});
      if (pp_ > 1) with({c.tp, c.cp, 0, c.dp, pp_ - 1, 0, 0});
      break;
    case GroupKind::kStage:
      for (int64_t q = 0; q < tp_ * cp_ * dp_; ++q) out.push_back(from_stage_index(q, c.pp));
      break;
  }
  return out;
}

int64_t Layout::on_stage(int64_t rank, int64_t stage) const {
  Coords c = coords(rank);
  c.pp = stage;
  return this->rank(c);
}

int64_t Layout::shifted(int64_t rank, int64_t shift) const {
  if (shift == 0) return rank;
  Coords c = coords(rank);
  c.tp = (c.tp + shift % tp_) % tp_;
  c.cp = (c.cp + (shift / tp_) % cp_) % cp_;
  c.dp = (c.dp + shift / (tp_ * cp_)) % dp_;
  return this->rank(c);
}

std::vector<int64_t> Layout::distinct_shifts(const std::vector<int64_t>& ranks) const {
  // Two shifts give the same image exactly when their difference maps the
  // multiset onto itself, so the images are the cosets of that stabiliser.
  // Comparing the images of all tp*cp*dp shifts instead took 57% of a
  // symmetric `podsim run` of the default scenario (1,024 shifts of 128-rank
  // data-parallel groups).
  const int64_t n = shift_count();
  auto add = [this](int64_t a, int64_t b) {
    const int64_t tp = (a % tp_ + b % tp_) % tp_;
    const int64_t cp = ((a / tp_) % cp_ + (b / tp_) % cp_) % cp_;
    const int64_t dp = (a / (tp_ * cp_) + b / (tp_ * cp_)) % dp_;
    return tp + tp_ * (cp + cp_ * dp);
  };
  std::vector<int64_t> sorted = ranks;
  std::sort(sorted.begin(), sorted.end());
  // The stabiliser, as a membership mask. A shift in it moves ranks[0] onto
  // a member, so the shifts from ranks[0] to the members are the candidates;
  // one that is already in the subgroup found so far needs no check, and
  // each one checked and kept at least doubles it.
  std::vector<char> stabilises(static_cast<size_t>(n), 0);
  std::vector<int64_t> subgroup{0};
  stabilises[0] = 1;
  std::vector<int64_t> image(sorted.size());
  if (!sorted.empty()) {
    const Coords origin = coords(ranks[0]);
    for (const int64_t member : sorted) {
      const Coords c = coords(member);
      if (c.pp != origin.pp) continue;
      const int64_t shift =
          (c.tp - origin.tp + tp_) % tp_ +
          tp_ * ((c.cp - origin.cp + cp_) % cp_ + cp_ * ((c.dp - origin.dp + dp_) % dp_));
      if (stabilises[static_cast<size_t>(shift)]) continue;
      for (size_t i = 0; i < sorted.size(); ++i) image[i] = shifted(sorted[i], shift);
      std::sort(image.begin(), image.end());
      if (image != sorted) continue;
      // The subgroup generated by the old one and `shift`.
      const size_t old_size = subgroup.size();
      for (int64_t step = shift; !stabilises[static_cast<size_t>(step)]; step = add(step, shift)) {
        for (size_t i = 0; i < old_size; ++i) {
          const int64_t h = add(subgroup[i], step);
          stabilises[static_cast<size_t>(h)] = 1;
          subgroup.push_back(h);
        }
      }
    }
  }
  // The smallest shift of each coset, ascending.
  std::vector<int64_t> out;
  std::vector<char> covered(static_cast<size_t>(n), 0);
  for (int64_t s = 0; s < n; ++s) {
    if (covered[static_cast<size_t>(s)]) continue;
    out.push_back(s);
    for (const int64_t h : subgroup) covered[static_cast<size_t>(add(s, h))] = 1;
  }
  return out;
}

int64_t Layout::representative(int64_t stage) const { return rank({0, 0, 0, 0, stage, 0, 0}); }

bool Layout::is_representative(int64_t rank) const {
  const Coords c = coords(rank);
  return c.tp == 0 && c.cp == 0 && c.dp == 0;
}

}  // namespace podsim::strategies
