#include "scenarios/input/json_text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace podsim::scenarios {
namespace {

std::string nested_arrays(int depth) {
  return std::string(static_cast<size_t>(depth), '[') +
         std::string(static_cast<size_t>(depth), ']');
}

TEST(JsonText, ParsesAnObject) {
  const Result<nlohmann::json> parsed =
      parse_json_text(R"({"a": [1, 2.5, "x"], "b": {"c": true}})");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed.value()["a"][1], 2.5);
  EXPECT_EQ(parsed.value()["b"]["c"], true);
}

TEST(JsonText, DepthLimitIsExact) {
  JsonLimits limits;
  limits.max_depth = 64;
  EXPECT_TRUE(parse_json_text(nested_arrays(64), limits).ok());
  const Result<nlohmann::json> deeper = parse_json_text(nested_arrays(65), limits);
  ASSERT_FALSE(deeper.ok());
  EXPECT_NE(deeper.problems().front().message.find("nesting deeper than 64"), std::string::npos);
}

TEST(JsonText, HundredThousandLevelsFailCleanlyWithATruncatedPath) {
  const std::string text = "{\"model\": " + nested_arrays(100000) + "}";
  const Result<nlohmann::json> parsed = parse_json_text(text);
  ASSERT_FALSE(parsed.ok());
  ASSERT_EQ(parsed.problems().size(), 1u);
  const Problem& p = parsed.problems().front();
  EXPECT_EQ(p.path.rfind("/model/0/0/", 0), 0u) << p.path;
  EXPECT_EQ(p.path.substr(p.path.size() - 4), "/...") << p.path;
  EXPECT_LT(p.path.size(), 64u);
}

TEST(JsonText, SyntaxErrorsNameLineColumnAndPath) {
  const Result<nlohmann::json> parsed = parse_json_text("{\n  \"training\": {\"seq_len\": x}\n}");
  ASSERT_FALSE(parsed.ok());
  const Problem& p = parsed.problems().front();
  EXPECT_EQ(p.path, "/training/seq_len");
  EXPECT_NE(p.message.find("invalid JSON at line 2"), std::string::npos) << p.message;
}

TEST(JsonText, EmptyAndWhitespace) {
  for (const char* text : {"", " \n\t "}) {
    const Result<nlohmann::json> parsed = parse_json_text(text);
    ASSERT_FALSE(parsed.ok());
    EXPECT_NE(parsed.problems().front().message.find("empty"), std::string::npos);
  }
}

TEST(JsonText, DuplicateKeysAreProblems) {
  const Result<nlohmann::json> parsed = parse_json_text(R"({"a": {"b": 1, "b": 2}})");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.problems().front().path, "/a/b");
  EXPECT_EQ(parsed.problems().front().message, "duplicate key");
}

TEST(JsonText, InvalidUtf8AndBinaryJunk) {
  const Result<nlohmann::json> utf8 = parse_json_text("{\"name\": \"caf\xe9\"}");
  ASSERT_FALSE(utf8.ok());
  EXPECT_EQ(utf8.problems().front().path, "/name");
  std::string junk;
  for (int i = 0; i < 300; ++i) junk += static_cast<char>((i * 131 + 7) % 256);
  const Result<nlohmann::json> binary = parse_json_text(junk);
  ASSERT_FALSE(binary.ok());
  // Whatever the junk was, the message is printable ASCII.
  for (const char c : binary.problems().front().message) {
    EXPECT_TRUE(c >= 0x20 && c < 0x7f) << static_cast<int>(static_cast<unsigned char>(c));
  }
}

TEST(JsonText, NumberBeyondADoubleIsOutOfRangeNotInvalid) {
  for (const char* number : {"1e400", "-1e999"}) {
    const Result<nlohmann::json> parsed =
        parse_json_text(std::string(R"({"model": {"layers": )") + number + "}}");
    ASSERT_FALSE(parsed.ok());
    const Problem& p = parsed.problems().front();
    EXPECT_EQ(p.path, "/model/layers");
    EXPECT_NE(p.message.find(std::string("the number ") + number + " is out of range"),
              std::string::npos)
        << p.message;
    EXPECT_EQ(p.message.find("invalid JSON"), std::string::npos) << p.message;
    EXPECT_EQ(p.message.find("json.exception"), std::string::npos) << p.message;
  }
}

