// SPDX-License-Identifier: GPL-2.0-or-later
#include "lanesctl/windows_report.hpp"
#include "core/text.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "ctld/windows.hpp"
#include "ctld/windows_config.hpp"
#include "lanesctl/time_spec.hpp"

namespace lanes::ctl {

namespace {

using namespace std::chrono;

const TimeZone* zone_of(const Window& w) { return w.zone.get(); }

std::string zone_name(const Window& w) { return w.zone ? w.zone->name() : std::string("UTC"); }

local_days local_day(SysSeconds at, const TimeZone* zone) {
    return floor<days>(zone ? zone->to_local(at) : local_seconds{at.time_since_epoch()});
}

// Single-quote for sh when the word has anything but [A-Za-z0-9_.,:/=@%+-].
std::string shell_word(const std::string& word) {
    bool plain = !word.empty();
    for (char c : word) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  std::string_view("_.,:/=@%+-").find(c) != std::string_view::npos;
        if (!ok) plain = false;
    }
    if (plain) return word;
    std::string out = "'";
    for (char c : word) {
        if (c == '\'') out += "'\\''";
        else out += c;
    }
    return out + "'";
}

std::string compact_local(SysSeconds at, const TimeZone* zone, const char* format) {
    local_seconds local = zone ? zone->to_local(at) : local_seconds{at.time_since_epoch()};
    auto day = floor<days>(local);
    year_month_day d{local_days{day}};
    int64_t sod = (local - day).count();
    char buf[64];
    std::snprintf(buf, sizeof buf, format, static_cast<int>(d.year()), static_cast<unsigned>(d.month()),
                  static_cast<unsigned>(d.day()), static_cast<int>(sod / 3600), static_cast<int>(sod / 60 % 60),
                  static_cast<int>(sod % 60));
    return buf;
}

std::string exception_text(const DateRange& r) {
    std::string dates = format_date(r.first);
    if (r.last != r.first) dates += ".." + format_date(r.last);
    return dates + (r.add ? " (added: all day)" : " (no occurrence)");
}

}  // namespace

