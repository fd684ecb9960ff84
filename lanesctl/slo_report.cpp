// SPDX-License-Identifier: GPL-2.0-or-later
#include "lanesctl/slo_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "ctld/windows.hpp"
#include "ctld/windows_config.hpp"
#include "lanesctl/time_spec.hpp"

namespace lanes::ctl {

namespace {

constexpr size_t kMaxRows = 10000;

std::string seconds_text(int64_t s) { return std::to_string(s); }

std::string join(const std::vector<std::string>& items, const char* sep) {
    std::string out;
    for (const auto& item : items) out += (out.empty() ? "" : sep) + item;
    return out;
}

std::string number(const char* fmt, double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, fmt, v);
    return buf;
}

bool has_ceils(const SloReport& report) {
    return std::any_of(report.rows.begin(), report.rows.end(), [](const ReportRow& r) { return !r.ceils.empty(); });
}

// A ceil in bytes per second as tc and lanes.toml write rates (500Mbit).
std::string rate_text(double bytes_per_second) {
    return format_rate(static_cast<uint64_t>(std::llround(std::max(bytes_per_second, 0.0) * 8)));
}

std::string ceils_human(const ReportRow& row) {
    std::string out;
    for (const auto& [host, c] : row.ceils) {
        std::string lo = rate_text(c.lowest), hi = rate_text(c.highest);
        out += (out.empty() ? "" : ",") + host + "=" + (lo == hi ? hi : lo + ".." + hi);
    }
    return out.empty() ? "-" : out;
}

std::string ceils_parsable(const ReportRow& row) {
    std::string out;
    for (const auto& [host, c] : row.ceils)
        out += (out.empty() ? "" : ",") + host + ":" + number("%.0f", c.lowest) + ":" + number("%.0f", c.highest);
    return out;
}

bool slo_met(const ReportRow& row, double slo) { return row.p99 && *row.p99 <= slo; }

std::string met_text(const ReportRow& row, double slo) {
    if (!row.p99) return "-";
    return slo_met(row, slo) ? "yes" : "no";
}

}  // namespace

Result<std::vector<ReportRow>> report_rows(const Config& config, SysSeconds from, SysSeconds to,
                                           const std::vector<std::string>& names, std::chrono::seconds step) {
    if (to <= from)
        return fail("the report's end (" + format_iso(to, nullptr) + ") is not after its begin (" +
                    format_iso(from, nullptr) + ")");
    std::vector<std::string> windows = names;
    for (const auto& name : windows)
        if (!windows_of(config).find(name))
            return fail("--window " + name + ": no scheduled [windows." + name + "] in lanes.toml" +
                        (config.signal_windows.count(name) ? " (it follows a signal; its history is not kept)" : ""));
    if (windows.empty())
        for (const auto& [name, w] : windows_of(config).all()) windows.push_back(name);
    if (step.count() > 0 && (to - from) / step > static_cast<int64_t>(kMaxRows))
        return fail("--step " + std::to_string(step.count()) + "s cuts the range into more than " +
                    std::to_string(kMaxRows) + " rows");
    std::set<SysSeconds> cuts{from, to};
    for (const auto& name : windows)
        for (const auto& occ : windows_of(config).occurrences(name, from, to)) {
            if (occ.begin > from && occ.begin < to) cuts.insert(occ.begin);
            if (occ.end > from && occ.end < to) cuts.insert(occ.end);
        }
    if (step.count() > 0)
        for (SysSeconds t = from + step; t < to; t += step) cuts.insert(t);
    if (cuts.size() - 1 > kMaxRows) return fail("the range has more than " + std::to_string(kMaxRows) + " rows");
    std::vector<ReportRow> rows;
    for (auto it = cuts.begin(), next = std::next(it); next != cuts.end(); ++it, ++next) {
        ReportRow row;
        row.span = {*it, *next};
        for (const auto& name : windows)
            if (windows_of(config).in_window(name, *it)) row.windows.push_back(name);
        rows.push_back(std::move(row));
    }
    return rows;
}

