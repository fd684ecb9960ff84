// SPDX-License-Identifier: GPL-2.0-or-later
#include "ctld/router.hpp"
#include "core/text.hpp"

#include <algorithm>
#include <charconv>

#include "ctld/builtin_rules.hpp"

namespace lanes {

namespace {

struct NextWindow {
    std::string name;
    SysSeconds start;
};

// The earliest start of any of `names` strictly after `at`.
std::optional<NextWindow> earliest_start(const std::vector<std::string>& names, SysSeconds at,
                                         const WindowOracle& windows) {
    std::optional<NextWindow> best;
    for (const auto& name : names) {
        auto s = windows.next_start(name, at);
        if (s && (!best || *s < best->start)) best = NextWindow{name, *s};
    }
    return best;
}

std::optional<std::string> containing(const std::vector<std::string>& names, SysSeconds at,
                                      const WindowOracle& windows) {
    for (const auto& name : names)
        if (windows.in_window(name, at)) return name;
    return std::nullopt;
}

uint64_t minutes_between(SysSeconds from, SysSeconds to) {
    if (to <= from) return 0;
    return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::minutes>(to - from).count());
}

}  // namespace

std::string format_minutes(uint64_t minutes) {
    uint64_t d = minutes / 1440, h = (minutes % 1440) / 60, m = minutes % 60;
    std::string s;
    if (d) s += std::to_string(d) + "d";
    if (h) s += std::to_string(h) + "h";
    if (m || s.empty()) s += std::to_string(m) + "m";
    return s;
}

