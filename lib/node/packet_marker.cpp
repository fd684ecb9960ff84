// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/packet_marker.hpp"

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <nftables/libnftables.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>

#include "node/netlink_socket.hpp"

namespace lanes {
namespace {

constexpr const char* kPrioMap = "prio";
constexpr const char* kOutChain = "out";
// nlmsg_alloc_simple() gives one page; an element takes 32 bytes of it.
constexpr std::size_t kElementsPerMessage = 96;

std::string table() { return std::string("inet ") + kNftTable; }

nl_msg* nfnl_frame(int type, int flags, uint8_t family, uint16_t res_id, uint32_t seq) {
    nl_msg* m = nlmsg_alloc_simple(type, flags | NLM_F_REQUEST);
    nlmsg_hdr(m)->nlmsg_seq = seq;
    nfgenmsg g{};
    g.nfgen_family = family;
    g.version = NFNETLINK_V0;
    g.res_id = htons(res_id);
    nlmsg_append(m, &g, sizeof g, NLMSG_ALIGNTO);
    return m;
}

void put_data(nl_msg* m, int type, const void* data, std::size_t len) {
    nlattr* n = nla_nest_start(m, type);
    nla_put(m, NFTA_DATA_VALUE, static_cast<int>(len), data);
    nla_nest_end(m, n);
}

// One element: cgroup id (host order, as nft stores a cgroupsv2 key) and, for the
// prio map, the priority (host order: skb->priority).
struct Element {
    uint64_t key = 0;
    std::optional<uint32_t> priority;
};

// One nf_tables transaction (BATCH_BEGIN ... BATCH_END). Only the last inner
// message asks for an ack: the kernel reports every failing message anyway, and a
// rebuild of thousands of elements must not fill the socket with acks.
class NftBatch {
public:
    explicit NftBatch(uint32_t first_seq) : seq_(first_seq), first_(first_seq) { add_frame(NFNL_MSG_BATCH_BEGIN); }
    ~NftBatch() {
        for (nl_msg* m : msgs_) nlmsg_free(m);
    }
    NftBatch(const NftBatch&) = delete;
    NftBatch& operator=(const NftBatch&) = delete;

    // NEWSETELEM / DELSETELEM of `elems` in `set` (several messages when many).
    void elements(int nft_msg, const std::string& set, const std::vector<Element>& elems) {
        for (std::size_t at = 0; at < elems.size(); at += kElementsPerMessage) {
            nl_msg* m = begin(nft_msg, nft_msg == NFT_MSG_NEWSETELEM ? NLM_F_CREATE : 0);
            nla_put_string(m, NFTA_SET_ELEM_LIST_TABLE, kNftTable);
            nla_put_string(m, NFTA_SET_ELEM_LIST_SET, set.c_str());
            nlattr* list = nla_nest_start(m, NFTA_SET_ELEM_LIST_ELEMENTS);
            for (std::size_t i = at; i < std::min(elems.size(), at + kElementsPerMessage); ++i) {
                nlattr* elem = nla_nest_start(m, NFTA_LIST_ELEM);
                put_data(m, NFTA_SET_ELEM_KEY, &elems[i].key, sizeof elems[i].key);
                if (elems[i].priority && nft_msg == NFT_MSG_NEWSETELEM)
                    put_data(m, NFTA_SET_ELEM_DATA, &*elems[i].priority, sizeof(uint32_t));
                nla_nest_end(m, elem);
            }
            nla_nest_end(m, list);
        }
    }

    bool empty() const { return msgs_.size() <= 1; }
    // Kept as numbers: both stay valid after finish() has freed the messages.
    uint32_t first_seq() const { return first_; }
    uint32_t last_seq() const { return last_; }

    // The whole batch as bytes; the builder is spent afterwards.
    std::vector<uint8_t> finish() {
        if (msgs_.size() > 1) nlmsg_hdr(msgs_.back())->nlmsg_flags |= NLM_F_ACK;
        add_frame(NFNL_MSG_BATCH_END);
        std::vector<uint8_t> out;
        for (nl_msg* m : msgs_) {
            nlmsghdr* h = nlmsg_hdr(m);
            auto* p = reinterpret_cast<const uint8_t*>(h);
            out.insert(out.end(), p, p + NLMSG_ALIGN(h->nlmsg_len));
            nlmsg_free(m);
        }
        msgs_.clear();
        return out;
    }

private:
    nl_msg* begin(int nft_msg, int flags) {
        nl_msg* m = nfnl_frame((NFNL_SUBSYS_NFTABLES << 8) | nft_msg, flags, NFPROTO_INET, 0, seq_++);
        msgs_.push_back(m);
        last_ = nlmsg_hdr(m)->nlmsg_seq;
        return m;
    }
    void add_frame(int type) { msgs_.push_back(nfnl_frame(type, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES, seq_++)); }

