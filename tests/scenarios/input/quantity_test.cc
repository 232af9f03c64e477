#include "scenarios/input/quantity.h"

#include <gtest/gtest.h>

#include <cmath>

namespace podsim::scenarios {
namespace {

double parse_ok(std::string_view text, Dimension expected) {
  const Result<Quantity> q = parse_quantity(text);
  EXPECT_TRUE(q.ok()) << text;
  if (!q.ok()) return std::nan("");
  EXPECT_EQ(q.value().dimension, expected) << text;
  return q.value().value;
}

TEST(Quantity, ContractExamples) {
  EXPECT_DOUBLE_EQ(parse_ok("80 GiB", Dimension::kBytes), 80.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_ok("3.35 TB/s", Dimension::kBytesPerSecond), 3.35e12);
  EXPECT_DOUBLE_EQ(parse_ok("989 TFLOP/s", Dimension::kFlopsPerSecond), 989e12);
  EXPECT_DOUBLE_EQ(parse_ok("2.5 us", Dimension::kSeconds), 2.5e-6);
  // 400 gigabits per second is 50 gigabytes per second.
  EXPECT_DOUBLE_EQ(parse_ok("400 Gb/s", Dimension::kBytesPerSecond), 50e9);
}

TEST(Quantity, BitsBytesAndBinaryPrefixes) {
  EXPECT_DOUBLE_EQ(parse_ok("1 KB", Dimension::kBytes), 1000);
  EXPECT_DOUBLE_EQ(parse_ok("1 kB", Dimension::kBytes), 1000);
  EXPECT_DOUBLE_EQ(parse_ok("1 KiB", Dimension::kBytes), 1024);
  EXPECT_DOUBLE_EQ(parse_ok("40 MiB", Dimension::kBytes), 40.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_ok("2 TiB", Dimension::kBytes), 2.0 * 1024 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_ok("1 PiB", Dimension::kBytes), std::pow(1024.0, 5));
  EXPECT_DOUBLE_EQ(parse_ok("8 b", Dimension::kBytes), 1);
  EXPECT_DOUBLE_EQ(parse_ok("1 Mb", Dimension::kBytes), 125000);
  EXPECT_DOUBLE_EQ(parse_ok("1 Tb", Dimension::kBytes), 1.25e11);
  EXPECT_DOUBLE_EQ(parse_ok("2 GB", Dimension::kBytes), 2e9);
  EXPECT_DOUBLE_EQ(parse_ok("200 Gbps", Dimension::kBytesPerSecond), 25e9);
  EXPECT_DOUBLE_EQ(parse_ok("100 Mbps", Dimension::kBytesPerSecond), 12.5e6);
  EXPECT_DOUBLE_EQ(parse_ok("450 GB/s", Dimension::kBytesPerSecond), 450e9);
  EXPECT_DOUBLE_EQ(parse_ok("1 GiB/s", Dimension::kBytesPerSecond), 1024.0 * 1024 * 1024);
}

TEST(Quantity, TimesRatesFrequencies) {
  EXPECT_DOUBLE_EQ(parse_ok("7 ps", Dimension::kSeconds), 7e-12);
  EXPECT_DOUBLE_EQ(parse_ok("5 ns", Dimension::kSeconds), 5e-9);
  EXPECT_DOUBLE_EQ(parse_ok("2 \u00b5s", Dimension::kSeconds), 2e-6);
  EXPECT_DOUBLE_EQ(parse_ok("3 ms", Dimension::kSeconds), 3e-3);
  EXPECT_DOUBLE_EQ(parse_ok("1.5 s", Dimension::kSeconds), 1.5);
  EXPECT_DOUBLE_EQ(parse_ok("10 min", Dimension::kSeconds), 600);
  EXPECT_DOUBLE_EQ(parse_ok("2.5 h", Dimension::kSeconds), 9000);
  EXPECT_DOUBLE_EQ(parse_ok("1 PFLOP/s", Dimension::kFlopsPerSecond), 1e15);
  EXPECT_DOUBLE_EQ(parse_ok("312 TFLOPS", Dimension::kFlopsPerSecond), 312e12);
  EXPECT_DOUBLE_EQ(parse_ok("19.5 TFLOP/s", Dimension::kFlopsPerSecond), 19.5e12);
  EXPECT_DOUBLE_EQ(parse_ok("1.83 GHz", Dimension::kHertz), 1.83e9);
  EXPECT_DOUBLE_EQ(parse_ok("1410 MHz", Dimension::kHertz), 1.41e9);
}

TEST(Quantity, SpacingAndNumberForms) {
  EXPECT_DOUBLE_EQ(parse_ok("80GiB", Dimension::kBytes), 80.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_ok("  1e3 KB ", Dimension::kBytes), 1e6);
  EXPECT_DOUBLE_EQ(parse_ok("-5 GB", Dimension::kBytes), -5e9);  // range is the caller's check
}

TEST(Quantity, EveryDeclaredSpellingParses) {
  for (const UnitSpelling& unit : unit_spellings()) {
    const Result<Quantity> q = parse_quantity("1 " + unit.name);
    ASSERT_TRUE(q.ok()) << unit.name;
    EXPECT_EQ(q.value().dimension, unit.dimension) << unit.name;
    EXPECT_DOUBLE_EQ(q.value().value, unit.to_base) << unit.name;
  }
}

TEST(Quantity, Errors) {
  const auto message = [](std::string_view text) {
    const Result<Quantity> q = parse_quantity(text);
    EXPECT_FALSE(q.ok()) << text;
    return q.ok() ? std::string()
                  : q.problems().front().message + " | " + q.problems().front().hint;
  };
  EXPECT_NE(message("").find("empty"), std::string::npos);
  EXPECT_NE(message("GB").find("does not start with a number"), std::string::npos);
  EXPECT_NE(message("80").find("has no unit"), std::string::npos);
  EXPECT_NE(message("80 GiBs").find("did you mean 'GiB'"), std::string::npos);
  EXPECT_NE(message("450 GiB/sec").find("unknown unit"), std::string::npos);
  EXPECT_NE(message("inf GB").find("not a finite number"), std::string::npos);
  EXPECT_NE(message("1e999 GB").find("out of range"), std::string::npos);
  // Control bytes in the input are escaped in the message, never echoed raw.
  const std::string junk = message(std::string("8 \x01\xff", 4));
  EXPECT_NE(junk.find("\\x01\\xff"), std::string::npos) << junk;
}

TEST(Quantity, HumanFormats) {
  EXPECT_EQ(format_seconds(12.3456), "12.35 s");
  EXPECT_EQ(format_seconds(0.0425), "42.50 ms");
  EXPECT_EQ(format_seconds(12.5e-6), "12.50 us");
  EXPECT_EQ(format_bytes(61.2 * 1024 * 1024 * 1024), "61.2 GiB");
  EXPECT_EQ(format_bytes(512.0 * 1024 * 1024), "512.0 MiB");
  EXPECT_EQ(format_flops_rate(412e12), "412 TFLOP/s");
  EXPECT_EQ(format_flops_rate(2.25e15), "2.25 PFLOP/s");
  EXPECT_EQ(format_bandwidth(450e9), "450 GB/s");
  EXPECT_EQ(format_bandwidth(3.35e12), "3.35 TB/s");
  EXPECT_EQ(format_percent(0.4126), "41.3%");
  EXPECT_EQ(format_number(128), "128");
  EXPECT_EQ(format_number(1e18), "1e+18");
}

}  // namespace
}  // namespace podsim::scenarios
