// The podsim command line. Subcommands are added by the reader/CLI work.
#include <iostream>

int main(int argc, char** argv) {
  (void)argv;
  if (argc < 2) {
    std::cerr << "usage: podsim <run|validate|presets|describe|collective> [options]\n";
    return 2;
  }
  std::cerr << "podsim: subcommands are not built yet\n";
  return 2;
}
