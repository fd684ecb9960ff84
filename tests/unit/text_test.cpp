// SPDX-License-Identifier: GPL-2.0-or-later
// One escaper per sink (core/text.hpp), each fed the same hostile inputs:
// control characters, ESC, NUL, invalid UTF-8, bidirectional controls and
// 1 MiB of text.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "core/text.hpp"

namespace lanes {
namespace {

using namespace std::string_literals;

// True when no byte of `s` is a C0 control (newlines only if allowed), DEL, or
// part of invalid UTF-8 or a C1 control.
bool inert(const std::string& s, bool newlines_allowed = false) {
    for (size_t i = 0; i < s.size(); ++i) {
        auto c = static_cast<unsigned char>(s[i]);
        if (c == '\n' && newlines_allowed) continue;
        if (c < 0x20 || c == 0x7f) return false;
        if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) <= 0x9f) return false;
    }
    return true;
}

bool valid_utf8(const std::string& s) {
    try {
        (void)nlohmann::json(s).dump();  // strict: throws on invalid UTF-8
        return true;
    } catch (const nlohmann::json::exception&) {
        return false;
    }
}

struct TextCase {
    const char* what;
    std::string input;
    std::string line;   // log_field / terminal_text / log_line
    std::string user;   // user_message
    std::string json;   // json_string
    std::string label;  // prometheus_label_value
};

const std::string kFffd = "\xEF\xBF\xBD";

const TextCase kTextCases[] = {
    {"plain", "train-llm", "train-llm", "train-llm", "\"train-llm\"", "train-llm"},
    {"empty", "", "", "", "\"\"", ""},
    {"ESC sequence", "\x1b[2Jx", "\\x1B[2Jx", "\\x1B[2Jx", "\"\\u001b[2Jx\"", kFffd + "[2Jx"},
    {"NUL", "a\0b"s, "a\\x00b", "a\\x00b", "\"a\\u0000b\"", "a" + kFffd + "b"},
    {"newline", "a\nb", "a\\x0Ab", "a\nb", "\"a\\nb\"", "a\\nb"},
    {"carriage return", "a\rb", "a\\x0Db", "a\\x0Db", "\"a\\rb\"", "a" + kFffd + "b"},
    {"tab", "a\tb", "a b", "a b", "\"a\\tb\"", "a" + kFffd + "b"},
    {"DEL", "a\x7f", "a\\x7F", "a\\x7F", "\"a\\u007f\"", "a" + kFffd},
    {"C1 CSI",
     "a\xc2\x9b"
     "2J",
     "a\\x9B2J", "a\\x9B2J", "\"a\\u009b2J\"", "a" + kFffd + "2J"},
    {"lone continuation byte", "a\x80z", "a\\x80z", "a\\x80z", "\"a\\ufffdz\"", "a" + kFffd + "z"},
    {"truncated sequence", "a\xe2\x82", "a\\xE2\\x82", "a\\xE2\\x82", "\"a\\ufffd\\ufffd\"", "a" + kFffd + kFffd},
    {"overlong slash", "\xc0\xaf", "\\xC0\\xAF", "\\xC0\\xAF", "\"\\ufffd\\ufffd\"", kFffd + kFffd},
    {"surrogate", "\xed\xa0\x80", "\\xED\\xA0\\x80", "\\xED\\xA0\\x80", "\"\\ufffd\\ufffd\\ufffd\"",
     kFffd + kFffd + kFffd},
    {"above U+10FFFF", "\xf4\x90\x80\x80", "\\xF4\\x90\\x80\\x80", "\\xF4\\x90\\x80\\x80",
     "\"\\ufffd\\ufffd\\ufffd\\ufffd\"", kFffd + kFffd + kFffd + kFffd},
    {"bidi override",
     "a\xe2\x80\xae"
     "b",
     "a\\u202Eb", "a\\u202Eb", "\"a\\u202eb\"",
     "a\xe2\x80\xae"
     "b"},
    {"valid UTF-8 kept", "caf\xc3\xa9 \xe2\x89\xa4 \xf0\x9f\x9a\x80", "caf\xc3\xa9 \xe2\x89\xa4 \xf0\x9f\x9a\x80",
     "caf\xc3\xa9 \xe2\x89\xa4 \xf0\x9f\x9a\x80", "\"caf\xc3\xa9 \xe2\x89\xa4 \xf0\x9f\x9a\x80\"",
     "caf\xc3\xa9 \xe2\x89\xa4 \xf0\x9f\x9a\x80"},
    {"quote and backslash", "a\"b\\c", "a\"b\\c", "a\"b\\c", "\"a\\\"b\\\\c\"", "a\\\"b\\\\c"},
};

