// `podsim calibrate` as a user runs it. This machine (and CI) has no GPU, and
// the asan preset builds without CUDA: both must give exit 3 and one sentence.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace {

struct CommandResult {
  int status = -1;
  std::string output;  // stdout and stderr together
};

/// `ENV podsim ARGS`, e.g. run_podsim_with("A=1", "presets").
CommandResult run_podsim_with(const std::string& env, const std::string& args) {
  CommandResult r;
  const std::string cmd = env + " " + std::string(PODSIM_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

CommandResult run_podsim(const std::string& args) { return run_podsim_with("", args); }

TEST(CalibrateCli, WithoutAGpuExitsThreeWithOneSentence) {
  const std::string out =
      (std::filesystem::temp_directory_path() / "podsim_calibrate_cli_test_profile.json").string();
  std::filesystem::remove(out);
  const CommandResult r = run_podsim("calibrate --quick --out " + out);
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_EQ(r.output.rfind("no CUDA device: ", 0), 0u) << r.output;
  // One sentence on one line, no stack, no partial profile.
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;
  EXPECT_GT(r.output.size(), std::string("no CUDA device: \n").size()) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

TEST(CalibrateCli, ThePodsimBinaryLinksNoCudaLibrary) {
  // The CUDA side is a module only calibrate and execute load
  // (tools/cli/cuda_module.h): the binary's own dependencies, as the dynamic
  // loader lists them (what ldd prints), name no CUDA library.
  const CommandResult r = run_podsim_with("LD_TRACE_LOADED_OBJECTS=1", "");
  ASSERT_EQ(r.status, 0) << r.output;
  ASSERT_NE(r.output.find("libc.so"), std::string::npos) << r.output;  // it did list them
  for (const char* cuda : {"libcuda.", "libcudart", "libcublas", "libnccl"}) {
    EXPECT_EQ(r.output.find(cuda), std::string::npos) << cuda << " in\n" << r.output;
  }
}

TEST(CalibrateCli, UnknownOptionIsAUsageError) {
  const CommandResult r = run_podsim("calibrate --frobnicate");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("unknown option '--frobnicate'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("usage: podsim calibrate"), std::string::npos) << r.output;
}

TEST(CalibrateCli, BadDeviceNumberIsAUsageError) {
  const CommandResult r = run_podsim("calibrate --device minus-one");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("--device needs a device number"), std::string::npos) << r.output;
}

TEST(CalibrateCli, MissingOutputDirectoryIsRefusedBeforeMeasuring) {
  const CommandResult r = run_podsim("calibrate --out /nonexistent-podsim-dir/profile.json");
  EXPECT_EQ(r.status, 2) << r.output;
  EXPECT_NE(r.output.find("directory '/nonexistent-podsim-dir' does not exist"), std::string::npos)
      << r.output;
}

TEST(CalibrateCli, HelpDescribesTheCommandAndExitsZero) {
  const CommandResult r = run_podsim("calibrate --help");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("--out FILE"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("3 no CUDA device"), std::string::npos) << r.output;
}

}  // namespace