std::string counter_delta_query(const std::string& selector, SysSeconds begin, SysSeconds end, const std::string& by) {
    const std::string b = seconds_text(begin.time_since_epoch().count());
    const std::string e = seconds_text(end.time_since_epoch().count());
    const std::string d = seconds_text((end - begin).count());
    const std::string peak = "max_over_time(" + selector + "[" + d + "s] @ " + e + ")";
    const std::string start = "last_over_time(" + selector + "[5m] @ " + b + ")";
    const std::string per_series = "(clamp_min(" + peak + " - " + start + ", 0) or " + peak + ")";
    if (by.empty()) return "sum(" + per_series + ") or vector(0)";
    return "sum by (" + by + ") (" + per_series + ")";
}

std::string ceil_range_query(const std::string& selector, SysSeconds begin, SysSeconds end, bool highest) {
    const std::string agg = highest ? "max" : "min";
    const std::string e = seconds_text(end.time_since_epoch().count());
    const std::string d = seconds_text((end - begin).count());
    return agg + " by (host) (" + agg + "_over_time(" + selector + "[" + d + "s] @ " + e + "))";
}

std::map<std::string, ReportRow::Ceil> ceils_from_samples(const std::vector<Sample>& lowest,
                                                          const std::vector<Sample>& highest) {
    std::map<std::string, ReportRow::Ceil> out;
    std::map<std::string, double> low;
    for (const auto& s : lowest)
        if (auto h = s.labels.find("host"); h != s.labels.end() && std::isfinite(s.value)) low[h->second] = s.value;
    for (const auto& s : highest) {
        auto h = s.labels.find("host");
        if (h == s.labels.end() || !std::isfinite(s.value)) continue;
        auto l = low.find(h->second);
        out[h->second] = {l == low.end() ? s.value : std::min(l->second, s.value), s.value};
    }
    return out;
}

Result<std::vector<Sample>> parse_prometheus_vector(long http_status, std::string_view body) {
    auto doc = json::parse(body);
    if (!doc) {
        if (http_status != 200) return fail("HTTP " + std::to_string(http_status));
        return fail("the answer is not JSON: " + doc.error().message);
    }
    const json::Value* status = json::find(*doc, "status");
    if (!status || !status->is_string())
        return fail("HTTP " + std::to_string(http_status) + ": no \"status\" in the answer");
    if (*status != "success") {
        const json::Value* type = json::find(*doc, "errorType");
        const json::Value* error = json::find(*doc, "error");
        return fail("Prometheus: " + (type && type->is_string() ? type->get<std::string>() + ": " : "") +
                    (error && error->is_string() ? error->get<std::string>() : "error"));
    }
    const json::Value* data = json::find(*doc, "data");
    const json::Value* type = data ? json::find(*data, "resultType") : nullptr;
    const json::Value* result = data ? json::find(*data, "result") : nullptr;
    if (!type || !type->is_string() || !result) return fail("the answer has no data.resultType and data.result");
    auto value_of = [](const json::Value& pair) -> Result<double> {
        if (!pair.is_array() || pair.size() != 2 || !pair[1].is_string())
            return fail("a value is not [time, \"number\"]");
        const std::string text = pair[1].get<std::string>();
        char* endp = nullptr;
        double v = std::strtod(text.c_str(), &endp);
        if (text.empty() || *endp) return fail("a value is not a number: '" + text + "'");
        return v;
    };
    std::vector<Sample> samples;
    if (*type == "scalar") {
        auto v = value_of(*result);
        if (!v) return fail(v.error());
        samples.push_back({{}, *v});
        return samples;
    }
    if (*type != "vector" || !result->is_array())
        return fail("the answer is a " + type->get<std::string>() + ", not an instant vector");
    for (const auto& series : *result) {
        Sample s;
        const json::Value* metric = json::find(series, "metric");
        const json::Value* value = json::find(series, "value");
        if (!value) return fail("a series has no value");
        if (metric && metric->is_object())
            for (const auto& [k, v] : metric->items())
                if (v.is_string()) s.labels[k] = v.get<std::string>();
        auto v = value_of(*value);
        if (!v) return fail(v.error());
        s.value = *v;
        samples.push_back(std::move(s));
    }
    return samples;
}

