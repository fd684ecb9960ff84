#include "packet_marker.hpp"

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

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "cgroup_tree.hpp"

namespace lanes {
namespace {

std::string table() { return std::string("inet ") + kNftTable; }

std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

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

// Send `msgs` (freed here) in one sendto on `fd` (NETLINK_NETFILTER) and return
// the error of the ack to the message with sequence `ack_seq` (0 = ok).
//
// The socket is long-lived on purpose: closing a NETLINK_NETFILTER socket makes
// the kernel flush nf_tables' pending destroy work, i.e. wait for an RCU grace
// period (~10 ms here) whenever something was deleted just before.
int nfnl_transact(int fd, std::initializer_list<nl_msg*> msgs, uint32_t ack_seq) {
    std::string out;
    for (nl_msg* m : msgs) {
        nlmsghdr* h = nlmsg_hdr(m);
        out.append(reinterpret_cast<const char*>(h), NLMSG_ALIGN(h->nlmsg_len));
        nlmsg_free(m);
    }
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(fd, out.data(), out.size(), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0) return -errno;
    alignas(nlmsghdr) char buf[16384];
    for (;;) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        int len = static_cast<int>(n);
        for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
            if (h->nlmsg_type == NLMSG_ERROR && h->nlmsg_seq == ack_seq)
                return static_cast<nlmsgerr*>(NLMSG_DATA(h))->error;
        }
    }
}

// Does table inet lanes exist? (A get, not a listing: no set elements fetched.)
Result<bool> table_exists(int fd, uint32_t seq) {
    nl_msg* get = nfnl_frame((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE, NLM_F_ACK, NFPROTO_INET, 0, seq);
    nla_put_string(get, NFTA_TABLE_NAME, kNftTable);
    int err = nfnl_transact(fd, {get}, seq);
    if (err == 0) return true;
    if (err == -ENOENT) return false;
    return fail(std::string("lanes: nft: get table ") + table() + ": " + std::strerror(-err));
}

// Delete one element of map `jobs` by its raw cgroupsv2 key (the cgroup id), in an
// nfnetlink batch of its own. nft can only name cgroupsv2 keys by path, which is
// gone once the dir is removed. Absent = success.
Result<void> delete_element_by_id(int fd, uint32_t seq, uint64_t cgroup_id) {
    nl_msg* begin = nfnl_frame(NFNL_MSG_BATCH_BEGIN, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES, seq);
    nl_msg* del = nfnl_frame((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_DELSETELEM, NLM_F_ACK, NFPROTO_INET, 0, seq + 1);
    nla_put_string(del, NFTA_SET_ELEM_LIST_TABLE, kNftTable);
    nla_put_string(del, NFTA_SET_ELEM_LIST_SET, "jobs");
    nlattr* elems = nla_nest_start(del, NFTA_SET_ELEM_LIST_ELEMENTS);
    nlattr* elem = nla_nest_start(del, NFTA_LIST_ELEM);
    nlattr* key = nla_nest_start(del, NFTA_SET_ELEM_KEY);
    nla_put(del, NFTA_DATA_VALUE, sizeof cgroup_id, &cgroup_id);  // host order, as nft stores it
    nla_nest_end(del, key);
    nla_nest_end(del, elem);
    nla_nest_end(del, elems);
    nl_msg* end = nfnl_frame(NFNL_MSG_BATCH_END, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES, seq + 2);
    int err = nfnl_transact(fd, {begin, del, end}, seq + 1);
    if (err == 0 || err == -ENOENT) return {};
    return fail("lanes: nft: delete element of cgroup id " + std::to_string(cgroup_id) + ": " + std::strerror(-err));
}

class NftablesPacketMarker final : public PacketMarker {
public:
    explicit NftablesPacketMarker(LogSink log) : log_(std::move(log)) {}
    ~NftablesPacketMarker() override {
        if (ctx_) nft_ctx_free(ctx_);
        if (nfnl_fd_ >= 0) ::close(nfnl_fd_);
    }

    Result<void> open() {
        nfnl_fd_ = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_NETFILTER);
        if (nfnl_fd_ < 0) return fail(std::string("lanes: nfnetlink socket: ") + std::strerror(errno));
        sockaddr_nl sa{};
        sa.nl_family = AF_NETLINK;
        if (::bind(nfnl_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0)
            return fail(std::string("lanes: nfnetlink bind: ") + std::strerror(errno));
        ctx_ = nft_ctx_new(NFT_CTX_DEFAULT);
        if (!ctx_) return fail("lanes: nft: cannot create a libnftables context");
        nft_ctx_buffer_output(ctx_);
        nft_ctx_buffer_error(ctx_);
        return {};
    }

    Result<void> ensure_base(const std::vector<int>& levels) override {
        levels_ = levels;
        return run(nft_base_script(levels), "ensure table " + table());
    }

    Result<void> add_job(const NftEnsureJob& op) override {
        std::string what = "job " + std::to_string(op.job_id);
        auto r = run(nft_add_job_script(op), what);
        if (!r && !levels_.empty()) {
            // The table may have been flushed behind our back: rebuild the base, retry once.
            if (run(nft_base_script(levels_), "rebuild table " + table())) return run(nft_add_job_script(op), what);
        }
        return r;
    }

    Result<void> remove_job(const NftRemoveJob& op) override {
        auto exists = table_exists(nfnl_fd_, next_seq());
        if (!exists) return std::unexpected(exists.error());
        if (!*exists) return {};  // nothing of ours left at all
        std::string path = std::string(kNftCgroupBase) + "/" + op.cgroup_key;
        struct stat st {};
        bool by_path = !op.cgroup_key.empty() && ::stat(path.c_str(), &st) == 0 &&
                       (op.cgroup_id == 0 || static_cast<uint64_t>(st.st_ino) == op.cgroup_id);
        if (!by_path && op.cgroup_id != 0) {
            auto r = delete_element_by_id(nfnl_fd_, next_seq(), op.cgroup_id);
            if (!r) return r;
        }
        return run(nft_remove_job_script(op, by_path), "remove job " + std::to_string(op.job_id));
    }

    Result<void> remove_all() override {
        auto exists = table_exists(nfnl_fd_, next_seq());
        if (!exists) return std::unexpected(exists.error());
        if (!*exists) return {};
        return run("delete table " + table() + "\n", "delete table " + table());
    }

private:
    Result<void> run(const std::string& script, const std::string& what) {
        int rc = nft_run_cmd_from_buffer(ctx_, script.c_str());
        if (rc == 0) return {};
        std::string err = nft_ctx_get_error_buffer(ctx_);
        while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
        return fail("lanes: nft: " + what + ": " + (err.empty() ? std::string("failed") : err));
    }

    uint32_t next_seq() {
        seq_ += 3;
        return seq_;
    }

    LogSink log_;
    nft_ctx* ctx_ = nullptr;
    int nfnl_fd_ = -1;
    uint32_t seq_ = 0;
    std::vector<int> levels_;
};

}  // namespace

std::string nft_chain_name(uint32_t job_id) { return "job_" + std::to_string(job_id); }

std::string nft_priority(uint32_t priority) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "%x:%x", priority >> 16, priority & 0xffff);
    return buf;
}

