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

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "node/cgroup_tree.hpp"

namespace lanes {
namespace {

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

void put_be32(nl_msg* m, int type, uint32_t v) { nla_put_u32(m, type, htonl(v)); }

void put_data(nl_msg* m, int type, const void* data, std::size_t len) {
    nlattr* n = nla_nest_start(m, type);
    nla_put(m, NFTA_DATA_VALUE, static_cast<int>(len), data);
    nla_nest_end(m, n);
}

// One expression of a rule: name + its attributes.
template <typename Fill>
void put_expr(nl_msg* m, const char* name, Fill fill) {
    nlattr* elem = nla_nest_start(m, NFTA_LIST_ELEM);
    nla_put_string(m, NFTA_EXPR_NAME, name);
    nlattr* data = nla_nest_start(m, NFTA_EXPR_DATA);
    fill(m);
    nla_nest_end(m, data);
    nla_nest_end(m, elem);
}

// The two bytes at the start of the network header, rewritten to carry `tos` in
// the DSCP bits (IPv4: TOS byte, checksum fixed; IPv6: traffic class, split over
// the first two bytes).
void put_dscp_rule_exprs(nl_msg* m, uint8_t nfproto, uint8_t dscp) {
    const uint8_t tos = static_cast<uint8_t>(dscp << 2);
    uint8_t mask[2], bits[2];
    if (nfproto == NFPROTO_IPV4) {
        mask[0] = 0xff, mask[1] = 0x03, bits[0] = 0, bits[1] = tos;
    } else {
        mask[0] = 0xf0, mask[1] = 0x3f, bits[0] = static_cast<uint8_t>(tos >> 4), bits[1] = static_cast<uint8_t>(tos << 4);
    }
    put_expr(m, "meta", [](nl_msg* x) {
        put_be32(x, NFTA_META_KEY, NFT_META_NFPROTO);
        put_be32(x, NFTA_META_DREG, NFT_REG_1);
    });
    put_expr(m, "cmp", [&](nl_msg* x) {
        put_be32(x, NFTA_CMP_SREG, NFT_REG_1);
        put_be32(x, NFTA_CMP_OP, NFT_CMP_EQ);
        put_data(x, NFTA_CMP_DATA, &nfproto, 1);
    });
    put_expr(m, "payload", [](nl_msg* x) {
        put_be32(x, NFTA_PAYLOAD_DREG, NFT_REG_1);
        put_be32(x, NFTA_PAYLOAD_BASE, NFT_PAYLOAD_NETWORK_HEADER);
        put_be32(x, NFTA_PAYLOAD_OFFSET, 0);
        put_be32(x, NFTA_PAYLOAD_LEN, 2);
    });
    put_expr(m, "bitwise", [&](nl_msg* x) {
        put_be32(x, NFTA_BITWISE_SREG, NFT_REG_1);
        put_be32(x, NFTA_BITWISE_DREG, NFT_REG_1);
        put_be32(x, NFTA_BITWISE_LEN, 2);
        put_data(x, NFTA_BITWISE_MASK, mask, 2);
        put_data(x, NFTA_BITWISE_XOR, bits, 2);
    });
    put_expr(m, "payload", [&](nl_msg* x) {
        put_be32(x, NFTA_PAYLOAD_SREG, NFT_REG_1);
        put_be32(x, NFTA_PAYLOAD_BASE, NFT_PAYLOAD_NETWORK_HEADER);
        put_be32(x, NFTA_PAYLOAD_OFFSET, 0);
        put_be32(x, NFTA_PAYLOAD_LEN, 2);
        if (nfproto == NFPROTO_IPV4) {
            put_be32(x, NFTA_PAYLOAD_CSUM_TYPE, NFT_PAYLOAD_CSUM_INET);
            put_be32(x, NFTA_PAYLOAD_CSUM_OFFSET, 10);
        }
    });
}

// Builds one nf_tables transaction (BATCH_BEGIN ... BATCH_END), every inner
// message acked, in the order the kernel applies them.
class NftBatch {
public:
    explicit NftBatch(uint32_t first_seq) : seq_(first_seq) { add_frame(NFNL_MSG_BATCH_BEGIN, 0, AF_UNSPEC); }