Result<Buckets> buckets_from_samples(const std::vector<Sample>& samples) {
    Buckets buckets;
    for (const auto& s : samples) {
        auto it = s.labels.find("le");
        if (it == s.labels.end()) return fail("a histogram series has no 'le' label");
        char* endp = nullptr;
        double le = std::strtod(it->second.c_str(), &endp);
        if (it->second.empty() || *endp || std::isnan(le))
            return fail("a bucket's le=\"" + it->second + "\" is not a number");
        buckets.emplace_back(le, s.value);
    }
    std::sort(buckets.begin(), buckets.end());
    // Counters scraped at slightly different moments can make a bucket look
    // smaller than the one below it; PromQL evens that out the same way.
    for (size_t i = 1; i < buckets.size(); ++i) buckets[i].second = std::max(buckets[i].second, buckets[i - 1].second);
    return buckets;
}

std::optional<double> bucket_quantile(double q, const Buckets& buckets) {
    if (buckets.empty() || !std::isinf(buckets.back().first)) return std::nullopt;
    const double total = buckets.back().second;
    if (!(total > 0)) return std::nullopt;
    if (buckets.size() < 2) return std::nullopt;
    const double rank = q * total;
    size_t b = 0;
    while (b < buckets.size() - 1 && buckets[b].second < rank) ++b;
    if (b == buckets.size() - 1) return buckets[b - 1].first;
    if (b == 0 && buckets[0].first <= 0) return buckets[0].first;
    double start = b == 0 ? 0 : buckets[b - 1].first;
    double below = b == 0 ? 0 : buckets[b - 1].second;
    double in_bucket = buckets[b].second - below;
    if (in_bucket <= 0) return buckets[b].first;
    return start + (buckets[b].first - start) * ((rank - below) / in_bucket);
}

std::optional<double> bucket_fraction_within(double threshold, const Buckets& buckets) {
    if (buckets.empty() || !std::isinf(buckets.back().first)) return std::nullopt;
    const double total = buckets.back().second;
    if (!(total > 0)) return std::nullopt;
    double lower = 0, below = 0;
    for (const auto& [le, count] : buckets) {
        if (std::isinf(le)) break;  // past the last finite bound: nothing to interpolate
        if (threshold <= le) {
            double part = le > lower ? (threshold - lower) / (le - lower) : 1.0;
            return (below + (count - below) * std::clamp(part, 0.0, 1.0)) / total;
        }
        lower = le;
        below = count;
    }
    return below / total;
}

std::string format_slo_report_human(const SloReport& report, bool header) {
    std::string out;
    char line[512];
    const bool ceils = has_ceils(report);
    const char* fmt = "%-24s %-24s %-12s %16s %8s %9s %10s %10s %10s %4s";
    if (header) {
        std::snprintf(line, sizeof line, fmt, "BEGIN", "END", "WINDOWS", "TRAINING_BYTES", "DROPS", "REQUESTS", "P99",
                      "SLO", "ATTAINMENT", "MET");
        out += line;
        out += ceils ? " CEIL\n" : "\n";
    }
    const std::string slo = number("%.3fms", report.slo_seconds * 1e3);
    for (const auto& row : report.rows) {
        std::string windows = row.windows.empty() ? "-" : join(row.windows, ",");
        std::snprintf(line, sizeof line, fmt, format_local(row.span.begin, report.zone).c_str(),
                      format_local(row.span.end, report.zone).c_str(), windows.c_str(),
                      number("%.0f", row.training_bytes).c_str(), number("%.0f", row.training_drops).c_str(),
                      number("%.0f", row.requests).c_str(), row.p99 ? number("%.3fms", *row.p99 * 1e3).c_str() : "-",
                      slo.c_str(), row.attainment ? number("%.2f%%", *row.attainment * 100).c_str() : "-",
                      met_text(row, report.slo_seconds).c_str());
        out += line;
        out += ceils ? " " + ceils_human(row) + "\n" : "\n";
    }
    return out;
}

