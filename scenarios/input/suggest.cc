#include "scenarios/input/suggest.h"

#include <algorithm>
#include <cstdio>

namespace podsim::scenarios {

size_t edit_distance(std::string_view a, std::string_view b) {
  constexpr size_t kMaxLength = 256;
  a = a.substr(0, kMaxLength);
  b = b.substr(0, kMaxLength);
  std::vector<size_t> previous(b.size() + 1);
  std::vector<size_t> current(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  size_t best = static_cast<size_t>(-1);
  std::string answer;
  for (const std::string& candidate : candidates) {
    const size_t distance = edit_distance(word, candidate);
    const bool close = distance <= 2 || distance * 3 <= candidate.size();
    if (close && distance < best && distance < std::max(word.size(), candidate.size())) {
      best = distance;
      answer = candidate;
    }
  }
  return answer;
}

std::string escape_for_message(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      out += c;
    } else {
      char buffer[8];
      std::snprintf(buffer, sizeof(buffer), "\\x%02x", byte);
      out += buffer;
    }
  }
  return out;
}

std::string quote_for_message(std::string_view text) {
  constexpr size_t kMaxShown = 60;
  // Appended, not "'" + std::string&&: GCC 12 warns falsely (-Wstringop-overflow).
  std::string out = "'";
  out += escape_for_message(text.substr(0, kMaxShown));
  if (text.size() > kMaxShown) out += "...";
  out += "'";
  return out;
}

std::string join_list(const std::vector<std::string>& items, size_t limit) {
  std::string out;
  for (size_t i = 0; i < items.size() && i < limit; ++i) {
    if (i > 0) out += ", ";
    out += items[i];
  }
  if (items.size() > limit) out += ", ... (" + std::to_string(items.size()) + " in all)";
  return out;
}

}  // namespace podsim::scenarios
