// SPDX-License-Identifier: GPL-2.0-or-later
// See converge_plan.hpp.
#include "node/converge_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <set>

#include "node/ingress_plan.hpp"  // resolve_ingress

namespace lanes {
namespace {

std::string seen_text(const ObservedClass& c) {
    return "rate " + format_rate(c.rate_bits) + " ceil " + format_rate(c.ceil_bits) + " prio " + std::to_string(c.prio);
}
std::string want_text(const HtbParams& h) {
    return "rate " + format_rate(h.rate_bits) + " ceil " + format_rate(h.ceil_bits) + " prio " + std::to_string(h.prio);
}

bool has_device(const JobState& job, const std::string& device) {
    return std::any_of(job.devices.begin(), job.devices.end(), [&](const JobDevice& d) { return d.device == device; });
}
bool has_ingress_device(const JobState& job, const std::string& device) {
    return std::any_of(job.ingress_devices.begin(), job.ingress_devices.end(),
                       [&](const JobDevice& d) { return d.device == device; });
}

}  // namespace

ConvergePlan plan_converge_tc(const NodeConfig& config, const std::vector<JobState>& all_jobs,
                              const std::vector<NicObserved>& nics, const std::string& leaf_kind) {
    ConvergePlan plan;
    // Shaped jobs only (an unshaped record has no class anywhere).
    std::vector<JobState> jobs;
    for (auto job : all_jobs) {
        if (!job.unshaped.empty() || job.devices.empty()) continue;
        if (job.root_major == 0) job.root_major = config.root_handle_major;
        jobs.push_back(std::move(job));
    }
    // A selected NIC the job has no class on (down or absent at its prolog,
    // renamed, recreated): the job gets one, at its own rates on that link, and
    // its ingress class on the NIC's IFB if it has ingress caps (ingress_plan.hpp
    // makes that one from the saved ingress_devices).
    for (auto& job : jobs) {
        bool grew = false;
        for (const auto& seen : nics) {
            if (seen.nic.link_speed_bits == 0) continue;
            if (!has_device(job, seen.nic.device)) {
                job.devices.push_back(resolve_rates(job.net, seen.nic));
                std::erase(job.pending_devices, seen.nic.device);
                grew = true;
            }
            if (!has_ingress_device(job, seen.nic.device)) {
                for (auto& in : resolve_ingress(job.net, {seen.nic})) {
                    job.ingress_devices.push_back(std::move(in));
                    grew = true;
                }
            }
        }
        if (grew) plan.changed_jobs.push_back(job);
    }
    for (const auto& seen : nics) {
        const NicFacts& nic = seen.nic;
        // The root the jobs on this NIC hang from (their own root major: a
        // root_handle change applies to new jobs once these are gone).
        std::vector<const JobState*> here;
        for (const auto& job : jobs)
            if (has_device(job, nic.device)) here.push_back(&job);
        if (here.empty()) continue;
        const uint16_t major = here.front()->root_major;
        const uint32_t root_handle = tc_handle(major, 0);
        const bool ours = seen.tc.root.kind == "htb" && seen.tc.root.handle == root_handle;
        bool classes_gone = false;
        if (!ours) {
            const bool foreign = seen.tc.root.handle != 0;
            if (foreign && config.foreign_qdisc != ForeignQdiscAction::Adopt) {
                plan.problems.push_back("NIC " + nic.device + ": the root qdisc is " + seen.tc.root.kind + " " +
                                        handle_text(seen.tc.root.handle) + ", not Lanes' htb " +
                                        handle_text(root_handle) + "; " + std::to_string(here.size()) +
                                        " job(s) unshaped there until it is removed (node.foreign_qdisc = refuse)");
                continue;
            }
            EnsureRoot root = plan_root(config, nic, major);
            root.root_exists = false;
            root.replace_foreign = foreign;
            plan.steps.push_back(ConvergeStep{
                Repair{"root_qdisc", foreign ? "changed" : "missing", 0, nic.device,
                       "root htb " + handle_text(root_handle) +
                           (foreign ? " replaced " + seen.tc.root.kind + " " + handle_text(seen.tc.root.handle)
                                    : " missing")},
                {root}});
            classes_gone = true;
        } else {
            EnsureRoot root = plan_root(config, nic, major);
            root.root_exists = true;
            const ObservedClass* parent = find_class(seen.tc, tc_handle(major, kParentMinor));
            const ObservedClass* fallback = find_class(seen.tc, tc_handle(major, kDefaultMinor));
            if (!parent || !fallback || !same_htb(*parent, root.parent) || !same_htb(*fallback, root.fallback)) {
                const bool missing = !parent || !fallback;
                plan.steps.push_back(ConvergeStep{
                    Repair{"root_qdisc", missing ? "missing" : "changed", 0, nic.device,
                           "parent/default class of " + handle_text(root_handle) + (missing ? " missing" : " changed")},
                    {root}});
            }
        }
        for (const JobState* job : here) {
            if (job->root_major != major) {
                plan.problems.push_back("JobId=" + std::to_string(job->job_id) + ": NIC " + nic.device +
                                        ": its class hangs from root " + handle_text(tc_handle(job->root_major, 0)) +
                                        ", the NIC has " + handle_text(root_handle) + "; not repaired");
                continue;
            }
            const JobDevice& dev = *std::find_if(job->devices.begin(), job->devices.end(),
                                                 [&](const JobDevice& d) { return d.device == nic.device; });
            const AddClass want = plan_job_class(*job, dev, nic.ifindex);
            const AddLeafQdisc leaf = plan_job_leaf(*job, dev, nic.ifindex, leaf_kind);
            const bool was_pending = [&] {
                for (const auto& orig : all_jobs)
                    if (orig.job_id == job->job_id) return !has_device(orig, nic.device);
                return false;
            }();
            const ObservedClass* cls = classes_gone ? nullptr : find_class(seen.tc, want.classid);
            if (!cls) {
                plan.steps.push_back(
                    ConvergeStep{Repair{was_pending ? "pending_nic" : "class", was_pending ? "link_up" : "missing",
                                        job->job_id, nic.device,
                                        "class " + handle_text(want.classid) + " " + want_text(want.htb) +
                                            (was_pending ? " on a NIC the job had none on" : " missing")},
                                 {want, leaf}});
                continue;
            }
            if (!same_htb(*cls, want.htb))
                plan.steps.push_back(ConvergeStep{Repair{"class", "changed", job->job_id, nic.device,
                                                         "class " + handle_text(want.classid) + " " + seen_text(*cls) +
                                                             ", desired " + want_text(want.htb)},
                                                  {want}});
            const ObservedQdisc* q = find_leaf(seen.tc, want.classid);
            if (!q || q->kind != leaf.kind || q->handle != leaf.handle)
                plan.steps.push_back(ConvergeStep{
                    Repair{"leaf_qdisc", q ? "changed" : "missing", job->job_id, nic.device,
                           leaf.kind + " " + handle_text(leaf.handle) + " under " + handle_text(want.classid) +
                               (q ? " (found " + q->kind + " " + handle_text(q->handle) + ")" : " missing")},
                    {leaf}});
        }
    }
    return plan;
}

NftConverge plan_converge_nft(const std::vector<NftEnsureJob>& wanted, const MarkerCheck& check) {
    NftConverge out;
    if (wanted.empty()) return out;  // no keyed job: the table may be absent
    if (!check.base_ok) {
        out.rebuild = true;
        out.marks = wanted;
        out.repairs.push_back(Repair{"nft_table", "missing", 0, "",
                                     "table inet lanes missing or incomplete: rebuilt with the marks of " +
                                         std::to_string(wanted.size()) + " job(s)"});
        return out;
    }
    std::set<uint32_t> missing(check.jobs_missing.begin(), check.jobs_missing.end());
    for (const auto& w : wanted) {
        if (!missing.count(w.job_id)) continue;
        out.marks.push_back(w);
        out.repairs.push_back(Repair{"nft_element", "missing", w.job_id, "",
                                     "priority " + handle_text(w.priority) + " element of cgroup id " +
                                         std::to_string(w.cgroup_id) + " missing"});
    }
    return out;
}

}  // namespace lanes
