// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [classes.NAME.control]: see toml_control.hpp.
#include "core/toml_control.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

namespace lanes {

std::chrono::seconds promql_query_range(std::string_view query) {
    using namespace std::chrono;
    seconds longest{0};
    size_t at = 0;
    while ((at = query.find('[', at)) != std::string_view::npos) {
        const size_t end = query.find_first_of("]:", at + 1);
        if (end == std::string_view::npos) break;
        // A PromQL duration: one or more number+unit pairs ("1h30m").
        std::string_view d = query.substr(at + 1, end - at - 1);
        double total = 0;
        bool ok = !d.empty();
        size_t i = 0;
        while (ok && i < d.size()) {
            size_t j = i;
            while (j < d.size() && std::isdigit(static_cast<unsigned char>(d[j]))) ++j;
            size_t k = j;
            while (k < d.size() && std::isalpha(static_cast<unsigned char>(d[k]))) ++k;
            if (j == i || k == j) {
                ok = false;
                break;
            }
            const double n = std::stod(std::string(d.substr(i, j - i)));
            const std::string_view unit = d.substr(j, k - j);
            if (unit == "ms") total += n / 1000;
            else if (unit == "s") total += n;
            else if (unit == "m") total += n * 60;
            else if (unit == "h") total += n * 3600;
            else if (unit == "d") total += n * 86400;
            else if (unit == "w") total += n * 7 * 86400;
            else if (unit == "y") total += n * 365 * 86400;
            else ok = false;
            i = k;
        }
        if (ok) longest = std::max(longest, seconds(static_cast<int64_t>(total + 0.999)));
        at = end;
    }
    return longest;
}

std::chrono::seconds signal_delay(const SignalConfig& signal) {
    using namespace std::chrono;
    return ceil<seconds>(signal.interval) + promql_query_range(signal.query);
}

}  // namespace lanes