    nl_msg* begin(int nft_msg, int flags) {
        nl_msg* m = nfnl_frame((NFNL_SUBSYS_NFTABLES << 8) | nft_msg, flags | NLM_F_ACK, NFPROTO_INET, 0, seq_++);
        msgs_.push_back(m);
        last_acked_ = nlmsg_hdr(m)->nlmsg_seq;
        return m;
    }
    void chain(int nft_msg, int flags, const std::string& chain) {
        nl_msg* m = begin(nft_msg, flags);
        nla_put_string(m, NFTA_CHAIN_TABLE, kNftTable);
        nla_put_string(m, NFTA_CHAIN_NAME, chain.c_str());
    }
    void flush_chain(const std::string& chain) {
        nl_msg* m = begin(NFT_MSG_DELRULE, 0);
        nla_put_string(m, NFTA_RULE_TABLE, kNftTable);
        nla_put_string(m, NFTA_RULE_CHAIN, chain.c_str());
    }
    template <typename Exprs>
    void rule(const std::string& chain, Exprs exprs) {
        nl_msg* m = begin(NFT_MSG_NEWRULE, NLM_F_CREATE | NLM_F_APPEND);
        nla_put_string(m, NFTA_RULE_TABLE, kNftTable);
        nla_put_string(m, NFTA_RULE_CHAIN, chain.c_str());
        nlattr* list = nla_nest_start(m, NFTA_RULE_EXPRESSIONS);
        exprs(m);
        nla_nest_end(m, list);
    }
    // The jobs map element cgroup id -> goto chain (add), or the element (delete).
    void element(int nft_msg, int flags, uint64_t cgroup_id, const std::string* goto_chain) {
        nl_msg* m = begin(nft_msg, flags);
        nla_put_string(m, NFTA_SET_ELEM_LIST_TABLE, kNftTable);
        nla_put_string(m, NFTA_SET_ELEM_LIST_SET, "jobs");
        nlattr* elems = nla_nest_start(m, NFTA_SET_ELEM_LIST_ELEMENTS);
        nlattr* elem = nla_nest_start(m, NFTA_LIST_ELEM);
        put_data(m, NFTA_SET_ELEM_KEY, &cgroup_id, sizeof cgroup_id);  // host order, as nft stores it
        if (goto_chain) {
            nlattr* data = nla_nest_start(m, NFTA_SET_ELEM_DATA);
            nlattr* verdict = nla_nest_start(m, NFTA_DATA_VERDICT);
            put_be32(m, NFTA_VERDICT_CODE, static_cast<uint32_t>(NFT_GOTO));
            nla_put_string(m, NFTA_VERDICT_CHAIN, goto_chain->c_str());
            nla_nest_end(m, verdict);
            nla_nest_end(m, data);
        }
        nla_nest_end(m, elem);
        nla_nest_end(m, elems);
    }