std::string nft_base_script(const std::vector<int>& levels) {
    std::string t = table();
    std::string s = "add table " + t + "\n";
    s += "add map " + t + " jobs { type cgroupsv2 : verdict; }\n";
    s += "add chain " + t + " out { type filter hook output priority mangle; policy accept; }\n";
    s += "flush chain " + t + " out\n";
    for (int level : levels)
        s += "add rule " + t + " out socket cgroupv2 level " + std::to_string(level) + " vmap @jobs\n";
    return s;
}

std::string nft_add_job_script(const NftEnsureJob& op) {
    std::string t = table(), chain = nft_chain_name(op.job_id);
    std::string s = "add chain " + t + " " + chain + "\n";
    s += "flush chain " + t + " " + chain + "\n";
    s += "add rule " + t + " " + chain + " meta priority set " + nft_priority(op.priority) + " counter\n";
    if (op.dscp) {
        std::string d = std::to_string(*op.dscp);
        s += "add rule " + t + " " + chain + " meta nfproto ipv4 ip dscp set " + d + "\n";
        s += "add rule " + t + " " + chain + " meta nfproto ipv6 ip6 dscp set " + d + "\n";
    }
    s += "add element " + t + " jobs { " + quoted(op.cgroup_key) + " : goto " + chain + " }\n";
    return s;
}

std::string nft_remove_job_script(const NftRemoveJob& op, bool by_path) {
    // The table exists (checked first). "add" before "delete" makes every step
    // succeed whether or not the object is there (nft 1.0.6 has no "destroy").
    std::string t = table(), chain = nft_chain_name(op.job_id);
    std::string s = "add map " + t + " jobs { type cgroupsv2 : verdict; }\n";
    s += "add chain " + t + " " + chain + "\n";
    if (by_path) {
        s += "add element " + t + " jobs { " + quoted(op.cgroup_key) + " : goto " + chain + " }\n";
        s += "delete element " + t + " jobs { " + quoted(op.cgroup_key) + " }\n";
    }
    s += "flush chain " + t + " " + chain + "\n";
    s += "delete chain " + t + " " + chain + "\n";
    return s;
}

Result<std::unique_ptr<PacketMarker>> make_nftables_packet_marker(LogSink log) {
    auto m = std::make_unique<NftablesPacketMarker>(std::move(log));
    auto r = m->open();
    if (!r) return std::unexpected(r.error());
    return std::unique_ptr<PacketMarker>(std::move(m));
}

}  // namespace lanes
