// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl report: each training window next to inference SLO attainment, from
// Prometheus (the same libcurl fetcher as the signals) and lanes.toml's windows;
// optionally a PNG drawn by gnuplot. See slo_report.hpp and lanesctl(8).
#include <sys/stat.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>

#include "core/lanes_toml.hpp"
#include "ctld/windows_config.hpp"
#include "lanesctl/commands.hpp"
#include "lanesctl/slo_report.hpp"
#include "lanesctl/time_spec.hpp"
#include "signals/curl_fetcher.hpp"

namespace lanes::ctl {

namespace {

// Label values in PromQL selectors: the class and metric names come from
// lanes.toml and the command line; quote what needs it.
std::string promql_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
    return out + "\"";
}

class Prometheus {
public:
    explicit Prometheus(SignalConfig base) : base_(std::move(base)), fetcher_(make_curl_fetcher()) {}
    Result<std::vector<Sample>> query(const std::string& promql) {
        SignalConfig c = base_;
        c.query = promql;
        FetchResult r = fetcher_->fetch(c);
        if (!r.transport_error.empty()) return fail(base_.url + ": " + r.transport_error);
        auto samples = parse_prometheus_vector(r.http_status, r.body);
        if (!samples) return fail(base_.url + ": " + samples.error().message + " (query: " + promql + ")");
        return samples;
    }
    Result<double> number(const std::string& promql) {
        auto samples = query(promql);
        if (!samples) return fail(samples.error());
        double sum = 0;
        for (const auto& s : *samples) sum += s.value;
        return sum;
    }

private:
    SignalConfig base_;
    std::unique_ptr<SignalFetcher> fetcher_;
};

Result<void> draw(const SloReport& report, const std::string& png) {
    std::string script = slo_report_gnuplot(report, png);
    FILE* pipe = popen("gnuplot", "w");
    if (!pipe) return fail("--plot: cannot run gnuplot");
    std::fwrite(script.data(), 1, script.size(), pipe);
    int status = pclose(pipe);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return fail(WIFEXITED(status) && WEXITSTATUS(status) == 127
                        ? "--plot: gnuplot is not installed (Debian: apt-get install gnuplot-nox)"
                        : "--plot: gnuplot failed to draw " + png);
    struct stat st {};
    if (stat(png.c_str(), &st) != 0 || st.st_size == 0) return fail("--plot: gnuplot wrote nothing to " + png);
    return {};
}

}  // namespace

int run_report(const Options& options, const Context& context) {
    auto config = load_controller_config(context.config_path);
    if (!config) {
        print_error(config.error().message);
        return kExitRuntime;
    }
    if (!config->find_class(options.report_class)) {
        print_error("--class " + options.report_class + ": no [classes." + options.report_class + "] in " +
                    context.config_path);
        return kExitUsage;
    }
    // --prometheus: a [signals.NAME] (its URL, TLS and token) or a URL.
    SignalConfig api;
    if (auto it = config->signals.find(options.prometheus_file); it != config->signals.end()) {
        api = it->second;
    } else if (options.prometheus_file.starts_with("http://") || options.prometheus_file.starts_with("https://")) {
        api.name = "report";
        api.url = options.prometheus_file;
    } else {
        print_error("--prometheus: '" + options.prometheus_file +
                    "' is neither an http(s):// URL nor a [signals.NAME] of lanes.toml");
        return kExitUsage;
    }
    api.timeout = std::chrono::seconds(10);
    api.max_body_bytes = 64u << 20;

    auto from_option = time_option("--from", options.from, context, context.now - std::chrono::hours(24));
    if (!from_option) return kExitUsage;
    auto to_option = time_option("--to", options.to, context, context.now);
    if (!to_option) return kExitUsage;
    const SysSeconds from = *from_option, to = *to_option;
    if (options.to.empty() && !options.from.empty() && from >= to) {
        print_error("--from: " + format_iso(from, nullptr) + " is not in the past");
        return kExitUsage;
    }
    auto rows = report_rows(*config, from, to, options.window_names, options.report_step);
    if (!rows) {
        print_error(rows.error().message);
        return kExitUsage;
    }

    SloReport report;
    report.prometheus = api.url;
    report.training_class = options.report_class;
    report.latency_metric = options.latency_metric;
    report.slo_seconds = options.slo_seconds;
    report.zone = context.local_zone.get();
    report.rows = std::move(*rows);

    Prometheus prom(api);
    // What the class sent: series from before the direction label have none.
    const std::string cls = "{class=" + promql_string(options.report_class) + ",direction!=\"ingress\"}";
    const std::string bucket = options.latency_metric + "_bucket";
    // The ceil lanes-agent's controller holds the class to, per node (none
    // without [classes.NAME.control]: the rows stay as they were).
    const std::string ceil = "lanes_agent_ceil_bytes_per_second{class=" + promql_string(options.report_class) + "}";
    for (auto& row : report.rows) {
        auto bytes = prom.number(counter_delta_query("lanes_job_bytes_total" + cls, row.span.begin, row.span.end));
        auto drops = prom.number(counter_delta_query("lanes_job_drops_total" + cls, row.span.begin, row.span.end));
        const std::string by_le = counter_delta_query(bucket, row.span.begin, row.span.end, "le");
        auto samples = prom.query(by_le);
        for (const auto* r : {&bytes, &drops}) {
            if (!*r) {
                print_error("report: " + r->error().message);
                return kExitRuntime;
            }
        }
        if (!samples) {
            print_error("report: " + samples.error().message);
            return kExitRuntime;
        }
        auto lowest = prom.query(ceil_range_query(ceil, row.span.begin, row.span.end, false));
        auto highest = prom.query(ceil_range_query(ceil, row.span.begin, row.span.end, true));
        for (const auto* r : {&lowest, &highest}) {
            if (!*r) {
                print_error("report: " + r->error().message);
                return kExitRuntime;
            }
        }
        row.ceils = ceils_from_samples(*lowest, *highest);
        auto buckets = buckets_from_samples(*samples);
        if (!buckets) {
            print_error("report: " + bucket + ": " + buckets.error().message);
            return kExitRuntime;
        }
        row.training_bytes = *bytes;
        row.training_drops = *drops;
        row.requests = buckets->empty() ? 0 : buckets->back().second;
        row.attainment = bucket_fraction_within(options.slo_seconds, *buckets);
        if (row.requests > 0) {
            // p99 as Prometheus computes it (histogram_quantile over the same buckets).
            auto p99 = prom.number("histogram_quantile(0.99, " + by_le + ")");
            if (!p99) {
                print_error("report: " + p99.error().message);
                return kExitRuntime;
            }
            if (std::isfinite(*p99)) row.p99 = *p99;
        }
    }

    if (options.json) {
        print_json(slo_report_json(report));
    } else if (options.parsable) {
        std::string text = format_slo_report_parsable(report, !options.noheader);
        print_human(text);
    } else {
        std::string text = format_slo_report_human(report, !options.noheader);
        print_human(text);
    }
    std::fflush(stdout);
    if (!options.plot_file.empty()) {
        if (auto drawn = draw(report, options.plot_file); !drawn) {
            print_error(drawn.error().message);
            return kExitRuntime;
        }
    }
    return kExitOk;
}

}  // namespace lanes::ctl
