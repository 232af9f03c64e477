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

std::string folded_name(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    if (c == ' ' || c == '-' || c == '_') continue;
    out += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  return out;
}

namespace {

size_t common_prefix(std::string_view a, std::string_view b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
  return n;
}

/// The words of a name, lower-cased, split at spaces, dashes and
/// underscores; a size's "gb" reads as "g" ("80GB" -> "80g", as the presets
/// write it).
std::vector<std::string> name_words(std::string_view text) {
  std::vector<std::string> words(1);
  for (const char c : text) {
    if (c == ' ' || c == '-' || c == '_') {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    words.back() += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  }
  if (words.back().empty()) words.pop_back();
  for (std::string& w : words) {
    const bool size =
        w.size() > 2 && w.ends_with("gb") && w.find_first_not_of("0123456789") == w.size() - 2;
    if (size) w.pop_back();
  }
  return words;
}

/// Each word of `word` begins a word of `name`, in order, the first the first.
bool begins_words(const std::vector<std::string>& word, const std::vector<std::string>& name) {
  if (word.empty() || name.empty() || !name.front().starts_with(word.front())) return false;
  size_t at = 1;
  for (size_t i = 1; i < word.size(); ++i) {
    while (at < name.size() && !name[at].starts_with(word[i])) ++at;
    if (at == name.size()) return false;
    ++at;
  }
  return true;
}

}  // namespace

std::string closest_match(std::string_view word, const std::vector<std::string>& candidates) {
  const std::string folded = folded_name(word);
  // Rank: 0 a prefix either way, 1 a long common start, 2 a likely typo;
  // within a rank, the smaller edit distance, then the earlier candidate.
  int best_rank = 3;
  size_t best_distance = static_cast<size_t>(-1);
  std::string answer;
  for (const std::string& candidate : candidates) {
    const std::string other = folded_name(candidate);
    const size_t distance = edit_distance(word, candidate);
    const size_t shared = common_prefix(folded, other);
    int rank = 3;
    if (folded.size() >= 2 && other.size() >= 2 &&
        (shared == folded.size() || shared == other.size())) {
      rank = 0;
    } else if (shared >= 3 && 2 * shared >= folded.size()) {
      rank = 1;
    } else if ((distance <= 2 || distance * 3 <= candidate.size()) &&
               distance < std::max(word.size(), candidate.size())) {
      rank = 2;
    }
    if (rank < best_rank || (rank == best_rank && rank < 3 && distance < best_distance)) {
      best_rank = rank;
      best_distance = distance;
      answer = candidate;
    }
  }
  return answer;
}

NameMatch match_name(std::string_view word, const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    if (name == word) return {name, {}};
  }
  std::vector<std::string> words = name_words(word);
  constexpr std::string_view kVendors[] = {"nvidia", "amd", "google"};
  if (words.size() > 1 &&
      std::find(std::begin(kVendors), std::end(kVendors), words.front()) != std::end(kVendors)) {
    words.erase(words.begin());
  }
  std::string folded;
  for (const std::string& w : words) folded += w;
  if (folded.empty()) return {};
  std::vector<std::string> equal;
  std::vector<std::string> prefixed;
  for (const std::string& name : names) {
    const std::string other = folded_name(name);
    if (other == folded) {
      equal.push_back(name);
    } else if (other.starts_with(folded) || begins_words(words, name_words(name))) {
      prefixed.push_back(name);
    }
  }
  const std::vector<std::string>& found = equal.empty() ? prefixed : equal;
  if (found.size() == 1) return {found.front(), {}};
  return {"", found.size() > 1 ? found : std::vector<std::string>{}};
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
