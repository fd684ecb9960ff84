#include "core/json.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace lanes::json {

const Value* Value::find(std::string_view key) const {
    if (!is_object()) return nullptr;
    for (const auto& [k, val] : as_object())
        if (k == key) return &val;
    return nullptr;
}

const char* Value::type_name() const {
    switch (v.index()) {
        case 0: return "null";
        case 1: return "boolean";
        case 2: return "integer";
        case 3: return "number";
        case 4: return "string";
        case 5: return "array";
        default: return "object";
    }
}

namespace {

constexpr int kMaxDepth = 128;

class Parser {
public:
    explicit Parser(std::string_view text) : s_(text) {}

    Result<Value> run() {
        Value v;
        if (!value(v, 0)) return fail(error_);
        skip_ws();
        if (pos_ != s_.size()) return fail(where() + "unexpected text after the JSON value");
        return v;
    }

private:
    std::string_view s_;
    size_t pos_ = 0;
    std::string error_;

    std::string where() const {
        size_t line = 1, col = 1;
        for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
            if (s_[i] == '\n') { ++line; col = 1; } else { ++col; }
        }
        return std::to_string(line) + ":" + std::to_string(col) + ": ";
    }
    bool err(const std::string& what) {
        error_ = where() + what;
        return false;
    }
    void skip_ws() {
        while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
    }
    bool literal(std::string_view word) {
        if (s_.substr(pos_, word.size()) != word) return err("invalid literal");
        pos_ += word.size();
        return true;
    }

    bool value(Value& out, int depth) {
        if (depth > kMaxDepth) return err("nesting deeper than 128");
        skip_ws();
        if (pos_ >= s_.size()) return err("unexpected end of input");
        char c = s_[pos_];
        switch (c) {
            case 'n': out = nullptr; return literal("null");
            case 't': out = true; return literal("true");
            case 'f': out = false; return literal("false");
            case '"': {
                std::string str;
                if (!string(str)) return false;
                out = std::move(str);
                return true;
            }
            case '[': return array(out, depth);
            case '{': return object(out, depth);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) return number(out);
                return err(std::string("unexpected character '") + c + "'");
        }
    }

    bool number(Value& out) {
        size_t start = pos_;
        bool integral = true;
        if (s_[pos_] == '-') ++pos_;
        if (pos_ >= s_.size() || !(s_[pos_] >= '0' && s_[pos_] <= '9')) return err("invalid number");
        if (s_[pos_] == '0') {
            ++pos_;
            if (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') return err("leading zero in number");
        } else {
            while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
        }
        if (pos_ < s_.size() && s_[pos_] == '.') {
            integral = false;
            ++pos_;
            if (pos_ >= s_.size() || !(s_[pos_] >= '0' && s_[pos_] <= '9')) return err("digit expected after '.'");
            while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
        }
        if (pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
            integral = false;
            ++pos_;
            if (pos_ < s_.size() && (s_[pos_] == '+' || s_[pos_] == '-')) ++pos_;
            if (pos_ >= s_.size() || !(s_[pos_] >= '0' && s_[pos_] <= '9')) return err("digit expected in exponent");
            while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
        }
        std::string_view text = s_.substr(start, pos_ - start);
        if (integral) {
            int64_t i = 0;
            auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), i);
            if (ec == std::errc() && p == text.data() + text.size()) {
                out = i;
                return true;
            }
        }
        std::string copy(text);
        errno = 0;
        char* end = nullptr;
        double d = std::strtod(copy.c_str(), &end);
        if (end != copy.c_str() + copy.size() || !std::isfinite(d)) {
            pos_ = start;
            return err("number out of range");
        }
        out = d;
        return true;
    }

    bool hex4(uint32_t& cp) {
        if (pos_ + 4 > s_.size()) return err("truncated \\u escape");
        cp = 0;
        for (int i = 0; i < 4; ++i) {
            char h = s_[pos_++];
            cp <<= 4;
            if (h >= '0' && h <= '9') cp |= h - '0';
            else if (h >= 'a' && h <= 'f') cp |= h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') cp |= h - 'A' + 10;
            else return err("invalid hex digit in \\u escape");
        }
        return true;
    }

    static void utf8(std::string& out, uint32_t cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }

    bool string(std::string& out) {
        ++pos_;  // opening quote
        while (true) {
            if (pos_ >= s_.size()) return err("unterminated string");
            unsigned char c = static_cast<unsigned char>(s_[pos_]);
            if (c == '"') { ++pos_; return true; }
            if (c < 0x20) return err("control character in string");
            if (c != '\\') { out += static_cast<char>(c); ++pos_; continue; }
            ++pos_;
            if (pos_ >= s_.size()) return err("unterminated escape");
            char e = s_[pos_++];
            switch (e) {
                case '"': out += '"'; break;
                case '\\': out += '\\'; break;
                case '/': out += '/'; break;
                case 'b': out += '\b'; break;
                case 'f': out += '\f'; break;
                case 'n': out += '\n'; break;
                case 'r': out += '\r'; break;
                case 't': out += '\t'; break;
                case 'u': {
                    uint32_t cp = 0;
                    if (!hex4(cp)) return false;
                    if (cp >= 0xD800 && cp <= 0xDBFF) {
                        uint32_t lo = 0;
                        if (s_.substr(pos_, 2) != "\\u") return err("lone high surrogate");
                        pos_ += 2;
                        if (!hex4(lo)) return false;
                        if (lo < 0xDC00 || lo > 0xDFFF) return err("invalid low surrogate");
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                        return err("lone low surrogate");
                    }
                    utf8(out, cp);
                    break;
                }
                default: --pos_; return err(std::string("invalid escape '\\") + e + "'");
            }
        }
    }

    bool array(Value& out, int depth) {
        ++pos_;
        Array items;
        skip_ws();
        if (pos_ < s_.size() && s_[pos_] == ']') { ++pos_; out = std::move(items); return true; }
        while (true) {
            Value item;
            if (!value(item, depth + 1)) return false;
            items.push_back(std::move(item));
            skip_ws();
            if (pos_ >= s_.size()) return err("unterminated array");
            if (s_[pos_] == ',') { ++pos_; continue; }
            if (s_[pos_] == ']') { ++pos_; out = std::move(items); return true; }
            return err("',' or ']' expected");
        }
    }

    bool object(Value& out, int depth) {
        ++pos_;
        Object members;
        skip_ws();
        if (pos_ < s_.size() && s_[pos_] == '}') { ++pos_; out = std::move(members); return true; }
        while (true) {
            skip_ws();
            if (pos_ >= s_.size() || s_[pos_] != '"') return err("string key expected");
            size_t key_pos = pos_;
            std::string key;
            if (!string(key)) return false;
            for (const auto& m : members)
                if (m.first == key) { pos_ = key_pos; return err("duplicate key \"" + key + "\""); }
            skip_ws();
            if (pos_ >= s_.size() || s_[pos_] != ':') return err("':' expected");
            ++pos_;
            Value item;
            if (!value(item, depth + 1)) return false;
            members.emplace_back(std::move(key), std::move(item));
            skip_ws();
            if (pos_ >= s_.size()) return err("unterminated object");
            if (s_[pos_] == ',') { ++pos_; continue; }
            if (s_[pos_] == '}') { ++pos_; out = std::move(members); return true; }
            return err("',' or '}' expected");
        }
    }
};

