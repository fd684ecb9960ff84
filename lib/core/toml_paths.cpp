// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/toml_paths.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>

namespace lanes::config_parse {
namespace {

// The tables Lanes fills itself for an egress_device path (path_plan.hpp): a
// route_table there would be overwritten.
constexpr int64_t kOwnedTablesFirst = 0x4c4e0000, kOwnedTablesLast = 0x4c4effff;

bool valid_table_name(std::string_view s) {
    if (s.empty() || s.size() > 63) return false;
    if (std::isdigit(static_cast<unsigned char>(s.front()))) return false;
    for (char c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
    return true;
}

bool valid_ifname(std::string_view s) {
    if (s.empty() || s.size() > 15) return false;
    for (char c : s)
        if (c == '/' || c == ':' || c == '*' || c == '?' || std::isspace(static_cast<unsigned char>(c))) return false;
    return true;
}

}  // namespace

Result<std::string> canonical_cidr(std::string_view text) {
    const std::size_t slash = text.find('/');
    if (slash == std::string_view::npos) return fail("no prefix length (write e.g. \"10.20.0.0/16\")");
    const std::string addr(text.substr(0, slash)), len_text(text.substr(slash + 1));
    if (len_text.empty() || len_text.size() > 3 ||
        !std::all_of(len_text.begin(), len_text.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return fail("the prefix length " + quote(len_text) + " is not a number");
    unsigned char bin[16] = {};
    int family = AF_INET, bits = 32;
    if (inet_pton(AF_INET, addr.c_str(), bin) != 1) {
        if (inet_pton(AF_INET6, addr.c_str(), bin) != 1) return fail(quote(addr) + " is not an IPv4 or IPv6 address");
        family = AF_INET6;
        bits = 128;
    }
    const int len = std::stoi(len_text);
    if (len > bits) return fail("prefix length " + len_text + " is longer than " + std::to_string(bits));
    unsigned char net[16] = {};
    for (int i = 0; i < bits / 8; ++i) {
        const int keep = std::clamp(len - 8 * i, 0, 8);
        net[i] = static_cast<unsigned char>(bin[i] & (0xff00 >> keep));
    }
    char buf[INET6_ADDRSTRLEN] = {};
    inet_ntop(family, net, buf, sizeof buf);
    const std::string canonical = std::string(buf) + "/" + std::to_string(len);
    if (!std::equal(bin, bin + bits / 8, net))
        return fail("host bits set past /" + std::to_string(len) + " (did you mean " + quote(canonical) + "?)");
    return canonical;
}

void parse_class_path(TableReader& r, const toml::table& t, ClassConfig& c) {
    ClassPath p;
    p.line = static_cast<int>(t.source().begin.line);
    bool any = false;
    if (const toml::node* n = r.get("route_table")) {
        any = true;
        if (n->is_integer()) {
            const int64_t v = n->as_integer()->get();
            if (v < 1 || v > 4294967295LL)
                r.error(*n, "route_table", "value " + std::to_string(v) + " is out of range (1..4294967295)");
            else if (v >= 253 && v <= 255)
                r.error(*n, "route_table",
                        "table " + std::to_string(v) + " is the kernel's default/main/local table, not a path");
            else if (v >= kOwnedTablesFirst && v <= kOwnedTablesLast)
                r.error(*n, "route_table",
                        "tables 0x4c4e0000..0x4c4effff are Lanes' own (egress_device paths); pick another");
            else p.table = static_cast<uint32_t>(v);
        } else if (n->is_string()) {
            const std::string v = n->as_string()->get();
            if (v == "main" || v == "local" || v == "default")
                r.error(*n, "route_table", "table " + quote(v) + " is the kernel's own, not a path");
            else if (!valid_table_name(v))
                r.error(*n, "route_table",
                        "not a table number or a name of /etc/iproute2/rt_tables (letters, digits, '_', '-', '.')");
            else p.table_name = v;
        } else {
            r.wrong_type(*n, "route_table", "a table number or a name from /etc/iproute2/rt_tables");
        }
    }
    if (auto v = r.string("egress_device")) {
        any = true;
        if (!valid_ifname(*v))
            r.error(*t.get("egress_device"), "egress_device",
                    "not an interface name (at most 15 characters, no '/', ':' or glob)");
        else p.device = *v;
    }
    if (auto v = r.integer("vlan", 1, 4094)) {
        any = true;
        p.vlan = static_cast<uint16_t>(*v);
    }
    if (t.get("route_table") && t.get("egress_device"))
        r.error(*t.get("egress_device"), "egress_device",
                "give either \"route_table\" (a table you fill) or \"egress_device\" (Lanes fills one), not both");
    if (r.strings("egress_prefixes")) {
        // Each element checked where it is, so that the error names its line.
        const toml::node& n = *t.get("egress_prefixes");
        std::vector<const toml::node*> items;
        if (const toml::array* a = n.as_array())
            for (const toml::node& e : *a) items.push_back(&e);
        else items.push_back(&n);
        for (std::size_t i = 0; i < items.size(); ++i) {
            const std::string key = "egress_prefixes" + (n.is_array() ? "[" + std::to_string(i) + "]" : "");
            auto cidr = canonical_cidr(items[i]->as_string()->get());
            if (!cidr) r.error(*items[i], key, "not a CIDR: " + cidr.error().message);
            else if (std::find(p.egress_prefixes.begin(), p.egress_prefixes.end(), *cidr) == p.egress_prefixes.end())
                p.egress_prefixes.push_back(*cidr);
        }
        if (!t.get("egress_device"))
            r.error(n, "egress_prefixes",
                    "needs \"egress_device\" (the destinations Lanes routes via that device; a route_table path "
                    "routes what its table holds)");
    }
    if (t.get("vlan") && !t.get("egress_device"))
        r.error(*t.get("vlan"), "vlan", "needs \"egress_device\" (the NIC the VLAN is on)");
    if (p.vlan && p.device.size() + 1 + std::to_string(*p.vlan).size() > 15)
        r.error(*t.get("vlan"), "vlan", "the VLAN interface " + quote(p.link()) + " is longer than 15 characters");
    if (auto v = r.string("nccl_socket_ifname")) p.nccl_socket_ifname = *v;
    if (auto v = r.string("nccl_ib_hca")) p.nccl_ib_hca = *v;
    if (auto v = r.string("ucx_net_devices")) p.ucx_net_devices = *v;
    if (auto v = r.integer("rdma_gid_index", 0, 255)) p.rdma_gid_index = static_cast<uint8_t>(*v);
    const bool overrides =
        t.get("nccl_socket_ifname") || t.get("nccl_ib_hca") || t.get("ucx_net_devices") || t.get("rdma_gid_index");
    if (!any && !overrides) return;
    if (any && !c.has_network_settings()) {
        const char* k = t.get("route_table") ? "route_table" : "egress_device";
        if (t.get(k))
            r.error(*t.get(k), k,
                    "a path needs \"dscp\" or \"rate\" as well (the job's nft element, which carries the mark, "
                    "exists only for shaped jobs)");
    }
    c.path = std::move(p);
}

}  // namespace lanes::config_parse
