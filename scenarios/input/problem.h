#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace podsim::scenarios {

/// One thing wrong with an input, located by its JSON pointer
/// ("/parallelism/tp"), with what is wrong and how to fix it.
struct Problem {
  std::string path;
  std::string message;
  std::string hint;  ///< may be empty

  /// "/parallelism/tp: 6 does not divide heads=128 (hint: ...)"
  std::string to_string() const {
    std::string out = (path.empty() ? std::string("/") : path) + ": " + message;
    if (!hint.empty()) out += " (" + hint + ")";
    return out;
  }
};

/// A value, or every problem found while trying to make it.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(std::vector<Problem> problems) : problems_(std::move(problems)) {}  // NOLINT

  bool ok() const { return value_.has_value(); }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const std::vector<Problem>& problems() const { return problems_; }

 private:
  std::optional<T> value_;
  std::vector<Problem> problems_;
};

}  // namespace podsim::scenarios
