// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/text.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace lanes {

namespace {

// One decoded character: its code point and length in bytes, or an invalid
// byte (length 1, valid false). Overlong forms, surrogates and values past
// U+10FFFF are invalid, as RFC 3629 says.
struct Decoded {
    char32_t code = 0;
    size_t length = 1;
    bool valid = false;
};

Decoded decode_utf8(std::string_view s, size_t i) {
    auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char b0 = byte(i);
    if (b0 < 0x80) return {b0, 1, true};
    size_t n = 0;
    char32_t code = 0, min = 0;
    if ((b0 & 0xe0) == 0xc0) {
        n = 2, code = b0 & 0x1f, min = 0x80;
    } else if ((b0 & 0xf0) == 0xe0) {
        n = 3, code = b0 & 0x0f, min = 0x800;
    } else if ((b0 & 0xf8) == 0xf0) {
        n = 4, code = b0 & 0x07, min = 0x10000;
    } else {
        return {};
    }
    if (i + n > s.size()) return {};
    for (size_t k = 1; k < n; ++k) {
        unsigned char b = byte(i + k);
        if ((b & 0xc0) != 0x80) return {};
        code = (code << 6) | (b & 0x3f);
    }
    if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return {};
    return {code, n, true};
}

// Line and paragraph separators, and the bidirectional controls that reorder
// what a reader sees (CVE-2021-42574, "Trojan Source").
bool is_format_control(char32_t c) {
    return c == 0x2028 || c == 0x2029 || c == 0x200e || c == 0x200f || (c >= 0x202a && c <= 0x202e) ||
           (c >= 0x2066 && c <= 0x2069) || c == 0x061c;
}

std::string hex_escape(const char* format, unsigned value) {
    char buf[16];
    std::snprintf(buf, sizeof buf, format, value);
    return buf;
}

}  // namespace

std::string escape_text(std::string_view text, size_t max_bytes, bool keep_newlines) {
    std::string out;
    out.reserve(std::min(text.size(), max_bytes) + kCutMarker.size());
    std::string token;
    for (size_t i = 0; i < text.size();) {
        Decoded d = decode_utf8(text, i);
        token.clear();
        if (!d.valid) {
            token = hex_escape("\\x%02X", static_cast<unsigned char>(text[i]));
        } else if (d.code == '\t') {
            token = " ";
        } else if (d.code == '\n' && keep_newlines) {
            token = "\n";
        } else if (d.code < 0x20 || d.code == 0x7f || (d.code >= 0x80 && d.code <= 0x9f)) {
            token = hex_escape("\\x%02X", static_cast<unsigned>(d.code));
        } else if (is_format_control(d.code)) {
            token = hex_escape("\\u%04X", static_cast<unsigned>(d.code));
        } else {
            token.assign(text.substr(i, d.length));
        }
        if (out.size() + token.size() > max_bytes) {
            out += kCutMarker;
            return out;
        }
        out += token;
        i += d.length;
    }
    return out;
}

std::string json_string(std::string_view text) {
    std::string out;
    out.reserve(text.size() + 2);
    out += '"';
    for (size_t i = 0; i < text.size();) {
        Decoded d = decode_utf8(text, i);
        if (!d.valid) {
            out += "\\ufffd";
            i += 1;
            continue;
        }
        switch (d.code) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (d.code < 0x20 || d.code == 0x7f || (d.code >= 0x80 && d.code <= 0x9f) || is_format_control(d.code))
                    out += hex_escape("\\u%04x", static_cast<unsigned>(d.code));
                else out.append(text.substr(i, d.length));
        }
        i += d.length;
    }
    out += '"';
    return out;
}

std::string json_escape_raw_controls(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        Decoded d = decode_utf8(text, i);
        if (d.valid && (d.code == 0x7f || (d.code >= 0x80 && d.code <= 0x9f) || is_format_control(d.code)))
            out += hex_escape("\\u%04x", static_cast<unsigned>(d.code));
        else out.append(text.substr(i, d.length));
        i += d.length;
    }
    return out;
}

std::string prometheus_label_value(std::string_view text) {
    static constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        Decoded d = decode_utf8(text, i);
        if (!d.valid) {
            out += kReplacement;
            i += 1;
            continue;
        }
        if (d.code == '\\') out += "\\\\";
        else if (d.code == '"') out += "\\\"";
        else if (d.code == '\n') out += "\\n";
        else if (d.code < 0x20 || d.code == 0x7f || (d.code >= 0x80 && d.code <= 0x9f)) out += kReplacement;
        else out.append(text.substr(i, d.length));
        i += d.length;
    }
    return out;
}

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace lanes
