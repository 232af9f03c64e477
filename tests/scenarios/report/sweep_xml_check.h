#pragma once

// A minimal XML well-formedness checker for the SVG the timeline writes:
// one root element, matching tags, quoted attributes without '<', and only
// the five predefined entities or numeric character references. Calls
// `visit(name, attributes)` for every element start.
#include <cctype>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace podsim::scenarios::sweep_testing {

using XmlAttributes = std::map<std::string, std::string>;
using XmlVisitor = std::function<void(const std::string&, const XmlAttributes&)>;

/// Empty when `xml` is well-formed, else what is wrong and where.
inline std::string xml_problem(std::string_view xml, const XmlVisitor& visit = {}) {
  size_t i = 0;
  auto fail = [&](const std::string& what) { return what + " at byte " + std::to_string(i); };
  auto name_char = [](char c, bool first) {
    return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
           (!first && (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '.'));
  };
  auto read_name = [&]() {
    std::string name;
    while (i < xml.size() && name_char(xml[i], name.empty())) name += xml[i++];
    return name;
  };
  auto entity_ok = [&](size_t at) {  // xml[at] == '&'
    const size_t end = xml.find(';', at);
    if (end == std::string_view::npos || end - at > 10) return false;
    const std::string_view e = xml.substr(at + 1, end - at - 1);
    if (e == "amp" || e == "lt" || e == "gt" || e == "quot" || e == "apos") return true;
    if (e.size() >= 2 && e[0] == '#') {
      const bool hex = e[1] == 'x';
      for (size_t k = hex ? 2 : 1; k < e.size(); ++k) {
        if (!(hex ? std::isxdigit(static_cast<unsigned char>(e[k]))
                  : std::isdigit(static_cast<unsigned char>(e[k])))) {
          return false;
        }
      }
      return e.size() > (hex ? 2u : 1u);
    }
    return false;
  };
  auto skip_space = [&]() {
    while (i < xml.size() && std::isspace(static_cast<unsigned char>(xml[i]))) ++i;
  };
  if (xml.substr(0, 5) == "<?xml") {
    const size_t end = xml.find("?>");
    if (end == std::string_view::npos) return fail("unterminated XML declaration");
    i = end + 2;
  }
  std::vector<std::string> open;
  int roots = 0;
  while (i < xml.size()) {
    if (xml[i] != '<') {
      if (xml[i] == '&' && !entity_ok(i)) return fail("bad entity in text");
      if (open.empty() && !std::isspace(static_cast<unsigned char>(xml[i]))) {
        return fail("text outside the root element");
      }
      ++i;
      continue;
    }
    if (xml.substr(i, 4) == "<!--") {
      const size_t end = xml.find("-->", i);
      if (end == std::string_view::npos) return fail("unterminated comment");
      i = end + 3;
      continue;
    }
    if (xml.substr(i, 2) == "</") {
      i += 2;
      const std::string name = read_name();
      skip_space();
      if (i >= xml.size() || xml[i] != '>') return fail("bad end tag");
      ++i;
      if (open.empty() || open.back() != name) return fail("mismatched </" + name + ">");
      open.pop_back();
      continue;
    }
    ++i;
    const std::string name = read_name();
    if (name.empty()) return fail("bad tag name");
    if (open.empty() && ++roots > 1) return fail("second root element");
    XmlAttributes attributes;
    for (;;) {
      const size_t before = i;
      skip_space();
      if (i >= xml.size()) return fail("unterminated tag");
      if (xml[i] == '>' || xml.substr(i, 2) == "/>") break;
      if (i == before) return fail("missing space before an attribute");
      const std::string key = read_name();
      if (key.empty()) return fail("bad attribute name");
      if (attributes.count(key) != 0) return fail("duplicate attribute " + key);
      if (i >= xml.size() || xml[i] != '=') return fail("attribute without '='");
      ++i;
      if (i >= xml.size() || (xml[i] != '"' && xml[i] != '\'')) return fail("unquoted attribute");
      const char quote = xml[i++];
      std::string value;
      while (i < xml.size() && xml[i] != quote) {
        if (xml[i] == '<') return fail("'<' in an attribute");
        if (xml[i] == '&' && !entity_ok(i)) return fail("bad entity in an attribute");
        value += xml[i++];
      }
      if (i >= xml.size()) return fail("unterminated attribute");
      ++i;
      attributes[key] = value;
    }
    if (visit) visit(name, attributes);
    if (xml[i] == '>') {
      open.push_back(name);
      ++i;
    } else {
      i += 2;
    }
  }
  if (!open.empty()) return fail("unclosed <" + open.back() + ">");
  if (roots != 1) return fail("no root element");
  return {};
}

}  // namespace podsim::scenarios::sweep_testing
