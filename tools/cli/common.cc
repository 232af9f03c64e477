// Helpers shared by the subcommands: argument parsing and problem printing.
#include <ostream>

#include "tools/cli/commands.h"

namespace podsim::cli {

namespace po = boost::program_options;

void print_problems(std::ostream& err, std::string_view label,
                    const std::vector<scenarios::Problem>& problems) {
  for (const scenarios::Problem& problem : problems) {
    err << "podsim: " << label << ": " << problem.to_string() << "\n";
    if (!problem.excerpt.empty()) err << problem.excerpt << "\n";
  }
}

void print_input_warnings(std::ostream& err, std::string_view label,
                          const std::vector<scenarios::Problem>& warnings) {
  for (const scenarios::Problem& warning : warnings) {
    err << "podsim: " << label << ": warning: " << warning.to_string() << "\n";
  }
}

std::optional<std::string> option_with_empty_value(const po::variables_map& values,
                                                   const po::options_description& options) {
  for (const auto& [name, value] : values) {
    const po::option_description* option = options.find_nothrow(name, false);
    const bool takes_value = option != nullptr && option->semantic()->max_tokens() > 0;
    const auto* text = boost::any_cast<std::string>(&value.value());
    if (takes_value && text != nullptr && text->empty() && !value.defaulted()) return name;
  }
  return std::nullopt;
}

std::optional<int> parse_arguments(std::string_view command, std::string_view usage,
                                   std::string_view about, const po::options_description& visible,
                                   const po::options_description& hidden,
                                   const po::positional_options_description& positional,
                                   const std::vector<std::string>& args, po::variables_map& values,
                                   CommandIo& io) {
  po::options_description help_option;
  help_option.add_options()("help,h", "show this help");
  po::options_description all;
  all.add(visible).add(help_option).add(hidden);
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), values);
    if (values.count("help") != 0) {
      po::options_description shown("Options");
      shown.add(visible).add(help_option);
      io.out << "usage: " << usage << "\n\n" << about << "\n\n" << shown;
      return kExitOk;
    }
    po::notify(values);
    if (const std::optional<std::string> empty = option_with_empty_value(values, all)) {
      io.err << "podsim " << command << ": "
             << (*empty == "file" ? std::string("the file name is empty")
                                  : "--" + *empty + " needs a value, got an empty one")
             << "\nusage: " << usage << "\n";
      return kExitBadInput;
    }
  } catch (const po::error& error) {
    io.err << "podsim " << command << ": " << error.what() << "\n"
           << "usage: " << usage << "\n"
           << "(podsim " << command << " --help for more)\n";
    return kExitBadInput;
  }
  return std::nullopt;
}

std::optional<int> parse_file_arguments(std::string_view command, std::string_view usage,
                                        std::string_view about,
                                        const po::options_description& visible,
                                        const std::vector<std::string>& args,
                                        po::variables_map& values, CommandIo& io) {
  po::options_description hidden;
  hidden.add_options()("file", po::value<std::string>(), "scenario file");
  po::positional_options_description positional;
  positional.add("file", 1);
  return parse_arguments(command, usage, about, visible, hidden, positional, args, values, io);
}

}  // namespace podsim::cli
