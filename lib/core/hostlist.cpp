// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/hostlist.hpp"

#include <fnmatch.h>

#include <charconv>
#include <cstdint>
#include <cstdio>

namespace lanes {
namespace {

// Split at commas that are not inside brackets.
Result<std::vector<std::string_view>> split_items(std::string_view text) {
    std::vector<std::string_view> items;
    int depth = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (c == '[') {
            if (++depth > 1) return fail("hostlist \"" + std::string(text) + "\": nested '['");
        } else if (c == ']') {
            if (--depth < 0) return fail("hostlist \"" + std::string(text) + "\": ']' without '['");
        } else if (c == ',' && depth == 0) {
            items.push_back(text.substr(start, i - start));
            start = i + 1;
        }
    }
    if (depth != 0) return fail("hostlist \"" + std::string(text) + "\": missing ']'");
    items.push_back(text.substr(start));
    return items;
}

Result<uint64_t> parse_number(std::string_view text, std::string_view whole) {
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size())
        return fail("hostlist \"" + std::string(whole) + "\": bad number \"" + std::string(text) + "\"");
    return value;
}

// "1-4,07,9-10" -> the numbers as strings, zero padding of the lower bound kept.
Result<std::vector<std::string>> expand_range_list(std::string_view body, std::string_view whole,
                                                   std::size_t max_names) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= body.size()) {
        std::size_t comma = body.find(',', start);
        std::string_view part =
            body.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        if (part.empty()) return fail("hostlist \"" + std::string(whole) + "\": empty range");
        std::size_t dash = part.find('-');
        std::string_view lo_text = part.substr(0, dash);
        auto lo = parse_number(lo_text, whole);
        if (!lo) return std::unexpected(lo.error());
        uint64_t hi_value = *lo;
        if (dash != std::string_view::npos) {
            auto hi = parse_number(part.substr(dash + 1), whole);
            if (!hi) return std::unexpected(hi.error());
            hi_value = *hi;
            if (hi_value < *lo)
                return fail("hostlist \"" + std::string(whole) + "\": descending range \"" + std::string(part) + "\"");
        }
        if (hi_value - *lo >= max_names || out.size() + (hi_value - *lo) >= max_names)
            return fail("hostlist \"" + std::string(whole) + "\": more than " + std::to_string(max_names) + " names");
        std::size_t width = lo_text.size();
        // Stops at hi_value itself: with hi_value the largest uint64_t, a
        // `n <= hi_value` loop would wrap around and never end.
        for (uint64_t n = *lo;; ++n) {
            std::string digits = std::to_string(n);
            if (digits.size() < width) digits.insert(0, width - digits.size(), '0');
            out.push_back(std::move(digits));
            if (n == hi_value) break;
        }
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return out;
}

// Host names use letters, digits, '-', '.' and '_'; globs add '*' and '?'. Anything
// else ('\\', spaces, control bytes) could never match a node, so it is an error
// rather than a selector that silently matches nothing.
bool host_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
           c == '_' || c == '*' || c == '?';
}

Result<void> check_literal(std::string_view literal, std::string_view whole) {
    for (char c : literal) {
        if (host_char(c)) continue;
        char shown[8];
        if (c > ' ' && c < 0x7f) std::snprintf(shown, sizeof shown, "'%c'", c);
        else std::snprintf(shown, sizeof shown, "\\x%02x", static_cast<unsigned char>(c));
        return fail("hostlist \"" + std::string(whole) + "\": character " + shown +
                    " is not allowed (host names and globs use letters, digits, '-', '.', '_', '*' and '?')");
    }
    return {};
}

Result<void> expand_item(std::string_view item, std::string_view whole, std::size_t max_names,
                         std::vector<std::string>& out) {
    std::vector<std::string> partial{""};
    std::size_t pos = 0;
    while (pos < item.size()) {
        std::size_t open = item.find('[', pos);
        std::string_view literal =
            item.substr(pos, open == std::string_view::npos ? std::string_view::npos : open - pos);
        if (auto ok = check_literal(literal, whole); !ok) return ok;
        for (auto& p : partial) p.append(literal);
        if (open == std::string_view::npos) break;
        std::size_t close = item.find(']', open);  // balanced: checked by split_items
        auto numbers = expand_range_list(item.substr(open + 1, close - open - 1), whole, max_names);
        if (!numbers) return std::unexpected(numbers.error());
        if (partial.size() * numbers->size() + out.size() > max_names)
            return fail("hostlist \"" + std::string(whole) + "\": more than " + std::to_string(max_names) + " names");
        std::vector<std::string> next;
        next.reserve(partial.size() * numbers->size());
        for (const auto& p : partial)
            for (const auto& n : *numbers) next.push_back(p + n);
        partial = std::move(next);
        pos = close + 1;
    }
    for (auto& p : partial) out.push_back(std::move(p));
    return {};
}

}  // namespace

Result<std::vector<std::string>> expand_hostlist(std::string_view expression, std::size_t max_names) {
    auto items = split_items(expression);
    if (!items) return std::unexpected(items.error());
    std::vector<std::string> names;
    for (auto item : *items) {
        while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
        while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
        if (item.empty()) return fail("hostlist \"" + std::string(expression) + "\": empty item");
        auto r = expand_item(item, expression, max_names, names);
        if (!r) return std::unexpected(r.error());
    }
    return names;
}

Result<bool> hostlist_matches(std::string_view expression, std::string_view hostname) {
    if (expression.empty() || expression == "*") return true;
    auto names = expand_hostlist(expression);
    if (!names) return std::unexpected(names.error());
    std::string host(hostname);
    for (const auto& name : *names)
        if (fnmatch(name.c_str(), host.c_str(), 0) == 0) return true;
    return false;
}

}  // namespace lanes
