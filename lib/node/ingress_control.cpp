// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/ingress_control.hpp"

#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <nftables/libnftables.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <regex>

#include "node/netlink_socket.hpp"
#include "node/nl_msg.hpp"

namespace lanes {
namespace {

bool is_ifb_name(const std::string& name) {
    return name.size() == std::string(kIfbPrefix).size() + 6 && name.starts_with(kIfbPrefix);
}

class RealIngressControl final : public IngressControl {
public:
    explicit RealIngressControl(TrafficControl& tc) : tc_(tc) {}
    ~RealIngressControl() override {
        if (ctx_) nft_ctx_free(ctx_);
    }

    Result<void> open() {
        auto r = sock_.open(NETLINK_ROUTE);
        if (!r) return r;
        ctx_ = nft_ctx_new(NFT_CTX_DEFAULT);
        if (!ctx_) return fail("nft: cannot create a libnftables context");
        nft_ctx_buffer_output(ctx_);
        nft_ctx_buffer_error(ctx_);
        return {};
    }

    Result<IfbObserved> observe_ifb(const std::string& ifb) override {
        IfbObserved o;
        o.device = ifb;
        const unsigned idx = if_nametoindex(ifb.c_str());
        if (idx == 0) return o;
        o.exists = true;
        auto down = tc_.link_down(ifb);
        o.up = down && !*down;
        auto snap = tc_.snapshot(static_cast<int>(idx));
        if (!snap) return fail(ifb + ": " + snap.error().message);
        o.tc = *snap;
        return o;
    }

    Result<std::vector<std::string>> ifb_devices() override {
        auto all = tc_.devices();
        if (!all) return std::unexpected(all.error());
        std::vector<std::string> out;
        for (const auto& d : *all)
            if (is_ifb_name(d)) out.push_back(d);
        return out;
    }

    Result<IngressNftObserved> observe_nft(const std::vector<std::string>& nics) override {
        IngressNftObserved o;
        const std::string t = std::string("netdev ") + kIngressTable;
        auto set = run("list set " + t + " jobs");
        if (!set) {
            if (set.error().message.find("No such file or directory") != std::string::npos) return o;
            return std::unexpected(set.error());
        }
        o.table = true;
        if (auto at = set->find("elements = {"); at != std::string::npos) {
            static const std::regex handle(R"(([0-9a-f]+):([0-9a-f]+))");
            const std::string body = set->substr(at, set->find('}', at) - at);
            for (std::sregex_iterator it(body.begin(), body.end(), handle), end; it != end; ++it)
                o.jobs.insert((static_cast<uint32_t>(std::stoul((*it)[1], nullptr, 16)) << 16) |
                              static_cast<uint32_t>(std::stoul((*it)[2], nullptr, 16)));
        }
        // Every chain of the table, so that one for a NIC no longer selected shows.
        auto chains = run("list chains netdev");
        if (!chains) return std::unexpected(chains.error());
        std::set<std::string> tags;
        {
            static const std::regex chain(R"(chain (eg|in)_([0-9a-f]{6}) )");
            bool in_table = false;
            std::size_t pos = 0;
            const std::string& text = *chains;
            while (pos < text.size()) {
                std::size_t nl = text.find('\n', pos);
                std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
                pos = nl == std::string::npos ? text.size() : nl + 1;
                if (line.starts_with("table "))
                    in_table = line.find(" " + std::string(kIngressTable) + " ") != std::string::npos;
                std::smatch m;
                if (in_table && std::regex_search(line, m, chain)) tags.insert(m[2]);
            }
        }
        for (const auto& tag : tags) {
            auto nic = std::find_if(nics.begin(), nics.end(),
                                    [&](const std::string& n) { return ingress_device_tag(n) == tag; });
            if (nic == nics.end()) {
                o.nics.insert("?" + tag);  // a chain of a NIC not selected now: rebuild
                continue;
            }
            auto in = run("list chain " + t + " in_" + tag);
            auto eg = run("list chain " + t + " eg_" + tag);
            // Bound to the devices there are now (not to a NIC or IFB since made
            // again): see IngressBinding.
            const IngressBinding now = binding_now(*nic);
            const bool bound = in && eg && ingress_chain_binding(*in) == now && ingress_chain_binding(*eg) == now;
            if (bound && in->find("fwd to \"" + ifb_device_name(*nic) + "\"") != std::string::npos &&
                eg->find("@flows4") != std::string::npos && eg->find("@flows6") != std::string::npos)
                o.nics.insert(*nic);
            else o.nics.insert("?" + tag);
        }
        return o;
    }