Route route_job(const ClassConfig& cls, const JobView& job, SysSeconds now, const WindowOracle& windows,
                const RouteOptions& options) {
    Route r;
    if (!cls.partitions.empty()) r.partition = join(cls.partitions, ",");
    if (!cls.qos.empty()) r.qos = cls.qos;
    if (!cls.features.empty()) r.features = join(cls.features, "&");
    r.nice = cls.nice;

    std::optional<uint32_t> time_limit =
        options.time_limit_minutes ? options.time_limit_minutes : job.time_limit_minutes;
    std::optional<SysSeconds> asked_begin = options.begin_time ? options.begin_time : job.begin_time;
    const SysSeconds requested_start = asked_begin && *asked_begin > now ? *asked_begin : now;
    if (options.time_limit_minutes) r.time_limit_minutes = options.time_limit_minutes;
    if (options.begin_time) r.begin_time = options.begin_time;

    std::vector<std::string> avoid;
    for (const auto& name : cls.avoid_windows) {
        if (windows.known(name)) {
            avoid.push_back(name);
        } else {
            r.reasons.push_back("unknown window '" + name + "' ignored");
        }
    }
    const bool exempt = listed(cls.exempt_users, job.user) || listed(cls.exempt_accounts, job.account);
    if (exempt && !avoid.empty()) r.reasons.push_back("exempt from windows");

    SysSeconds start = requested_start;
    std::string deferred_by;  // the window the job was last moved out of
    if (!exempt && !avoid.empty()) {
        std::optional<SysSeconds> first_clear;  // first start outside every window
        bool settled = false;
        for (int step = 0; step < options.max_window_steps && !settled; ++step) {
            if (auto inside = containing(avoid, start, windows)) {
                auto end = windows.next_end(*inside, start);
                if (!end || *end <= start) break;  // window without end: cannot move out
                start = *end;
                deferred_by = *inside;
                continue;
            }
            if (!first_clear) first_clear = start;
            auto next = earliest_start(avoid, start, windows);
            if (!next) break;
            const bool fits = time_limit && start + std::chrono::minutes(*time_limit) <= next->start;
            if (fits) break;
            // Move the start past the end of that occurrence; false if it has no end.
            auto defer_past = [&](const auto& occurrence) {
                auto end = windows.next_end(occurrence.name, occurrence.start);
                if (!end || *end <= start) return false;
                start = *end;
                deferred_by = occurrence.name;
                return true;
            };
            const std::string when = windows.describe(next->name, next->start);
            const std::string job_desc = cls.name + " job";
            switch (cls.window_overrun) {
                case OverrunAction::Warn:
                    r.user_messages.push_back("lanes: " + job_desc +
                                              (time_limit
                                                   ? " may run into the " + next->name + " window starting " + when
                                                   : " has no time limit (--time) and may run into the " + next->name +
                                                         " window starting " + when));
                    r.reasons.push_back("window_overrun=warn (" + next->name + ")");
                    settled = true;
                    break;
                case OverrunAction::Reject: {
                    std::string why = time_limit
                                          ? "its time limit of " + format_minutes(*time_limit) +
                                                " would run into the " + next->name + " window starting " + when +
                                                "; use --time=" + std::to_string(minutes_between(start, next->start)) +
                                                " or less, or --begin after it"
                                          : "it has no time limit (--time) and could run into the " + next->name +
                                                " window starting " + when;
                    r.reject = true;
                    r.reject_message = "lanes: " + job_desc + " rejected: " + why + " (class " + cls.name +
                                       ": window_overrun = reject)";
                    r.reasons.push_back("window_overrun=reject (" + next->name + ")");
                    return r;
                }
                case OverrunAction::Shorten: {
                    uint64_t room = minutes_between(start, next->start);
                    if (room >= options.min_shorten_minutes) {
                        r.time_limit_minutes = static_cast<uint32_t>(std::min<uint64_t>(room, UINT32_MAX));
                        r.user_messages.push_back(
                            "lanes: " + job_desc + " time limit " +
                            (time_limit ? "shortened from " + format_minutes(*time_limit) + " " : "set ") + "to " +
                            format_minutes(room) + " so it ends before the " + next->name + " window (" + when + ")");
                        r.reasons.push_back("window_overrun=shorten (" + next->name + ")");
                        settled = true;
                        break;
                    }
                    // Too little room: start after that window instead.
                    settled = !defer_past(*next);
                    break;
                }
                case OverrunAction::Defer: {
                    if (!time_limit) {
                        r.user_messages.push_back("lanes: " + job_desc +
                                                  " has no time limit (--time), so it cannot be scheduled around the " +
                                                  next->name + " window; it may run into it (" + when + ")");
                        r.reasons.push_back("window_overrun=defer without time limit (" + next->name + ")");
                        settled = true;
                        break;
                    }
                    settled = !defer_past(*next);
                    break;
                }
            }
        }
        if (!settled && time_limit && first_clear) {
            // Either no later window (fine) or the job never fits between windows.
            auto next = earliest_start(avoid, start, windows);
            bool fits = !next || start + std::chrono::minutes(*time_limit) <= next->start;
            if (!fits && !containing(avoid, start, windows)) {
                // Longer than every gap we looked at: deferring further only delays it.
                start = *first_clear;
                auto nn = earliest_start(avoid, start, windows);
                r.user_messages.push_back(
                    "lanes: " + cls.name + " job's time limit of " + format_minutes(*time_limit) +
                    " is longer than any gap between avoided windows; it will run into " +
                    (nn ? "the " + nn->name + " window (" + windows.describe(nn->name, nn->start) + ")"
                        : std::string("an avoided window")));
                r.reasons.push_back("does not fit between windows");
                deferred_by.clear();
                if (start > requested_start) {
                    if (auto w = containing(avoid, requested_start, windows)) deferred_by = *w;
                }
            }
        }
        if (start > requested_start) {
            r.begin_time = start;
            std::string which = deferred_by.empty() ? std::string("avoided") : deferred_by;
            std::string when = deferred_by.empty() ? "" : windows.describe(deferred_by, start);
            r.user_messages.insert(r.user_messages.begin(),
                                   "lanes: " + cls.name + " job deferred to " + when + " (" + which + " window)");
            r.reasons.push_back("deferred past window '" + which + "'");
        }
    }

    // Borrowing: only for a job starting now-ish outside every avoided window and
    // ending before the next one starts.
    if (!cls.borrow_partitions.empty() && start == requested_start && !containing(avoid, start, windows)) {
        std::optional<uint32_t> limit = r.time_limit_minutes ? r.time_limit_minutes : time_limit;
        auto next = earliest_start(avoid, start, windows);
        bool ends_in_time = !next || (limit && start + std::chrono::minutes(*limit) <= next->start);
        std::string base = r.partition ? *r.partition : job.partition;
        if (ends_in_time && !base.empty()) {
            std::string list = base;
            for (const auto& p : cls.borrow_partitions) {
                bool dup = false;
                std::string_view rest = base;
                while (!rest.empty()) {
                    size_t c = rest.find(',');
                    if (rest.substr(0, c) == p) {
                        dup = true;
                        break;
                    }
                    if (c == std::string_view::npos) break;
                    rest.remove_prefix(c + 1);
                }
                if (!dup) list += "," + p;
            }
            if (list != base) {
                r.partition = list;
                r.reasons.push_back("borrowing " + join(cls.borrow_partitions, ","));
            }
        }
    }
    return r;
}

namespace {

std::vector<std::string> split_commas(std::string_view list) {
    std::vector<std::string> out;
    while (!list.empty()) {
        size_t c = list.find(',');
        if (c != 0) out.emplace_back(list.substr(0, c));
        if (c == std::string_view::npos) break;
        list.remove_prefix(c + 1);
    }
    return out;
}

}  // namespace

