// SPDX-License-Identifier: GPL-2.0-or-later
// `lanesctl report`: each training window next to inference SLO attainment.
// The rows are the stretches of [from, to) between the boundaries of lanes.toml's
// scheduled windows (cut further every --step); per row the bytes and drops the
// training class's jobs put through their HTB classes (Lanes' own counters,
// lanes_job_bytes_total / lanes_job_drops_total as `lanesctl status --prometheus`
// exports them) and the inference latency histogram's p99 and SLO attainment,
// all read from Prometheus. This half is pure: the rows, the PromQL, the answer
// parser, the histogram arithmetic, the tables and the gnuplot script.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/lanes_toml.hpp"
#include "core/result.hpp"
#include "ctld/windows.hpp"
#include "lanesctl/json.hpp"

namespace lanes::ctl {

struct ReportRow {
    Interval span;
    std::vector<std::string> windows;  // scheduled windows in force during the whole row
    // Filled from Prometheus:
    double training_bytes = 0;
    double training_drops = 0;
    double requests = 0;               // inference requests answered in the row
    std::optional<double> p99;         // seconds; none without requests
    std::optional<double> attainment;  // fraction of requests within the SLO
    // Per node (the host label): the lowest and highest ceil, bytes per second,
    // the class's controller ([classes.NAME.control]) held its jobs to during
    // the row, from lanes-agent's lanes_agent_ceil_bytes_per_second samples
    // in the row. Empty without a controller (or no sample in the row).
    struct Ceil {
        double lowest = 0;
        double highest = 0;
    };
    std::map<std::string, Ceil> ceils;
};

// Rows of [from, to): cut at every begin and end of the occurrences of `names`
// (empty: every scheduled window of the config), then every `step` (0: never).
// Unknown names are errors. At most 10000 rows (an error beyond).
Result<std::vector<ReportRow>> report_rows(const Config& config, SysSeconds from, SysSeconds to,
                                           const std::vector<std::string>& names, std::chrono::seconds step);

// PromQL for what a counter counted during [begin, end): per series the highest
// value in the row minus the value at its begin (a series born inside the row,
// a job that started then, counts from zero), summed; `by` non-empty sums by
// that label. No extrapolation, unlike increase(): the numbers are the
// counters' own. `selector` is a metric with its label matchers.
std::string counter_delta_query(const std::string& selector, SysSeconds begin, SysSeconds end,
                                const std::string& by = "");

// PromQL for the controller's ceil per node during [begin, end): the
// `highest` (else lowest) sample of each series in the row, then the same
// across a node's NICs, by host. `selector` is the gauge with its matchers.
std::string ceil_range_query(const std::string& selector, SysSeconds begin, SysSeconds end, bool highest);

// One series of an instant vector.
struct Sample {
    std::map<std::string, std::string> labels;
    double value = 0;
};
// A /api/v1/query answer: a vector (or a scalar, as one unlabelled sample).
// Errors name the HTTP status, Prometheus' errorType and error, or the JSON fault.
Result<std::vector<Sample>> parse_prometheus_vector(long http_status, std::string_view body);

// The two ceil_range_query answers -> the row's ceils by host (series without
// a host label are skipped: agents before the label).
std::map<std::string, ReportRow::Ceil> ceils_from_samples(const std::vector<Sample>& lowest,
                                                          const std::vector<Sample>& highest);

// Cumulative histogram buckets (upper bound, count), as the `le` label gives them.
using Buckets = std::vector<std::pair<double, double>>;
// Samples labelled `le` -> sorted buckets; an unparsable `le` is an error.
Result<Buckets> buckets_from_samples(const std::vector<Sample>& samples);
// PromQL's histogram_quantile over the buckets (linear within a bucket; in the
// +Inf bucket, the highest finite bound). None without observations.
std::optional<double> bucket_quantile(double q, const Buckets& buckets);
// Fraction of observations at or under `threshold`, interpolated linearly in
// its bucket the same way. None without observations.
std::optional<double> bucket_fraction_within(double threshold, const Buckets& buckets);

struct SloReport {
    std::string prometheus;  // the API's base URL
    std::string training_class;
    std::string latency_metric;
    double slo_seconds = 0;
    const TimeZone* zone = nullptr;  // for the human table (null: UTC)
    std::vector<ReportRow> rows;
};

// Human: a table, times in `zone`; --parsable: '|'-separated, ISO 8601 UTC
// times, exact numbers; header unless `header` is false. When a row has a
// controller's ceil, both grow a last column CEIL (human: "n1=500Mbit" or
// "n1=400Mbit..600Mbit", nodes comma-separated; parsable CEIL_BYTES_PER_SECOND:
// "n1:LOWEST:HIGHEST,..."), the JSON rows a "ceils" object and the plot a
// second panel with each node's ceil; without one, all are as before.
std::string format_slo_report_human(const SloReport& report, bool header);
std::string format_slo_report_parsable(const SloReport& report, bool header);
json::Value slo_report_json(const SloReport& report);

// The plot's pixel size.
inline constexpr int kPlotWidth = 960;
inline constexpr int kPlotHeight = 540;
// A gnuplot script drawing the report into `png` (training MB per row as boxes,
// p99 in ms as points, the SLO as a line); data inline.
std::string slo_report_gnuplot(const SloReport& report, const std::string& png);

}  // namespace lanes::ctl
