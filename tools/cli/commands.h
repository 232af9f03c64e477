#pragma once

#include <boost/program_options.hpp>
#include <iosfwd>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "scenarios/input/problem.h"

namespace podsim::cli {

/// Exit statuses of every podsim command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitInternal = 1;  ///< a bug or resource failure (caught at main)
inline constexpr int kExitBadInput = 2;  ///< bad arguments or input; every problem printed
inline constexpr int kExitNoDevice = 3;  ///< no CUDA device (calibrate / execute)
// 4: calibrate wrote a profile but some benchmarks failed; execute: a check failed.
inline constexpr int kExitDoesNotFit = 5;  ///< run --require-fit: the plan does not fit in memory

/// Where a command writes: standard output for results, standard error for
/// problems and diagnostics.
struct CommandIo {
  std::ostream& out;
  std::ostream& err;
};

/// A subcommand: `args` are the arguments after its name.
using CommandFn = int (*)(const std::vector<std::string>& args, CommandIo& io);

struct Subcommand {
  std::string_view name;
  std::string_view summary;  ///< one line for the top-level help
  CommandFn run;
};

// The subcommands (one file each in tools/cli/). To add one, write
// `int name_command(const std::vector<std::string>&, CommandIo&)` in its own
// file, declare it here and add one line to kSubcommands in main.cc.
int run_command(const std::vector<std::string>& args, CommandIo& io);
int validate_command(const std::vector<std::string>& args, CommandIo& io);
int presets_command(const std::vector<std::string>& args, CommandIo& io);
int describe_command(const std::vector<std::string>& args, CommandIo& io);
int sweep_command(const std::vector<std::string>& args, CommandIo& io);
// Commands written argc/argv-style elsewhere, adapted in adapters.cc.
int collective_command(const std::vector<std::string>& args, CommandIo& io);
int calibrate_command(const std::vector<std::string>& args, CommandIo& io);
// `podsim execute` (execute.cc).
int execute_command(const std::vector<std::string>& args, CommandIo& io);

/// Prints each problem as "podsim: <label>: /path: message (hint)", then its
/// excerpt (the input line with a caret under the fault), if it has one.
void print_problems(std::ostream& err, std::string_view label,
                    const std::vector<scenarios::Problem>& problems);

/// Prints each remark on the input (ScenarioSpec::input_warnings) as
/// "podsim: <label>: warning: /path: message (hint)"; the command goes on.
void print_input_warnings(std::ostream& err, std::string_view label,
                          const std::vector<scenarios::Problem>& warnings);

/// Parses a subcommand's arguments. Prints the help ("--help"/"-h") to
/// `io.out` and returns kExitOk, or prints a usage error to `io.err` and
/// returns kExitBadInput; returns nullopt when the command should run.
/// `usage` is the synopsis line, `about` one paragraph under it; `visible`
/// options are listed in the help, `hidden` ones (positional arguments) not.
std::optional<int> parse_arguments(
    std::string_view command, std::string_view usage, std::string_view about,
    const boost::program_options::options_description& visible,
    const boost::program_options::options_description& hidden,
    const boost::program_options::positional_options_description& positional,
    const std::vector<std::string>& args, boost::program_options::variables_map& values,
    CommandIo& io);
/// The first option of `values` given an empty value ("--trace ''"), a
/// mistake never to be read as "not given"; nullopt if none.
std::optional<std::string> option_with_empty_value(
    const boost::program_options::variables_map& values,
    const boost::program_options::options_description& options);

/// parse_arguments for a command that takes `visible` options and at most
/// one positional FILE, read back as values["file"].
std::optional<int> parse_file_arguments(std::string_view command, std::string_view usage,
                                        std::string_view about,
                                        const boost::program_options::options_description& visible,
                                        const std::vector<std::string>& args,
                                        boost::program_options::variables_map& values,
                                        CommandIo& io);

}  // namespace podsim::cli