    uint32_t seq_;
    uint32_t first_;
    uint32_t last_ = 0;
    std::vector<nl_msg*> msgs_;
};

void add_job_to(NftBatch& b, const NftEnsureJob& op) {
    b.elements(NFT_MSG_NEWSETELEM, kPrioMap, {Element{op.cgroup_id, op.priority}});
    if (op.dscp) b.elements(NFT_MSG_NEWSETELEM, nft_dscp_set_name(*op.dscp), {Element{op.cgroup_id, {}}});
}

// Many jobs in one transaction: one NEWSETELEM per set and up to
// kElementsPerMessage elements.
void add_jobs_to(NftBatch& b, const std::vector<NftEnsureJob>& jobs) {
    std::vector<Element> prio;
    std::map<uint8_t, std::vector<Element>> dscp;
    for (const auto& j : jobs) {
        if (j.cgroup_id == 0) continue;
        prio.push_back(Element{j.cgroup_id, j.priority});
        if (j.dscp) dscp[*j.dscp].push_back(Element{j.cgroup_id, {}});
    }
    b.elements(NFT_MSG_NEWSETELEM, kPrioMap, prio);
    for (const auto& [d, elems] : dscp) b.elements(NFT_MSG_NEWSETELEM, nft_dscp_set_name(d), elems);
}

void remove_job_from(NftBatch& b, const NftRemoveJob& op) {
    b.elements(NFT_MSG_DELSETELEM, kPrioMap, {Element{op.cgroup_id, {}}});
    if (op.dscp) b.elements(NFT_MSG_DELSETELEM, nft_dscp_set_name(*op.dscp), {Element{op.cgroup_id, {}}});
}

std::vector<std::string> split_path(const std::string& path) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while (pos <= path.size()) {
        std::size_t slash = path.find('/', pos);
        std::string part = path.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos);
        if (!part.empty() && part != ".") out.push_back(part);
        if (slash == std::string::npos) break;
        pos = slash + 1;
    }
    return out;
}

class NftablesPacketMarker final : public PacketMarker {
public:
    NftablesPacketMarker(Cgroup2Mount mount, LogSink log) : mount_(std::move(mount)), log_(std::move(log)) {}
    ~NftablesPacketMarker() override {
        if (ctx_) nft_ctx_free(ctx_);
    }

    Result<void> open() {
        auto r = sock_.open(NETLINK_NETFILTER);
        if (!r) return r;
        ctx_ = nft_ctx_new(NFT_CTX_DEFAULT);
        if (!ctx_) return fail("nft: cannot create a libnftables context");
        nft_ctx_buffer_output(ctx_);
        nft_ctx_buffer_error(ctx_);
        return {};
    }

    void set_base(const MarkerBase& wanted) override {
        wanted_.unclassified = wanted.unclassified;
        wanted_.levels.insert(wanted.levels.begin(), wanted.levels.end());
        wanted_.dscps.insert(wanted.dscps.begin(), wanted.dscps.end());
        base_known_ = false;
    }

    Result<MarkedCgroup> resolve(const std::string& cgroup) override {
        if (cgroup.empty() || cgroup.front() == '/' || cgroup.find("..") != std::string::npos)
            return fail("cgroup \"" + cgroup + "\": expected a path relative to the cgroup2 mount " +
                        mount_.mount_point);
        std::string dir = mount_.mount_point + (mount_.mount_point.ends_with("/") ? "" : "/") + cgroup;
        struct stat st {};
        if (::stat(dir.c_str(), &st) != 0) return fail("cgroup " + dir + ": " + std::strerror(errno));
        if (!S_ISDIR(st.st_mode)) return fail("cgroup " + dir + ": not a directory");
        return MarkedCgroup{static_cast<uint64_t>(st.st_ino), cgroup_level(mount_, cgroup)};
    }

