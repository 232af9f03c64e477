#pragma once

// The malformed-scenario corpus: tests/scenarios/input/malformed/*, with the JSON
// path each file's error must name listed in EXPECTED.tsv. Read by the
// reader tests and the step tests (in-process: a file the reader must
// reject, or one it accepts whose simulation must fail) and the CLI tests
// (through the binary: every file).
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace podsim::testing_corpus {

struct Expectation {
  std::string file;      ///< under tests/scenarios/input/malformed/
  std::string path;      ///< the JSON pointer the error names ("/" = the document)
  std::string fragment;  ///< part of the message or hint
  /// The reader accepts the file; simulating it fails (else the reader fails).
  bool fails_in_simulation = false;
};

inline std::string malformed_dir() {
  // Appended, not std::string(...) + "...": GCC 12 warns falsely (-Warray-bounds).
  std::string dir = PODSIM_SOURCE_DIR;
  dir += "/tests/scenarios/input/malformed/";
  return dir;
}

inline std::vector<Expectation> malformed_corpus() {
  std::string expected = malformed_dir();
  expected += "EXPECTED.tsv";
  std::ifstream in(expected);
  std::vector<Expectation> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    Expectation e;
    std::getline(fields, e.file, '\t');
    std::getline(fields, e.path, '\t');
    std::getline(fields, e.fragment, '\t');
    std::string stage;
    std::getline(fields, stage, '\t');
    e.fails_in_simulation = stage == "simulate";
    out.push_back(e);
  }
  return out;
}

}  // namespace podsim::testing_corpus
