// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml: parse with toml++ and validate into lanes::Config.
//
// This is the only file that includes toml++ (it is slow to compile). Every
// problem is reported as "path:line:col: key.path: what is wrong"; all problems
// found are reported together, sorted by position, one per line.
#include <toml++/toml.h>

#include <arpa/inet.h>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "config.h"
#include "core/lanes_toml.hpp"

namespace lanes {
namespace {

constexpr std::string_view kZoneinfoDir = "/usr/share/zoneinfo";
constexpr size_t kMaxConfigBytes = 4u << 20;
// Slurm accepts --nice values in this range.
constexpr int64_t kMaxNice = 2147483645;

// Collects every problem with its position.
class Errors {
public:
    explicit Errors(std::string path) : path_(std::move(path)) {}
    void add(const toml::source_region& where, const std::string& key, const std::string& what) {
        uint32_t line = where.begin.line, column = where.begin.column;
        if (line == 0) {  // implicit tables have no position of their own
            line = 1;
            column = 1;
        }
        list_.push_back(Diagnostic{path_, static_cast<int>(line), static_cast<int>(column), key, what});
    }
    bool empty() const { return list_.empty(); }
    // Sorted by position.
    std::vector<Diagnostic> sorted() {
        std::stable_sort(list_.begin(), list_.end(), [](const Diagnostic& a, const Diagnostic& b) {
            return std::tie(a.line, a.column) < std::tie(b.line, b.column);
        });
        return list_;
    }

private:
    std::string path_;
    std::vector<Diagnostic> list_;
};

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

// The closest candidate when it is a plausible typo, else "".
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

