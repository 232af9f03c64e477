#include "hwmodels/torus.h"

#include <algorithm>
#include <cstdlib>
#include <tuple>

namespace podsim::hwmodels {
namespace {

bool power_of_two(long long x) { return x > 0 && (x & (x - 1)) == 0; }

// Every way of writing `chips` as a product of `dims` lengths in
// non-decreasing order.
void factorisations(long long chips, int dims, long long smallest, std::vector<int>& prefix,
                    std::vector<std::vector<int>>& out) {
  if (dims == 1) {
    if (chips >= smallest) {
      prefix.push_back(static_cast<int>(chips));
      out.push_back(prefix);
      prefix.pop_back();
    }
    return;
  }
  for (long long a = smallest; a * a <= chips; ++a) {
    if (chips % a != 0) continue;
    prefix.push_back(static_cast<int>(a));
    factorisations(chips / a, dims - 1, a, prefix, out);
    prefix.pop_back();
  }
}

bool fits(std::vector<int> sorted_shape, std::vector<int> max_shape) {
  if (max_shape.empty()) return true;
  if (max_shape.size() != sorted_shape.size()) return false;
  std::sort(max_shape.begin(), max_shape.end());
  for (size_t i = 0; i < sorted_shape.size(); ++i) {
    if (sorted_shape[i] > max_shape[i]) return false;
  }
  return true;
}

}  // namespace

std::vector<int> torus_shape(const TorusSpec& torus, long long chips) {
  if (!torus.shape.empty()) return torus.shape;
  if (chips < 1 || torus.dims < 1 || torus.dims > 3) return {};
  std::vector<std::vector<int>> all;
  std::vector<int> prefix;
  factorisations(chips, torus.dims, 1, prefix, all);
  const std::vector<int>* best = nullptr;
  auto rank = [](const std::vector<int>& s) {
    const auto odd = std::count_if(s.begin(), s.end(), [](int a) { return !power_of_two(a); });
    return std::make_tuple(s.back(), -s.front(), odd);
  };
  for (const std::vector<int>& s : all) {
    if (!fits(s, torus.max_shape)) continue;
    if (best == nullptr || rank(s) < rank(*best)) best = &s;
  }
  if (best == nullptr) return {};
  std::vector<int> shape = *best;
  std::stable_partition(shape.begin(), shape.end(), [](int a) { return power_of_two(a); });
  return shape;
}

std::vector<bool> torus_wraps(const TorusSpec& torus, const std::vector<int>& shape) {
  std::vector<bool> wraps(shape.size(), false);
  if (torus.wrap_length <= 0) return wraps;
  auto multiple = [&](int a) { return a >= torus.wrap_length && a % torus.wrap_length == 0; };
  const bool all = std::all_of(shape.begin(), shape.end(), multiple);
  for (size_t i = 0; i < shape.size(); ++i) {
    wraps[i] = shape[i] > 2 && multiple(shape[i]) && (all || !torus.wrap_needs_all_axes);
  }
  return wraps;
}

int64_t TorusGrid::chips() const {
  int64_t n = 1;
  for (int a : shape) n *= a;
  return n;
}

std::array<int, 3> TorusGrid::coords(int64_t chip) const {
  std::array<int, 3> c{0, 0, 0};
  for (int a = 0; a < dims(); ++a) {
    c[static_cast<size_t>(a)] = static_cast<int>(chip % shape[static_cast<size_t>(a)]);
    chip /= shape[static_cast<size_t>(a)];
  }
  return c;
}

int64_t TorusGrid::chip(const std::array<int, 3>& c) const {
  int64_t id = 0;
  for (int a = dims() - 1; a >= 0; --a) {
    id = id * shape[static_cast<size_t>(a)] + c[static_cast<size_t>(a)];
  }
  return id;
}

int TorusGrid::steps(int axis, int from, int to) const {
  const int d = to - from;
  if (!wraps[static_cast<size_t>(axis)] || d == 0) return d;
  const int n = shape[static_cast<size_t>(axis)];
  const int forward = ((d % n) + n) % n;
  return forward <= n - forward ? forward : forward - n;
}

int TorusGrid::hops(int64_t a, int64_t b) const {
  const std::array<int, 3> ca = coords(a);
  const std::array<int, 3> cb = coords(b);
  int h = 0;
  for (int axis = 0; axis < dims(); ++axis) {
    h += std::abs(steps(axis, ca[static_cast<size_t>(axis)], cb[static_cast<size_t>(axis)]));
  }
  return h;
}

}  // namespace podsim::hwmodels