TEST(JsonText, SyntaxErrorsKeepTheWholeReasonAndShowACaret) {
  // The reason used to be cut at 60 bytes ("...; expe...") and carried
  // nlohmann's "[json.exception.parse_error.101]".
  const std::string text =
      "{\n  \"model\": \"llama3-8b\",\n  \"training\": {\"seq_len\": 4096,}\n}";
  const Result<nlohmann::json> parsed = parse_json_text(text);
  ASSERT_FALSE(parsed.ok());
  const Problem& p = parsed.problems().front();
  EXPECT_EQ(p.message.find("json.exception"), std::string::npos) << p.message;
  EXPECT_EQ(p.message.find("..."), std::string::npos) << p.message;
  // The '}' is the 32nd byte of line 3.
  EXPECT_NE(p.message.find("invalid JSON at line 3, column 32: syntax error while parsing object "
                           "key - unexpected '}'; expected string literal"),
            std::string::npos)
      << p.message;
  const std::string line = "    \"training\": {\"seq_len\": 4096,}";  // indented by 2
  EXPECT_EQ(p.excerpt, line + "\n" + std::string(line.find('}'), ' ') + "^");
}

TEST(JsonText, TheCaretStaysUnderTheByteInLongAndUnprintableLines) {
  const std::string text = "{\"name\": \"" + std::string(200, 'x') + "\x01\"}";
  const Result<nlohmann::json> parsed = parse_json_text(text);
  ASSERT_FALSE(parsed.ok());
  const std::string& excerpt = parsed.problems().front().excerpt;
  const size_t newline = excerpt.find('\n');
  ASSERT_NE(newline, std::string::npos) << excerpt;
  const std::string line = excerpt.substr(0, newline);
  const std::string caret = excerpt.substr(newline + 1);
  EXPECT_LT(line.size(), 100u) << line;  // a window, not the whole line
  EXPECT_EQ(line.substr(0, 5), "  ...") << line;
  EXPECT_EQ(line.substr(caret.size() - 1, 4), "\\x01") << line << "\n" << caret;
  EXPECT_EQ(caret.back(), '^');
}

TEST(JsonText, AnUnterminatedHugeStringIsNotRepeatedInTheMessage) {
  const std::string text = "{\"name\": \"" + std::string(1 << 20, 'y');
  const Result<nlohmann::json> parsed = parse_json_text(text);
  ASSERT_FALSE(parsed.ok());
  EXPECT_LT(parsed.problems().front().message.size(), 400u);
  EXPECT_LT(parsed.problems().front().excerpt.size(), 200u);
}

TEST(JsonText, RepeatedDuplicateKeysAreOneProblemAndManyAreCapped) {
  std::string same = "{";
  for (int i = 0; i < 50000; ++i) same += std::string(i ? "," : "") + "\"name\": 1";
  const Result<nlohmann::json> one = parse_json_text(same + "}");
  ASSERT_FALSE(one.ok());
  EXPECT_EQ(one.problems().size(), 1u);
  std::string distinct = "{";
  for (int i = 0; i < 25000; ++i) {
    const std::string key = "\"k" + std::to_string(i) + "\"";
    distinct += std::string(i ? "," : "") + key + ": 1, " + key + ": 2";
  }
  const Result<nlohmann::json> many = parse_json_text(distinct + "}");
  ASSERT_FALSE(many.ok());
  EXPECT_EQ(many.problems().size(), kMaxProblems + 1);
  EXPECT_NE(many.problems().back().message.find("more problems"), std::string::npos);
}

TEST(JsonText, SizeLimit) {
  JsonLimits limits;
  limits.max_bytes = 16;
  EXPECT_FALSE(parse_json_text(R"({"name": "longer than sixteen bytes"})", limits).ok());
  EXPECT_TRUE(parse_json_text(R"({"a": 1})", limits).ok());
}

TEST(JsonText, PointerSegmentsAreEscaped) {
  EXPECT_EQ(pointer_segment("a/b~c"), "a~1b~0c");
  const Result<nlohmann::json> parsed = parse_json_text(R"({"a/b": {"c": 1, "c": 2}})");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.problems().front().path, "/a~1b/c");
}

TEST(JsonText, MissingFileAndDirectory) {
  EXPECT_FALSE(read_text_file("/nonexistent/podsim/file.json").ok());
  const Result<std::string> directory = read_text_file(PODSIM_SOURCE_DIR);
  ASSERT_FALSE(directory.ok());
  EXPECT_NE(directory.problems().front().message.find("directory"), std::string::npos);
}

}  // namespace
}  // namespace podsim::scenarios