    std::optional<std::string> string(std::string_view k) {
        const toml::node* n = get(k);
        if (!n) return std::nullopt;
        if (auto s = n->value<std::string>(); s && n->is_string()) return *s;
        wrong_type(*n, k, "a string");
        return std::nullopt;
    }
    std::optional<bool> boolean(std::string_view k) {
        const toml::node* n = get(k);
        if (!n) return std::nullopt;
        if (n->is_boolean()) return n->as_boolean()->get();
        wrong_type(*n, k, "true or false");
        return std::nullopt;
    }
    std::optional<int64_t> integer(std::string_view k, int64_t min, int64_t max) {
        const toml::node* n = get(k);
        if (!n) return std::nullopt;
        if (!n->is_integer()) {
            wrong_type(*n, k, "an integer");
            return std::nullopt;
        }
        const int64_t v = n->as_integer()->get();
        if (v < min || v > max) {
            error(*n, k,
                  "value " + std::to_string(v) + " is out of range (" + std::to_string(min) + ".." +
                      std::to_string(max) + ")");
            return std::nullopt;
        }
        return v;
    }
    // A list of strings; a single string is taken as a list of one.
    std::optional<std::vector<std::string>> strings(std::string_view k, bool allow_empty = true) {
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
    // One of a fixed set of words.
    std::optional<std::string> choice(std::string_view k, const std::vector<std::string>& allowed) {
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

    // Reports every key that was not asked for.
    void finish() {
        for (auto&& [k, v] : table_) {
            const std::string name(k.str());
            if (std::find(known_.begin(), known_.end(), name) != known_.end()) continue;
            std::string msg = "unknown key";
            if (auto c = closest(name, known_); !c.empty()) msg += " (did you mean " + quote(c) + "?)";
            else msg += " (known keys: " + join_keys() + ")";
            errors_.add(k.source(), key(name), msg);
        }
    }

private:
    std::string join_keys() const {
        std::string out;
        for (const auto& k : known_) out += (out.empty() ? "" : ", ") + k;
        return out;
    }
    Errors& errors_;
    const toml::table& table_;
    std::string prefix_;
    std::vector<std::string> known_;
};

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

// "08:00" or a TOML local time (08:00:00).
std::optional<std::chrono::minutes> read_time_of_day(TableReader& r, std::string_view k, bool allow_24) {
    const toml::node* n = r.get(k);
    if (!n) return std::nullopt;
    std::string text;
    if (n->is_string()) {
        text = n->as_string()->get();
    } else if (n->is_time()) {
        const toml::time t = n->as_time()->get();
        if (t.second != 0 || t.nanosecond != 0) {
            r.error(*n, k, "windows have minute resolution (seconds must be 0)");
            return std::nullopt;
        }
        return std::chrono::minutes{t.hour * 60 + t.minute};
    } else {
        r.wrong_type(*n, k, "a time of day such as \"08:00\"");
        return std::nullopt;
    }
    auto m = parse_time_of_day(text, allow_24);
    if (!m) {
        r.error(*n, k, m.error().message);
        return std::nullopt;
    }
    return *m;
}

// A list of dates / date ranges ("2026-12-24..2026-12-26" or TOML dates).
std::vector<DateRange> read_dates(TableReader& r, std::string_view k, bool add) {
    std::vector<DateRange> out;
    const toml::node* n = r.get(k);
    if (!n) return out;
    auto one = [&](const toml::node& e, const std::string& key_path) {
        if (e.is_date()) {
            const toml::date d = e.as_date()->get();
            std::chrono::year_month_day ymd{std::chrono::year{d.year}, std::chrono::month{d.month},
                                            std::chrono::day{d.day}};
            if (!ymd.ok()) {
                r.errors().add(e.source(), key_path, "not a valid date");
                return;
            }
            out.push_back(DateRange{ymd, ymd, add});
        } else if (e.is_string()) {
            auto dr = parse_date_range(e.as_string()->get());
            if (!dr) {
                r.errors().add(e.source(), key_path, dr.error().message);
                return;
            }
            dr->add = add;
            out.push_back(*dr);
        } else {
            r.errors().add(e.source(), key_path,
                           "expected a date \"YYYY-MM-DD\" or a range \"YYYY-MM-DD..YYYY-MM-DD\", got " + type_name(e));
        }
    };
    if (const toml::array* a = n->as_array()) {
        size_t i = 0;
        for (const toml::node& e : *a) one(e, r.key(k) + "[" + std::to_string(i++) + "]");
    } else {
        one(*n, r.key(k));
    }
    return out;
}

// A duration such as "2min" or "500ms" within [min, max].
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

// An integer or floating-point number; NaN and infinities are refused.
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

struct Parser {
    Errors errors;
    std::string path;
    Config config;
    std::map<std::string, std::shared_ptr<const TimeZone>> zones;

    Parser(std::string p) : errors(p), path(std::move(p)) {
#ifdef LANES_POLICY_WORKER
        config.policy.worker = LANES_POLICY_WORKER;  // $(libexecdir)/lanes/lanes-policy-worker
#endif
        // A build tree's worker (make check); lanes.toml's [policy] worker wins.
        if (const char* env = secure_getenv("LANES_POLICY_WORKER"); env && *env) config.policy.worker = env;
    }

    void parse_agent(const toml::table& t) {
        using namespace std::chrono;
        TableReader r(errors, t, "agent");
        if (auto v = r.string("textfile_dir")) {
            if (v->empty() || v->front() != '/')
                r.error(*t.get("textfile_dir"), "textfile_dir", "must be an absolute path");
            else config.agent.textfile_dir = *v;
        }
        if (auto d = read_duration(r, "resync_interval", seconds{1}, hours{1}, "1s..1h"))
            config.agent.resync_interval = duration_cast<milliseconds>(*d);
        if (auto d = read_duration(r, "debounce", milliseconds{0}, seconds{1}, "0ms..1s"))
            config.agent.debounce = duration_cast<milliseconds>(*d);
        r.finish();
    }

    void parse_policy(const toml::table& t) {
        TableReader r(errors, t, "policy");
        if (auto s = r.string("script")) {
            if (s->empty()) {
                config.policy.script.clear();
            } else {
                std::filesystem::path script(*s);
                const std::filesystem::path dir = std::filesystem::path(path).parent_path();
                if (script.is_relative() && !dir.empty()) script = dir / script;
                config.policy.script = script.lexically_normal().string();
            }
        }
        if (auto v = r.integer("instruction_budget", 1000, 10'000'000'000LL))
            config.policy.instruction_budget = static_cast<uint64_t>(*v);
        if (const toml::node* n = t.get("memory_limit")) {
            Result<uint64_t> bytes = fail("");
            r.get("memory_limit");
            if (n->is_string()) bytes = parse_bytes(n->as_string()->get());
            else if (n->is_integer() && n->as_integer()->get() >= 0)
                bytes = static_cast<uint64_t>(n->as_integer()->get());
            else bytes = fail("expected a size such as \"16MiB\", got " + type_name(*n));
            if (!bytes) r.error(*n, "memory_limit", bytes.error().message);
            else if (*bytes < (256u << 10) || *bytes > (4ULL << 30))
                r.error(*n, "memory_limit", "out of range (256KiB..4GiB)");
            else config.policy.memory_limit_bytes = *bytes;
        }
        if (const toml::node* n = t.get("time_budget")) {
            r.get("time_budget");
            if (!n->is_string()) {
                r.wrong_type(*n, "time_budget", "a duration such as \"20ms\"");
            } else if (auto d = parse_duration(n->as_string()->get()); !d) {
                r.error(*n, "time_budget", d.error().message);
            } else if (*d < std::chrono::microseconds{100} || *d > std::chrono::seconds{10}) {
                r.error(*n, "time_budget", "out of range (100us..10s): job_submit runs under slurmctld's locks");
            } else {
                config.policy.time_budget = *d;
            }
        }
        if (auto c = r.choice("on_error", {"accept-default", "reject"}))
            config.policy.on_error = *c == "reject" ? PolicyFailureMode::Reject : PolicyFailureMode::AcceptDefault;
        if (const toml::node* n = t.get("worker")) {
            r.get("worker");
            if (!n->is_string()) r.wrong_type(*n, "worker", "an absolute path");
            else if (n->as_string()->get().empty() || n->as_string()->get().front() != '/')
                r.error(*n, "worker", "must be an absolute path (the lanes-policy-worker program)");
            else config.policy.worker = n->as_string()->get();
        }
        if (auto v = r.integer("workers", 1, 64)) config.policy.workers = static_cast<uint32_t>(*v);
        if (auto v = r.integer("queue", 0, 4096)) config.policy.queue = static_cast<uint32_t>(*v);
        if (auto d = read_duration(r, "overrun_cooldown", std::chrono::seconds{0}, std::chrono::hours{1}, "0s..1h"))
            config.policy.overrun_cooldown = std::chrono::duration_cast<std::chrono::milliseconds>(*d);
        if (const toml::node* n = t.get("metrics_file")) {
            r.get("metrics_file");
            if (!n->is_string()) r.wrong_type(*n, "metrics_file", "an absolute path");
            else if (n->as_string()->get().empty() || n->as_string()->get().front() != '/')
                r.error(*n, "metrics_file", "must be an absolute path (a .prom file for node_exporter)");
            else config.policy.metrics_file = n->as_string()->get();
        }
        r.finish();
    }

    std::shared_ptr<const TimeZone> zone(const std::string& name, const toml::node& where, const std::string& key) {
        if (auto it = zones.find(name); it != zones.end()) return it->second;
        auto z = TimeZone::load(name, std::string(kZoneinfoDir));
        if (!z) {
            errors.add(where.source(), key, z.error().message);
            return nullptr;
        }
        zones[name] = *z;
        return *z;
    }

    void parse_window(const std::string& name, const toml::table& t) {
        const std::string prefix = "windows." + name;
        TableReader r(errors, t, prefix);
        Window w;
        w.name = name;
        bool ok = true;
        r.string("description");
        if (auto tz = r.string("timezone")) {
            w.zone = zone(*tz, *t.get("timezone"), r.key("timezone"));
            ok = ok && w.zone;
        } else if (!t.get("timezone")) {
            r.error_here(prefix, "missing key \"timezone\" (an IANA zone such as \"Europe/Berlin\", or \"UTC\")");
            ok = false;
        } else {
            ok = false;
        }
        if (t.get("days")) {
            if (auto d = r.strings("days")) {
                auto days = parse_days(*d);
                if (!days) {
                    r.error(*t.get("days"), "days", days.error().message);
                    ok = false;
                } else {
                    w.days = *days;
                }
            } else {
                ok = false;
            }
        } else {
            w.days.fill(true);  // default: daily
            r.get("days");
        }
        auto start = read_time_of_day(r, "start", false);
        auto end = read_time_of_day(r, "end", true);
        if (!t.get("start")) r.error_here(prefix, "missing key \"start\" (local time of day, e.g. \"08:00\")");
        if (!t.get("end")) r.error_here(prefix, "missing key \"end\" (local time of day, e.g. \"20:00\")");
        if (start && end) {
            w.start = *start;
            w.end = *end;
            if (*start == *end) {
                r.error(*t.get("end"), "end",
                        "the window is empty (start equals end); for a whole day write start = \"00:00\", "
                        "end = \"24:00\"");
                ok = false;
            }
        } else {
            ok = false;
        }
        auto exceptions = read_dates(r, "except", false);
        auto added = read_dates(r, "add", true);
        for (const auto& a : added)
            for (const auto& e : exceptions)
                if (a.first <= e.last && e.first <= a.last)
                    r.error(
                        *t.get("add"), "add",
                        "date " + format_date(std::max(a.first, e.first)) + " is both in \"except\" and in \"add\"");
        w.exceptions = std::move(exceptions);
        w.exceptions.insert(w.exceptions.end(), added.begin(), added.end());
        r.finish();
        if (ok) config.windows.add(std::move(w));
        else broken_windows.insert(name);
    }
    std::set<std::string> broken_windows;

    // [signals.NAME]: parsed before the windows, which may follow them.
    void parse_signal(const std::string& name, const toml::table& t) {
        using namespace std::chrono;
        const std::string prefix = "signals." + name;
        TableReader r(errors, t, prefix);
        SignalConfig s;
        s.name = name;
        s.line = static_cast<int>(t.source().begin.line);
        bool ok = true;
        r.string("description");
        bool https = false;
        if (auto v = r.string("url")) {
            const bool http = v->rfind("http://", 0) == 0;
            https = v->rfind("https://", 0) == 0;
            const size_t host_at = http ? 7 : 8;
            if ((!http && !https) || v->size() <= host_at || (*v)[host_at] == '/' ||
                v->find_first_of(" \t\r\n?#") != std::string::npos) {
                r.error(*t.get("url"), "url",
                        "not an http:// or https:// base URL of a Prometheus API (write e.g. "
                        "\"http://127.0.0.1:9090\"; the query goes in \"query\")");
                ok = false;
            } else {
                s.url = *v;
                while (s.url.size() > host_at + 1 && s.url.back() == '/') s.url.pop_back();
            }
        } else {
            if (!t.get("url"))
                r.error_here(prefix, "missing key \"url\" (the Prometheus API, e.g. \"http://127.0.0.1:9090\")");
            ok = false;
        }
        if (auto v = r.string("query")) {
            if (v->find_first_not_of(" \t\r\n") == std::string::npos) {
                r.error(*t.get("query"), "query", "must not be empty");
                ok = false;
            } else if (v->size() > 8192) {
                r.error(*t.get("query"), "query", "too long (at most 8192 characters)");
                ok = false;
            } else {
                s.query = *v;
            }
        } else {
            if (!t.get("query")) r.error_here(prefix, "missing key \"query\" (a PromQL expression with one value)");
            ok = false;
        }
        if (auto d = read_duration(r, "interval", seconds{1}, hours{1}, "1s..1h"))
            s.interval = duration_cast<milliseconds>(*d);
        else if (t.get("interval")) ok = false;
        if (auto d = read_duration(r, "timeout", milliseconds{10}, minutes{1}, "10ms..1min"))
            s.timeout = duration_cast<milliseconds>(*d);
        else if (t.get("timeout")) ok = false;
        if (!t.get("timeout") && s.timeout > s.interval) s.timeout = s.interval;
        if (s.timeout > s.interval && t.get("timeout")) {
            r.error(*t.get("timeout"), "timeout",
                    "longer than the interval: a slow server would delay every later refresh");
            ok = false;
        }
        s.stale_after = 4 * s.interval;
        if (auto d = read_duration(r, "stale_after", seconds{1}, hours{24}, "1s..24h")) {
            s.stale_after = duration_cast<milliseconds>(*d);
            if (s.stale_after < s.interval) {
                r.error(*t.get("stale_after"), "stale_after",
                        "shorter than the interval: every value would go stale before the next refresh");
                ok = false;
            }
        } else if (t.get("stale_after")) {
            ok = false;
        }
        if (auto v = read_number(r, "fallback")) s.fallback = *v;
        else if (t.get("fallback")) ok = false;
        auto file_key = [&](std::string_view k, std::string& out) {
            if (auto v = r.string(k)) {
                if (v->empty() || v->front() != '/') {
                    r.error(*t.get(k), k, "must be an absolute path");
                    ok = false;
                } else if (!https) {
                    r.error(*t.get(k), k, "only used with an https:// url");
                    ok = false;
                } else {
                    out = *v;
                }
            } else if (t.get(k)) {
                ok = false;
            }
        };
        file_key("ca_file", s.ca_file);
        file_key("client_cert", s.client_cert);
        file_key("client_key", s.client_key);
        if (!s.client_key.empty() && s.client_cert.empty()) {
            r.error(*t.get("client_key"), "client_key", "needs \"client_cert\" as well");
            ok = false;
        }
        if (auto v = r.string("bearer_token_file")) {
            if (v->empty() || v->front() != '/') {
                r.error(*t.get("bearer_token_file"), "bearer_token_file", "must be an absolute path");
                ok = false;
            } else {
                s.bearer_token_file = *v;
            }
        } else if (t.get("bearer_token_file")) {
            ok = false;
        }
        if (const toml::node* n = t.get("max_body")) {
            r.get("max_body");
            Result<uint64_t> bytes = fail("");
            if (n->is_string()) bytes = parse_bytes(n->as_string()->get());
            else bytes = fail("expected a size such as \"1MiB\", got " + type_name(*n));
            if (!bytes) r.error(*n, "max_body", bytes.error().message), ok = false;
            else if (*bytes < 1024 || *bytes > (64ULL << 20))
                r.error(*n, "max_body", "out of range (1KiB..64MiB)"), ok = false;
            else s.max_body_bytes = *bytes;
        }
        r.finish();
        if (ok) config.signals[name] = std::move(s);
        else broken_signals.insert(name);
    }
    std::set<std::string> broken_signals;

    void parse_signals(const toml::table& t) {
        for (auto&& [k, v] : t) {
            const std::string name(k.str());
            const std::string key = "signals." + name;
            if (!valid_name(name)) {
                errors.add(k.source(), key, "signal names may use letters, digits, '-' and '_' only");
                continue;
            }
            if (const toml::table* st = v.as_table()) parse_signal(name, *st);
            else errors.add(v.source(), key, "expected a table [signals." + name + "], got " + type_name(v));
        }
    }

    // [windows.NAME] with `signal`: follows a signal with hysteresis.
    void parse_signal_window(const std::string& name, const toml::table& t) {
        using namespace std::chrono;
        const std::string prefix = "windows." + name;
        TableReader r(errors, t, prefix);
        SignalWindowConfig w;
        w.name = name;
        w.line = static_cast<int>(t.source().begin.line);
        bool ok = true;
        r.string("description");
        if (auto v = r.string("signal")) {
            if (!config.signals.count(*v) && !broken_signals.count(*v)) {
                std::vector<std::string> known;
                for (const auto& [sn, sc] : config.signals) known.push_back(sn);
                std::string msg = "unknown signal " + quote(*v);
                if (auto c = closest(*v, known); !c.empty()) msg += " (did you mean " + quote(c) + "?)";
                else if (known.empty()) msg += " (no [signals.NAME] tables are defined)";
                else msg += " (defined: " + join_quoted(known) + ")";
                r.error(*t.get("signal"), "signal", msg);
                ok = false;
            }
            w.signal = *v;
        } else {
            ok = false;
        }
        auto above = read_number(r, "above");
        if (!above) {
            if (!t.get("above"))
                r.error_here(prefix, "missing key \"above\" (the window begins when the signal is above it)");
            ok = false;
        } else {
            w.above = *above;
        }
        w.until_below = w.above;
        if (auto v = read_number(r, "until_below")) {
            if (above && *v > *above) {
                r.error(*t.get("until_below"), "until_below",
                        "must not be above \"above\" (it is the lower edge of the hysteresis)");
                ok = false;
            }
            w.until_below = *v;
        } else if (t.get("until_below")) {
            ok = false;
        }
        if (auto d = read_duration(r, "for", seconds{0}, hours{24}, "0s..24h")) w.hold_for = duration_cast<seconds>(*d);
        else if (t.get("for")) ok = false;
        w.release_after = w.hold_for;
        if (auto d = read_duration(r, "release_after", seconds{0}, hours{24}, "0s..24h"))
            w.release_after = duration_cast<seconds>(*d);
        else if (t.get("release_after")) ok = false;
        if (auto d = read_duration(r, "retry", seconds{10}, hours{24}, "10s..24h"))
            w.retry = duration_cast<seconds>(*d);
        else if (t.get("retry")) ok = false;
        if (auto c = r.choice("when_unknown", {"idle", "busy", "hold"})) {
            w.when_unknown = *c == "busy"   ? UnknownSignalAction::Busy
                             : *c == "hold" ? UnknownSignalAction::Hold
                                            : UnknownSignalAction::Idle;
            w.when_unknown_set = true;
        } else if (t.get("when_unknown")) {
            ok = false;
        }
        for (const char* timed : {"timezone", "days", "start", "end", "except", "add"}) {
            if (const toml::node* n = t.get(timed)) {
                r.get(timed);
                r.error(*n, timed, "a window follows either a signal or the clock, not both");
                ok = false;
            }
        }
        r.finish();
        if (ok) config.signal_windows[name] = std::move(w);
        else broken_windows.insert(name);
    }

    void parse_windows(const toml::table& t) {
        for (auto&& [k, v] : t) {
            const std::string name(k.str());
            const std::string key = "windows." + name;
            if (!valid_name(name)) {
                errors.add(k.source(), key, "window names may use letters, digits, '-' and '_' only");
                continue;
            }
            if (const toml::table* wt = v.as_table()) {
                if (wt->get("signal")) parse_signal_window(name, *wt);
                else parse_window(name, *wt);
            } else errors.add(v.source(), key, "expected a table [windows." + name + "], got " + type_name(v));
        }
    }

    void parse_class(const std::string& name, const toml::table& t) {
        const std::string prefix = "classes." + name;
        TableReader r(errors, t, prefix);
        ClassConfig c;
        c.name = name;
        r.string("description");
        if (auto v = r.integer("rank", 0, 7)) c.rank = static_cast<int>(*v);
        if (auto v = r.strings("partitions")) c.partitions = *v;
        if (auto v = r.string("qos")) c.qos = *v;
        if (auto v = r.strings("features")) c.features = *v;
        if (auto v = r.integer("nice", -kMaxNice, kMaxNice)) c.nice = static_cast<int32_t>(*v);
        if (auto v = r.strings("avoid_windows")) {
            const toml::node& n = *t.get("avoid_windows");
            std::vector<std::string> known;
            for (const auto& [wn, w] : config.windows.all()) known.push_back(wn);
            for (const auto& [wn, w] : config.signal_windows) known.push_back(wn);
            for (const auto& wname : *v) {
                if (config.windows.find(wname) || config.signal_windows.count(wname) || broken_windows.count(wname)) {
                    if (std::find(c.avoid_windows.begin(), c.avoid_windows.end(), wname) == c.avoid_windows.end())
                        c.avoid_windows.push_back(wname);
                    continue;
                }
                std::string msg = "unknown window " + quote(wname);
                if (auto s = closest(wname, known); !s.empty()) msg += " (did you mean " + quote(s) + "?)";
                else if (known.empty()) msg += " (no [windows.NAME] tables are defined)";
                else msg += " (defined: " + join_quoted(known) + ")";
                r.error(n, "avoid_windows", msg);
            }
        }
        if (auto v = r.choice("window_overrun", {"defer", "shorten", "warn", "reject"})) {
            if (*v == "defer") c.window_overrun = OverrunAction::Defer;
            else if (*v == "shorten") c.window_overrun = OverrunAction::Shorten;
            else if (*v == "warn") c.window_overrun = OverrunAction::Warn;
            else c.window_overrun = OverrunAction::Reject;
        }
        if (auto v = r.strings("borrow_partitions")) {
            c.borrow_partitions = *v;
            if (!t.get("avoid_windows"))
                r.error(*t.get("borrow_partitions"), "borrow_partitions",
                        "borrowing happens outside the class's avoid_windows, but the class has none");
        }
        if (auto v = r.strings("exempt_users")) c.exempt_users = *v;
        if (auto v = r.strings("exempt_accounts")) c.exempt_accounts = *v;
        if (auto v = r.strings("allowed_users")) c.allowed_users = *v;
        if (auto v = r.strings("allowed_accounts")) c.allowed_accounts = *v;
        if (auto v = r.strings("policy_overrides")) {
            static const std::vector<std::string> fields = {"partition", "qos",        "features",
                                                            "nice",      "begin_time", "time_limit"};
            const toml::node& n = *t.get("policy_overrides");
            for (const auto& f : *v) {
                if (std::find(fields.begin(), fields.end(), f) == fields.end()) {
                    std::string msg = "unknown field " + quote(f);
                    if (auto s = closest(f, fields); !s.empty()) msg += " (did you mean " + quote(s) + "?)";
                    else msg += " (expected " + join_quoted(fields) + ")";
                    r.error(n, "policy_overrides", msg);
                } else if (std::find(c.policy_overrides.begin(), c.policy_overrides.end(), f) ==
                           c.policy_overrides.end()) {
                    c.policy_overrides.push_back(f);
                }
            }
        }
        if (const toml::node* n = t.get("dscp")) {
            r.get("dscp");
            if (n->is_integer()) {
                const int64_t v = n->as_integer()->get();
                if (v < 0 || v > 63) r.error(*n, "dscp", "value " + std::to_string(v) + " is out of range (0..63)");
                else c.dscp = static_cast<uint8_t>(v);
            } else if (n->is_string()) {
                auto d = parse_dscp(n->as_string()->get());
                if (!d) r.error(*n, "dscp", d.error().message);
                else c.dscp = *d;
            } else {
                r.wrong_type(*n, "dscp", "a DSCP name such as \"CS1\" or a number 0..63");
            }
        }
        c.rate = read_rate(r, "rate", false);
        c.ceil = read_rate(r, "ceil", false);
        if (c.ceil && !t.get("rate")) {
            r.error(*t.get("ceil"), "ceil", "ceil needs a rate (the guaranteed bandwidth); set \"rate\" as well");
        }
        if (c.rate && c.ceil && c.rate->is_relative() == c.ceil->is_relative()) {
            const bool below = c.rate->is_relative() ? c.ceil->percent < c.rate->percent
                                                     : c.ceil->bits_per_second < c.rate->bits_per_second;
            if (below) {
                const std::string rs = t.get("rate")->value_or(std::string()),
                                  cs = t.get("ceil")->value_or(std::string());
                r.error(*t.get("ceil"), "ceil",
                        "ceil " + quote(cs) + " is below rate " + quote(rs) +
                            " (ceil is the most a job may use, rate what it is guaranteed)");
            }
        }
        if (c.rate && !c.ceil && !t.get("ceil")) c.ceil = c.rate;  // HTB: ceil defaults to rate
        if (auto v = r.boolean("user_may_lower_cap")) c.user_may_lower_cap = *v;
        if (auto v = r.integer("rdma_traffic_class", 0, 255)) c.rdma_traffic_class = static_cast<uint8_t>(*v);
        if (auto v = r.integer("rdma_service_level", 0, 15)) c.rdma_service_level = static_cast<uint8_t>(*v);
        if (auto v = r.string("busy_window")) {
            if (config.signal_windows.count(*v)) {
                c.busy_window = *v;
            } else if (!broken_windows.count(*v)) {
                std::vector<std::string> known;
                for (const auto& [wn, w] : config.signal_windows) known.push_back(wn);
                std::string msg =
                    config.windows.find(*v)
                        ? "window " + quote(*v) + " follows the clock; busy_window must name a window with a \"signal\""
                        : "unknown signal window " + quote(*v);
                if (!config.windows.find(*v)) {
                    if (auto s = closest(*v, known); !s.empty()) msg += " (did you mean " + quote(s) + "?)";
                    else if (known.empty()) msg += " (no [windows.NAME] table has a \"signal\")";
                    else msg += " (defined: " + join_quoted(known) + ")";
                }
                r.error(*t.get("busy_window"), "busy_window", msg);
            }
        }
        c.busy_ceil = read_rate(r, "busy_ceil", false);
        if (t.get("busy_ceil") && !t.get("busy_window"))
            r.error(*t.get("busy_ceil"), "busy_ceil",
                    "needs \"busy_window\" (the signal window during which it applies)");
        if (t.get("busy_window") && !t.get("busy_ceil"))
            r.error(*t.get("busy_window"), "busy_window",
                    "needs \"busy_ceil\" (the ceil jobs get while the window holds)");
        if (t.get("busy_ceil") && !t.get("rate"))
            r.error(*t.get("busy_ceil"), "busy_ceil", "the class has no \"rate\"/\"ceil\" to shift from");
        if (c.busy_ceil && c.ceil && c.busy_ceil->is_relative() == c.ceil->is_relative()) {
            const bool above = c.ceil->is_relative() ? c.busy_ceil->percent > c.ceil->percent
                                                     : c.busy_ceil->bits_per_second > c.ceil->bits_per_second;
            if (above)
                r.error(*t.get("busy_ceil"), "busy_ceil",
                        "above the class's ceil (a busy ceil tightens, it never loosens)");
        }
        r.finish();
        config.classes[name] = std::move(c);
    }

    void parse_classes(const toml::table& t) {
        for (auto&& [k, v] : t) {
            const std::string name(k.str());
            const std::string key = "classes." + name;
            if (!valid_name(name)) {
                errors.add(k.source(), key, "class names may use letters, digits, '-' and '_' only (at most 63)");
                continue;
            }
            if (const toml::table* ct = v.as_table()) parse_class(name, *ct);
            else errors.add(v.source(), key, "expected a table [classes." + name + "], got " + type_name(v));
        }
    }

    // Class names: the ones that exist, for "did you mean".
    std::vector<std::string> class_names() const {
        std::vector<std::string> out;
        for (const auto& [n, c] : config.classes) out.push_back(n);
        return out;
    }

    void check_class_name(const std::string& name, const toml::node& where, const std::string& key) {
        if (config.classes.count(name) || broken_classes.count(name)) return;
        std::string msg = "unknown class " + quote(name);
        auto names = class_names();
        if (auto s = closest(name, names); !s.empty()) msg += " (did you mean " + quote(s) + "?)";
        else if (names.empty()) msg += " (no [classes.NAME] tables are defined)";
        else msg += " (defined: " + join_quoted(names) + ")";
        errors.add(where.source(), key, msg);
    }
    std::set<std::string> broken_classes;

    void parse_rules(const toml::node& node) {
        const toml::array* arr = node.as_array();
        if (!arr || !arr->is_array_of_tables()) {
            errors.add(node.source(), "rules", "expected [[rules]] tables, got " + type_name(node));
            return;
        }
        struct Seen {
            ClassRule rule;
            size_t index;
        };
        std::vector<Seen> seen;
        size_t i = 0;
        for (const toml::node& e : *arr) {
            const toml::table& t = *e.as_table();
            const std::string prefix = "rules[" + std::to_string(i) + "]";
            TableReader r(errors, t, prefix);
            ClassRule rule;
            rule.line = static_cast<int>(t.source().begin.line);
            r.string("description");
            if (auto v = r.string("class")) {
                rule.class_name = *v;
                check_class_name(*v, *t.get("class"), r.key("class"));
            } else if (!t.get("class")) {
                r.error_here(prefix, "missing key \"class\" (the class this rule assigns)");
            }
            if (auto v = r.strings("partitions")) rule.partitions = *v;
            if (auto v = r.strings("name")) rule.name_patterns = *v;
            if (auto v = r.strings("accounts")) rule.accounts = *v;
            if (auto v = r.strings("users")) rule.users = *v;
            if (auto v = r.string("gres")) {
                if (v->empty()) r.error(*t.get("gres"), "gres", "must not be empty (e.g. \"gpu\")");
                else rule.gres = *v;
            }
            if (auto v = r.integer("min_gpus", 1, 1'000'000)) rule.min_gpus = static_cast<uint32_t>(*v);
            if (auto v = r.boolean("interactive")) rule.interactive = *v;
            r.finish();

            auto sorted = [](std::vector<std::string> v) {
                std::sort(v.begin(), v.end());
                v.erase(std::unique(v.begin(), v.end()), v.end());
                return v;
            };
            auto matchers = [&](const ClassRule& x) {
                return std::make_tuple(sorted(x.partitions), sorted(x.name_patterns), sorted(x.accounts),
                                       sorted(x.users), x.gres, x.min_gpus, x.interactive);
            };
            for (const auto& s : seen) {
                const bool catch_all = s.rule.partitions.empty() && s.rule.name_patterns.empty() &&
                                       s.rule.accounts.empty() && s.rule.users.empty() && !s.rule.gres &&
                                       !s.rule.min_gpus && !s.rule.interactive;
                if (catch_all || matchers(s.rule) == matchers(rule)) {
                    r.error_here(prefix, std::string("this rule can never match: rules[") + std::to_string(s.index) +
                                             "] (line " + std::to_string(s.rule.line) + ") " +
                                             (catch_all ? "matches every job" : "has the same matchers") +
                                             " and comes first");
                    break;
                }
            }
            seen.push_back(Seen{rule, i});
            config.rules.push_back(std::move(rule));
            ++i;
        }
    }

    static bool valid_hostlist(std::string_view s) {
        if (s.empty()) return false;
        int depth = 0;
        for (char c : s) {
            if (c == '[') ++depth;
            else if (c == ']') --depth;
            if (depth < 0 || depth > 1) return false;
            if (std::isspace(static_cast<unsigned char>(c))) return false;
        }
        return depth == 0;
    }

    static bool valid_device(std::string_view s) {
        // IFNAMSIZ is 16 with the NUL; a glob may be longer only through '*'.
        if (s.empty() || s.size() > 15) return false;
        for (char c : s)
            if (c == '/' || std::isspace(static_cast<unsigned char>(c)) || c == ':') return false;
        return true;
    }

    static bool valid_prefix(std::string_view s) {
        std::string addr(s);
        int max_len = 32;
        int len = -1;
        if (auto slash = addr.find('/'); slash != std::string::npos) {
            const std::string l = addr.substr(slash + 1);
            addr.resize(slash);
            if (l.empty() || l.size() > 3 ||
                !std::all_of(l.begin(), l.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
                return false;
            len = std::stoi(l);
        }
        unsigned char buf[16];
        if (inet_pton(AF_INET, addr.c_str(), buf) == 1) max_len = 32;
        else if (inet_pton(AF_INET6, addr.c_str(), buf) == 1) max_len = 128;
        else return false;
        return len <= max_len;
    }

    void parse_nic(const toml::table& t, size_t i) {
        const std::string prefix = "nodes.nic[" + std::to_string(i) + "]";
        TableReader r(errors, t, prefix);
        NicSelector nic;
        nic.line = static_cast<int>(t.source().begin.line);
        r.string("description");
        if (auto v = r.string("nodes")) {
            if (!valid_hostlist(*v))
                r.error(*t.get("nodes"), "nodes",
                        "not a host list (write e.g. \"train[1-4]\", \"gpu*\" or \"*\"; no spaces)");
            else nic.nodes = *v;
        }
        const bool has_device = t.get("device") != nullptr, has_route = t.get("route_to") != nullptr;
        if (auto v = r.string("device")) {
            if (!valid_device(*v))
                r.error(*t.get("device"), "device", "not an interface name or glob (at most 15 characters, no '/')");
            else nic.device = *v;
        }
        if (auto v = r.string("route_to")) {
            if (!valid_prefix(*v))
                r.error(*t.get("route_to"), "route_to",
                        "not an IP address or prefix (write e.g. \"10.0.0.0/8\" or \"fd00::/8\")");
            else nic.route_to = *v;
        }
        if (has_device && has_route)
            r.error(*t.get("route_to"), "route_to", "give either \"device\" or \"route_to\", not both");
        if (!has_device && !has_route)
            r.error_here(
                prefix, "missing key: give \"device\" (e.g. \"eth0\", \"ens*\") or \"route_to\" (e.g. \"10.0.0.0/8\")");
        if (auto rate = read_rate(r, "link_speed", true)) nic.link_speed_bits = rate->bits_per_second;
        r.finish();
        config.node.nics.push_back(std::move(nic));
    }

    void parse_nodes(const toml::table& t) {
        TableReader r(errors, t, "nodes");
        if (auto v = r.choice("foreign_qdisc", {"refuse", "adopt"}))
            config.node.foreign_qdisc = *v == "adopt" ? ForeignQdiscAction::Adopt : ForeignQdiscAction::Refuse;
        if (auto v = r.choice("classify_failure", {"fail", "warn"})) config.node.classify_failure_warns = *v == "warn";
        if (const toml::node* n = t.get("root_handle")) {
            r.get("root_handle");
            int64_t v = -1;
            if (n->is_integer()) {
                v = n->as_integer()->get();
            } else if (n->is_string()) {
                std::string s = n->as_string()->get();
                if (!s.empty() && s.back() == ':') s.pop_back();
                if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s = s.substr(2);
                if (!s.empty() && s.size() <= 4 && std::all_of(s.begin(), s.end(), [](char c) {
                        return std::isxdigit(static_cast<unsigned char>(c));
                    }))
                    v = std::stoll(s, nullptr, 16);
                else v = -2;
            } else {
                r.wrong_type(*n, "root_handle", "a hexadecimal handle such as \"1a4e\"");
                v = -3;
            }
            if (v == -2) r.error(*n, "root_handle", "not a hexadecimal qdisc major number (write e.g. \"1a4e\")");
            else if (v != -3 && (v < 1 || v > 0xfffe))
                r.error(*n, "root_handle", "out of range (1..fffe hexadecimal; ffff is the ingress qdisc's)");
            else if (v > 0) config.node.root_handle_major = static_cast<uint16_t>(v);
        }
        if (auto v = r.string("state_dir")) {
            if (v->empty() || v->front() != '/') r.error(*t.get("state_dir"), "state_dir", "must be an absolute path");
            else config.node.state_dir = *v;
        }
        if (auto v = r.string("cgroup_root")) {
            if (*v != "auto" && (v->empty() || v->front() != '/'))
                r.error(*t.get("cgroup_root"), "cgroup_root", "must be \"auto\" or an absolute path");
            else config.node.cgroup_root = *v;
        }
        if (auto rate = read_rate(r, "default_link_speed", true))
            config.node.default_link_speed_bits = rate->bits_per_second;
        if (const toml::node* n = r.get("unclassified_dscp")) {
            if (n->is_integer()) {
                const int64_t v = n->as_integer()->get();
                if (v < 0 || v > 63)
                    r.error(*n, "unclassified_dscp", "value " + std::to_string(v) + " is out of range (0..63)");
                else config.node.unclassified_dscp = static_cast<uint8_t>(v);
            } else if (n->is_string() && n->as_string()->get() == "keep") {
                config.node.unclassified_dscp = std::nullopt;
            } else if (n->is_string()) {
                auto d = parse_dscp(n->as_string()->get());
                if (!d) r.error(*n, "unclassified_dscp", d.error().message + " (or \"keep\")");
                else config.node.unclassified_dscp = *d;
            } else {
                r.wrong_type(*n, "unclassified_dscp", "a DSCP name such as \"CS0\", a number 0..63, or \"keep\"");
            }
        }
        auto urate = read_rate(r, "unclassified_rate", false);
        auto uceil = read_rate(r, "unclassified_ceil", false);
        if (urate) config.node.unclassified_rate = *urate;
        if (uceil) config.node.unclassified_ceil = *uceil;
        if ((urate || uceil) &&
            config.node.unclassified_rate.is_relative() == config.node.unclassified_ceil.is_relative()) {
            const Rate& a = config.node.unclassified_rate;
            const Rate& b = config.node.unclassified_ceil;
            if (a.is_relative() ? b.percent < a.percent : b.bits_per_second < a.bits_per_second)
                r.error(*t.get(uceil ? "unclassified_ceil" : "unclassified_rate"),
                        uceil ? "unclassified_ceil" : "unclassified_rate",
                        "unclassified_ceil is below unclassified_rate (defaults: \"5%\" and \"25%\")");
        }
        if (const toml::node* n = r.get("gso_burst")) {
            std::string text = n->is_string() ? n->as_string()->get() : std::string();
            if (!n->is_string()) {
                r.wrong_type(*n, "gso_burst", "a time such as \"250us\" or \"1ms\", or \"off\"");
            } else if (text == "off") {
                config.node.gso_burst_us = std::nullopt;
            } else {
                uint64_t scale = 0;
                std::string digits = text;
                if (text.ends_with("us")) scale = 1, digits = text.substr(0, text.size() - 2);
                else if (text.ends_with("ms")) scale = 1000, digits = text.substr(0, text.size() - 2);
                bool ok = scale && !digits.empty() && digits.size() <= 6 &&
                          std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
                uint64_t us = ok ? std::stoull(digits) * scale : 0;
                if (!ok || us < 10 || us > 100000)
                    r.error(*n, "gso_burst",
                            "not a time between \"10us\" and \"100ms\" (write e.g. \"250us\"), or \"off\"");
                else config.node.gso_burst_us = static_cast<uint32_t>(us);
            }
        }
        if (auto v = r.integer("parked_classes", 0, 4096)) config.node.parked_classes = static_cast<uint32_t>(*v);
        if (const toml::node* n = r.get("nic")) {
            const toml::array* arr = n->as_array();
            if (!arr || !arr->is_array_of_tables()) {
                r.error(*n, "nic", "expected [[nodes.nic]] tables, got " + type_name(*n));
            } else {
                size_t i = 0;
                for (const toml::node& e : *arr) parse_nic(*e.as_table(), i++);
            }
        }
        r.finish();
    }

    // A class whose avoided windows together cover a whole week can never start.
    void check_never_runs(const toml::table& root) {
        using namespace std::chrono;
        for (const auto& [name, c] : config.classes) {
            if (c.avoid_windows.empty()) continue;
            WindowSet weekly;  // the weekly pattern only: dated exceptions are rare days
            std::vector<Interval> all;
            const SysSeconds from = sys_days{year{2025} / January / 6};  // a Monday
            const SysSeconds to = from + days{21};
            for (const auto& wn : c.avoid_windows) {
                if (config.signal_windows.count(wn)) continue;  // follows a signal, not the clock
                const Window* w = config.windows.find(wn);
                if (!w) return;  // already reported
                Window copy = *w;
                copy.exceptions.clear();
                weekly.add(copy);
                auto occ = weekly.occurrences(wn, from, to);
                all.insert(all.end(), occ.begin(), occ.end());
            }
            std::sort(all.begin(), all.end(), [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
            std::vector<Interval> merged;
            for (const auto& iv : all) {
                if (!merged.empty() && iv.begin <= merged.back().end)
                    merged.back().end = std::max(merged.back().end, iv.end);
                else merged.push_back(iv);
            }
            for (const auto& iv : merged) {
                if (iv.end - iv.begin >= days{7}) {
                    const toml::node* n = root.at_path("classes." + name + ".avoid_windows").node();
                    errors.add(n ? n->source() : root.source(), "classes." + name + ".avoid_windows",
                               "these windows together cover the whole week: jobs of class " + quote(name) +
                                   " could never start");
                    break;
                }
            }
        }
    }

    void parse(const toml::table& root) {
        TableReader r(errors, root, "");
        // Signals, then windows (which may follow signals), then classes: later
        // tables refer to earlier ones, whatever the order in the file.
        if (const toml::node* n = r.get("signals")) {
            if (const toml::table* t = n->as_table()) parse_signals(*t);
            else r.wrong_type(*n, "signals", "a table");
        }
        if (const toml::node* n = r.get("windows")) {
            if (const toml::table* t = n->as_table()) parse_windows(*t);
            else r.wrong_type(*n, "windows", "a table");
        }
        if (const toml::node* n = r.get("policy")) {
            if (const toml::table* t = n->as_table()) parse_policy(*t);
            else r.wrong_type(*n, "policy", "a table");
        }
        if (const toml::node* n = r.get("classes")) {
            if (const toml::table* t = n->as_table()) {
                // Names first, so rules and default_class can refer to broken classes
                // without a second, misleading error.
                for (auto&& [k, v] : *t)
                    if (valid_name(k.str())) broken_classes.insert(std::string(k.str()));
                parse_classes(*t);
                for (const auto& [cn, c] : config.classes) broken_classes.erase(cn);
            } else {
                r.wrong_type(*n, "classes", "a table");
            }
        }
        if (config.classes.empty() && broken_classes.empty())
            errors.add(root.source(), "classes", "no classes defined (add at least one [classes.NAME] table)");
        if (auto v = r.string("default_class")) {
            config.default_class = *v;
            check_class_name(*v, *root.get("default_class"), "default_class");
        } else if (!root.get("default_class") && !config.classes.empty()) {
            if (config.classes.size() == 1) {
                config.default_class = config.classes.begin()->first;
            } else {
                errors.add(root.source(), "default_class",
                           "missing: with several classes, say which one a job gets when nothing else decides "
                           "(e.g. default_class = " +
                               quote(config.classes.begin()->first) + ")");
            }
        }
        if (const toml::node* n = r.get("rules")) parse_rules(*n);
        if (const toml::node* n = r.get("nodes")) {
            if (const toml::table* t = n->as_table()) parse_nodes(*t);
            else r.wrong_type(*n, "nodes", "a table");
        }
        if (const toml::node* n = r.get("agent")) {
            if (const toml::table* t = n->as_table()) parse_agent(*t);
            else r.wrong_type(*n, "agent", "a table");
        }
        r.finish();
        check_never_runs(root);
    }
};

}  // namespace

Result<Config> parse_config(std::string_view text, const std::string& path) {
    Parser p(path);
    toml::table root;
    try {
        root = toml::parse(text, path);
    } catch (const toml::parse_error& e) {
        const auto& b = e.source().begin;
        return fail(std::vector<Diagnostic>{Diagnostic{path, static_cast<int>(b.line), static_cast<int>(b.column), "",
                                                       "syntax error: " + std::string(e.description())}});
    } catch (const std::exception& e) {
        return fail(path + ": cannot parse: " + e.what());
    }
    try {
        p.parse(root);
    } catch (const std::exception& e) {  // out of memory and the like: never leave lib/ as an exception
        return fail(path + ": internal error while validating: " + e.what());
    }
    if (!p.errors.empty()) return fail(p.errors.sorted());
    p.config.path = path;
    p.config.text = std::string(text);
    return std::move(p.config);
}

Result<Config> load_config(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(path + ": cannot open: " + std::strerror(errno));
    std::string text;
    char buf[65536];
    while (in.read(buf, sizeof buf) || in.gcount() > 0) {
        text.append(buf, static_cast<size_t>(in.gcount()));
        if (text.size() > kMaxConfigBytes) return fail(path + ": too large for a configuration file (over 4 MiB)");
    }
    if (in.bad()) return fail(path + ": cannot read: " + std::strerror(errno));
    return parse_config(text, path);
}

std::string default_config_path(bool honour_environment) {
    if (honour_environment) {
        if (const char* env = secure_getenv("LANES_CONFIG"); env && *env) return env;
        // lanes.toml next to slurm.conf when the daemon or tool was pointed at another slurm.conf.
        if (const char* conf = secure_getenv("SLURM_CONF"); conf && *conf) {
            const std::string c(conf);
            if (const auto slash = c.rfind('/'); slash != std::string::npos)
                return c.substr(0, slash + 1) + "lanes.toml";
        }
    }
    return LANES_DEFAULT_CONFIG;
}

std::string_view unknown_signal_action_name(UnknownSignalAction action) {
    switch (action) {
        case UnknownSignalAction::Idle: return "idle";
        case UnknownSignalAction::Busy: return "busy";
        case UnknownSignalAction::Hold: return "hold";
    }
    return "busy";
}

}  // namespace lanes
