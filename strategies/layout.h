#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "strategies/plan.h"

namespace podsim::strategies {

/// Groups of ranks that communicate.
enum class GroupKind : uint8_t {
  kTp,          ///< tensor parallel
  kCp,          ///< context parallel
  kDp,          ///< data parallel (same cp coordinate)
  kDpCp,        ///< dense-gradient group: dp x cp ranks holding the same dense weights
  kEp,          ///< expert parallel (MoE parallel folding, below)
  kExpertDp,    ///< expert-gradient group: ranks holding the same experts
  kPp,          ///< every stage of one pipeline
  kShard,       ///< HSDP: one shard group inside the dp x cp group
  kReplica,     ///< HSDP: the ranks holding the same shard in different shard groups
  kEmbedding,   ///< first and last stage of one pipeline (tied embeddings)
  kExpertTp,    ///< expert tensor parallel: the ranks sharing one expert's weights
  kExpertTpEp,  ///< expert-TP x EP: the ranks one MoE layer's tokens can reach
  kStage,       ///< tp x cp x dp: every rank of one pipeline stage (Megatron's fp8 amax group)
};
inline constexpr int kGroupKinds = 13;

/// Coordinates of a rank. The expert coordinates `etp`, `ep` and `edp`
/// (expert-data-parallel index) are derived from the rank's index among the
/// tp*cp*dp ranks of its stage, q = tp + tp_size (cp + cp_size dp):
/// etp = q % expert_tp, ep = (q / expert_tp) % ep_size,
/// edp = q / (expert_tp ep_size).
struct Coords {
  int64_t tp = 0, cp = 0, ep = 0, dp = 0, pp = 0, edp = 0, etp = 0;
  auto operator<=>(const Coords&) const = default;
};

/// Global rank <-> coordinates, and the groups of a rank.
///
/// Ranks are laid out by `plan.order`, innermost (fastest-varying) first:
/// with the default tp-cp-ep-dp-pp, rank = tp + T*(cp + C*(dp + D*pp)). The
/// expert dimensions do not add ranks: MoE parallel folding (Megatron-Core
/// parallel_state.py: a second RankGenerator with tp = expert_tp, cp = 1,
/// dp = expert-dp) regroups the tp*cp*dp ranks of each stage, in tp, cp, dp
/// order, as expert_tp x ep x edp, expert_tp innermost; ep's position in
/// `order` is ignored. With expert_tp = tp this is the 1.0 rule (ep carved
/// out of dp x cp). The lead maps rank i to GPU i, so the innermost
/// dimensions land inside a node / NVLink domain.
class Layout {
 public:
  Layout() : Layout(ParallelPlan{}) {}
  explicit Layout(const ParallelPlan& plan);

  int64_t world() const { return world_; }
  Coords coords(int64_t rank) const;
  /// The rank at tp, cp, dp, pp of `c` (ep and edp are ignored).
  int64_t rank(const Coords& c) const;
  int64_t stage(int64_t rank) const { return coords(rank).pp; }
  /// Members of `rank`'s group of `kind`, ordered by their index along it
  /// (ring order for ring algorithms). Always contains `rank`.
  std::vector<int64_t> group(int64_t rank, GroupKind kind) const;
  /// The rank with the same tp, cp, dp on pipeline stage `stage`.
  int64_t on_stage(int64_t rank, int64_t stage) const;
  /// The representative of a stage: tp = cp = dp = 0.
  int64_t representative(int64_t stage) const;
  /// Whether a rank is a representative.
  bool is_representative(int64_t rank) const;
  /// Size of a group kind (same for every rank).
  int64_t group_size(GroupKind kind) const;

  // Shifts of the (tp, cp, dp) coordinates, the symmetries of a schedule in
  // which every rank of a stage runs the same tasks: shift s = dtp + tp_size
  // (dcp + cp_size ddp) moves a rank by (dtp, dcp, ddp), each modulo its
  // size. They act as the group Z_tp x Z_cp x Z_dp.

  /// How many shifts there are: tp * cp * dp.
  int64_t shift_count() const { return tp_ * cp_ * dp_; }
  /// `rank` moved by `shift`.
  int64_t shifted(int64_t rank, int64_t shift) const;
  /// One shift per distinct image of the multiset `ranks` under the shifts:
  /// the smallest shift giving each image, ascending (0 first).
  std::vector<int64_t> distinct_shifts(const std::vector<int64_t>& ranks) const;

 private:
  /// The rank of stage `pp` whose in-stage index is q (see Coords).
  int64_t from_stage_index(int64_t q, int64_t pp) const;

  int64_t tp_, cp_, dp_, pp_, ep_, etp_, shard_;
  int64_t world_;
  std::array<int64_t, kDims> stride_{};  // by Dim index; kEp unused
};

}  // namespace podsim::strategies
