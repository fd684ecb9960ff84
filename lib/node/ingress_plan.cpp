// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/ingress_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <regex>

namespace lanes {
namespace {

// The IFB's root: parent and default class at the NIC's link speed.
EnsureRoot ifb_root(const std::string& ifb, uint64_t link, uint16_t major, bool exists) {
    EnsureRoot root;
    root.device = ifb;
    root.major = major;
    root.parent = htb_params(link, link, 0);
    root.fallback = htb_params(link, link, 7);
    root.root_exists = exists;
    return root;
}

}  // namespace

std::string ingress_device_tag(const std::string& nic) {
    uint32_t h = 2166136261u;
    for (unsigned char c : nic) {
        h ^= c;
        h *= 16777619u;
    }
    char buf[8];
    std::snprintf(buf, sizeof buf, "%06x", (h ^ (h >> 24)) & 0xffffff);
    return buf;
}

std::string ifb_device_name(const std::string& nic) { return std::string(kIfbPrefix) + ingress_device_tag(nic); }

std::vector<JobDevice> resolve_ingress(const NetworkDecision& net, const std::vector<NicFacts>& nics) {
    std::vector<JobDevice> out;
    if (!net.ingress_rate && !net.ingress_ceil) return out;
    NetworkDecision in;
    in.rate = net.ingress_rate;
    in.ceil = net.ingress_ceil;
    for (const auto& nic : nics)
        if (nic.link_speed_bits) out.push_back(resolve_rates(in, nic));
    return out;
}

std::string describe(const IngressOp& op) {
    return std::visit(
        [](const auto& o) -> std::string {
            using T = std::decay_t<decltype(o)>;
            if constexpr (std::is_same_v<T, EnsureIfb>) return "ifb " + o.ifb + " for " + o.nic + ": ensure, up";
            else if constexpr (std::is_same_v<T, DeleteIfb>) return "ifb " + o.ifb + ": delete";
            else if constexpr (std::is_same_v<T, NftIngressBase>) {
                std::string s = "nft netdev " + std::string(kIngressTable) + ": chains for";
                for (const auto& n : o.nics) s += " " + n;
                return o.nics.empty() ? "nft netdev " + std::string(kIngressTable) + ": delete" : s;
            } else if constexpr (std::is_same_v<T, NftIngressJobs>) {
                std::string s = "nft netdev " + std::string(kIngressTable) + " jobs:";
                for (auto h : o.add) s += " +" + handle_text(h);
                for (auto h : o.remove) s += " -" + handle_text(h);
                return s;
            } else {
                return describe(o);
            }
        },
        op);
}

IngressPlan plan_ingress(const std::vector<JobState>& jobs, const std::vector<NicFacts>& nics,
                         const std::vector<IfbObserved>& ifbs, const IngressNftObserved& nft,
                         const std::string& leaf_kind) {
    IngressPlan plan;
    auto observed = [&](const std::string& ifb) -> IfbObserved {
        for (const auto& o : ifbs)
            if (o.device == ifb) return o;
        return IfbObserved{ifb};
    };
    std::vector<std::string> wanted_nics;
    std::set<std::string> wanted_ifbs;
    std::set<uint32_t> wanted_jobs;
    for (const auto& nic : nics) {
        std::vector<std::pair<const JobState*, const JobDevice*>> here;
        for (const auto& job : jobs) {
            if (!job.unshaped.empty() || job.root_major == 0) continue;
            for (const auto& d : job.ingress_devices)
                if (d.device == nic.device) here.emplace_back(&job, &d);
        }
        if (here.empty()) continue;
        wanted_nics.push_back(nic.device);
        const std::string ifb = ifb_device_name(nic.device);
        wanted_ifbs.insert(ifb);
        const IfbObserved seen = observed(ifb);
        const uint16_t major = here.front().first->root_major;
        bool fresh = false;  // the IFB's root (and so every class) is being made now
        if (!seen.exists || !seen.up) {
            plan.steps.push_back(IngressStep{Repair{"ifb", seen.exists ? "changed" : "missing", 0, nic.device,
                                                    ifb + (seen.exists ? " down" : " missing")},
                                             {EnsureIfb{nic.device, ifb}}});
        }
        const bool ours = seen.exists && seen.tc.root.kind == "htb" && seen.tc.root.handle == tc_handle(major, 0);
        const EnsureRoot root = ifb_root(ifb, nic.link_speed_bits, major, ours);
        if (!ours) {
            plan.steps.push_back(IngressStep{
                Repair{"ifb_root", "missing", 0, nic.device, "htb " + handle_text(tc_handle(major, 0)) + " on " + ifb},
                {root}});
            fresh = true;
        } else {
            const ObservedClass* parent = find_class(seen.tc, tc_handle(major, kParentMinor));
            const ObservedClass* fallback = find_class(seen.tc, tc_handle(major, kDefaultMinor));
            if (!parent || !fallback || !same_htb(*parent, root.parent) || !same_htb(*fallback, root.fallback))
                plan.steps.push_back(IngressStep{Repair{"ifb_root", (!parent || !fallback) ? "missing" : "changed", 0,
                                                        nic.device, "parent/default class on " + ifb},
                                                 {root}});
        }
        std::set<uint32_t> wanted_classes = {tc_handle(major, kParentMinor), tc_handle(major, kDefaultMinor)};
        for (const auto& [job, dev] : here) {
            if (job->root_major != major) continue;  // a root_handle change: the first root's jobs only
            wanted_jobs.insert(tc_handle(job->root_major, job->minor));
            AddClass want = plan_job_class(*job, *dev, 0);
            want.device = ifb;
            AddLeafQdisc leaf = plan_job_leaf(*job, *dev, 0, leaf_kind);
            leaf.device = ifb;
            wanted_classes.insert(want.classid);
            const ObservedClass* cls = fresh ? nullptr : find_class(seen.tc, want.classid);
            if (!cls) {
                plan.steps.push_back(IngressStep{Repair{"ifb_class", "missing", job->job_id, nic.device,
                                                        "class " + handle_text(want.classid) + " on " + ifb},
                                                 {want, leaf}});
                continue;
            }
            if (!same_htb(*cls, want.htb))
                plan.steps.push_back(IngressStep{
                    Repair{"ifb_class", "changed", job->job_id, nic.device,
                           "class " + handle_text(want.classid) + " on " + ifb + ": ceil " +
                               format_rate(cls->ceil_bits) + ", desired " + format_rate(want.htb.ceil_bits)},
                    {want}});
            const ObservedQdisc* q = find_leaf(seen.tc, want.classid);
            if (!q || q->kind != leaf.kind)
                plan.steps.push_back(IngressStep{Repair{"ifb_leaf", q ? "changed" : "missing", job->job_id, nic.device,
                                                        leaf.kind + " under " + handle_text(want.classid)},
                                                 {leaf}});
        }
        // Classes of jobs that ended (the IFB is ours alone).
        if (!fresh)
            for (const auto& c : seen.tc.classes)
                if ((c.classid >> 16) == major && !wanted_classes.count(c.classid))
                    plan.steps.push_back(IngressStep{
                        Repair{"ifb_class", "stale", 0, nic.device, "class " + handle_text(c.classid) + " on " + ifb},
                        {DeleteClass{ifb, 0, c.classid}}});
    }
    // nftables: chains for the wanted NICs, then the jobs' elements.
    std::vector<std::string> seen_nics(nft.nics.begin(), nft.nics.end());
    std::vector<std::string> sorted_wanted = wanted_nics;
    std::sort(sorted_wanted.begin(), sorted_wanted.end());
    bool base_new = false;
    if (sorted_wanted != seen_nics || (!wanted_nics.empty() && !nft.table) || (wanted_nics.empty() && nft.table)) {
        plan.steps.push_back(
            IngressStep{Repair{"nft_ingress", wanted_nics.empty() ? "stale" : (nft.table ? "changed" : "missing"), 0,
                               "", "table netdev " + std::string(kIngressTable)},
                        {NftIngressBase{sorted_wanted}}});
        // The script deletes the table and makes it whole: @jobs starts empty.
        base_new = true;
    }
    if (!wanted_nics.empty()) {
        NftIngressJobs jobs_op;
        for (uint32_t h : wanted_jobs)
            if (base_new || !nft.jobs.count(h)) jobs_op.add.push_back(h);
        if (!base_new)
            for (uint32_t h : nft.jobs)
                if (!wanted_jobs.count(h)) jobs_op.remove.push_back(h);
        if (!jobs_op.add.empty() || !jobs_op.remove.empty())
            plan.steps.push_back(IngressStep{
                Repair{"nft_ingress_job", jobs_op.add.empty() ? "stale" : "missing", 0, "", "@jobs elements"},
                {jobs_op}});
    }
    // IFBs no job needs any more (after the table: no chain forwards to them).
    for (const auto& o : ifbs)
        if (o.exists && !wanted_ifbs.count(o.device))
            plan.steps.push_back(
                IngressStep{Repair{"ifb", "stale", 0, "", o.device + " no longer needed"}, {DeleteIfb{o.device}}});
    return plan;
}

static std::string binding_comment(const IngressBinding& b) {
    return " comment \"lanes: NIC ifindex " + std::to_string(b.nic_ifindex) + ", IFB ifindex " +
           std::to_string(b.ifb_ifindex) + "\"";
}

std::optional<IngressBinding> ingress_chain_binding(std::string_view chain_listing) {
    static const std::regex comment(R"re(comment "lanes: NIC ifindex ([0-9]{1,9}), IFB ifindex ([0-9]{1,9})")re");
    std::match_results<std::string_view::const_iterator> m;
    if (!std::regex_search(chain_listing.begin(), chain_listing.end(), m, comment)) return std::nullopt;
    return IngressBinding{static_cast<unsigned>(std::stoul(m[1].str())), static_cast<unsigned>(std::stoul(m[2].str()))};
}

std::string nft_ingress_base_script(const std::vector<std::string>& nics, bool table_exists,
                                    const std::map<std::string, IngressBinding>& bindings) {
    const std::string t = std::string("netdev ") + kIngressTable;
    std::string s;
    // Deleting the table drops every chain; a new one is made whole, in the same
    // transaction (no window without the chains of the NICs that stay).
    if (table_exists) s += "delete table " + t + "\n";
    if (nics.empty()) return s;
    const std::string timeout = std::to_string(kIngressFlowTimeoutSeconds) + "s";
    s += "table " + t + " {\n";
    s += "  set jobs {\n    type classid\n  }\n";
    s += "  map flows4 {\n    type ipv4_addr . inet_service . ipv4_addr . inet_service : classid\n"
         "    flags dynamic,timeout\n    timeout " +
         timeout + "\n    size 262144\n  }\n";
    // IPv6: remote port, local port, the low 64 bits of the remote address
    // (a 16-byte key: nft 1.0.6 stores a longer one wrongly, see ingress_plan.hpp).
    s += "  map flows6 {\n    typeof th dport . th sport . @nh,256,64 : meta priority\n"
         "    flags dynamic,timeout\n    timeout " +
         timeout + "\n    size 262144\n  }\n";
    for (const auto& nic : nics) {
        const std::string tag = ingress_device_tag(nic), ifb = ifb_device_name(nic);
        auto b = bindings.find(nic);
        const std::string comment = b == bindings.end() ? "" : binding_comment(b->second);
        s +=
            "  chain eg_" + tag + " {\n    type filter hook egress device \"" + nic + "\" priority 0; policy accept;\n";
        s += "    meta priority @jobs update @flows4 { ip daddr . th dport . ip saddr . th sport : meta priority }" +
             comment + "\n";
        s += "    meta protocol ip6 meta priority @jobs update @flows6 { th dport . th sport . @nh,256,64 : meta "
             "priority }\n";
        s += "  }\n";
        s += "  chain in_" + tag + " {\n    type filter hook ingress device \"" + nic +
             "\" priority 0; policy accept;\n";
        s += "    meta priority set ip saddr . th sport . ip daddr . th dport map @flows4 fwd to \"" + ifb + "\"" +
             comment + "\n";
        s += "    meta protocol ip6 meta priority set th sport . th dport . @nh,128,64 map @flows6 fwd to \"" + ifb +
             "\"\n";
        s += "  }\n";
    }
    s += "}\n";
    return s;
}

std::string nft_ingress_jobs_script(const NftIngressJobs& op) {
    const std::string set = std::string("netdev ") + kIngressTable + " jobs";
    auto list = [](const std::vector<uint32_t>& hs) {
        std::string s;
        for (auto h : hs) s += (s.empty() ? "" : ", ") + handle_text(h);
        return s;
    };
    std::string s;
    if (!op.remove.empty()) s += "delete element " + set + " { " + list(op.remove) + " }\n";
    if (!op.add.empty()) s += "add element " + set + " { " + list(op.add) + " }\n";
    return s;
}

}  // namespace lanes
