// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml's reading kit: see toml_reader.hpp.
#include "core/toml_reader.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace lanes::config_parse {
namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

}  // namespace

std::string type_name(const toml::node& n) {
    switch (n.type()) {
        case toml::node_type::table: return "a table";
        case toml::node_type::array: return "an array";
        case toml::node_type::string: return "a string";
        case toml::node_type::integer: return "an integer";
        case toml::node_type::floating_point: return "a floating-point number";
        case toml::node_type::boolean: return "a boolean";
        case toml::node_type::date: return "a date";
        case toml::node_type::time: return "a time";
        case toml::node_type::date_time: return "a date-time";
        default: return "nothing";
    }
}

std::string closest(std::string_view word, const std::vector<std::string>& candidates) {
    std::string best;
    size_t best_d = SIZE_MAX;
    for (const auto& c : candidates) {
        const size_t d = edit_distance(word, c);
        if (d < best_d) {
            best_d = d;
            best = c;
        }
    }
    const size_t limit = word.size() <= 4 ? 1 : (word.size() <= 8 ? 2 : 3);
    if (best_d <= limit && best_d < word.size()) return best;
    return "";
}

std::string quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string join_quoted(const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += i + 1 == v.size() ? " or " : ", ";
        out += quote(v[i]);
    }
    return out;
}

