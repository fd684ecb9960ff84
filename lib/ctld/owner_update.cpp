// SPDX-License-Identifier: GPL-2.0-or-later
#include "ctld/owner_update.hpp"

#include <algorithm>
#include <vector>

#include "core/text.hpp"
#include "ctld/router.hpp"

namespace lanes {

namespace {

OwnerVerdict refuse(OwnerVerdict::Code code, std::string message) {
    OwnerVerdict v;
    v.action = OwnerVerdict::Action::Refuse;
    v.code = code;
    v.message = std::move(message);
    return v;
}

std::vector<std::string> split_commas(const std::string& list) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= list.size()) {
        size_t comma = list.find(',', start);
        if (comma == std::string::npos) comma = list.size();
        if (comma > start) out.push_back(list.substr(start, comma - start));
        start = comma + 1;
    }
    return out;
}

const ClassConfig* class_of(const Config& config, const std::string& name) {
    auto it = config.classes.find(name);
    return it == config.classes.end() ? nullptr : &it->second;
}

std::string job_name(const HeldJob& held) { return "JobId=" + std::to_string(held.job_id); }

// A new begin time, routed as the class routes a new job with that --begin:
// allowed when the class would start the job then; refused, naming the start
// the class would give it, when the class would defer, reject or shorten it,
// or when the job borrows a partition it may keep only by ending before the
// next avoided window. Never moved silently: Slurm does not show an update's
// message unless it fails, and a StartTime that does not stick would puzzle.
OwnerVerdict judge_begin_time(const ClassConfig& cls, const JobView& job, SysSeconds asked, SysSeconds now,
                              const WindowOracle& windows, const RouteOptions& options) {
    const SysSeconds start = asked > now ? asked : now;
    JobView probe = job;
    probe.begin_time = start;
    RouteOptions ro = options;
    ro.begin_time.reset();
    ro.time_limit_minutes.reset();
    Route r = route_job(cls, probe, now, windows, ro);

    std::string window;
    for (const auto& name : cls.avoid_windows)
        if (windows.known(name)) {
            window = name;
            break;
        }
    auto when = [&](SysSeconds t) { return window.empty() ? std::string("then") : windows.describe(window, t); };
    const std::string head = "lanes: the start time of this " + cls.name + " job cannot be moved to " +
                             (asked > now ? when(start) : std::string("now")) + ": ";
    const std::string tail = " (class " + cls.name + "); ask an administrator";
    if (r.reject) return refuse(OwnerVerdict::Code::AccessDenied, head + r.reject_message + tail);
    if (r.begin_time && *r.begin_time > start)
        return refuse(OwnerVerdict::Code::AccessDenied, head + "its class keeps such jobs out of the " + window +
                                                            " window and would start it at " + when(*r.begin_time) +
                                                            ", so a StartTime from then on is allowed" + tail);
    if (r.time_limit_minutes && (!job.time_limit_minutes || *r.time_limit_minutes < *job.time_limit_minutes))
        return refuse(OwnerVerdict::Code::AccessDenied, head + "from then its time limit would run into the " + window +
                                                            " window, which its class shortens jobs for" + tail);
    const auto now_in = split_commas(job.partition);
    const auto allowed = split_commas(r.partition.value_or(""));
    for (const auto& p : cls.borrow_partitions)
        if (contains(now_in, p) && !contains(allowed, p))
            return refuse(OwnerVerdict::Code::AccessDenied, head + "the job may use partition " + p +
                                                                " only because it ends before the next " + window +
                                                                " window" + tail);
    return {};
}

}  // namespace

OwnerVerdict judge_owner_update(const OwnerUpdate& update, const HeldJob* held, const Config& config, SysSeconds now,
                                const WindowOracle& windows, const RouteOptions& options) {
    if (update.routed_field)
        return refuse(OwnerVerdict::Code::AccessDenied,
                      "lanes: " + *update.routed_field +
                          " decides the job's traffic class and routing, so users cannot change it; "
                          "cancel and resubmit, or ask an administrator");
    const bool needs_job = update.nice || update.begin_time || update.time_limit_set;
    if (!needs_job) return {};
    if (!held) {
        // Slurm itself lets an owner only lower a time limit, and a lower one
        // never reaches further into a window: nothing of the job is needed.
        if (!update.nice && !update.begin_time) return {};
        std::string what = update.nice ? "nice" : update.begin_time ? "start time" : "time limit";
        return refuse(OwnerVerdict::Code::AccessDenied,
                      "lanes: this slurmctld's job record is unknown to this build of Lanes, so the job's " + what +
                          " cannot be checked against its class; ask an administrator");
    }
    if (!held->class_name) return {};  // not routed by Lanes: Slurm's own rules
    const ClassConfig* cls = class_of(config, *held->class_name);
    const std::string class_name = printable(*held->class_name, 64);

    if (update.nice) {
        std::optional<int32_t> floor = held->decided_nice;
        if (!floor && cls) floor = cls->nice;
        if (floor && *update.nice < *floor)
            return refuse(OwnerVerdict::Code::AccessDenied,
                          "lanes: Nice=" + std::to_string(*update.nice) + " is below the nice of " +
                              std::to_string(*floor) + " that its class " + class_name +
                              " gives it, and would move it ahead of the jobs that class yields to; Nice=" +
                              std::to_string(*floor) + " or more is allowed, or ask an administrator");
    }

    JobView job = held->job;
    if (update.begin_time) job.begin_time = update.begin_time;
    if (update.time_limit_set) {
        const bool shorter = update.time_limit_minutes && job.time_limit_minutes &&
                             *update.time_limit_minutes <= *job.time_limit_minutes;
        if (!cls && !shorter)
            return refuse(OwnerVerdict::Code::InvalidTimeLimit,
                          "lanes: the time limit of " + job_name(*held) + " cannot be checked: its class '" +
                              class_name + "' is no longer in " + config.path + "; ask an administrator");
        if (cls) {
            auto refused = check_time_limit_change(*cls, job, update.time_limit_minutes, now, windows, options);
            if (refused) return refuse(OwnerVerdict::Code::InvalidTimeLimit, *refused);
        }
        job.time_limit_minutes = update.time_limit_minutes;
    }
    if (update.begin_time) {
        if (!cls)
            return refuse(OwnerVerdict::Code::AccessDenied,
                          "lanes: the start time of " + job_name(*held) + " cannot be checked: its class '" +
                              class_name + "' is no longer in " + config.path + "; ask an administrator");
        return judge_begin_time(*cls, job, *update.begin_time, now, windows, options);
    }
    return {};
}

}  // namespace lanes
