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

/// The candidate `word` most likely means, else "". Prefixes rank first,
/// compared with case, spaces, dashes and underscores ignored: a candidate
/// that starts with `word` or that `word` starts with ("h100" ->
/// "h100-sxm-80g", "seq_length" -> "seq_len"), then the candidate sharing
/// the longest leading part with `word` (at least 3 characters and half of
/// `word`: "h1000" -> "h100-sxm-80g", not "b200"), then edit distance if
/// close enough to be a likely typo (distance <= 2, or <= a third of the
/// candidate's length). Ties go to the closer, then the earlier candidate,
/// so the answer is deterministic.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

/// `text` lower-cased without spaces, dashes and underscores ("H100 SXM" ->
/// "h100sxm"): the form names are compared in.
std::string folded_name(std::string_view text);

/// Which of `names` (preset names) a name a user typed stands for.
struct NameMatch {
  std::string name;                    ///< the one name meant, or "" (none or several)
  std::vector<std::string> ambiguous;  ///< the names it could mean, when several
};

/// `word` as one of `names`: the name itself; else the one name equal to
/// it, or the only name it is a prefix of, ignoring case, spaces, dashes,
/// underscores and a leading vendor word ("NVIDIA", "AMD", "Google"), or the
/// only name whose words it begins, word by word in order ("h100 80GB" ->
/// "h100-sxm-80g"; a size's "GB" reads as the name's "g"). Common names of
/// the presets resolve so ("h100", "H100 SXM", "B200", "TPU v5p"); a prefix
/// of several names comes back in `ambiguous`.
NameMatch match_name(std::string_view word, const std::vector<std::string>& names);

/// `text` made safe to print: control and non-ASCII bytes become \xNN;
/// nothing is cut.
std::string escape_for_message(std::string_view text);

/// `'text'` made safe to print (escape_for_message), anything past 60 bytes
/// cut ("...").
std::string quote_for_message(std::string_view text);

/// "a, b, c" (or "a, b, ... (N in all)" past `limit` items).
std::string join_list(const std::vector<std::string>& items, size_t limit = 12);

}  // namespace podsim::scenarios