Result<WindowsReport> build_windows_report(const Config& config, SysSeconds from, int days_ahead,
                                           const std::vector<std::string>& names,
                                           const std::optional<ReservationRequest>& request) {
    WindowsReport report;
    report.from = from;
    report.to = from + days{days_ahead};
    report.with_reservations = request.has_value();
    for (const auto& name : names)
        if (!windows_of(config).find(name))
            return fail("window '" + name + "' is not defined in " + config.path + " ([windows])");

    for (const auto& [name, window] : windows_of(config).all()) {
        if (!names.empty() && std::find(names.begin(), names.end(), name) == names.end()) continue;
        WindowCalendar cal;
        cal.name = name;
        cal.window = &window;
        cal.occurrences = windows_of(config).occurrences(name, report.from, report.to);
        const year_month_day first{local_day(report.from, zone_of(window))};
        const year_month_day last{local_day(report.to, zone_of(window))};
        for (const auto& ex : window.exceptions)
            if (ex.last >= first && ex.first <= last) cal.exceptions.push_back(ex);
        for (const auto& [class_name, cls] : config.classes)
            if (std::find(cls.avoid_windows.begin(), cls.avoid_windows.end(), name) != cls.avoid_windows.end())
                cal.avoided_by.push_back(class_name);
        report.windows.push_back(std::move(cal));
    }
    if (!request) return report;

    if (request->accounts.empty() && request->users.empty())
        return fail("reservations need accounts or users allowed to run on the reserved nodes");
    size_t reserved_windows = 0;
    for (const auto& cal : report.windows) {
        // Without explicit names, only windows some class must stay out of.
        if (names.empty() && cal.avoided_by.empty()) continue;
        ++reserved_windows;
        std::vector<std::string> partitions;
        if (request->nodes.empty()) {
            std::set<std::string> unique;
            for (const auto& class_name : cal.avoided_by)
                for (const auto& p : config.classes.at(class_name).borrow_partitions)
                    if (unique.insert(p).second) partitions.push_back(p);
            if (partitions.empty())
                return fail("window '" + cal.name +
                            "': no class borrows a partition while avoiding it, so there are no nodes to "
                            "reserve; give them with --reservations NODES");
        } else {
            partitions.push_back("");  // one reservation on the given nodes
        }
        const TimeZone* zone = zone_of(*cal.window);
        for (const auto& occ : cal.occurrences) {
            SysSeconds start = std::max(occ.begin, report.from);
            if (start >= occ.end) continue;
            for (const auto& partition : partitions) {
                Reservation r;
                r.window = cal.name;
                r.zone = zone_name(*cal.window);
                r.tz = zone;
                r.start = start;
                r.end = occ.end;
                r.nodes = request->nodes;
                r.partition = partition;
                // Named after the occurrence, not after --from: the same occurrence
                // keeps its name on every run, so --apply (e.g. from cron) finds it.
                r.name = "lanes_" + cal.name + "_" + compact_local(occ.begin, zone, "%04d%02u%02u_%02d%02d");
                if (partitions.size() > 1) r.name += "_" + partition;
                const auto minutes_long = duration_cast<minutes>(r.end - r.start + seconds{59}).count();
                std::string cmd = "TZ=" + shell_word(r.zone) +
                                  " scontrol create reservation ReservationName=" + shell_word(r.name) +
                                  " StartTime=" + compact_local(start, zone, "%04d-%02u-%02dT%02d:%02d:%02d") +
                                  " Duration=" + std::to_string(minutes_long);
                if (!partition.empty()) {
                    cmd += " PartitionName=" + shell_word(partition) + " Nodes=ALL Flags=" + kReservationFlags +
                           ",PART_NODES";
                } else {
                    cmd += " Nodes=" + shell_word(r.nodes) + " Flags=" + kReservationFlags;
                }
                if (!request->accounts.empty()) cmd += " Accounts=" + shell_word(request->accounts);
                if (!request->users.empty()) cmd += " Users=" + shell_word(request->users);
                r.command = std::move(cmd);
                report.reservations.push_back(std::move(r));
            }
        }
    }
    if (reserved_windows == 0)
        return fail("no class avoids a window in " + config.path + "; name the windows to reserve with --window");
    return report;
}

std::string format_windows_human(const WindowsReport& report) {
    std::string out;
    if (report.with_reservations) {
        out += "# Lanes reservations from " + format_iso(report.from, nullptr) + " to " +
               format_iso(report.to, nullptr) + "\n";
        out += "# Flags: IGNORE_JOBS (running jobs stay), MAGNETIC (allowed jobs use it without --reservation)\n";
        out += "# StartTime is wall-clock time in the window's zone (TZ=), Duration is in minutes.\n";
        if (report.reservations.empty()) out += "# no occurrences in this period\n";
        for (const auto& r : report.reservations) {
            out += "# " + r.window + ": " + format_local_with_day(r.start, r.tz) + " .. " +
                   format_local_with_day(r.end, r.tz) + "\n";
            out += r.command + "\n";
        }
        return out;
    }
    out += "Windows from " + format_local(report.from, nullptr) + " to " + format_local(report.to, nullptr) + "\n";
    if (report.windows.empty()) out += "\n(no windows defined)\n";
    for (const auto& cal : report.windows) {
        const Window& w = *cal.window;
        const TimeZone* zone = zone_of(w);
        out += "\n" + cal.name + " (" + zone_name(w) + "): " + format_days(w.days) + " " + format_time_of_day(w.start) +
               "-" + format_time_of_day(w.end);
        if (!cal.avoided_by.empty()) out += "; avoided by " + join(cal.avoided_by, ", ");
        out += "\n";
        if (cal.occurrences.empty()) out += "  no occurrences\n";
        for (const auto& occ : cal.occurrences) {
            const auto length = duration_cast<minutes>(occ.end - occ.begin).count();
            std::string line =
                "  " + format_local_with_day(occ.begin, zone) + " -> " + format_local_with_day(occ.end, zone);
            if (line.size() < 64) line.resize(64, ' ');
            out += line + "  " + format_duration_minutes(length);
            if (zone && zone->offset_at(occ.begin) != zone->offset_at(occ.end)) out += "  (DST change)";
            out += "\n";
        }
        for (const auto& ex : cal.exceptions) out += "  exception " + exception_text(ex) + "\n";
    }
    return out;
}