    Result<void> execute(const IngressOp& op) override {
        return std::visit(
            [&](const auto& o) -> Result<void> {
                using T = std::decay_t<decltype(o)>;
                if constexpr (std::is_same_v<T, EnsureIfb>) return ensure_ifb(o);
                else if constexpr (std::is_same_v<T, DeleteIfb>) return delete_ifb(o);
                else if constexpr (std::is_same_v<T, NftIngressBase>) {
                    auto seen = run("list set netdev " + std::string(kIngressTable) + " jobs");
                    std::map<std::string, IngressBinding> bindings;
                    for (const auto& nic : o.nics) bindings[nic] = binding_now(nic);
                    auto r = run(nft_ingress_base_script(o.nics, seen.has_value(), bindings));
                    if (!r) return std::unexpected(r.error());
                    return {};
                } else if constexpr (std::is_same_v<T, NftIngressJobs>) {
                    auto r = run(nft_ingress_jobs_script(o));
                    if (!r) return std::unexpected(r.error());
                    return {};
                } else {
                    return execute_tc(o);
                }
            },
            op);
    }

    Result<ClassCounters> class_counters(const std::string& ifb, uint32_t classid) override {
        const unsigned idx = if_nametoindex(ifb.c_str());
        if (idx == 0) return fail(ifb + ": no such device");
        return tc_.class_counters(static_cast<int>(idx), classid);
    }

private:
    static IngressBinding binding_now(const std::string& nic) {
        return IngressBinding{if_nametoindex(nic.c_str()), if_nametoindex(ifb_device_name(nic).c_str())};
    }

    Result<std::string> run(const std::string& script) {
        int rc = nft_run_cmd_from_buffer(ctx_, script.c_str());
        std::string out = nft_ctx_get_output_buffer(ctx_);
        if (rc == 0) return out;
        std::string err = nft_ctx_get_error_buffer(ctx_);
        while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
        return fail("nft: " + (err.empty() ? std::string("failed") : err));
    }

    Result<void> ensure_ifb(const EnsureIfb& op) {
        if (if_nametoindex(op.ifb.c_str()) == 0) {
            MsgPtr msg(nlmsg_alloc_simple(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL));
            ifinfomsg ifi{};
            ifi.ifi_family = AF_UNSPEC;
            nlmsg_append(msg.get(), &ifi, sizeof ifi, NLMSG_ALIGNTO);
            nla_put_string(msg.get(), IFLA_IFNAME, op.ifb.c_str());
            nlattr* info = nla_nest_start(msg.get(), IFLA_LINKINFO);
            nla_put_string(msg.get(), IFLA_INFO_KIND, "ifb");
            nla_nest_end(msg.get(), info);
            auto out = sock_.request(nlmsg_hdr(msg.get()), false);
            if (out.error && out.error != -EEXIST)
                return fail("ifb " + op.ifb + " for " + op.nic + ": " + netlink_error_text(out));
        }
        // Up, with an alias naming the NIC (the kernel ignores IFLA_IFALIAS at creation).
        const unsigned idx = if_nametoindex(op.ifb.c_str());
        if (idx == 0) return fail("ifb " + op.ifb + " for " + op.nic + ": not there after it was made");
        MsgPtr msg(nlmsg_alloc_simple(RTM_NEWLINK, 0));
        ifinfomsg ifi{};
        ifi.ifi_family = AF_UNSPEC;
        ifi.ifi_index = static_cast<int>(idx);
        ifi.ifi_flags = IFF_UP;
        ifi.ifi_change = IFF_UP;
        nlmsg_append(msg.get(), &ifi, sizeof ifi, NLMSG_ALIGNTO);
        nla_put_string(msg.get(), IFLA_IFALIAS, ("lanes ingress of " + op.nic).c_str());
        auto out = sock_.request(nlmsg_hdr(msg.get()), false);
        if (out.error) return fail("ifb " + op.ifb + " for " + op.nic + ": up: " + netlink_error_text(out));
        return {};
    }

    Result<void> delete_ifb(const DeleteIfb& op) {
        if (!is_ifb_name(op.ifb)) return fail("ifb " + op.ifb + ": not a Lanes IFB name");
        MsgPtr msg(nlmsg_alloc_simple(RTM_DELLINK, 0));
        ifinfomsg ifi{};
        ifi.ifi_family = AF_UNSPEC;
        nlmsg_append(msg.get(), &ifi, sizeof ifi, NLMSG_ALIGNTO);
        nla_put_string(msg.get(), IFLA_IFNAME, op.ifb.c_str());
        auto out = sock_.request(nlmsg_hdr(msg.get()), false);
        if (out.error == -ENODEV || out.error == -ENOENT) return {};
        if (out.error) return fail("ifb " + op.ifb + ": delete: " + netlink_error_text(out));
        return {};
    }

