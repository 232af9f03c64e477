#include "scenarios/input/json_text.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>
#include <vector>

#include "scenarios/input/suggest.h"

namespace podsim::scenarios {

using nlohmann::json;

std::string pointer_segment(std::string_view key) {
  std::string out;
  out.reserve(key.size());
  for (const char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

/// Prints at most this many path segments in a message ("/a/b/.../z" would
/// be unreadable for a 100k-deep file).
constexpr size_t kMaxPathSegments = 12;

/// A SAX consumer that builds the DOM iteratively (nlohmann's own parser is
/// iterative too, so nothing here recurses), refuses nesting past a limit and
/// reports duplicate keys, which nlohmann's DOM parser silently overwrites.
class BoundedDomBuilder {
 public:
  BoundedDomBuilder(std::string_view text, int max_depth) : text_(text), max_depth_(max_depth) {}

  bool null() { return put(json(nullptr)); }
  bool boolean(bool value) { return put(json(value)); }
  bool number_integer(json::number_integer_t value) { return put(json(value)); }
  bool number_unsigned(json::number_unsigned_t value) { return put(json(value)); }
  bool number_float(json::number_float_t value, const json::string_t& /*text*/) {
    return put(json(value));
  }
  bool string(json::string_t& value) { return put(json(std::move(value))); }
  bool binary(json::binary_t& value) { return put(json::binary(std::move(value))); }
  bool start_object(std::size_t /*elements*/) { return open(json::object()); }
  bool start_array(std::size_t /*elements*/) { return open(json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(json::string_t& key) {
    Frame& top = frames_.back();
    if (top.container->contains(key)) {
      problems_.push_back({child_path(key), "duplicate key", "give each key once"});
    }
    top.key = std::move(key);
    return true;
  }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& error) {
    problems_.push_back({current_path(), describe_syntax_error(position, error.what()),
                         "the file must be one JSON object"});
    return false;
  }

  json take_root() { return std::move(root_); }
  std::vector<Problem> take_problems() { return std::move(problems_); }

 private:
  struct Frame {
    json* container;
    std::string key;  // the key of the value being read, for objects
  };

  json* insert(json value) {
    if (frames_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Frame& top = frames_.back();
    if (top.container->is_object()) {
      json& slot = (*top.container)[top.key];
      slot = std::move(value);
      return &slot;
    }
    top.container->push_back(std::move(value));
    return &top.container->back();
  }

  bool put(json value) {
    insert(std::move(value));
    return true;
  }

  bool open(json container) {
    if (static_cast<int>(frames_.size()) >= max_depth_) {
      problems_.push_back({current_path(),
                           "nesting deeper than " + std::to_string(max_depth_) + " levels",
                           "a scenario needs only a few levels of objects"});
      return false;
    }
    json* inserted = insert(std::move(container));
    frames_.push_back({inserted, {}});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  /// The pointer of the value being read now (the next key or element).
  std::string current_path() const {
    std::string path;
    for (size_t i = 0; i < frames_.size(); ++i) {
      if (i == kMaxPathSegments) {
        path += "/...";
        return path;
      }
      const Frame& frame = frames_[i];
      const bool innermost = i + 1 == frames_.size();
      if (frame.container->is_object()) {
        if (innermost && frame.key.empty() && frame.container->empty()) break;
        path += '/';
        path += pointer_segment(frame.key);
      } else {
        const size_t size = frame.container->size();
        path += '/';
        path += std::to_string(innermost ? size : size - 1);
      }
    }
    return path;
  }

  std::string child_path(std::string_view key) const {
    std::string path;
    for (size_t i = 0; i + 1 < frames_.size(); ++i) {
      if (i == kMaxPathSegments) {
        path += "/...";
        return path;
      }
      const Frame& frame = frames_[i];
      path += '/';
      path += frame.container->is_object() ? pointer_segment(frame.key)
                                           : std::to_string(frame.container->size() - 1);
    }
    path += '/';
    path += pointer_segment(key);
    return path;
  }

  std::string describe_syntax_error(size_t position, std::string_view what) const {
    // nlohmann says "[json.exception.parse_error.101] parse error at line 3,
    // column 7: <reason>"; keep the reason, escape what it quotes from the input.
    const size_t colon = what.find(": ");
    std::string_view reason = colon == std::string_view::npos ? what : what.substr(colon + 2);
    size_t line = 1;
    size_t column = 1;
    for (size_t i = 0; i + 1 < position && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    std::string printable = quote_for_message(reason.substr(0, 160));
    printable = printable.substr(1, printable.size() - 2);  // drop the quotes
    return "invalid JSON at line " + std::to_string(line) + ", column " + std::to_string(column) +
           ": " + printable;
  }

  std::string_view text_;
  int max_depth_;
  json root_;
  std::vector<Frame> frames_;
  std::vector<Problem> problems_;
};

bool only_whitespace(std::string_view text) {
  for (const char c : text) {
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return false;
  }
  return true;
}

}  // namespace

Result<json> parse_json_text(std::string_view text, const JsonLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return std::vector<Problem>{
        {"", "the input is larger than " + std::to_string(limits.max_bytes >> 20) + " MiB",
         "a scenario is a few kilobytes"}};
  }
  if (only_whitespace(text)) {
    return std::vector<Problem>{
        {"", "the file is empty", "expected a JSON object, like {\"model\": ...}"}};
  }
  BoundedDomBuilder builder(text, limits.max_depth);
  // Never throws for malformed input: errors come back through the SAX
  // interface. bad_alloc still can, and is caught at the CLI's top level.
  const bool complete = json::sax_parse(text, &builder, json::input_format_t::json, true, false);
  std::vector<Problem> problems = builder.take_problems();
  if (!complete || !problems.empty()) {
    if (problems.empty()) problems.push_back({"", "invalid JSON", ""});
    return problems;
  }
  return builder.take_root();
}

Result<std::string> read_text_file(const std::string& path, const JsonLimits& limits) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error)) {
    return std::vector<Problem>{{"", "is a directory, not a JSON file", ""}};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::vector<Problem>{
        {"", std::string("cannot open: ") + std::strerror(errno), "check the file name"}};
  }
  std::string text;
  std::vector<char> chunk(1 << 16);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    text.append(chunk.data(), static_cast<size_t>(in.gcount()));
    if (text.size() > limits.max_bytes) {
      return std::vector<Problem>{
          {"", "the file is larger than " + std::to_string(limits.max_bytes >> 20) + " MiB",
           "a scenario is a few kilobytes"}};
    }
  }
  if (in.bad()) return std::vector<Problem>{{"", "read error", ""}};
  return text;
}

}  // namespace podsim::scenarios
