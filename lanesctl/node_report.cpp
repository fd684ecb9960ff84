// SPDX-License-Identifier: GPL-2.0-or-later
#include "lanesctl/node_report.hpp"

#include <charconv>
#include <cstdio>
#include <tuple>

#include "core/lanes_toml.hpp"
#include "core/text.hpp"
#include "node/ingress_plan.hpp"

namespace lanes::ctl {

namespace {

std::string hex_minor(uint16_t minor) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%x", minor);
    return buf;
}

std::string dscp_text(const std::optional<uint8_t>& dscp) { return dscp ? dscp_name(*dscp) : std::string("-"); }

std::string pad(std::string s, size_t width) {
    if (s.size() < width) s.resize(width, ' ');
    return s;
}

std::string rpad(const std::string& s, size_t width) {
    return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

json::Value u64(uint64_t v) { return json::Value(static_cast<int64_t>(v)); }

std::string parked_class_name(const ParkedClass& p) { return hex_minor(p.root_major) + ":" + hex_minor(p.minor); }

}  // namespace

namespace {

std::string format_status_parsable(const StatusReport& report, bool header) {
    std::string out;
    if (header) out += "JOBID|CLASS|DEVICE|RATE|CEIL|DSCP|BYTES|PACKETS|DROPS|OVERLIMITS|BACKLOG|ERROR\n";
    // '|' and newlines cannot appear in a field: they would shift the columns.
    auto field = [](const std::string& text) {
        std::string s = terminal_text(text);
        for (char& c : s)
            if (c == '|' || c == '\n') c = ' ';
        return s;
    };
    for (const auto& job : report.jobs) {
        const auto& st = job.state;
        const std::string head = std::to_string(st.job_id) + "|" + field(st.class_name) + "|";
        if (!job.error.empty() || st.devices.empty()) {
            out += head + "|||" + field(dscp_text(st.net.dscp)) + "||||||" + field(job.error) + "\n";
            continue;
        }
        for (const auto& dev : st.devices) {
            auto it = job.counters.find(dev.device);
            ClassCounters c = it == job.counters.end() ? ClassCounters{} : it->second;
            out += head + field(dev.device) + "|" + format_rate(dev.rate_bits) + "|" + format_rate(dev.ceil_bits) +
                   "|" + dscp_text(st.net.dscp) + "|" + std::to_string(c.bytes) + "|" + std::to_string(c.packets) +
                   "|" + std::to_string(c.drops) + "|" + std::to_string(c.overlimits) + "|" +
                   std::to_string(c.backlog) + "|\n";
        }
        for (const auto& dev : st.ingress_devices) {
            auto it = job.ingress_counters.find(dev.device);
            ClassCounters c = it == job.ingress_counters.end() ? ClassCounters{} : it->second;
            out += head + "in:" + field(dev.device) + "|" + format_rate(dev.rate_bits) + "|" +
                   format_rate(dev.ceil_bits) + "||" + std::to_string(c.bytes) + "|" + std::to_string(c.packets) + "|" +
                   std::to_string(c.drops) + "|" + std::to_string(c.overlimits) + "|" + std::to_string(c.backlog) +
                   "|\n";
        }
    }
    return out;
}

}  // namespace

// "paths: JobId=11 training: bulk0 (table 0x4c4e0fac)", one line per job on a path.
static std::string paths_lines(const StatusReport& report) {
    std::string out;
    for (const auto& job : report.jobs)
        if (job.path)
            out += "path: JobId=" + std::to_string(job.state.job_id) + " " + terminal_text(job.state.class_name) +
                   ": " + terminal_text(job.path->path.describe()) + ", fwmark " + path_mark_text(job.path->path.mark) +
                   "\n";
    return out;
}

// "parked: 1a4e:41 (eth0), 1a4e:42 (eth0)": no job's traffic goes there.
static std::string parked_line(const StatusReport& report) {
    if (report.parked.empty()) return {};
    std::string out = "parked classes (no job; kept for the next jobs, nodes.parked_classes): ";
    for (size_t i = 0; i < report.parked.size(); ++i) {
        const auto& p = report.parked[i];
        out += (i ? ", " : "") + parked_class_name(p) + " (";
        for (size_t d = 0; d < p.devices.size(); ++d) out += (d ? " " : "") + p.devices[d];
        out += ")";
    }
    return out + "\n";
}

std::string format_status_human(const StatusReport& report, TableStyle style) {
    if (style.parsable) return format_status_parsable(report, style.header);
    std::string out;
    if (!style.header) {
        // Rows only: nothing at all when no job is shaped (squeue -h prints nothing too).
        StatusReport rows = report;
        rows.parked.clear();
        const std::string table = format_status_human(rows, {});
        auto first = table.find('\n');
        if (report.jobs.empty() || first == std::string::npos) return out;
        auto second = table.find('\n', first + 1);
        return second == std::string::npos ? out : table.substr(second + 1);
    }
    out = "node " + report.node + ": ";
    if (report.nics.empty()) {
        out += "no NICs selected\n";
    } else {
        for (size_t i = 0; i < report.nics.size(); ++i) {
            const auto& nic = report.nics[i];
            out += (i ? ", " : "") + nic.device + " (" + format_rate(nic.link_speed_bits) + ")";
        }
        out += "; leaf qdisc " + report.leaf_qdisc + "\n";
    }
    if (report.jobs.empty()) {
        out += "no jobs shaped\n";
        return out + parked_line(report);
    }
    out += pad("JOB", 10) + pad("CLASS", 12) + pad("DEVICE", 10) + rpad("RATE", 9) + rpad("CEIL", 9) + "  " +
           pad("DSCP", 5) + rpad("BYTES", 14) + rpad("PACKETS", 11) + rpad("DROPS", 8) + rpad("OVERLIM", 9) +
           rpad("BACKLOG", 9) + "\n";
    for (const auto& job : report.jobs) {
        const auto& st = job.state;
        // The class and the error come from a state file and the kernel: escaped.
        const std::string head = pad(std::to_string(st.job_id), 10) + pad(terminal_text(st.class_name), 12);
        if (!job.error.empty()) {
            out += head + "error: " + terminal_text(job.error) + "\n";
            continue;
        }
        if (st.devices.empty()) out += head + "(no devices)\n";
        for (const auto& dev : st.devices) {
            auto it = job.counters.find(dev.device);
            ClassCounters c = it == job.counters.end() ? ClassCounters{} : it->second;
            out += head + pad(terminal_text(dev.device), 10) + rpad(format_rate(dev.rate_bits), 9) +
                   rpad(format_rate(dev.ceil_bits), 9) + "  " + pad(dscp_text(st.net.dscp), 5) +
                   rpad(std::to_string(c.bytes), 14) + rpad(std::to_string(c.packets), 11) +
                   rpad(std::to_string(c.drops), 8) + rpad(std::to_string(c.overlimits), 9) +
                   rpad(std::to_string(c.backlog), 9) + "\n";
        }
        // What the job receives: its class on the NIC's IFB ("in:eth0").
        for (const auto& dev : st.ingress_devices) {
            auto it = job.ingress_counters.find(dev.device);
            ClassCounters c = it == job.ingress_counters.end() ? ClassCounters{} : it->second;
            out += head + pad("in:" + terminal_text(dev.device), 10) + rpad(format_rate(dev.rate_bits), 9) +
                   rpad(format_rate(dev.ceil_bits), 9) + "  " + pad("-", 5) + rpad(std::to_string(c.bytes), 14) +
                   rpad(std::to_string(c.packets), 11) + rpad(std::to_string(c.drops), 8) +
                   rpad(std::to_string(c.overlimits), 9) + rpad(std::to_string(c.backlog), 9) + "\n";
        }
    }
    return out + paths_lines(report) + parked_line(report);
}

json::Value status_json(const StatusReport& report) {
    json::Array nics;
    for (const auto& nic : report.nics)
        nics.push_back(json::Object{{"device", nic.device}, {"link_speed_bits", u64(nic.link_speed_bits)}});
    json::Array jobs;
    for (const auto& job : report.jobs) {
        const auto& st = job.state;
        json::Array devices;
        for (const auto& dev : st.devices) {
            auto it = job.counters.find(dev.device);
            json::Object d{
                {"device", dev.device}, {"rate_bits", u64(dev.rate_bits)}, {"ceil_bits", u64(dev.ceil_bits)}};
            if (it != job.counters.end()) {
                d.emplace_back("bytes", u64(it->second.bytes));
                d.emplace_back("packets", u64(it->second.packets));
                d.emplace_back("drops", u64(it->second.drops));
                d.emplace_back("overlimits", u64(it->second.overlimits));
                d.emplace_back("backlog_bytes", u64(it->second.backlog));
            } else {
                for (const char* k : {"bytes", "packets", "drops", "overlimits", "backlog_bytes"})
                    d.emplace_back(k, json::Value());
            }
            devices.push_back(std::move(d));
        }
        json::Array ingress;
        for (const auto& dev : st.ingress_devices) {
            auto it = job.ingress_counters.find(dev.device);
            json::Object d{{"device", dev.device},
                           {"ifb", ifb_device_name(dev.device)},
                           {"rate_bits", u64(dev.rate_bits)},
                           {"ceil_bits", u64(dev.ceil_bits)}};
            if (it != job.ingress_counters.end()) {
                d.emplace_back("bytes", u64(it->second.bytes));
                d.emplace_back("packets", u64(it->second.packets));
                d.emplace_back("drops", u64(it->second.drops));
                d.emplace_back("overlimits", u64(it->second.overlimits));
                d.emplace_back("backlog_bytes", u64(it->second.backlog));
            } else {
                for (const char* k : {"bytes", "packets", "drops", "overlimits", "backlog_bytes"})
                    d.emplace_back(k, json::Value());
            }
            ingress.push_back(std::move(d));
        }
        json::Object entry{
            {"job_id", static_cast<int64_t>(st.job_id)},
            {"class", st.class_name},
            {"minor", hex_minor(st.minor)},
            {"dscp", st.net.dscp ? json::Value(dscp_name(*st.net.dscp)) : json::Value()},
            {"dscp_value", st.net.dscp ? json::Value(static_cast<int64_t>(*st.net.dscp)) : json::Value()},
            {"cgroup", st.cgroup},
            {"error", job.error.empty() ? json::Value() : json::Value(job.error)},
            {"devices", std::move(devices)},
            {"ingress", std::move(ingress)},
        };
        if (job.path) {
            const ResolvedPath& p = job.path->path;
            json::Array routes;  // Lanes' table: what it routes via the device
            for (const auto& d : p.destinations) routes.push_back(json::Object{{"dst", d.dst}, {"src", d.src}});
            entry.emplace_back("path", json::Object{{"device", p.device},
                                                    {"table", static_cast<int64_t>(p.table)},
                                                    {"mark", path_mark_text(p.mark)},
                                                    {"owned_table", p.owned_table},
                                                    {"src4", p.src4},
                                                    {"src6", p.src6},
                                                    {"routes", std::move(routes)}});
        }
        jobs.push_back(std::move(entry));
    }
    json::Array parked;
    for (const auto& p : report.parked) {
        json::Array devices;
        for (const auto& d : p.devices) devices.push_back(d);
        parked.push_back(json::Object{{"class", parked_class_name(p)}, {"devices", std::move(devices)}});
    }
    return json::Object{{"node", report.node},
                        {"leaf_qdisc", report.leaf_qdisc},
                        {"nics", std::move(nics)},
                        {"jobs", std::move(jobs)},
                        {"parked", std::move(parked)}};
}

std::string prometheus_label(std::string_view value) { return prometheus_label_value(value); }

std::string prometheus_text(const StatusReport& report) {
    struct Metric {
        const char* name;
        const char* type;
        const char* help;
        uint64_t (*value)(const JobDevice&, const ClassCounters&);
    };
    static const Metric metrics[] = {
        {"lanes_job_bytes_total", "counter",
         "Bytes through the job's HTB class (direction: egress sent, ingress received).",
         [](const JobDevice&, const ClassCounters& c) { return c.bytes; }},
        {"lanes_job_packets_total", "counter",
         "Packets through the job's HTB class (direction: egress sent, ingress received).",
         [](const JobDevice&, const ClassCounters& c) { return c.packets; }},
        {"lanes_job_drops_total", "counter", "Packets dropped in the job's HTB class.",
         [](const JobDevice&, const ClassCounters& c) { return c.drops; }},
        {"lanes_job_overlimits_total", "counter", "Times the job's HTB class was over its limit.",
         [](const JobDevice&, const ClassCounters& c) { return c.overlimits; }},
        {"lanes_job_backlog_bytes", "gauge", "Bytes queued in the job's HTB class now.",
         [](const JobDevice&, const ClassCounters& c) { return c.backlog; }},
        {"lanes_job_rate_bytes_per_second", "gauge", "Guaranteed rate (HTB rate) of the job on the device.",
         [](const JobDevice& d, const ClassCounters&) { return d.rate_bits / 8; }},
        {"lanes_job_ceil_bytes_per_second", "gauge", "Maximum rate (HTB ceil) of the job on the device.",
         [](const JobDevice& d, const ClassCounters&) { return d.ceil_bits / 8; }},
    };
    const std::string host = prometheus_label(report.node);
    std::string out;
    out += "# HELP lanes_jobs Jobs Lanes shapes on this node.\n# TYPE lanes_jobs gauge\n";
    out += "lanes_jobs{node=\"" + prometheus_label(report.node) + "\"} " + std::to_string(report.jobs.size()) + "\n";
    size_t errors = 0;
    for (const auto& job : report.jobs)
        if (!job.error.empty()) ++errors;
    out +=
        "# HELP lanes_jobs_unreadable Jobs whose counters could not be read.\n"
        "# TYPE lanes_jobs_unreadable gauge\n";
    out += "lanes_jobs_unreadable{node=\"" + prometheus_label(report.node) + "\"} " + std::to_string(errors) + "\n";
    out +=
        "# HELP lanes_parked_classes HTB classes of ended jobs kept for the next jobs (nodes.parked_classes).\n"
        "# TYPE lanes_parked_classes gauge\n";
    out += "lanes_parked_classes{node=\"" + prometheus_label(report.node) + "\"} " +
           std::to_string(report.parked.size()) + "\n";
    for (const auto& m : metrics) {
        out += std::string("# HELP ") + m.name + " " + m.help + "\n# TYPE " + m.name + " " + m.type + "\n";
        for (const auto& job : report.jobs) {
            if (!job.error.empty()) continue;
            // direction: egress, the job's class on the NIC; ingress, its class
            // on the NIC's IFB (an ingress cap).
            for (const auto& [direction, devices, counters] :
                 {std::tuple{"egress", &job.state.devices, &job.counters},
                  std::tuple{"ingress", &job.state.ingress_devices, &job.ingress_counters}}) {
                for (const auto& dev : *devices) {
                    auto it = counters->find(dev.device);
                    if (it == counters->end()) continue;
                    // hpc_job, as DCGM's exporter labels GPU metrics: never "job" or
                    // "instance", which Prometheus sets itself on every scrape.
                    // host: the node's name, so a multi-node job's series stay
                    // apart and join DCGM's per node, whatever `instance` is.
                    out += std::string(m.name) + "{hpc_job=\"" + std::to_string(job.state.job_id) + "\",class=\"" +
                           prometheus_label(job.state.class_name) + "\",device=\"" + prometheus_label(dev.device) +
                           "\",host=\"" + host + "\",direction=\"" + direction + "\"} " +
                           std::to_string(m.value(dev, it->second)) + "\n";
                }
            }
        }
    }
    return out;
}

std::string format_gc_human(const GcReport& report) {
    std::string out;
    const char* verb = report.dry_run ? "would remove" : "removed";
    for (const auto& job : report.removed)
        out += std::string(verb) + " job " + std::to_string(job.state.job_id) + " (" + job.state.class_name +
               "): " + job.why + "\n";
    for (const auto& job : report.kept)
        out += "kept job " + std::to_string(job.state.job_id) + " (" + job.state.class_name + "): " + job.why + "\n";
    if (report.all) {
        for (const auto& dev : report.devices_reset)
            out += std::string(report.dry_run ? "would remove" : "removed") + " lanes qdiscs on " + dev + "\n";
        out += std::string(report.dry_run ? "would remove" : "removed") + " nft table inet lanes\n";
    }
    for (const auto& e : report.errors) out += "error: " + e + "\n";
    if (report.removed.empty() && report.kept.empty() && !report.all) out += "no Lanes jobs on " + report.node + "\n";
    return out;
}

json::Value gc_json(const GcReport& report) {
    auto jobs = [](const std::vector<GcJob>& list) {
        json::Array out;
        for (const auto& j : list)
            out.push_back(json::Object{
                {"job_id", static_cast<int64_t>(j.state.job_id)}, {"class", j.state.class_name}, {"why", j.why}});
        return out;
    };
    json::Array devices, errors;
    for (const auto& d : report.devices_reset) devices.push_back(d);
    for (const auto& e : report.errors) errors.push_back(e);
    return json::Object{{"node", report.node},        {"dry_run", report.dry_run},
                        {"all", report.all},          {"removed", jobs(report.removed)},
                        {"kept", jobs(report.kept)},  {"devices_reset", std::move(devices)},
                        {"errors", std::move(errors)}};
}

}  // namespace lanes::ctl