void write_to(std::string& out, const Value& v, int indent, int level) {
    auto newline = [&](int lvl) {
        if (indent < 0) return;
        out += '\n';
        out.append(static_cast<size_t>(indent * lvl), ' ');
    };
    switch (v.v.index()) {
        case 0: out += "null"; break;
        case 1: out += v.as_bool() ? "true" : "false"; break;
        case 2: out += std::to_string(v.as_int()); break;
        case 3: {
            char buf[32];
            auto [p, ec] = std::to_chars(buf, buf + sizeof buf, std::get<double>(v.v));
            out.append(buf, ec == std::errc() ? p : buf);
            break;
        }
        case 4: out += quote(v.as_string()); break;
        case 5: {
            const auto& a = v.as_array();
            out += '[';
            for (size_t i = 0; i < a.size(); ++i) {
                if (i) out += ',';
                newline(level + 1);
                write_to(out, a[i], indent, level + 1);
            }
            if (!a.empty()) newline(level);
            out += ']';
            break;
        }
        default: {
            const auto& o = v.as_object();
            out += '{';
            for (size_t i = 0; i < o.size(); ++i) {
                if (i) out += ',';
                newline(level + 1);
                out += quote(o[i].first);
                out += indent < 0 ? ":" : ": ";
                write_to(out, o[i].second, indent, level + 1);
            }
            if (!o.empty()) newline(level);
            out += '}';
        }
    }
}

}  // namespace

Result<Value> parse(std::string_view text) {
    try {
        return Parser(text).run();
    } catch (const std::exception& e) {
        return fail(std::string("json: ") + e.what());
    }
}

std::string quote(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    out += '"';
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    out += '"';
    return out;
}

std::string write(const Value& value, int indent) {
    std::string out;
    write_to(out, value, indent, 0);
    return out;
}

}  // namespace lanes::json
