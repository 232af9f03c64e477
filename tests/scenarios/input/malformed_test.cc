// The malformed-scenario corpus (tests/scenarios/input/malformed/, expectations in
// EXPECTED.tsv) through the reader in-process; tests/tools runs the same
// files through the podsim binary.
#include <gtest/gtest.h>

#include "scenarios/input/reader.h"
#include "tests/scenarios/input/malformed_corpus.h"
#include "tests/scenarios/input/reader_test_util.h"

namespace podsim::scenarios {
namespace {

using testing_corpus::Expectation;
using testing_corpus::malformed_corpus;

TEST(Malformed, CorpusIsLargeEnough) { EXPECT_GE(malformed_corpus().size(), 30u); }

TEST(Malformed, EveryFileFailsAtItsPath) {
  for (const Expectation& e : malformed_corpus()) {
    const Result<ScenarioSpec> spec = read_scenario_file(testing_corpus::malformed_dir() + e.file);
    if (e.fails_in_simulation) {  // tests/scenarios/step simulates these
      EXPECT_TRUE(spec.ok()) << e.file << ":\n"
                             << (spec.ok() ? "" : testing::problems_text(spec.problems()));
      continue;
    }
    ASSERT_FALSE(spec.ok()) << e.file;
    const std::string expected_path = e.path == "/" ? "" : e.path;
    EXPECT_TRUE(testing::has_problem(spec.problems(), expected_path, e.fragment))
        << e.file << " should name " << e.path << " with '" << e.fragment << "', got:\n"
        << testing::problems_text(spec.problems());
  }
}

}  // namespace
}  // namespace podsim::scenarios
