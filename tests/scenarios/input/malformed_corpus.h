#pragma once

// The malformed-scenario corpus: tests/scenarios/input/malformed/*, with the JSON
// path each file's error must name listed in EXPECTED.tsv. Read by the
// reader tests (in-process) and the CLI tests (through the binary).
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace podsim::testing_corpus {

struct Expectation {
  std::string file;      ///< under tests/scenarios/input/malformed/
  std::string path;      ///< the JSON pointer the error names ("/" = the document)
  std::string fragment;  ///< part of the message or hint
};

inline std::string malformed_dir() {
  return std::string(PODSIM_SOURCE_DIR) + "/tests/scenarios/input/malformed/";
}

inline std::vector<Expectation> malformed_corpus() {
  std::ifstream in(malformed_dir() + "EXPECTED.tsv");
  std::vector<Expectation> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Expectation e;
    std::getline(fields, e.file, '\t');
    std::getline(fields, e.path, '\t');
    std::getline(fields, e.fragment, '\t');
    out.push_back(e);
  }
  return out;
}

}  // namespace podsim::testing_corpus