    Result<void> execute_tc(const Operation& in) {
        Operation op = in;
        auto fill = [&](auto& o) -> Result<void> {
            if (o.ifindex) return {};
            const unsigned idx = if_nametoindex(o.device.c_str());
            if (idx == 0) return fail(o.device + ": no such device");
            o.ifindex = static_cast<int>(idx);
            return {};
        };
        return std::visit(
            [&](auto& o) -> Result<void> {
                using T = std::decay_t<decltype(o)>;
                if constexpr (std::is_same_v<T, EnsureRoot>) {
                    if (auto r = fill(o); !r) return r;
                    return tc_.ensure_root(o);
                } else if constexpr (std::is_same_v<T, AddClass>) {
                    if (auto r = fill(o); !r) return r;
                    return tc_.add_class(o);
                } else if constexpr (std::is_same_v<T, AddLeafQdisc>) {
                    if (auto r = fill(o); !r) return r;
                    return tc_.add_leaf_qdisc(o);
                } else if constexpr (std::is_same_v<T, DeleteClass>) {
                    if (auto r = fill(o); !r) return {};  // the IFB is gone: so is the class
                    return tc_.delete_class(o);
                } else {
                    return fail("ingress: unexpected operation " + describe(Operation(o)));
                }
            },
            op);
    }

    TrafficControl& tc_;
    NetlinkSocket sock_;
    nft_ctx* ctx_ = nullptr;
};

}  // namespace

Result<std::unique_ptr<IngressControl>> make_ingress_control(TrafficControl& tc) {
    auto c = std::make_unique<RealIngressControl>(tc);
    auto r = c->open();
    if (!r) return std::unexpected(r.error());
    return std::unique_ptr<IngressControl>(std::move(c));
}

Result<void> check_ingress_support(const std::string& nic) {
    NetlinkSocket sock;
    if (auto r = sock.open(NETLINK_ROUTE); !r) return r;
    const std::string probe = std::string(kIfbPrefix) + "check";  // not an is_ifb_name(): converge ignores it
    auto link = [&](int type, int flags) {
        MsgPtr msg(nlmsg_alloc_simple(type, flags));
        ifinfomsg ifi{};
        ifi.ifi_family = AF_UNSPEC;
        nlmsg_append(msg.get(), &ifi, sizeof ifi, NLMSG_ALIGNTO);
        nla_put_string(msg.get(), IFLA_IFNAME, probe.c_str());
        if (type == RTM_NEWLINK) {
            nlattr* info = nla_nest_start(msg.get(), IFLA_LINKINFO);
            nla_put_string(msg.get(), IFLA_INFO_KIND, "ifb");
            nla_nest_end(msg.get(), info);
        }
        return sock.request(nlmsg_hdr(msg.get()), false);
    };
    auto made = link(RTM_NEWLINK, NLM_F_CREATE | NLM_F_EXCL);
    if (made.error && made.error != -EEXIST)
        return fail("the kernel cannot create IFB devices (CONFIG_IFB, module ifb): " + netlink_error_text(made));
    (void)link(RTM_DELLINK, 0);

    nft_ctx* ctx = nft_ctx_new(NFT_CTX_DEFAULT);
    if (!ctx) return fail("nft: cannot create a libnftables context");
    nft_ctx_buffer_output(ctx);
    nft_ctx_buffer_error(ctx);
    const std::string table = "netdev " + std::string(kIngressTable) + "_check";
    const std::string script = "add table " + table + "\nadd chain " + table +
                               " eg { type filter hook egress device \"" + nic + "\" priority 0; }\ndelete table " +
                               table + "\n";
    const int rc = nft_run_cmd_from_buffer(ctx, script.c_str());
    std::string err = nft_ctx_get_error_buffer(ctx);
    nft_ctx_free(ctx);
    if (rc == 0) return {};
    const auto first_line = err.find('\n');
    if (first_line != std::string::npos) err.resize(first_line);
    return fail("no nftables netdev egress hook on " + nic +
                " (Linux 5.16 and nft 1.0.1 or later needed): " + (err.empty() ? std::string("nft failed") : err));
}

Result<IngressReport> converge_ingress(IngressControl& control, const std::vector<JobState>& jobs,
                                       const std::vector<NicFacts>& nics, const std::string& leaf_kind, bool dry_run,
                                       const LogSink& log) {
    std::vector<IfbObserved> ifbs;
    std::vector<std::string> names;
    for (const auto& nic : nics) names.push_back(ifb_device_name(nic.device));
    auto present = control.ifb_devices();
    if (!present) return std::unexpected(present.error());
    for (const auto& d : *present)
        if (std::find(names.begin(), names.end(), d) == names.end()) names.push_back(d);
    for (const auto& n : names) {
        auto o = control.observe_ifb(n);
        if (!o) return std::unexpected(o.error());
        ifbs.push_back(*o);
    }
    std::vector<std::string> nic_names;
    for (const auto& nic : nics) nic_names.push_back(nic.device);
    auto nft = control.observe_nft(nic_names);
    if (!nft) return std::unexpected(nft.error());
    IngressPlan plan = plan_ingress(jobs, nics, ifbs, *nft, leaf_kind);
    IngressReport report;
    for (const auto& step : plan.steps) {
        report.repairs.push_back(step.repair);
        if (dry_run) continue;
        for (const auto& op : step.operations) {
            if (log) log(LogLevel::Debug, "ingress: " + describe(op));
            auto r = control.execute(op);
            if (!r) {
                report.problems.push_back("ingress: " + describe(op) + ": " + r.error().message);
                break;
            }
        }
    }
    return report;
}

}  // namespace lanes