    Result<MarkedCgroup> add_job(const NftEnsureJob& in, bool* base_rebuilt) override {
        NftEnsureJob op = in;
        const std::string job = "job " + std::to_string(op.job_id);
        if (op.cgroup_id == 0 || op.level == 0) {
            auto where = resolve(op.cgroup);
            if (!where) return fail("nft: " + job + ": " + where.error().message);
            if (op.cgroup_id == 0) op.cgroup_id = where->id;
            if (op.level == 0) op.level = where->level;
        }
        MarkerBase need = wanted_;
        need.levels.insert(op.level);
        if (op.dscp) need.dscps.insert(*op.dscp);
        // Read the base back on every job (two small requests): this is how a
        // flushed ruleset is noticed, even by a long-lived process.
        base_known_ = false;
        auto ensured = ensure_base(need, base_rebuilt);
        if (!ensured) return std::unexpected(ensured.error());
        NftBatch b(sock_.next_seq());
        add_job_to(b, op);
        auto r = send(b, job);
        if (!r) return std::unexpected(r.error());
        return MarkedCgroup{op.cgroup_id, op.level};
    }

    Result<void> remove_job(const NftRemoveJob& op) override {
        if (op.cgroup_id == 0) return {};
        const std::string job = "remove job " + std::to_string(op.job_id);
        NftBatch b(sock_.next_seq());
        remove_job_from(b, op);
        auto bytes = b.finish();
        auto out = sock_.exchange(bytes.data(), bytes.size(), b.first_seq(), b.last_seq(), false);
        if (out.error == 0) return {};
        if (out.error != -ENOENT) return fail("nft: " + job + ": " + netlink_error_text(out));
        // Something was already gone (the table after a flush, the set, an element):
        // one element at a time, absent = fine.
        std::vector<std::string> sets{kPrioMap};
        if (op.dscp) sets.push_back(nft_dscp_set_name(*op.dscp));
        for (const auto& set : sets) {
            NftBatch one(sock_.next_seq());
            one.elements(NFT_MSG_DELSETELEM, set, {Element{op.cgroup_id, {}}});
            auto ob = one.finish();
            auto o = sock_.exchange(ob.data(), ob.size(), one.first_seq(), one.last_seq(), false);
            if (o.error != 0 && o.error != -ENOENT)
                return fail("nft: " + job + ": " + set + ": " + netlink_error_text(o));
        }
        return {};
    }

    Result<MarkerCheck> check(const std::vector<NftEnsureJob>& jobs) override {
        MarkerCheck c;
        MarkerBase need = wanted_;
        for (const auto& j : jobs) {
            if (j.level) need.levels.insert(j.level);
            if (j.dscp) need.dscps.insert(*j.dscp);
        }
        auto have = read_base();
        if (!have) return std::unexpected(have.error());
        c.base_ok = *have && (*have)->covers(need);
        if (!*have) {
            for (const auto& j : jobs) c.jobs_missing.push_back(j.job_id);
            return c;
        }
        auto prio = dump_elements(kPrioMap);
        if (!prio) return std::unexpected(prio.error());
        std::map<uint8_t, std::map<uint64_t, uint32_t>> dscp_sets;
        for (const auto& j : jobs) {
            bool ok = false;
            if (auto it = prio->find(j.cgroup_id); it != prio->end() && it->second == j.priority) ok = true;
            if (ok && j.dscp) {
                auto s = dscp_sets.find(*j.dscp);
                if (s == dscp_sets.end()) {
                    auto d = dump_elements(nft_dscp_set_name(*j.dscp));
                    s = dscp_sets.emplace(*j.dscp, d ? *d : std::map<uint64_t, uint32_t>{}).first;
                }
                ok = s->second.count(j.cgroup_id) > 0;
            }
            if (!ok) c.jobs_missing.push_back(j.job_id);
        }
        return c;
    }

    Result<void> rebuild(const std::vector<NftEnsureJob>& jobs) override {
        MarkerBase need = wanted_;
        for (const auto& j : jobs) {
            if (j.level) need.levels.insert(j.level);
            if (j.dscp) need.dscps.insert(*j.dscp);
        }
        // Delete and make anew in one transaction: no window without the base.
        auto r = run("delete table " + table() + "\n", "delete table " + table(), true);
        if (!r) return r;
        r = run(nft_base_script(need), "create table " + table(), false);
        if (!r) return r;
        base_ = need;
        base_known_ = true;
        if (jobs.empty()) return {};
        NftBatch b(sock_.next_seq());
        add_jobs_to(b, jobs);
        if (b.empty()) return {};
        return send(b, "re-add " + std::to_string(jobs.size()) + " job(s)");
    }