    // The whole batch as bytes; the builder is spent afterwards.
    std::vector<uint8_t> finish() {
        add_frame(NFNL_MSG_BATCH_END, 0, AF_UNSPEC);
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
    uint32_t last_acked() const { return last_acked_; }
    ~NftBatch() {
        for (nl_msg* m : msgs_) nlmsg_free(m);
    }

private:
    void add_frame(int type, int flags, uint8_t family) {
        msgs_.push_back(nfnl_frame(type, flags, family, NFNL_SUBSYS_NFTABLES, seq_++));
    }
    uint32_t seq_;
    uint32_t last_acked_ = 0;
    std::vector<nl_msg*> msgs_;
};

std::vector<uint8_t> add_job_batch(const NftEnsureJob& op, uint32_t seq, uint32_t* last_acked) {
    NftBatch b(seq);
    const std::string chain = nft_chain_name(op.job_id);
    b.chain(NFT_MSG_NEWCHAIN, NLM_F_CREATE, chain);
    b.flush_chain(chain);  // a re-apply replaces the rules
    b.rule(chain, [&](nl_msg* m) {
        put_expr(m, "immediate", [&](nl_msg* x) {
            put_be32(x, NFTA_IMMEDIATE_DREG, NFT_REG_1);
            uint32_t prio = op.priority;  // host order: skb->priority
            put_data(x, NFTA_IMMEDIATE_DATA, &prio, sizeof prio);
        });
        put_expr(m, "meta", [](nl_msg* x) {
            put_be32(x, NFTA_META_KEY, NFT_META_PRIORITY);
            put_be32(x, NFTA_META_SREG, NFT_REG_1);
        });
        put_expr(m, "counter", [](nl_msg*) {});
    });
    if (op.dscp) {
        b.rule(chain, [&](nl_msg* m) { put_dscp_rule_exprs(m, NFPROTO_IPV4, *op.dscp); });
        b.rule(chain, [&](nl_msg* m) { put_dscp_rule_exprs(m, NFPROTO_IPV6, *op.dscp); });
    }
    if (!op.chain_only) b.element(NFT_MSG_NEWSETELEM, NLM_F_CREATE, op.cgroup_id, &chain);
    *last_acked = b.last_acked();
    return b.finish();
}

std::vector<uint8_t> add_element_batch(uint32_t job_id, uint64_t cgroup_id, uint32_t seq, uint32_t* last_acked) {
    NftBatch b(seq);
    const std::string chain = nft_chain_name(job_id);
    b.element(NFT_MSG_NEWSETELEM, NLM_F_CREATE, cgroup_id, &chain);
    *last_acked = b.last_acked();
    return b.finish();
}

std::vector<uint8_t> remove_job_batch(const NftRemoveJob& op, uint32_t seq, uint32_t* last_acked) {
    // Each delete is preceded by an add of the same object, so the transaction
    // succeeds whether or not the object is there (no "destroy" before 6.3).
    NftBatch b(seq);
    const std::string chain = nft_chain_name(op.job_id);
    b.chain(NFT_MSG_NEWCHAIN, NLM_F_CREATE, chain);
    if (op.cgroup_id != 0) {
        b.element(NFT_MSG_NEWSETELEM, NLM_F_CREATE, op.cgroup_id, &chain);
        b.element(NFT_MSG_DELSETELEM, 0, op.cgroup_id, nullptr);
    }
    b.flush_chain(chain);
    b.chain(NFT_MSG_DELCHAIN, 0, chain);
    *last_acked = b.last_acked();
    return b.finish();
}

// Send a batch and wait for the ack of its last message; the first error wins.
int send_batch(int fd, const std::vector<uint8_t>& batch, uint32_t last_acked, std::string* extack) {
    sockaddr_nl kernel{};
    kernel.nl_family = AF_NETLINK;
    if (::sendto(fd, batch.data(), batch.size(), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0)
        return -errno;
    int first_error = 0;
    alignas(nlmsghdr) char buf[32768];
    for (;;) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n < 0) {
            if (errno == EINTR) continue;
            return first_error ? first_error : -errno;
        }
        int len = static_cast<int>(n);
        for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
            if (h->nlmsg_type != NLMSG_ERROR) continue;
            auto* e = static_cast<nlmsgerr*>(NLMSG_DATA(h));
            if (e->error != 0 && first_error == 0) {
                first_error = e->error;
                if (extack && (h->nlmsg_flags & NLM_F_ACK_TLVS)) {
                    std::size_t off = NLMSG_HDRLEN + sizeof(nlmsgerr);
                    if (!(h->nlmsg_flags & NLM_F_CAPPED)) off += e->msg.nlmsg_len - NLMSG_HDRLEN;
                    auto* a = reinterpret_cast<nlattr*>(reinterpret_cast<char*>(h) + NLMSG_ALIGN(off));
                    int rem = static_cast<int>(h->nlmsg_len) - static_cast<int>(NLMSG_ALIGN(off));
                    for (; rem > 0 && nla_ok(a, rem); a = nla_next(a, &rem))
                        if (nla_type(a) == NLMSGERR_ATTR_MSG) *extack = nla_get_string(a);
                }
            }
            if (h->nlmsg_seq == last_acked) return first_error;
        }
    }
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
        int one = 1;
        ::setsockopt(nfnl_fd_, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof one);
        ::setsockopt(nfnl_fd_, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof one);
        timeval tv{5, 0};  // never hang a prolog on a lost reply
        ::setsockopt(nfnl_fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
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
        if (op.cgroup_id == 0 && !op.chain_only)
            return fail("lanes: nft: job " + std::to_string(op.job_id) + ": cgroup id unknown");
        auto r = batch(add_job_batch(op, seq_ + 1, &seq_), "job " + std::to_string(op.job_id));
        if (!r && !levels_.empty()) {
            // The table may have been flushed behind our back: rebuild the base, retry once.
            if (run(nft_base_script(levels_), "rebuild table " + table()))
                return batch(add_job_batch(op, seq_ + 1, &seq_), "job " + std::to_string(op.job_id));
        }
        return r;
    }

