// `podsim presets`: the listing names every preset; --json is the data itself.
#include "scenarios/report/presets_listing.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace podsim::scenarios {
namespace {

TEST(Presets, ListingShowsEveryPresetAndJsonRoundTrips) {
  const PresetLibrary& presets = builtin_presets();
  const std::string text = presets_text(presets);
  for (const std::string category : {"models", "gpus", "clusters"}) {
    for (const std::string& name : presets.names(category)) {
      EXPECT_NE(text.find("\n" + name + " "), std::string::npos) << name;
    }
  }
  EXPECT_NE(text.find("989 TFLOP/s"), std::string::npos);
  EXPECT_NE(text.find("24576"), std::string::npos);
  const nlohmann::json json = nlohmann::json::parse(presets_json_text(presets));
  EXPECT_EQ(json, presets.all());
}

}  // namespace
}  // namespace podsim::scenarios
