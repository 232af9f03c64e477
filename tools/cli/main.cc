// The podsim command line: one binary, one subcommand per file in tools/cli/.
// The only place that prints or chooses exit statuses; nothing escapes main.
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "scenarios/input/suggest.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#ifndef PODSIM_VERSION
#define PODSIM_VERSION "unknown"
#endif
#include "tools/cli/commands.h"

namespace podsim::cli {
namespace {

// Adding a subcommand is one line here (plus its file and declaration).
constexpr Subcommand kSubcommands[] = {
    {"run", "simulate one training step of a scenario (default: Llama 3 405B on 16K H100)",
     &run_command},
    {"validate", "compare simulations with measured runs of a validation-case file",
     &validate_command},
    {"sweep", "rank every valid parallel plan of a scenario on one or more GPU counts and types",
     &sweep_command},
    {"presets", "list the built-in model, GPU and cluster presets", &presets_command},
    {"describe", "print every scenario key: type, unit, default, allowed values",
     &describe_command},
    {"collective", "simulate one NCCL-style collective on a cluster preset's fabric",
     &collective_command},
    {"calibrate", "measure this machine's GPU and write a calibration profile", &calibrate_command},
    {"execute", "run one GPU's share of a scenario on this GPU: measured beside predicted",
     &execute_command},
};

void print_usage(std::ostream& out) {
  out << "usage: podsim <command> [options]\n\n"
         "podsim simulates distributed training of transformers on GPU clusters.\n\n"
         "Commands:\n";
  size_t width = 0;
  for (const Subcommand& command : kSubcommands) width = std::max(width, command.name.size());
  for (const Subcommand& command : kSubcommands) {
    out << "  " << command.name << std::string(width + 2 - command.name.size(), ' ')
        << command.summary << "\n";
  }
  out << "\n'podsim <command> --help' shows a command's options.\n"
         "Exit status: 0 ok, 1 internal error, 2 bad input (every problem on stderr), "
         "3 no CUDA device,\n"
         "4 calibrate: profile written but some benchmarks failed; execute: a check failed,\n"
         "5 run --require-fit: the plan does not fit in GPU memory (the report is printed).\n";
}

int dispatch(const std::vector<std::string>& args, CommandIo& io) {
  if (args.empty()) {
    print_usage(io.err);
    return kExitBadInput;
  }
  const std::string& name = args.front();
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage(io.out);
    return kExitOk;
  }
  if (name == "--version") {
    io.out << "podsim " << PODSIM_VERSION << "\n";
    return kExitOk;
  }
  for (const Subcommand& command : kSubcommands) {
    if (command.name == name) {
      return command.run(std::vector<std::string>(args.begin() + 1, args.end()), io);
    }
  }
  std::vector<std::string> names;
  for (const Subcommand& command : kSubcommands) names.emplace_back(command.name);
  const std::string guess = scenarios::closest_match(name, names);
  io.err << "podsim: unknown command " << scenarios::quote_for_message(name)
         << (guess.empty() ? "" : " (did you mean '" + guess + "'?)") << "\n";
  print_usage(io.err);
  return kExitBadInput;
}

}  // namespace
}  // namespace podsim::cli

int main(int argc, char** argv) {
  using podsim::cli::kExitInternal;
#ifdef __GLIBC__
  // Blocks of 128 KiB and more (the step's arrays below sim::BulkVector's
  // 2 MiB, and its other tables) are mapped, so freeing one gives its pages
  // back: glibc's own starting threshold, held there. By default glibc
  // raises it to the largest block freed so far, after which such arrays
  // come from the heap and stay resident once freed (the every-rank GPT-3
  // step on 1,024 GPUs peaked 6% higher before the bulk arrays; with the
  // threshold at 2 MiB it peaks at 97.5 MiB instead of 94.3).
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
  try {
    const std::vector<std::string> args(argv + 1, argv + argc);
    podsim::cli::CommandIo io{std::cout, std::cerr};
    const int status = podsim::cli::dispatch(args, io);
    std::cout.flush();
    return status;
  } catch (const std::bad_alloc&) {
    std::cerr << "podsim: out of memory\n";
  } catch (const std::exception& error) {
    std::cerr << "podsim: internal error: " << error.what() << "\n";
  } catch (...) {
    std::cerr << "podsim: internal error\n";
  }
  return kExitInternal;
}
