// SPDX-License-Identifier: GPL-2.0-or-later
// The sink escapers (core/text.hpp) on any bytes: the line sinks' output has no
// control byte (newlines only in user messages), is valid UTF-8, respects its
// bound and is a fixed point; the JSON literal and the Prometheus label value
// are valid UTF-8 with no raw control byte.
#include "core/text.hpp"
#include "fuzz.hpp"

namespace {

bool valid_utf8(std::string_view s) {
    for (size_t i = 0; i < s.size();) {
        auto b = static_cast<unsigned char>(s[i]);
        size_t n = b < 0x80 ? 1 : (b & 0xe0) == 0xc0 ? 2 : (b & 0xf0) == 0xe0 ? 3 : (b & 0xf8) == 0xf0 ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        char32_t c = n == 1 ? b : n == 2 ? (b & 0x1f) : n == 3 ? (b & 0x0f) : (b & 0x07);
        for (size_t k = 1; k < n; ++k) {
            auto x = static_cast<unsigned char>(s[i + k]);
            if ((x & 0xc0) != 0x80) return false;
            c = (c << 6) | (x & 0x3f);
        }
        static const char32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
        if (c < kMin[n] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return false;
        i += n;
    }
    return true;
}

bool no_controls(std::string_view s, bool newlines_allowed) {
    for (size_t i = 0; i < s.size(); ++i) {
        auto c = static_cast<unsigned char>(s[i]);
        if (c == '\n' && newlines_allowed) continue;
        if (c < 0x20 || c == 0x7f) return false;
        if (c == 0xc2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
            static_cast<unsigned char>(s[i + 1]) <= 0x9f)
            return false;
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto text = lanes::fuzz::as_text(data, size);
    const size_t bound = size % 97 + 8;
    for (bool keep_newlines : {false, true}) {
        std::string out = lanes::escape_text(text, bound, keep_newlines);
        LANES_FUZZ_ASSERT(out.size() <= bound + lanes::kCutMarker.size());
        LANES_FUZZ_ASSERT(valid_utf8(out));
        LANES_FUZZ_ASSERT(no_controls(out, keep_newlines));
        std::string whole = lanes::escape_text(text, SIZE_MAX, keep_newlines);
        LANES_FUZZ_ASSERT(lanes::escape_text(whole, SIZE_MAX, keep_newlines) == whole);
    }
    std::string literal = lanes::json_string(text);
    LANES_FUZZ_ASSERT(valid_utf8(literal) && no_controls(literal, false));
    LANES_FUZZ_ASSERT(literal.size() >= 2 && literal.front() == '"' && literal.back() == '"');
    std::string label = lanes::prometheus_label_value(text);
    LANES_FUZZ_ASSERT(valid_utf8(label) && no_controls(label, false));
    return 0;
}
