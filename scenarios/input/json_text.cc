#include "scenarios/input/json_text.h"

#include <algorithm>
#include <cctype>
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
      add_problem(problems_, {child_path(key), "duplicate key", "give each key once"});
    }
    top.key = std::move(key);
    return true;
  }

  bool parse_error(std::size_t position, const std::string& last_token,
                   const nlohmann::detail::exception& error) {
    // nlohmann says "[json.exception.parse_error.101] parse error at line 3,
    // column 7: <reason>"; its id and wording stay inside: the problem says
    // where, what and how to fix it in the contract's form.
    const std::string what = error.what();
    const size_t colon = what.find(": ");
    std::string reason = colon == std::string::npos ? what : what.substr(colon + 2);
    // A token read whole but out of place ("unexpected string literal"), or
    // a number too large, is pointed at where it starts; a token the lexer
    // could not finish, at the byte where it stopped.
    size_t offset = last_byte(position);
    if (reason.find("unexpected end of input") != std::string::npos) {
      offset = text_.size();
    } else if (error.id == kNumberOverflow || reason.find(" - unexpected ") != std::string::npos) {
      offset = token_start(position);
    }
    Problem problem{current_path(), "", "", excerpt(offset)};
    if (error.id == kNumberOverflow) {
      problem.message = "the number " + shortened(last_token) +
                        " is out of range: JSON numbers podsim reads lie within +-1.8e308";
      problem.hint = "see `podsim describe` for the key's range";
    } else {
      // The whole reason; only the token it quotes is shortened (a 20 MB
      // unterminated string is not repeated).
      if (const size_t at = reason.find(last_token);
          !last_token.empty() && at != std::string::npos) {
        reason.replace(at, last_token.size(), shortened(last_token));
      }
      problem.message =
          "invalid JSON at " + line_and_column(offset) + ": " + escape_for_message(reason);
      problem.hint = "the file must be one JSON object";
    }
    add_problem(problems_, std::move(problem));
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
      add_problem(problems_,
                  {current_path(), "nesting deeper than " + std::to_string(max_depth_) + " levels",
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

  /// The byte the lexer stopped at, `position` bytes in.
  size_t last_byte(size_t position) const {
    return std::min(position > 0 ? position - 1 : 0, text_.size());
  }

  /// Where the token that ends at or just before `position` starts: a
  /// string at its opening quote, a number or literal at its first
  /// character (the lexer may have looked one byte past it).
  size_t token_start(size_t position) const {
    auto word = [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '+' || c == '-';
    };
    size_t at = last_byte(position);
    if (at >= text_.size()) return at;
    if (!word(text_[at]) && text_[at] != '"' && at > 0 && word(text_[at - 1])) --at;
    if (text_[at] == '"') {
      // Back to the opening quote, past escaped quotes.
      for (size_t i = at; i > 0; --i) {
        if (text_[i - 1] != '"') continue;
        size_t backslashes = 0;
        while (i - 1 > backslashes && text_[i - 2 - backslashes] == '\\') ++backslashes;
        if (backslashes % 2 == 0) return i - 1;
      }
      return at;
    }
    while (at > 0 && word(text_[at]) && word(text_[at - 1])) --at;
    return at;
  }

  /// "line 3, column 7" of the byte at `offset`.
  std::string line_and_column(size_t offset) const {
    size_t line = 1;
    size_t column = 1;
    for (size_t i = 0; i < offset && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
  }

  /// The line around `offset`, at most kExcerptSide bytes each side, made
  /// printable, and a caret under the byte at `offset`.
  std::string excerpt(size_t offset) const {
    size_t begin = offset;
    while (begin > 0 && text_[begin - 1] != '\n' && offset - begin < kExcerptSide) --begin;
    size_t end = offset;
    while (end < text_.size() && text_[end] != '\n' && end - offset < kExcerptSide) ++end;
    std::string line = begin > 0 && text_[begin - 1] != '\n' ? "..." : "";
    const std::string before = escape_for_message(text_.substr(begin, offset - begin));
    line += before;
    const size_t caret = line.size();
    line += escape_for_message(text_.substr(offset, end - offset));
    if (end < text_.size() && text_[end] != '\n') line += "...";
    if (offset >= text_.size()) line += " (end of file)";
    return "  " + line + "\n  " + std::string(caret, ' ') + "^";
  }

  /// Text from the input (nlohmann quotes the token it read) printable, its
  /// middle left out when long: a 20 MB unterminated string is not repeated.
  static std::string shortened(std::string_view text) {
    constexpr size_t kSide = 40;
    if (text.size() <= 3 * kSide) return escape_for_message(text);
    return escape_for_message(text.substr(0, kSide)) + "...(" +
           std::to_string(text.size() - 2 * kSide) + " bytes)..." +
           escape_for_message(text.substr(text.size() - kSide));
  }

  static constexpr int kNumberOverflow = 406;  // nlohmann's out_of_range.406
  static constexpr size_t kExcerptSide = 40;

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
