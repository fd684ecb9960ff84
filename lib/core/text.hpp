// SPDX-License-Identifier: GPL-2.0-or-later
// Small text helpers shared across lib/ and lanesctl/.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace lanes {

// "a, b, c" from {"a", "b", "c"} and ", ".
inline std::string join(const std::vector<std::string>& items, std::string_view separator) {
    std::string out;
    for (const auto& item : items) {
        if (!out.empty()) out += separator;
        out += item;
    }
    return out;
}

// Text that came from a policy (or a user) made safe for one line of a
// terminal or a log: control characters (C0, DEL, and the C1 range
// U+0080..U+009F that some terminals obey) become "\xHH", a tab a space, so
// no newline or escape sequence gets through; cut at max_bytes (never inside
// a UTF-8 sequence), marked " [cut]".
inline std::string printable(std::string_view text, size_t max_bytes = 1024) {
    std::string out;
    out.reserve(std::min(text.size(), max_bytes) + 8);
    auto hex = [&out](unsigned char c) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02X", c);
        out += buf;
    };
    bool cut = false;
    for (size_t i = 0; i < text.size(); ++i) {
        if (out.size() >= max_bytes) {
            cut = true;
            break;
        }
        auto c = static_cast<unsigned char>(text[i]);
        if (c == '\t') {
            out += ' ';
        } else if (c < 0x20 || c == 0x7f) {
            hex(c);
        } else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                   static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
            hex(static_cast<unsigned char>(text[++i]));  // a C1 control, as its code point
        } else {
            out += static_cast<char>(c);
        }
    }
    if (cut || out.size() > max_bytes) {
        size_t n = std::min(out.size(), max_bytes);
        while (n > 0 && (static_cast<unsigned char>(out[n]) & 0xc0) == 0x80) --n;  // not inside a sequence
        out.resize(n);
        out += " [cut]";
    }
    return out;
}

}  // namespace lanes
