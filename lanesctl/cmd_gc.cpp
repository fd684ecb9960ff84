// lanesctl gc: remove the shaping state of jobs that no longer run on this node.
// A job is alive when a "slurmstepd: [JOBID." process exists in this network
// namespace, or when its cgroup still has processes. Anything uncertain counts as
// alive: gc must never take the shaping away from a running job.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "lanesctl/commands.hpp"
#include "lanesctl/node_report.hpp"
#include "node/node_shaper.hpp"

namespace lanes::ctl {

Result<std::unique_ptr<NodeShaper>> open_node_shaper(const Context& context);  // cmd_status.cpp

namespace {

std::string slurp(const std::string& path, bool* ok = nullptr) {
    std::ifstream in(path, std::ios::binary);
    if (ok) *ok = static_cast<bool>(in);
    std::ostringstream text;
    if (in) text << in.rdbuf();
    return text.str();
}

// job id -> a slurmstepd pid of it in our network namespace.
std::map<uint32_t, long> stepd_jobs_here() {
    std::map<uint32_t, long> jobs;
    struct stat self {};
    const bool know_self = ::stat("/proc/self/ns/net", &self) == 0;
    DIR* proc = ::opendir("/proc");
    if (!proc) return jobs;
    while (dirent* e = ::readdir(proc)) {
        if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
        const std::string dir = std::string("/proc/") + e->d_name;
        auto id = stepd_job_id(slurp(dir + "/cmdline"));
        if (!id) continue;
        // Any user can set a process title; only root runs slurmstepd.
        struct stat owner {};
        if (::stat(dir.c_str(), &owner) != 0 || owner.st_uid != 0) continue;
        struct stat ns {};
        // Unknown namespace (process gone, no permission): count it as ours.
        if (know_self && ::stat((dir + "/ns/net").c_str(), &ns) == 0 &&
            (ns.st_ino != self.st_ino || ns.st_dev != self.st_dev))
            continue;
        jobs.emplace(*id, std::strtol(e->d_name, nullptr, 10));
    }
    ::closedir(proc);
    return jobs;
}

// "" when the cgroup is gone or empty; else why the job counts as alive.
std::string cgroup_alive(const std::string& cgroup) {
    if (cgroup.empty()) return "";
    struct stat st {};
    if (::stat(cgroup.c_str(), &st) != 0) return "";
    bool ok = false;
    std::string procs = slurp(cgroup + "/cgroup.procs", &ok);
    if (!ok) return "cgroup " + cgroup + " exists but cgroup.procs is unreadable";
    if (procs.find_first_not_of(" \n") == std::string::npos) return "";
    std::string first = procs.substr(0, procs.find('\n'));
    return "cgroup " + cgroup + " has processes (pid " + first + ")";
}

}  // namespace

int run_gc(const Options& options, const Context& context) {
    auto shaper = open_node_shaper(context);
    if (!shaper) {
        print_error(shaper.error().message);
        return kExitRuntime;
    }
    GcReport report;
    report.node = context.node;
    report.dry_run = options.dry_run;
    report.all = options.all;
    const auto jobs = (*shaper)->list();
    if (options.all) {
        for (const auto& st : jobs) report.removed.push_back(GcJob{st, "--all"});
        // remove_all() deletes our root qdisc on every selected NIC that has one.
        for (const auto& nic : (*shaper)->nics()) report.devices_reset.push_back(nic.device);
        if (!options.dry_run) {
            auto done = (*shaper)->remove_all();
            if (!done) report.errors.push_back(done.error().message);
        }
    } else {
        const auto stepds = stepd_jobs_here();
        std::map<uint32_t, bool> alive;
        for (const auto& st : jobs) {
            std::string why;
            if (auto it = stepds.find(st.job_id); it != stepds.end())
                why = "slurmstepd pid " + std::to_string(it->second);
            else
                why = cgroup_alive(st.cgroup);
            alive[st.job_id] = !why.empty();
            if (!why.empty()) report.kept.push_back(GcJob{st, why});
            else report.removed.push_back(GcJob{st, "no slurmstepd here, cgroup empty or gone"});
        }
        if (!options.dry_run && !report.removed.empty()) {
            auto removed = (*shaper)->reconcile([&alive](uint32_t id) {
                auto it = alive.find(id);
                // A job that appeared after the scan: its prolog just ran, keep it.
                return it == alive.end() || it->second;
            });
            if (!removed) report.errors.push_back(removed.error().message);
        }
    }
    if (options.json) {
        print_json(gc_json(report));
    } else {
        std::string text = format_gc_human(report);
        std::fputs(text.c_str(), report.errors.empty() ? stdout : stderr);
    }
    return report.errors.empty() ? kExitOk : kExitRuntime;
}

}  // namespace lanes::ctl
