// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml's reading kit, shared by the section parsers (toml_*.cpp): the
// error list (every problem with its file:line:col and key), a table reader
// that reports unknown keys and wrong types, the "did you mean" helper, and
// readers for the value types several sections use (rates, durations, numbers).
// Internal to the configuration parser: only lanes_toml.cpp and toml_*.cpp
// include it (it brings in toml++).
#pragma once

#include <toml++/toml.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/lanes_toml.hpp"
#include "core/result.hpp"

namespace lanes::config_parse {

// Collects every problem with its position.
class Errors {
public:
    explicit Errors(std::string path) : path_(std::move(path)) {}
    void add(const toml::source_region& where, const std::string& key, const std::string& what);
    void add(Diagnostic d) { list_.push_back(std::move(d)); }
    bool empty() const { return list_.empty(); }
    // Sorted by position.
    std::vector<Diagnostic> sorted();

private:
    std::string path_;
    std::vector<Diagnostic> list_;
};

// "a table", "an integer", ...: for "expected X, got Y".
std::string type_name(const toml::node& n);
// The closest candidate when it is a plausible typo, else "".
std::string closest(std::string_view word, const std::vector<std::string>& candidates);
std::string quote(std::string_view s);
// "\"a\", \"b\" or \"c\"".
std::string join_quoted(const std::vector<std::string>& v);
// A name of a class, window or signal: letters, digits, '-' and '_', 1..63 characters.
bool valid_name(std::string_view s);

// Reads the keys of one table, remembering which it used; finish() reports the rest.
class TableReader {
public:
    TableReader(Errors& errors, const toml::table& table, std::string prefix)
        : errors_(errors), table_(table), prefix_(std::move(prefix)) {}

    std::string key(std::string_view k) const {
        return prefix_.empty() ? std::string(k) : prefix_ + "." + std::string(k);
    }
    const toml::table& table() const { return table_; }
    const std::string& prefix() const { return prefix_; }
    Errors& errors() { return errors_; }

    const toml::node* get(std::string_view k) {
        known_.emplace_back(k);
        return table_.get(k);
    }
    void error(const toml::node& n, std::string_view k, const std::string& what) {
        errors_.add(n.source(), key(k), what);
    }
    void error_here(const std::string& key_path, const std::string& what) {
        errors_.add(table_.source(), key_path, what);
    }
    void wrong_type(const toml::node& n, std::string_view k, const std::string& expected) {
        error(n, k, "expected " + expected + ", got " + type_name(n));
    }

    std::optional<std::string> string(std::string_view k);
    std::optional<bool> boolean(std::string_view k);
    std::optional<int64_t> integer(std::string_view k, int64_t min, int64_t max);
    // A list of strings; a single string is taken as a list of one.
    std::optional<std::vector<std::string>> strings(std::string_view k, bool allow_empty = true);
    // One of a fixed set of words.
    std::optional<std::string> choice(std::string_view k, const std::vector<std::string>& allowed);

    // Reports every key that was not asked for.
    void finish();

private:
    std::string join_keys() const;
    Errors& errors_;
    const toml::table& table_;
    std::string prefix_;
    std::vector<std::string> known_;
};

std::optional<Rate> read_rate(TableReader& r, std::string_view k, bool absolute_only);
// A duration such as "2min" or "500ms" within [min, max].
std::optional<std::chrono::microseconds> read_duration(TableReader& r, std::string_view k,
                                                       std::chrono::microseconds min, std::chrono::microseconds max,
                                                       const std::string& range);
// An integer or floating-point number; NaN and infinities are refused.
std::optional<double> read_number(TableReader& r, std::string_view k);

// One lanes.toml being validated: what the sections have read so far, and the
// names of the tables that were broken (a reference to one is not a second error).
struct ConfigParse {
    explicit ConfigParse(std::string p) : errors(p), path(std::move(p)) {}
    Errors errors;
    std::string path;
    Config config;
    std::set<std::string> broken_signals;
    std::set<std::string> broken_windows;
    std::set<std::string> broken_classes;
};

}  // namespace lanes::config_parse