namespace lanes::config_parse {
namespace {

std::string seconds_text(std::chrono::seconds s) { return std::to_string(s.count()) + "s"; }
std::string number_text(double v) {
    std::ostringstream out;
    out << v;
    return out.str();
}

// Whether a is above b, when both are of the same kind (absolute or relative).
bool comparable_above(const Rate& a, const Rate& b) {
    if (a.is_relative() != b.is_relative()) return false;
    return a.is_relative() ? a.percent > b.percent : a.bits_per_second > b.bits_per_second;
}

}  // namespace

void parse_class_control(ConfigParse& ctx, TableReader& cr, ClassConfig& cls) {
    using namespace std::chrono;
    const toml::node* n = cr.get("control");
    if (!n) return;
    const toml::table* t = n->as_table();
    if (!t) {
        cr.wrong_type(*n, "control", "a table [" + cr.prefix() + ".control]");
        return;
    }
    const std::string prefix = cr.prefix() + ".control";
    TableReader r(ctx.errors, *t, prefix);
    CeilControlConfig c;
    c.line = static_cast<int>(t->source().begin.line);
    bool ok = true;
    auto missing = [&](const char* key, const std::string& what) {
        r.error_here(prefix, "missing key \"" + std::string(key) + "\" (" + what + ")");
        ok = false;
    };
    auto signal_key = [&](const char* key, std::string& out) -> const SignalConfig* {
        auto v = r.string(key);
        if (!v) {
            if (t->get(key)) ok = false;
            return nullptr;
        }
        auto it = ctx.config.signals.find(*v);
        if (it != ctx.config.signals.end()) {
            out = *v;
            return &it->second;
        }
        ok = false;
        if (ctx.broken_signals.count(*v)) return nullptr;
        std::vector<std::string> known;
        for (const auto& [sn, s] : ctx.config.signals) known.push_back(sn);
        std::string msg = "unknown signal " + quote(*v);
        if (auto s = closest(*v, known); !s.empty()) msg += " (did you mean " + quote(s) + "?)";
        else if (known.empty()) msg += " (no [signals.NAME] tables are defined)";
        else msg += " (defined: " + join_quoted(known) + ")";
        r.error(*t->get(key), key, msg);
        return nullptr;
    };
    const SignalConfig* signal = signal_key("signal", c.signal);
    if (!t->get("signal")) missing("signal", "the [signals.NAME] to hold under \"slo\"");
    if (t->get("load_signal")) signal_key("load_signal", c.load_signal);
    const SignalConfig* congestion = nullptr;
    if (t->get("congestion_signal")) congestion = signal_key("congestion_signal", c.congestion_signal);
    if (auto v = read_number(r, "congestion_above")) {
        if (*v < 0) r.error(*t->get("congestion_above"), "congestion_above", "must be 0 or above"), ok = false;
        else c.congestion_above = *v;
        if (!t->get("congestion_signal"))
            r.error(*t->get("congestion_above"), "congestion_above",
                    "needs \"congestion_signal\" (the signal whose value it bounds)"),
                ok = false;
    } else if (t->get("congestion_above")) {
        ok = false;
    } else if (t->get("congestion_signal")) {
        missing("congestion_above",
                "the congestion signal's value at or under which an SLO break is not the network's, e.g. 0.002 for "
                "a queue of 2 ms");
    }

    // The strain by count: how many of the last decisions at a ceil saw the
    // network queue, the SLO met (ceil_controller.hpp).
    if (auto v = r.integer("strain_count", 1, 64)) {
        c.strain_count = static_cast<int>(*v);
        if (!t->get("congestion_signal"))
            r.error(*t->get("strain_count"), "strain_count",
                    "needs \"congestion_signal\" (the signal whose value over congestion_above it counts)"),
                ok = false;
    } else if (t->get("strain_count")) {
        ok = false;
    }
    if (auto v = r.integer("strain_window", 1, 64)) {
        c.strain_window = static_cast<int>(*v);
        if (!t->get("strain_count"))
            r.error(*t->get("strain_window"), "strain_window",
                    "needs \"strain_count\" (how many of these decisions must see a queue)"),
                ok = false;
        else if (c.strain_count > c.strain_window)
            r.error(*t->get("strain_window"), "strain_window",
                    "smaller than strain_count (" + std::to_string(c.strain_count) +
                        "): the strain could never be counted"),
                ok = false;
    } else if (t->get("strain_window")) {
        ok = false;
    } else if (c.strain_count > 0) {
        c.strain_window = c.strain_count;  // that many in a row
    }
    if (auto v = read_number(r, "strain_decrease")) {
        if (*v <= 0 || *v >= 1)
            r.error(*t->get("strain_decrease"), "strain_decrease",
                    "out of range (0 < strain_decrease < 1: the factor a strained ceil is multiplied by)"),
                ok = false;
        else c.strain_decrease = *v;
        if (!t->get("congestion_signal"))
            r.error(*t->get("strain_decrease"), "strain_decrease",
                    "needs \"congestion_signal\" (a strain is the network queueing while the SLO holds)"),
                ok = false;
    } else if (t->get("strain_decrease")) {
        ok = false;
    }

    if (auto v = read_number(r, "rest_below")) {
        if (*v < 0 || *v >= 1)
            r.error(*t->get("rest_below"), "rest_below",
                    "out of range (0 <= rest_below < 1: the fraction under the lowest ceil too much at a load that the "
                    "ceil rests at)"),
                ok = false;
        else c.rest_below = *v;
    } else if (t->get("rest_below")) {
        ok = false;
    }
    if (auto v = read_number(r, "quiet_below")) {
        if (*v < 0) r.error(*t->get("quiet_below"), "quiet_below", "must be 0 or above"), ok = false;
        else c.quiet_below = *v;
        if (!t->get("congestion_signal"))
            r.error(*t->get("quiet_below"), "quiet_below",
                    "needs \"congestion_signal\" (the signal whose value says the network's queue is quiet)"),
                ok = false;
        else if (*v >= c.congestion_above && t->get("congestion_above"))
            r.error(*t->get("quiet_below"), "quiet_below",
                    "must be under congestion_above (" + number_text(c.congestion_above) +
                        "): a quiet queue is one far from a strain"),
                ok = false;
        if (c.rest_below <= 0)
            r.error(*t->get("quiet_below"), "quiet_below",
                    "needs \"rest_below\" above 0 (a quiet raise moves by at most half of rest_below times the "
                    "bound, and stops rest_below / 2 under it)"),
                ok = false;
    } else if (t->get("quiet_below")) {
        ok = false;
    }
    if (auto v = read_number(r, "slo")) {
        if (*v <= 0) r.error(*t->get("slo"), "slo", "must be above 0"), ok = false;
        else c.slo = *v;
    } else if (t->get("slo")) {
        ok = false;
    } else {
        missing("slo", "the signal's value not to exceed, e.g. 0.01 for a p99 of 10 ms");
    }
    if (auto v = read_number(r, "margin")) {
        if (*v < 0 || *v >= 1) r.error(*t->get("margin"), "margin", "out of range (0 <= margin < 1)"), ok = false;
        else c.margin = *v;
    } else if (t->get("margin")) {
        ok = false;
    }
    if (auto v = read_number(r, "decrease")) {
        if (*v <= 0 || *v >= 1)
            r.error(*t->get("decrease"), "decrease",
                    "out of range (0 < decrease < 1: the factor the ceil is multiplied by when the SLO breaks)"),
                ok = false;
        else c.decrease = *v;
    } else if (t->get("decrease")) {
        ok = false;
    }
    if (auto v = read_number(r, "full_decrease_at")) {
        if (*v < 1)
            r.error(*t->get("full_decrease_at"), "full_decrease_at",
                    "must be 1 or above (a multiple of slo: the signal's value from which a break takes the whole "
                    "decrease; 1: every break)"),
                ok = false;
        else c.full_decrease_at = *v;
    } else if (t->get("full_decrease_at")) {
        ok = false;
    }
    if (auto v = read_rate(r, "floor", false)) {
        c.floor = *v;
        if (cls.ceil && comparable_above(c.floor, *cls.ceil))
            r.error(*t->get("floor"), "floor",
                    "above the class's ceil (the controller moves the ceil between the two)"),
                ok = false;
        else if (v->bits_per_second == 0 && !v->is_relative())
            r.error(*t->get("floor"), "floor", "must be above 0"), ok = false;
    } else if (t->get("floor")) {
        ok = false;
    } else {
        missing("floor", "the lowest ceil the controller sets, e.g. \"10%\"");
    }
    if (auto v = read_rate(r, "increase", false)) {
        if (v->bits_per_second == 0 && !v->is_relative())
            r.error(*t->get("increase"), "increase", "a step of zero never raises the ceil"), ok = false;
        else c.increase = *v;
    } else if (t->get("increase")) {
        ok = false;
    } else {
        missing("increase", "the step the ceil rises by while the SLO holds, e.g. \"5%\"");
    }
    if (auto v = read_rate(r, "min_gap", false)) {
        if (v->bits_per_second == 0 && !v->is_relative())
            r.error(*t->get("min_gap"), "min_gap",
                    "must be above 0 (a gap of zero would probe the ceil that broke the SLO for ever)"),
                ok = false;
        else c.min_gap = *v;
    } else if (t->get("min_gap")) {
        ok = false;
    }
    if (auto d = read_duration(r, "dwell", seconds{1}, hours{24}, "1s..24h")) {
        c.dwell = duration_cast<seconds>(*d);
        if (duration_cast<microseconds>(c.dwell) != *d)
            r.error(*t->get("dwell"), "dwell", "must be a whole number of seconds"), ok = false;
        else if (signal && c.dwell < signal_delay(*signal))
            r.error(*t->get("dwell"), "dwell",
                    "shorter than the delay of signal " + quote(c.signal) + " (" + seconds_text(signal_delay(*signal)) +
                        ": its interval " + seconds_text(ceil<seconds>(signal->interval)) + " plus the query's range " +
                        seconds_text(promql_query_range(signal->query)) +
                        "): the next decision would not see the last one's effect, and the ceil would swing"),
                ok = false;
        else if (congestion && c.dwell < signal_delay(*congestion))
            r.error(*t->get("dwell"), "dwell",
                    "shorter than the delay of congestion_signal " + quote(c.congestion_signal) + " (" +
                        seconds_text(signal_delay(*congestion)) +
                        "): a decision would weigh a break against the network of an earlier moment"),
                ok = false;
    } else if (t->get("dwell")) {
        ok = false;
    } else {
        missing("dwell", "how long each ceil is held at least; at least the signal's interval plus the query's range");
    }
    if (auto d = read_duration(r, "backoff", seconds{1}, hours{24 * 7}, "1s..7d")) {
        c.backoff = duration_cast<seconds>(*d);
        if (c.backoff < c.dwell)
            r.error(*t->get("backoff"), "backoff", "shorter than the dwell (a back-off counts whole dwells)"),
                ok = false;
    } else if (t->get("backoff")) {
        ok = false;
    }
    if (c.rest_below > 0 && cls.ceil && t->get("floor") && c.floor.is_relative() == cls.ceil->is_relative()) {
        // Every resting ceil would be the floor: the controller could only cut.
        const double top = cls.ceil->is_relative() ? cls.ceil->percent : static_cast<double>(cls.ceil->bits_per_second);
        const double floor = c.floor.is_relative() ? c.floor.percent : static_cast<double>(c.floor.bits_per_second);
        if (floor >= top * (1 - c.rest_below))
            r.error(*t->get("rest_below"), "rest_below",
                    "puts the highest resting ceil, (1 - rest_below) times the class's ceil, at or under the floor: "
                    "the controller would hold every job at the floor"),
                ok = false;
    }
    r.finish();
    if (!cls.rate && !cls.ceil) {
        cr.error(*n, "control", "the class has no \"rate\"/\"ceil\" for the controller to move"), ok = false;
    }
    if (!cls.busy_window.empty() || cr.table().get("busy_window")) {
        cr.error(*n, "control", "a class follows either busy_window/busy_ceil (two levels) or a controller, not both"),
            ok = false;
    }
    if (ok) cls.control = std::move(c);
}

}  // namespace lanes::config_parse
