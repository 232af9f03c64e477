#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "hwmodels/cluster_spec.h"

namespace podsim::hwmodels {

/// Axis lengths of one slice of `chips` chips: `torus.shape` when given,
/// else the shape of torus.dims axes with the shortest longest axis, then the
/// longest shortest axis, then the fewest lengths that are not powers of two,
/// inside max_shape (compared sorted: the slice may lie either way in the
/// pod); axes that are powers of two first, each group in increasing order.
/// TPU v5p: 4 -> 1x2x2, 128 -> 4x4x8, 512 -> 8x8x8, 1536 -> 8x16x12,
/// 6144 -> 16x16x24; v6e: 32 -> 4x8, 256 -> 16x16 (the shapes Google lists
/// for its slices, up to the order of the axes). Empty when no shape fits.
std::vector<int> torus_shape(const TorusSpec& torus, long long chips);

/// Which axes of a slice of `shape` have wrap-around links (TorusSpec's
/// rule; an axis of 1 or 2 chips never does).
std::vector<bool> torus_wraps(const TorusSpec& torus, const std::vector<int>& shape);

/// One slice's grid: chip i of the slice sits at x = i mod nx, y = (i / nx)
/// mod ny, z = i / (nx ny).
struct TorusGrid {
  std::vector<int> shape;
  std::vector<bool> wraps;

  int dims() const { return static_cast<int>(shape.size()); }
  int64_t chips() const;
  std::array<int, 3> coords(int64_t chip) const;
  int64_t chip(const std::array<int, 3>& coords) const;
  /// Signed steps from a to b along an axis the way dimension-order routing
  /// goes: the shorter way round on a wrapped axis (ties: +), else straight.
  int steps(int axis, int from, int to) const;
  /// Links a transfer crosses from chip a to chip b.
  int hops(int64_t a, int64_t b) const;
};

}  // namespace podsim::hwmodels