    Result<void> remove_all() override {
        base_known_ = false;
        return run("delete table " + table() + "\n", "delete table " + table(), true);
    }

private:
    // Make the base cover `need`: read what the kernel has (once per process, or
    // again after a change), run the base script when something is missing.
    Result<void> ensure_base(const MarkerBase& need, bool* rebuilt) {
        if (rebuilt) *rebuilt = false;
        if (!base_known_) {
            auto have = read_base();
            if (!have) return std::unexpected(have.error());
            if (!*have) {
                // No table: the first job since boot, or a flushed ruleset.
                if (rebuilt) *rebuilt = true;
            } else {
                base_ = **have;
                base_known_ = true;
            }
        }
        if (base_known_ && base_.covers(need)) return {};
        MarkerBase want = need;
        if (base_known_) {  // keep what running jobs may rely on
            want.levels.insert(base_.levels.begin(), base_.levels.end());
            want.dscps.insert(base_.dscps.begin(), base_.dscps.end());
        }
        auto r = run(nft_base_script(want), "table " + table(), false);
        if (!r) return r;
        base_ = want;
        base_known_ = true;
        return {};
    }

    // The base as the out chain's rule comments say; nullopt when the table (its
    // prio map) is missing: everything, elements included, is gone. A chain that
    // is missing, empty or holds rules not of ours covers nothing (the script
    // rewrites the rules; the elements are still there).
    Result<std::optional<MarkerBase>> read_base() {
        nl_msg* get = nfnl_frame((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETSET, 0, NFPROTO_INET, 0, 0);
        nla_put_string(get, NFTA_SET_TABLE, kNftTable);
        nla_put_string(get, NFTA_SET_NAME, kPrioMap);
        auto got = sock_.request(nlmsg_hdr(get), false);
        nlmsg_free(get);
        if (got.error == -ENOENT) return std::optional<MarkerBase>{};
        if (got.error != 0) return fail("nft: get map " + table() + " " + kPrioMap + ": " + netlink_error_text(got));

        nl_msg* m = nfnl_frame((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETRULE, 0, NFPROTO_INET, 0, 0);
        nla_put_string(m, NFTA_RULE_TABLE, kNftTable);
        nla_put_string(m, NFTA_RULE_CHAIN, kOutChain);
        MarkerBase base;
        bool any = false, foreign = false;
        auto out = sock_.request(nlmsg_hdr(m), true, [&](nlmsghdr* h) {
            if ((h->nlmsg_type & 0xff) != NFT_MSG_NEWRULE) return;
            nlattr* tb[NFTA_RULE_MAX + 1];
            if (nlmsg_parse(h, sizeof(nfgenmsg), tb, NFTA_RULE_MAX, nullptr) != 0) return;
            if (!tb[NFTA_RULE_TABLE] || std::strcmp(nla_get_string(tb[NFTA_RULE_TABLE]), kNftTable) != 0) return;
            if (!tb[NFTA_RULE_CHAIN] || std::strcmp(nla_get_string(tb[NFTA_RULE_CHAIN]), kOutChain) != 0) return;
            any = true;
            std::string comment;
            if (tb[NFTA_RULE_USERDATA]) {
                // nftnl udata: type (1 byte), length (1 byte), value; type 0 = comment.
                auto* p = static_cast<const uint8_t*>(nla_data(tb[NFTA_RULE_USERDATA]));
                int len = nla_len(tb[NFTA_RULE_USERDATA]);
                for (int i = 0; i + 2 <= len;) {
                    uint8_t type = p[i], l = p[i + 1];
                    if (i + 2 + l > len) break;
                    if (type == 0 && l > 0)
                        comment.assign(reinterpret_cast<const char*>(p + i + 2),
                                       strnlen(reinterpret_cast<const char*>(p + i + 2), l));
                    i += 2 + l;
                }
            }
            if (!nft_parse_rule_comment(comment, base)) foreign = true;
        });
        nlmsg_free(m);
        if (out.error != 0 && out.error != -ENOENT)
            return fail("nft: read chain " + table() + " " + kOutChain + ": " + netlink_error_text(out));
        if (!any || foreign) {
            MarkerBase nothing;
            nothing.unclassified = 0xff;  // no DSCP: covers() is false for any wish
            return std::optional<MarkerBase>(nothing);
        }
        return std::optional<MarkerBase>(base);
    }

    // Elements of a set or map: key -> data (0 for sets). ENOENT = empty.
    Result<std::map<uint64_t, uint32_t>> dump_elements(const std::string& set) {
        nl_msg* m = nfnl_frame((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETSETELEM, NLM_F_DUMP, NFPROTO_INET, 0, 0);
        nla_put_string(m, NFTA_SET_ELEM_LIST_TABLE, kNftTable);
        nla_put_string(m, NFTA_SET_ELEM_LIST_SET, set.c_str());
        std::map<uint64_t, uint32_t> out;
        auto o = sock_.request(nlmsg_hdr(m), true, [&](nlmsghdr* h) {
            nlattr* tb[NFTA_SET_ELEM_LIST_MAX + 1];
            if (nlmsg_parse(h, sizeof(nfgenmsg), tb, NFTA_SET_ELEM_LIST_MAX, nullptr) != 0 ||
                !tb[NFTA_SET_ELEM_LIST_ELEMENTS])
                return;
            nlattr* e;
            int rem;
            nla_for_each_nested(e, tb[NFTA_SET_ELEM_LIST_ELEMENTS], rem) {
                nlattr* el[NFTA_SET_ELEM_MAX + 1];
                if (nla_parse_nested(el, NFTA_SET_ELEM_MAX, e, nullptr) != 0 || !el[NFTA_SET_ELEM_KEY]) continue;
                nlattr* kv[NFTA_DATA_MAX + 1];
                if (nla_parse_nested(kv, NFTA_DATA_MAX, el[NFTA_SET_ELEM_KEY], nullptr) != 0 || !kv[NFTA_DATA_VALUE] ||
                    nla_len(kv[NFTA_DATA_VALUE]) != 8)
                    continue;
                uint64_t key = 0;
                std::memcpy(&key, nla_data(kv[NFTA_DATA_VALUE]), 8);
                uint32_t data = 0;
                if (el[NFTA_SET_ELEM_DATA]) {
                    nlattr* dv[NFTA_DATA_MAX + 1];
                    if (nla_parse_nested(dv, NFTA_DATA_MAX, el[NFTA_SET_ELEM_DATA], nullptr) == 0 &&
                        dv[NFTA_DATA_VALUE] && nla_len(dv[NFTA_DATA_VALUE]) == 4)
                        std::memcpy(&data, nla_data(dv[NFTA_DATA_VALUE]), 4);
                }
                out[key] = data;
            }
        });
        nlmsg_free(m);
        if (o.error == -ENOENT) return out;
        if (o.error != 0) return fail("nft: list " + set + ": " + netlink_error_text(o));
        return out;
    }

    Result<void> send(NftBatch& b, const std::string& what) {
        auto bytes = b.finish();
        auto out = sock_.exchange(bytes.data(), bytes.size(), b.first_seq(), b.last_seq(), false);
        if (out.error == 0) return {};
        if (out.error == -ENOENT || out.error == -EBUSY || out.error == -EEXIST) base_known_ = false;
        return fail("nft: " + what + ": " + netlink_error_text(out));
    }

    Result<void> run(const std::string& script, const std::string& what, bool absent_ok) {
        int rc = nft_run_cmd_from_buffer(ctx_, script.c_str());
        if (rc == 0) return {};
        std::string err = nft_ctx_get_error_buffer(ctx_);
        if (absent_ok && err.find("No such file or directory") != std::string::npos) return {};
        while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
        base_known_ = false;
        return fail("nft: " + what + ": " + (err.empty() ? std::string("failed") : err));
    }

    Cgroup2Mount mount_;
    LogSink log_;
    nft_ctx* ctx_ = nullptr;
    NetlinkSocket sock_;
    MarkerBase wanted_;
    MarkerBase base_;
    bool base_known_ = false;
};

}  // namespace

bool MarkerBase::covers(const MarkerBase& other) const {
    return unclassified == other.unclassified &&
           std::includes(levels.begin(), levels.end(), other.levels.begin(), other.levels.end()) &&
           std::includes(dscps.begin(), dscps.end(), other.dscps.begin(), other.dscps.end());
}

std::string nft_dscp_set_name(uint8_t dscp) { return "dscp_" + std::to_string(dscp); }

std::string nft_priority(uint32_t priority) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%x:%x", priority >> 16, priority & 0xffff);
    return buf;
}

std::string nft_rule_comment(int level, std::optional<uint8_t> dscp, bool unclassified) {
    if (unclassified) return "lanes:unclassified:d" + std::to_string(dscp.value_or(0));
    std::string s = "lanes:l" + std::to_string(level);
    if (dscp) s += ":d" + std::to_string(*dscp);
    return s;
}

bool nft_parse_rule_comment(const std::string& comment, MarkerBase& base) {
    auto number = [](const std::string& s, int max) -> int {
        if (s.empty() || s.size() > 3 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return -1;
        int v = std::stoi(s);
        return v <= max ? v : -1;
    };
    if (comment.starts_with("lanes:unclassified:d")) {
        int d = number(comment.substr(20), 63);
        if (d < 0) return false;
        base.unclassified = static_cast<uint8_t>(d);
        return true;
    }
    if (!comment.starts_with("lanes:l")) return false;
    std::string rest = comment.substr(7);
    std::size_t colon = rest.find(":d");
    int level = number(rest.substr(0, colon), 255);
    if (level <= 0) return false;
    base.levels.insert(level);
    if (colon != std::string::npos) {
        int d = number(rest.substr(colon + 2), 63);
        if (d < 0) return false;
        base.dscps.insert(static_cast<uint8_t>(d));
    }
    return true;
}

std::string nft_base_script(const MarkerBase& base) {
    const std::string t = table();
    std::string s = "add table " + t + "\n";
    s += "add map " + t + " " + kPrioMap + " { type cgroupsv2 : classid; }\n";
    for (uint8_t d : base.dscps) s += "add set " + t + " " + nft_dscp_set_name(d) + " { type cgroupsv2; }\n";
    s += "add chain " + t + " out { type filter hook output priority mangle; policy accept; }\n";
    s += "flush chain " + t + " out\n";
    auto rule = [&](const std::string& body, const std::string& comment) {
        s += "add rule " + t + " out " + body + " comment \"" + comment + "\"\n";
    };
    if (base.unclassified) {
        const std::string d = std::to_string(*base.unclassified);
        rule("meta nfproto ipv4 ip dscp set " + d, nft_rule_comment(0, base.unclassified, true));
        rule("meta nfproto ipv6 ip6 dscp set " + d, nft_rule_comment(0, base.unclassified, true));
    }
    for (int level : base.levels) {
        const std::string sock = "socket cgroupv2 level " + std::to_string(level);
        rule("meta priority set " + sock + " map @" + kPrioMap, nft_rule_comment(level, std::nullopt, false));
        for (uint8_t d : base.dscps) {
            const std::string set = "@" + nft_dscp_set_name(d), v = std::to_string(d);
            rule("meta nfproto ipv4 " + sock + " " + set + " ip dscp set " + v, nft_rule_comment(level, d, false));
            rule("meta nfproto ipv6 " + sock + " " + set + " ip6 dscp set " + v, nft_rule_comment(level, d, false));
        }
    }
    return s;
}

std::vector<uint8_t> nft_add_job_batch(const NftEnsureJob& op, uint32_t seq) {
    NftBatch b(seq);
    add_job_to(b, op);
    return b.finish();
}

std::vector<uint8_t> nft_add_jobs_batch(const std::vector<NftEnsureJob>& jobs, uint32_t seq) {
    NftBatch b(seq);
    add_jobs_to(b, jobs);
    return b.finish();
}

std::vector<uint8_t> nft_remove_job_batch(const NftRemoveJob& op, uint32_t seq) {
    NftBatch b(seq);
    remove_job_from(b, op);
    return b.finish();
}

int cgroup_level(const Cgroup2Mount& mount, const std::string& relative) {
    return static_cast<int>(split_path(mount.root).size() + split_path(relative).size());
}

Result<std::unique_ptr<PacketMarker>> make_nftables_packet_marker(const Cgroup2Mount& mount, LogSink log) {
    auto m = std::make_unique<NftablesPacketMarker>(mount, std::move(log));
    auto r = m->open();
    if (!r) return std::unexpected(r.error());
    return std::unique_ptr<PacketMarker>(std::move(m));
}

}  // namespace lanes