    Result<void> add_job_cgroup(uint32_t job_id, uint64_t cgroup_id) override {
        if (cgroup_id == 0) return fail("lanes: nft: job " + std::to_string(job_id) + ": cgroup id unknown");
        return batch(add_element_batch(job_id, cgroup_id, seq_ + 1, &seq_),
                     "key job " + std::to_string(job_id) + " on cgroup id " + std::to_string(cgroup_id));
    }

    Result<void> remove_job(const NftRemoveJob& op) override {
        auto exists = table_exists(nfnl_fd_, next_seq());
        if (!exists) return std::unexpected(exists.error());
        if (!*exists) return {};  // nothing of ours left at all
        return batch(remove_job_batch(op, seq_ + 1, &seq_), "remove job " + std::to_string(op.job_id));
    }

    Result<void> remove_all() override {
        auto exists = table_exists(nfnl_fd_, next_seq());
        if (!exists) return std::unexpected(exists.error());
        if (!*exists) return {};
        return run("delete table " + table() + "\n", "delete table " + table());
    }

private:
    Result<void> batch(const std::vector<uint8_t>& bytes, const std::string& what) {
        std::string extack;
        int err = send_batch(nfnl_fd_, bytes, seq_, &extack);
        if (err == 0) return {};
        return fail("lanes: nft: " + what + ": " + std::strerror(-err) + (extack.empty() ? "" : " (" + extack + ")"));
    }

    Result<void> run(const std::string& script, const std::string& what) {
        int rc = nft_run_cmd_from_buffer(ctx_, script.c_str());
        if (rc == 0) return {};
        std::string err = nft_ctx_get_error_buffer(ctx_);
        while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
        return fail("lanes: nft: " + what + ": " + (err.empty() ? std::string("failed") : err));
    }

    uint32_t next_seq() { return ++seq_; }

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

std::vector<uint8_t> nft_add_job_batch(const NftEnsureJob& op, uint32_t seq) {
    uint32_t last = 0;
    return add_job_batch(op, seq, &last);
}

std::vector<uint8_t> nft_remove_job_batch(const NftRemoveJob& op, uint32_t seq) {
    uint32_t last = 0;
    return remove_job_batch(op, seq, &last);
}

Result<std::unique_ptr<PacketMarker>> make_nftables_packet_marker(LogSink log) {
    auto m = std::make_unique<NftablesPacketMarker>(std::move(log));
    auto r = m->open();
    if (!r) return std::unexpected(r.error());
    return std::unique_ptr<PacketMarker>(std::move(m));
}

}  // namespace lanes