bool valid_name(std::string_view s) {
    if (s.empty() || s.size() > 63) return false;
    for (char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-')) return false;
    return true;
}

std::optional<Rate> read_rate(TableReader& r, std::string_view k, bool absolute_only) {
    const toml::node* n = r.table().get(k);
    if (n && n->is_integer()) {
        r.get(k);
        r.error(*n, k,
                "a rate needs a unit: write e.g. " + quote(std::to_string(n->as_integer()->get()) + "Mbit") +
                    " (bits per second) or a percentage like \"40%\"");
        return std::nullopt;
    }
    auto s = r.string(k);
    if (!s) return std::nullopt;
    auto rate = parse_rate(*s);
    if (!rate) {
        r.error(*n, k, rate.error().message);
        return std::nullopt;
    }
    if (absolute_only && rate->is_relative()) {
        r.error(*n, k, "must be an absolute rate such as \"100Gbit\", not a percentage");
        return std::nullopt;
    }
    return *rate;
}

std::optional<std::chrono::microseconds> read_duration(TableReader& r, std::string_view k,
                                                       std::chrono::microseconds min, std::chrono::microseconds max,
                                                       const std::string& range) {
    const toml::node* n = r.get(k);
    if (!n) return std::nullopt;
    if (!n->is_string()) {
        r.wrong_type(*n, k, "a duration such as \"30s\" or \"2min\"");
        return std::nullopt;
    }
    auto d = parse_duration(n->as_string()->get());
    if (!d) {
        r.error(*n, k, d.error().message);
        return std::nullopt;
    }
    if (*d < min || *d > max) {
        r.error(*n, k, "out of range (" + range + ")");
        return std::nullopt;
    }
    return *d;
}

std::optional<double> read_number(TableReader& r, std::string_view k) {
    const toml::node* n = r.get(k);
    if (!n) return std::nullopt;
    double v = 0;
    if (n->is_integer()) v = static_cast<double>(n->as_integer()->get());
    else if (n->is_floating_point()) v = n->as_floating_point()->get();
    else {
        r.wrong_type(*n, k, "a number");
        return std::nullopt;
    }
    if (!std::isfinite(v)) {
        r.error(*n, k, "must be a finite number");
        return std::nullopt;
    }
    return v;
}

void Errors::add(const toml::source_region& where, const std::string& key, const std::string& what) {
    uint32_t line = where.begin.line, column = where.begin.column;
    if (line == 0) {  // implicit tables have no position of their own
        line = 1;
        column = 1;
    }
    list_.push_back(Diagnostic{path_, static_cast<int>(line), static_cast<int>(column), key, what});
}

std::vector<Diagnostic> Errors::sorted() {
    std::stable_sort(list_.begin(), list_.end(), [](const Diagnostic& a, const Diagnostic& b) {
        return std::tie(a.line, a.column) < std::tie(b.line, b.column);
    });
    return list_;
}

std::optional<std::string> TableReader::string(std::string_view k) {
    const toml::node* n = get(k);
    if (!n) return std::nullopt;
    if (auto s = n->value<std::string>(); s && n->is_string()) return *s;
    wrong_type(*n, k, "a string");
    return std::nullopt;
}

std::optional<bool> TableReader::boolean(std::string_view k) {
    const toml::node* n = get(k);
    if (!n) return std::nullopt;
    if (n->is_boolean()) return n->as_boolean()->get();
    wrong_type(*n, k, "true or false");
    return std::nullopt;
}

std::optional<int64_t> TableReader::integer(std::string_view k, int64_t min, int64_t max) {
    const toml::node* n = get(k);
    if (!n) return std::nullopt;
    if (!n->is_integer()) {
        wrong_type(*n, k, "an integer");
        return std::nullopt;
    }
    const int64_t v = n->as_integer()->get();
    if (v < min || v > max) {
        error(*n, k,
              "value " + std::to_string(v) + " is out of range (" + std::to_string(min) + ".." + std::to_string(max) +
                  ")");
        return std::nullopt;
    }
    return v;
}

std::optional<std::vector<std::string>> TableReader::strings(std::string_view k, bool allow_empty) {
    const toml::node* n = get(k);
    if (!n) return std::nullopt;
    std::vector<std::string> out;
    if (n->is_string()) {
        out.push_back(n->as_string()->get());
    } else if (const toml::array* a = n->as_array()) {
        bool ok = true;
        size_t i = 0;
        for (const toml::node& e : *a) {
            if (!e.is_string()) {
                errors_.add(e.source(), key(k) + "[" + std::to_string(i) + "]",
                            "expected a string, got " + type_name(e));
                ok = false;
            } else {
                out.push_back(e.as_string()->get());
            }
            ++i;
        }
        if (!ok) return std::nullopt;
    } else {
        wrong_type(*n, k, "a string or an array of strings");
        return std::nullopt;
    }
    for (size_t i = 0; i < out.size(); ++i) {
        if (out[i].empty()) {
            error(*n, k, "empty string in the list");
            return std::nullopt;
        }
    }
    if (!allow_empty && out.empty()) {
        error(*n, k, "must not be empty");
        return std::nullopt;
    }
    return out;
}

std::optional<std::string> TableReader::choice(std::string_view k, const std::vector<std::string>& allowed) {
    const toml::node* n = table_.get(k);
    auto s = string(k);
    if (!s) return std::nullopt;
    if (std::find(allowed.begin(), allowed.end(), *s) != allowed.end()) return s;
    std::string msg = "unknown value " + quote(*s) + " (expected " + join_quoted(allowed) + ")";
    if (auto c = closest(*s, allowed); !c.empty())
        msg = "unknown value " + quote(*s) + " (did you mean " + quote(c) + "?)";
    error(*n, k, msg);
    return std::nullopt;
}

void TableReader::finish() {
    for (auto&& [k, v] : table_) {
        const std::string name(k.str());
        if (std::find(known_.begin(), known_.end(), name) != known_.end()) continue;
        std::string msg = "unknown key";
        if (auto c = closest(name, known_); !c.empty()) msg += " (did you mean " + quote(c) + "?)";
        else msg += " (known keys: " + join_keys() + ")";
        errors_.add(k.source(), key(name), msg);
    }
}

std::string TableReader::join_keys() const {
    std::string out;
    for (const auto& k : known_) out += (out.empty() ? "" : ", ") + k;
    return out;
}

}  // namespace lanes::config_parse
