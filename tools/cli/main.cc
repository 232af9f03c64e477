// The podsim command line. Subcommands are added by the reader/CLI work.
#include <iostream>
#include <string_view>

#include "tools/cli/calibrate.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: podsim <run|validate|presets|describe|collective|calibrate> [options]\n";
    return 2;
  }
  if (std::string_view(argv[1]) == "calibrate")
    return podsim::tools::run_calibrate_command(argc - 1, argv + 1);
  std::cerr << "podsim: subcommands are not built yet\n";
  return 2;
}
