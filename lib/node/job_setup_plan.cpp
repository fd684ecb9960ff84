// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/job_setup_plan.hpp"

#include <algorithm>

#include "node/packet_marker.hpp"  // nft_priority, cgroup_level

namespace lanes {

JobRoot plan_job_root(const NodeConfig& config, const std::string& job, uint16_t previous_major,
                      std::vector<NicFacts> nics, const std::function<bool(uint16_t major)>& root_in_use,
                      const std::function<bool(const std::string& dev, uint16_t major)>& our_old_root) {
    JobRoot out;
    out.effective = config;
    if (previous_major != 0) out.effective.root_handle_major = previous_major;
    // A root of ours under an older root_handle (lanes.toml changed while jobs
    // run on it): new jobs join it until it is idle, then it is replaced.
    bool joined = false;
    for (auto& nic : nics) {
        if (!nic.has_foreign_root_qdisc || nic.root_kind != "htb") continue;
        const auto old_major = static_cast<uint16_t>(nic.root_handle >> 16);
        if (!root_in_use(old_major)) continue;
        out.effective.root_handle_major = old_major;
        nic.has_foreign_root_qdisc = false;
        nic.has_our_root = true;
        out.notes.push_back(job + ": NIC " + nic.device + " keeps the root htb " +
                            nft_priority(tc_handle(old_major, 0)) +
                            " of running jobs (node.root_handle "
                            "changed; the new one applies once they are gone)");
        joined = true;
    }
    // An idle root of ours under another root_handle: replaced by the configured one.
    for (auto& nic : nics) {
        if (joined || !nic.has_foreign_root_qdisc || nic.root_kind != "htb") continue;
        const auto old_major = static_cast<uint16_t>(nic.root_handle >> 16);
        if (!our_old_root(nic.device, old_major)) continue;
        out.notes.push_back(job + ": NIC " + nic.device + ": replacing Lanes' idle root htb " +
                            nft_priority(tc_handle(old_major, 0)) + " (node.root_handle changed)");
        nic.has_our_root = false;
        out.effective.foreign_qdisc = ForeignQdiscAction::Adopt;  // EnsureRoot replaces it
        out.replaced_idle_root = true;
    }
    out.nics = std::move(nics);
    return out;
}

Result<CgroupPlacement> place_named_cgroup(const Cgroup2Mount& mount, const std::string& cgroup,
                                           const std::string& job) {
    if (cgroup.front() == '/' || cgroup.find("..") != std::string::npos)
        return fail(job + ": cgroup \"" + cgroup + "\" must be relative to the cgroup2 mount " + mount.mount_point);
    CgroupPlacement p;
    p.dir = mount.mount_point + (mount.mount_point.ends_with("/") ? "" : "/") + cgroup;
    p.parent = p.dir.substr(0, p.dir.find_last_of('/'));
    p.key = cgroup;
    p.level = cgroup_level(mount, cgroup);
    p.owned = false;
    return p;
}

bool prolog_finds_root_lost(uint32_t shaped_jobs, bool reapplied, const std::vector<NicFacts>& nics) {
    return shaped_jobs > (reapplied ? 1u : 0u) &&
           std::any_of(nics.begin(), nics.end(), [](const NicFacts& n) { return n.root_handle == 0; });
}

namespace {
std::string setup_root_text(const NicFacts& nic) {
    if (nic.root_handle == 0) return "none";
    return (nic.root_kind.empty() ? std::string("qdisc") : nic.root_kind) + " " + handle_text(nic.root_handle);
}
}  // namespace

std::string nics_changed_under_setup(const std::vector<NicFacts>& planned, const std::vector<NicFacts>& now) {
    std::string out;
    auto add = [&](const std::string& clause) { out += (out.empty() ? "" : "; ") + clause; };
    for (const auto& was : planned) {
        auto it = std::find_if(now.begin(), now.end(), [&](const NicFacts& n) { return n.device == was.device; });
        if (it == now.end()) {
            add("NIC " + was.device + " is gone");
            continue;
        }
        if (it->ifindex != was.ifindex)
            add("NIC " + was.device + " was recreated (ifindex " + std::to_string(was.ifindex) + " is now " +
                std::to_string(it->ifindex) + ")");
        else if (was.root_handle == 0 && it->has_our_root)
            continue;  // the failed attempt's own EnsureRoot (its undo leaves the root)
        else if (it->root_handle != was.root_handle || it->root_kind != was.root_kind)
            add("NIC " + was.device + ": root " + setup_root_text(was) + " is now " + setup_root_text(*it));
    }
    return out;
}

JobState recorded_setup_state(JobState planned, const std::string& boot_id, const std::vector<std::string>& unready,
                              const CgroupPlacement& place, std::optional<uint64_t> dir_id) {
    planned.boot_id = boot_id;          // a later boot knows this job is gone
    planned.pending_devices = unready;  // converge() shapes them once they are up
    if (!place.owned) {
        if (dir_id) planned.cgroup_id = *dir_id;
        planned.cgroup_level = place.level;
    }
    return planned;
}

std::vector<std::string> setup_warnings(const Plan& plan, const JobRoot& root) {
    std::vector<std::string> out = plan.warnings;
    if (root.replaced_idle_root)
        std::erase_if(out, [](const std::string& w) { return w.find("replacing foreign") != std::string::npos; });
    return out;
}

bool setup_changes_gso(const std::optional<JobState>& previous, const JobState& state) {
    return !(previous && *previous == state);
}

std::string setup_done_line(const JobState& state, const std::string& job, bool took_parked, bool cgroup_pending) {
    return job + ": class " + state.class_name + " shaped as " +
           nft_priority(tc_handle(state.root_major, state.minor)) + (took_parked ? " (a parked class)" : "") + " on " +
           std::to_string(state.devices.size()) + " NIC(s), cgroup " + state.cgroup +
           (cgroup_pending ? " (Slurm's; keyed by the job's first step)" : "");
}

}  // namespace lanes