std::string format_slo_report_parsable(const SloReport& report, bool header) {
    std::string out;
    const bool ceils = has_ceils(report);
    if (header)
        out += std::string("BEGIN|END|WINDOWS|TRAINING_BYTES|TRAINING_DROPS|REQUESTS|P99_SECONDS|SLO_SECONDS|") +
               "ATTAINMENT|SLO_MET" + (ceils ? "|CEIL_BYTES_PER_SECOND\n" : "\n");
    for (const auto& row : report.rows) {
        out += format_iso(row.span.begin, nullptr) + "|" + format_iso(row.span.end, nullptr) + "|" +
               join(row.windows, ",") + "|" + number("%.0f", row.training_bytes) + "|" +
               number("%.0f", row.training_drops) + "|" + number("%.0f", row.requests) + "|" +
               (row.p99 ? number("%.9g", *row.p99) : "") + "|" + number("%.9g", report.slo_seconds) + "|" +
               (row.attainment ? number("%.6f", *row.attainment) : "") + "|" + met_text(row, report.slo_seconds) +
               (ceils ? "|" + ceils_parsable(row) : "") + "\n";
    }
    return out;
}

json::Value slo_report_json(const SloReport& report) {
    json::Value doc = json::Value::object();
    doc["prometheus"] = report.prometheus;
    doc["class"] = report.training_class;
    doc["latency_metric"] = report.latency_metric;
    doc["slo_seconds"] = report.slo_seconds;
    json::Value rows = json::Value::array();
    for (const auto& row : report.rows) {
        json::Value o = json::Value::object();
        o["begin"] = format_iso(row.span.begin, nullptr);
        o["end"] = format_iso(row.span.end, nullptr);
        o["windows"] = row.windows;
        o["training_bytes"] = static_cast<uint64_t>(std::llround(row.training_bytes));
        o["training_drops"] = static_cast<uint64_t>(std::llround(row.training_drops));
        o["inference_requests"] = static_cast<uint64_t>(std::llround(row.requests));
        o["p99_seconds"] = row.p99 ? json::Value(*row.p99) : json::Value();
        o["attainment"] = row.attainment ? json::Value(*row.attainment) : json::Value();
        o["slo_met"] = row.p99 ? json::Value(slo_met(row, report.slo_seconds)) : json::Value();
        if (!row.ceils.empty()) {
            json::Value ceils = json::Value::object();
            for (const auto& [host, c] : row.ceils) {
                json::Value one = json::Value::object();
                one["lowest_bytes_per_second"] = static_cast<uint64_t>(std::llround(std::max(c.lowest, 0.0)));
                one["highest_bytes_per_second"] = static_cast<uint64_t>(std::llround(std::max(c.highest, 0.0)));
                ceils[host] = std::move(one);
            }
            o["ceils"] = std::move(ceils);
        }
        rows.push_back(std::move(o));
    }
    doc["rows"] = std::move(rows);
    return doc;
}

