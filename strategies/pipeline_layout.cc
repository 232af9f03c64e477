#include "strategies/pipeline_layout.h"

#include <cctype>

namespace podsim::strategies {
namespace {

// Expanded layouts longer than this are refused (a repeat count of 1e9 is a
// typo, not a model).
constexpr size_t kMaxSymbols = 1'000'000;

/// Recursive-descent expansion of the repetition syntax into plain symbols.
class Expander {
 public:
  explicit Expander(std::string_view text) : text_(text) {}

  bool run(std::string& out) {
    if (!sequence(out, 0)) return false;
    if (pos_ != text_.size()) return fail("unexpected ')' at position " + std::to_string(pos_));
    return true;
  }
  const std::string& error() const { return error_; }

 private:
  bool fail(std::string message) {
    if (error_.empty()) error_ = std::move(message);
    return false;
  }
  void skip_spaces() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  /// An optional "*n" after an item; 1 when absent.
  bool repeat(int64_t& count) {
    count = 1;
    skip_spaces();
    if (pos_ >= text_.size() || text_[pos_] != '*') return true;
    ++pos_;
    skip_spaces();
    const size_t start = pos_;
    int64_t n = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      n = n * 10 + (text_[pos_] - '0');
      if (n > static_cast<int64_t>(kMaxSymbols)) return fail("repeat count too large");
      ++pos_;
    }
    if (pos_ == start) return fail("'*' must be followed by a count");
    count = n;
    return true;
  }
  bool append(std::string& out, const std::string& item, int64_t count) {
    if (item.size() * static_cast<size_t>(count) + out.size() > kMaxSymbols) {
      return fail("the layout expands to more than " + std::to_string(kMaxSymbols) + " symbols");
    }
    for (int64_t i = 0; i < count; ++i) out += item;
    return true;
  }
  bool sequence(std::string& out, int depth) {
    if (depth > 32) return fail("parentheses nested too deeply");
    while (true) {
      skip_spaces();
      if (pos_ >= text_.size() || text_[pos_] == ')') return true;
      std::string item;
      const char c = text_[pos_];
      if (c == '(') {
        ++pos_;
        if (!sequence(item, depth + 1)) return false;
        if (pos_ >= text_.size() || text_[pos_] != ')') return fail("missing ')'");
        ++pos_;
      } else if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
        item = c;
        ++pos_;
      } else {
        return fail(std::string("unknown symbol '") + c + "' (use E, t, m, L, |, ( ) and *n)");
      }
      int64_t count = 1;
      if (!repeat(count) || !append(out, item, count)) return false;
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

ParsedLayout parse_pipeline_layout(std::string_view text) {
  ParsedLayout result;
  std::string symbols;
  Expander expander(text);
  if (!expander.run(symbols)) {
    result.error = expander.error();
    return result;
  }
  result.chunks.emplace_back();
  for (const char c : symbols) {
    ChunkLayout& chunk = result.chunks.back();
    switch (c) {
      case '|':
        result.chunks.emplace_back();
        break;
      case 'E':
        chunk.embedding = true;
        break;
      case 't':
        if (chunk.mtp > 0 || chunk.loss) {
          result.error = "a transformer layer 't' after 'm' or 'L' in the same stage";
          return result;
        }
        ++chunk.layers;
        break;
      case 'm':
        ++chunk.mtp;
        break;
      case 'L':
        chunk.loss = true;
        break;
      default:
        break;
    }
  }
  return result;
}

std::vector<ChunkLayout> layout_from_counts(const std::vector<int64_t>& counts, int64_t mtp) {
  std::vector<ChunkLayout> out;
  for (const int64_t n : counts) out.push_back({n, false, 0, false});
  if (!out.empty()) {
    out.front().embedding = true;
    out.back().loss = true;
    out.back().mtp = mtp;
  }
  return out;
}

std::vector<ChunkLayout> asym_embed_loss_layout(int64_t layers, int64_t chunks, int64_t mtp) {
  if (chunks <= 0 || layers < 0 || (layers + 2) % chunks != 0) return {};
  const int64_t slots = (layers + 2) / chunks;
  std::vector<ChunkLayout> out(static_cast<size_t>(chunks), ChunkLayout{slots, false, 0, false});
  out.front().embedding = true;
  --out.front().layers;
  out.back().loss = true;
  out.back().mtp = mtp;
  --out.back().layers;
  return out;
}

}  // namespace podsim::strategies