class SinkEscape : public ::testing::TestWithParam<TextCase> {};

TEST_P(SinkEscape, EachSinkGetsItsForm) {
    const TextCase& c = GetParam();
    EXPECT_EQ(log_field(c.input), c.line);
    EXPECT_EQ(log_line(c.input), c.line);
    EXPECT_EQ(terminal_text(c.input), c.line);
    EXPECT_EQ(printable(c.input), c.line);
    EXPECT_EQ(user_message(c.input), c.user);
    EXPECT_EQ(json_string(c.input), c.json);
    EXPECT_EQ(prometheus_label_value(c.input), c.label);
}

TEST_P(SinkEscape, OutputIsInertAndValid) {
    const TextCase& c = GetParam();
    EXPECT_TRUE(inert(log_field(c.input)));
    EXPECT_TRUE(inert(user_message(c.input), true));
    EXPECT_TRUE(valid_utf8(log_field(c.input)));
    EXPECT_TRUE(valid_utf8(prometheus_label_value(c.input)));
    // The JSON literal parses back to the input's valid characters.
    auto parsed = nlohmann::json::parse(json_string(c.input));
    EXPECT_TRUE(parsed.is_string());
    if (valid_utf8(c.input)) {
        EXPECT_EQ(parsed.get<std::string>(), c.input);
    }
    EXPECT_TRUE(inert(json_string(c.input)));
}

TEST_P(SinkEscape, EscapingTwiceChangesNothing) {
    const TextCase& c = GetParam();
    EXPECT_EQ(log_line(log_field(c.input)), log_field(c.input));
    EXPECT_EQ(user_message(user_message(c.input)), user_message(c.input));
}

INSTANTIATE_TEST_SUITE_P(Text, SinkEscape, ::testing::ValuesIn(kTextCases));

TEST(SinkEscape, CutAtTheBoundBetweenCharactersAndMarked) {
    EXPECT_EQ(log_field(std::string(10, 'm'), 4), "mmmm [cut]");
    EXPECT_EQ(log_field(std::string(4, 'm'), 4), "mmmm");
    // Never inside a UTF-8 sequence: "é" is two bytes.
    EXPECT_EQ(log_field("a\xc3\xa9"
                        "b",
                        2),
              "a [cut]");
    // Never inside an escape: "\x1B" is four bytes.
    EXPECT_EQ(log_field("ab\x1b", 4), "ab [cut]");
    EXPECT_EQ(log_field("ab\x1b", 6), "ab\\x1B");
}

TEST(SinkEscape, OneMebibyteIsBoundedForLineSinks) {
    std::string huge(1 << 20, '\x1b');
    for (size_t i = 0; i < huge.size(); i += 7) huge[i] = '\xff';
    for (const std::string& out :
         {log_field(huge), log_line(huge), terminal_text(huge), user_message(huge), printable(huge, 256)}) {
        EXPECT_LE(out.size(), kLogLineBytes + kCutMarker.size());
        EXPECT_TRUE(out.ends_with(kCutMarker));
        EXPECT_EQ(out.find('\x1b'), std::string::npos);
        EXPECT_TRUE(valid_utf8(out));
    }
    EXPECT_LE(log_field(huge).size(), kLogFieldBytes + kCutMarker.size());
    EXPECT_LE(user_message(huge).size(), kUserMessageBytes + kCutMarker.size());
}

TEST(SinkEscape, OneMebibyteIsWholeAndValidInJsonAndLabels) {
    std::string huge(1 << 20, 'a');
    huge[100] = '\x1b';
    huge[200] = '\0';
    huge[300] = '\xff';
    std::string literal = json_string(huge);
    auto parsed = nlohmann::json::parse(literal);
    EXPECT_EQ(parsed.get<std::string>().size(), huge.size() + 2);  // U+FFFD is 3 bytes
    std::string label = prometheus_label_value(huge);
    EXPECT_TRUE(valid_utf8(label));
    EXPECT_EQ(label.find('\x1b'), std::string::npos);
    EXPECT_EQ(label.find('\0'), std::string::npos);
}

}  // namespace
}  // namespace lanes
