#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace podsim::scenarios {

/// Levenshtein distance (insertions, deletions, substitutions), bytes.
/// Inputs longer than 256 bytes are compared on their first 256 bytes (a
/// suggestion for a huge key is pointless and must not cost quadratic time).
size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `word` if it is close enough to be a likely typo
/// (distance <= 2, or <= a third of the candidate's length), else "".
/// Ties go to the earlier candidate, so the answer is deterministic.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

/// `text` made safe to print: control and non-ASCII bytes become \xNN;
/// nothing is cut.
std::string escape_for_message(std::string_view text);

/// `'text'` made safe to print (escape_for_message), anything past 60 bytes
/// cut ("...").
std::string quote_for_message(std::string_view text);

/// "a, b, c" (or "a, b, ... (N in all)" past `limit` items).
std::string join_list(const std::vector<std::string>& items, size_t limit = 12);

}  // namespace podsim::scenarios
