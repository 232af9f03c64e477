#pragma once

// What the processes of a partitioned sweep send each other after each phase:
// plan screens and simulated outcomes as byte strings. Fixed-width
// little-endian-as-stored values: every process runs the same binary, so the
// bytes read back are the values written. Internal to the sweep.

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "scenarios/sweep/sweep.h"

namespace podsim::scenarios::exchange {

/// Ends a list of screens in an exchanged byte string.
inline constexpr uint64_t kEndMarker = std::numeric_limits<uint64_t>::max();

class Writer {
 public:
  template <typename T>
  void put(T value) {
    out_.append(reinterpret_cast<const char*>(&value), sizeof value);
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    out_ += s;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <typename T>
  T get() {
    T value{};
    if (pos_ + sizeof value > in_.size()) {
      ok_ = false;
      return value;
    }
    std::memcpy(&value, in_.data() + pos_, sizeof value);
    pos_ += sizeof value;
    return value;
  }
  std::string get_string() {
    const auto n = get<uint64_t>();
    if (!ok_ || pos_ + n > in_.size()) {
      ok_ = false;
      return {};
    }
    std::string s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  bool done() const { return pos_ >= in_.size(); }
  bool ok() const { return ok_; }

 private:
  const std::string& in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

void put_outcome(Writer& w, const PlanOutcome& o);
PlanOutcome get_outcome(Reader& r);

/// Candidate `index` and its screen.
void put_screen(Writer& w, uint64_t index, const PlanScreen& s);
/// Reads (index, screen) pairs into `screens` until the end of `r` or an end
/// marker; indices past the end are ignored.
void get_screens(Reader& r, std::vector<PlanScreen>& screens);

/// All processes' byte strings, or just ours in a single process.
std::vector<std::string> gather_all(const SweepOptions& options, const std::string& mine);

}  // namespace podsim::scenarios::exchange
