// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [windows.NAME]: windows that follow the clock (days, times, a time
// zone, dated exceptions) or a signal (with hysteresis). The syntax only: the
// controller side loads the time zones and checks that a class's avoided
// windows leave it some time to start (lib/ctld/windows_config.cpp).
#include "core/toml_windows.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/window_spec.hpp"

namespace lanes::config_parse {
namespace {

// Where a node is, as Errors::add would report it.
SourceSpot spot(const toml::source_region& where, std::string key) {
    SourceSpot out{static_cast<int>(where.begin.line), static_cast<int>(where.begin.column), std::move(key)};
    if (out.line == 0) out = SourceSpot{1, 1, std::move(out.key)};  // implicit tables have no position
    return out;
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

void parse_window(ConfigParse& ctx, const std::string& name, const toml::table& t) {
    const std::string prefix = "windows." + name;
    TableReader r(ctx.errors, t, prefix);
    WindowSpec w;
    w.name = name;
    bool ok = true;
    r.string("description");
    if (auto tz = r.string("timezone")) {
        // Looked up by the controller side (lib/ctld/windows_config.cpp).
        w.timezone = *tz;
        ctx.config.window_specs.zones.push_back({*tz, spot(t.get("timezone")->source(), r.key("timezone"))});
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
                r.error(*t.get("add"), "add",
                        "date " + format_date(std::max(a.first, e.first)) + " is both in \"except\" and in \"add\"");
    w.exceptions = std::move(exceptions);
    w.exceptions.insert(w.exceptions.end(), added.begin(), added.end());
    r.finish();
    if (ok) ctx.config.window_specs.clock[name] = std::move(w);
    else ctx.broken_windows.insert(name);
}

// [windows.NAME] with `signal`: follows a signal with hysteresis.
void parse_signal_window(ConfigParse& ctx, const std::string& name, const toml::table& t) {
    using namespace std::chrono;
    const std::string prefix = "windows." + name;
    TableReader r(ctx.errors, t, prefix);
    SignalWindowConfig w;
    w.name = name;
    w.line = static_cast<int>(t.source().begin.line);
    bool ok = true;
    r.string("description");
    if (auto v = r.string("signal")) {
        if (!ctx.config.signals.count(*v) && !ctx.broken_signals.count(*v)) {
            std::vector<std::string> known;
            for (const auto& [sn, sc] : ctx.config.signals) known.push_back(sn);
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
    if (auto d = read_duration(r, "retry", seconds{10}, hours{24}, "10s..24h")) w.retry = duration_cast<seconds>(*d);
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
    if (ok) ctx.config.signal_windows[name] = std::move(w);
    else ctx.broken_windows.insert(name);
}

}  // namespace

void parse_windows_section(ConfigParse& ctx, const toml::table& t) {
    for (auto&& [k, v] : t) {
        const std::string name(k.str());
        const std::string key = "windows." + name;
        if (!valid_name(name)) {
            ctx.errors.add(k.source(), key, "window names may use letters, digits, '-' and '_' only");
            continue;
        }
        if (const toml::table* wt = v.as_table()) {
            if (wt->get("signal")) parse_signal_window(ctx, name, *wt);
            else parse_window(ctx, name, *wt);
        } else ctx.errors.add(v.source(), key, "expected a table [windows." + name + "], got " + type_name(v));
    }
}

void note_avoid_windows(ConfigParse& ctx, const toml::table& root) {
    for (const auto& [name, c] : ctx.config.classes) {
        if (c.avoid_windows.empty()) continue;
        const std::string key = "classes." + name + ".avoid_windows";
        const toml::node* n = root.at_path(key).node();
        ctx.config.window_specs.avoid_windows[name] = spot(n ? n->source() : root.source(), key);
    }
}

}  // namespace lanes::config_parse