std::optional<std::string> check_time_limit_change(const ClassConfig& cls, const JobView& job,
                                                   std::optional<uint32_t> new_limit, SysSeconds now,
                                                   const WindowOracle& windows, const RouteOptions& options) {
    const bool shorter = new_limit && (!job.time_limit_minutes || *new_limit <= *job.time_limit_minutes);
    if (shorter) return std::nullopt;
    if (listed(cls.exempt_users, job.user) || listed(cls.exempt_accounts, job.account)) return std::nullopt;
    std::vector<std::string> avoid;
    for (const auto& name : cls.avoid_windows)
        if (windows.known(name)) avoid.push_back(name);
    if (avoid.empty()) return std::nullopt;

    const SysSeconds start = job.begin_time && *job.begin_time > now ? *job.begin_time : now;
    JobView probe = job;
    probe.time_limit_minutes = new_limit;
    probe.begin_time = start;
    RouteOptions ro = options;
    ro.begin_time.reset();
    ro.time_limit_minutes.reset();
    Route r = route_job(cls, probe, now, windows, ro);

    const std::string asked = new_limit ? format_minutes(*new_limit) : std::string("UNLIMITED");
    const std::string head = "lanes: the time limit of this " + cls.name + " job cannot be raised to " + asked + ": ";
    const std::string tail = " (class " + cls.name + "); cancel and resubmit, or ask an administrator";
    // Room before the next avoided window, for the message.
    auto room = [&]() -> std::string {
        auto next = earliest_start(avoid, start, windows);
        if (!next || containing(avoid, start, windows)) return "";
        return "; at most " + format_minutes(minutes_between(start, next->start)) + " ends before the " + next->name +
               " window (" + windows.describe(next->name, next->start) + ")";
    };
    if (r.reject) return head + "it would run into an avoided window and the class rejects such jobs" + room() + tail;
    if (r.begin_time && *r.begin_time > start)
        return head + "it would run into an avoided window, so the job would have to be deferred to " +
               windows.describe(avoid.front(), *r.begin_time) + room() + tail;
    if (r.time_limit_minutes && (!new_limit || *r.time_limit_minutes < *new_limit))
        return head + "the class shortens such jobs to end before the next avoided window" + room() + tail;
    // Borrowed partitions are lent only to jobs that end before the next window.
    const auto now_in = split_commas(job.partition);
    const auto allowed = split_commas(r.partition.value_or(""));
    for (const auto& p : cls.borrow_partitions)
        if (contains(now_in, p) && !contains(allowed, p))
            return head + "the job may use partition " + p + " only because it ends before the next avoided window" +
                   room() + tail;
    if (!new_limit && cls.window_overrun != OverrunAction::Warn)
        return head + "a job without a time limit cannot be kept out of the avoided windows" + tail;
    return std::nullopt;
}

Result<std::optional<uint32_t>> parse_slurm_duration(std::string_view text) {
    std::string bad = "invalid time limit '" + std::string(text) + "' (expected M, M:S, H:M:S, D-H, D-H:M or D-H:M:S)";
    if (text == "UNLIMITED" || text == "INFINITE" || text == "unlimited" || text == "infinite")
        return std::optional<uint32_t>{};
    if (text.empty()) return fail(bad);
    uint64_t days = 0;
    bool has_days = false;
    size_t dash = text.find('-');
    if (dash != std::string_view::npos) {
        std::string_view d = text.substr(0, dash);
        auto [p, ec] = std::from_chars(d.data(), d.data() + d.size(), days);
        if (ec != std::errc() || p != d.data() + d.size() || d.empty()) return fail(bad);
        text.remove_prefix(dash + 1);
        has_days = true;
    }
    std::vector<uint64_t> parts;
    while (true) {
        size_t colon = text.find(':');
        std::string_view part = text.substr(0, colon);
        uint64_t v = 0;
        auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
        if (part.empty() || ec != std::errc() || p != part.data() + part.size()) return fail(bad);
        parts.push_back(v);
        if (colon == std::string_view::npos) break;
        text.remove_prefix(colon + 1);
    }
    if (parts.size() > 3) return fail(bad);
    uint64_t h = 0, m = 0, s = 0;
    if (has_days) {
        h = parts[0];
        if (parts.size() > 1) m = parts[1];
        if (parts.size() > 2) s = parts[2];
    } else if (parts.size() == 1) {
        m = parts[0];
    } else if (parts.size() == 2) {
        m = parts[0];
        s = parts[1];
    } else {
        h = parts[0];
        m = parts[1];
        s = parts[2];
    }
    if (days > 100000 || h > 1000000 || m > 100000000 || s > 1000000000) return fail(bad);
    uint64_t total = days * 1440 + h * 60 + m + (s + 59) / 60;
    if (total > UINT32_MAX - 1) return fail(bad);
    return std::optional<uint32_t>{static_cast<uint32_t>(total)};
}

}  // namespace lanes
