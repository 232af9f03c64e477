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
  /// The input around the problem with a caret under the offending
  /// character, one or more lines (syntax errors); printed under the problem.
  std::string excerpt = {};

  /// "/parallelism/tp: 6 does not divide heads=128 (hint: ...)"
  std::string to_string() const {
    std::string out = (path.empty() ? std::string("/") : path) + ": " + message;
    if (!hint.empty()) out += " (" + hint + ")";
    return out;
  }
};

/// Problems one input keeps: a file with 50,000 unknown keys gets this many
/// and a last one saying more were left out, not 50,000 lines (and the
/// duplicate check below stays cheap).
inline constexpr size_t kMaxProblems = 100;

/// Appends `problem` to `problems` unless the same path and message are
/// already there, or kMaxProblems are (the first one past them becomes
/// "more problems than shown"). The way every reader collects problems.
inline void add_problem(std::vector<Problem>& problems, Problem problem) {
  for (const Problem& p : problems) {
    if (p.path == problem.path && p.message == problem.message) return;
  }
  if (problems.size() > kMaxProblems) return;
  if (problems.size() == kMaxProblems) {
    problems.push_back({"", "more problems than the " + std::to_string(kMaxProblems) + " above",
                        "fix these first"});
    return;
  }
  problems.push_back(std::move(problem));
}

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