std::string slo_report_gnuplot(const SloReport& report, const std::string& png) {
    // x: the row's middle in the report's zone (gnuplot's time axis is UTC).
    auto local = [&](SysSeconds t) {
        return static_cast<double>(t.time_since_epoch().count()) + (report.zone ? report.zone->offset_at(t) : 0);
    };
    std::string zone =
        report.zone && !report.rows.empty() ? report.zone->abbreviation_at(report.rows.front().span.begin) : "UTC";
    std::string data;
    double ymax_ms = report.slo_seconds * 1e3;
    for (const auto& row : report.rows) {
        double mid = (local(row.span.begin) + local(row.span.end)) / 2;
        double width = static_cast<double>((row.span.end - row.span.begin).count());
        data += number("%.0f", mid) + " " + number("%.0f", width) + " " + number("%.6f", row.training_bytes / 1e6) +
                " " + (row.p99 ? number("%.6f", *row.p99 * 1e3) : "-") + "\n";
        if (row.p99) ymax_ms = std::max(ymax_ms, *row.p99 * 1e3);
    }
    auto quote = [](const std::string& text) {
        std::string escaped;
        for (char c : text) escaped += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
        return escaped;
    };
    const std::string escaped = quote(png);
    // Each node's ceil, Mbit/s: columns 2 (lowest) and 3 (highest) per host.
    std::set<std::string> hosts;
    for (const auto& row : report.rows)
        for (const auto& [host, c] : row.ceils) hosts.insert(host);
    std::string ceil_data;
    for (const auto& row : report.rows) {
        ceil_data += number("%.0f", (local(row.span.begin) + local(row.span.end)) / 2);
        for (const auto& host : hosts) {
            auto it = row.ceils.find(host);
            ceil_data += it == row.ceils.end() ? " - -"
                                               : " " + number("%.6f", it->second.lowest * 8 / 1e6) + " " +
                                                     number("%.6f", it->second.highest * 8 / 1e6);
        }
        ceil_data += "\n";
    }
    std::string s;
    s += "set terminal pngcairo size " + std::to_string(kPlotWidth) + "," + std::to_string(kPlotHeight) +
         " font \"Sans,10\"\n";
    s += "set output \"" + escaped + "\"\n";
    s += "$rows << EOD\n" + data + "EOD\n";
    if (!hosts.empty()) s += "$ceils << EOD\n" + ceil_data + "EOD\nset multiplot layout 2,1\n";
    s += "set datafile missing \"-\"\n";
    s += "set title \"Training class '" + report.training_class + "' vs inference p99 (SLO " +
         number("%.3g", report.slo_seconds * 1e3) + " ms)\"\n";
    s += "set xdata time\nset timefmt \"%s\"\nset format x \"%H:%M:%S\"\n";
    s += "set xlabel \"time (" + zone + ")\"\n";
    s += "set ylabel \"training bytes per row (MB)\"\nset y2label \"inference p99 (ms)\"\n";
    s += "set ytics nomirror\nset y2tics\nset yrange [0:*]\n";
    s += "set y2range [0:" + number("%.6g", ymax_ms * 1.15 + 1e-9) + "]\n";
    s += "set style fill solid 0.5 border -1\nset key top left\nset grid y2tics\n";
    s += "plot $rows using 1:3:2 with boxes lc rgb \"#4477aa\" title \"training bytes (MB)\", \\\n"
         "     $rows using 1:4 axes x1y2 with linespoints pt 7 lc rgb \"#cc3311\" title \"inference p99 (ms)\", \\\n"
         "     " +
         number("%.6g", report.slo_seconds * 1e3) +
         " axes x1y2 with lines dt 2 lw 2 lc rgb \"#222222\" title \"SLO\"\n";
    if (hosts.empty()) return s;
    s += "set title \"Ceil the controller held class '" + quote(report.training_class) +
         "' to, per node (highest and lowest in each row)\"\n";
    s += "unset y2tics\nunset y2label\nset ytics mirror\nset grid ytics\nset ylabel \"ceil (Mbit/s)\"\n";
    s += "set yrange [0:*]\n";
    std::string plots;
    int column = 2;
    for (const auto& host : hosts) {
        plots += std::string(plots.empty() ? "plot " : ", \\\n     ") + "$ceils using 1:" + std::to_string(column + 1) +
                 " with linespoints pt 7 title \"" + quote(host) + " ceil\", \\\n" +
                 "     $ceils using 1:" + std::to_string(column) + " with lines dt 3 notitle";
        column += 2;
    }
    s += plots + "\nunset multiplot\n";
    return s;
}

}  // namespace lanes::ctl