std::string format_windows_parsable(const WindowsReport& report, bool header) {
    std::string out;
    if (header) out += "WINDOW|ZONE|BEGIN|END|MINUTES|DST\n";
    for (const auto& cal : report.windows) {
        const TimeZone* zone = zone_of(*cal.window);
        for (const auto& occ : cal.occurrences) {
            const bool dst = zone && zone->offset_at(occ.begin) != zone->offset_at(occ.end);
            out += cal.name + "|" + zone_name(*cal.window) + "|" + format_iso(occ.begin, zone) + "|" +
                   format_iso(occ.end, zone) + "|" +
                   std::to_string(duration_cast<minutes>(occ.end - occ.begin).count()) + "|" + (dst ? "yes" : "no") +
                   "\n";
        }
    }
    return out;
}

json::Value windows_json(const WindowsReport& report) {
    json::Array windows;
    for (const auto& cal : report.windows) {
        const Window& w = *cal.window;
        const TimeZone* zone = zone_of(w);
        json::Array occurrences;
        for (const auto& occ : cal.occurrences) {
            occurrences.push_back(json::Object{
                {"begin", format_iso(occ.begin, zone)},
                {"end", format_iso(occ.end, zone)},
                {"begin_utc", format_iso(occ.begin, nullptr)},
                {"end_utc", format_iso(occ.end, nullptr)},
                {"begin_abbrev", zone ? zone->abbreviation_at(occ.begin) : std::string("UTC")},
                {"end_abbrev", zone ? zone->abbreviation_at(occ.end) : std::string("UTC")},
                {"minutes", static_cast<int64_t>(duration_cast<minutes>(occ.end - occ.begin).count())},
            });
        }
        json::Array exceptions;
        for (const auto& ex : cal.exceptions)
            exceptions.push_back(
                json::Object{{"first", format_date(ex.first)}, {"last", format_date(ex.last)}, {"add", ex.add}});
        json::Array avoided_by;
        for (const auto& c : cal.avoided_by) avoided_by.push_back(c);
        windows.push_back(json::Object{
            {"name", cal.name},
            {"zone", zone_name(w)},
            {"days", format_days(w.days)},
            {"start", format_time_of_day(w.start)},
            {"end", format_time_of_day(w.end)},
            {"avoided_by", std::move(avoided_by)},
            {"occurrences", std::move(occurrences)},
            {"exceptions", std::move(exceptions)},
        });
    }
    json::Object out{
        {"from", format_iso(report.from, nullptr)},
        {"to", format_iso(report.to, nullptr)},
        {"windows", std::move(windows)},
    };
    if (report.with_reservations) {
        json::Array reservations;
        for (const auto& r : report.reservations)
            reservations.push_back(json::Object{
                {"window", r.window},
                {"name", r.name},
                {"zone", r.zone},
                {"start", format_iso(r.start, nullptr)},
                {"end", format_iso(r.end, nullptr)},
                {"minutes", static_cast<int64_t>(duration_cast<minutes>(r.end - r.start + seconds{59}).count())},
                {"nodes", r.nodes.empty() ? json::Value() : json::Value(r.nodes)},
                {"partition", r.partition.empty() ? json::Value() : json::Value(r.partition)},
                {"command", r.command},
            });
        out.emplace_back("reservations", std::move(reservations));
    }
    return out;
}

}  // namespace lanes::ctl
