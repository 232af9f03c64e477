// What `podsim sweep` prints is the same bytes whatever the worker threads
// and however many processes share the sweep.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "scenarios/report/sweep_report.h"
#include "scenarios/sweep/sweep.h"
#include "tests/scenarios/sweep/sweep_test_util.h"

namespace podsim::scenarios {
namespace {

using sweep_testing::own_target;
using sweep_testing::SmallSweep;
using sweep_testing::sweep_ok;

std::string outcome_text(const ScenarioSpec& spec, const SweepOutcome& o) {
  const std::vector<std::string> space;
  return sweep_json_text(spec, o, space) + sweep_csv(o);
}

TEST_F(SmallSweep, ThreadsDoNotChangeTheBytes) {
  SweepOptions one = options_;
  one.jobs = 1;
  SweepOptions three = options_;
  three.jobs = 3;
  EXPECT_EQ(outcome_text(spec_, sweep_ok(spec_, own_target(spec_), one)),
            outcome_text(spec_, sweep_ok(spec_, own_target(spec_), three)));
}

/// An in-memory all-gather for `size` partitions running in threads.
class Gather {
 public:
  explicit Gather(int size) : size_(size), slots_(static_cast<size_t>(size)) {}
  std::vector<std::string> operator()(int rank, const std::string& mine) {
    std::unique_lock<std::mutex> lock(mutex_);
    const uint64_t round = round_;
    slots_[static_cast<size_t>(rank)] = mine;
    if (++arrived_ == size_) {
      result_ = slots_;
      arrived_ = 0;
      ++round_;
      ready_.notify_all();
    } else {
      ready_.wait(lock, [&] { return round_ != round; });
    }
    return result_;
  }

 private:
  int size_;
  std::vector<std::string> slots_, result_;
  int arrived_ = 0;
  uint64_t round_ = 0;
  std::mutex mutex_;
  std::condition_variable ready_;
};

TEST_F(SmallSweep, PartitionsGiveTheSingleProcessBytes) {
  const std::string single = outcome_text(spec_, sweep_ok(spec_, own_target(spec_), options_));
  constexpr int kParts = 3;
  Gather gather(kParts);
  std::vector<std::string> texts(kParts);
  std::vector<std::thread> parts;
  for (int rank = 0; rank < kParts; ++rank) {
    parts.emplace_back([&, rank] {
      SweepOptions o = options_;
      o.jobs = 1;
      o.partition_rank = rank;
      o.partition_size = kParts;
      o.exchange = [&gather, rank](const std::string& mine) { return gather(rank, mine); };
      texts[static_cast<size_t>(rank)] = outcome_text(spec_, sweep_ok(spec_, own_target(spec_), o));
    });
  }
  for (std::thread& t : parts) t.join();
  for (const std::string& text : texts) EXPECT_EQ(text, single);
}

}  // namespace
}  // namespace podsim::scenarios
