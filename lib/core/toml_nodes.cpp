// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [nodes] and [[nodes.nic]]: which interfaces to shape, and how.
#include "core/toml_nodes.hpp"

#include <arpa/inet.h>
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>

namespace lanes::config_parse {
namespace {

bool valid_hostlist(std::string_view s) {
    if (s.empty()) return false;
    int depth = 0;
    for (char c : s) {
        if (c == '[') ++depth;
        else if (c == ']') --depth;
        if (depth < 0 || depth > 1) return false;
        if (std::isspace(static_cast<unsigned char>(c))) return false;
    }
    return depth == 0;
}

bool valid_device(std::string_view s) {
    // IFNAMSIZ is 16 with the NUL; a glob may be longer only through '*'.
    if (s.empty() || s.size() > 15) return false;
    for (char c : s)
        if (c == '/' || std::isspace(static_cast<unsigned char>(c)) || c == ':') return false;
    return true;
}

bool valid_prefix(std::string_view s) {
    std::string addr(s);
    int max_len = 32;
    int len = -1;
    if (auto slash = addr.find('/'); slash != std::string::npos) {
        const std::string l = addr.substr(slash + 1);
        addr.resize(slash);
        if (l.empty() || l.size() > 3 ||
            !std::all_of(l.begin(), l.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
            return false;
        len = std::stoi(l);
    }
    unsigned char buf[16];
    if (inet_pton(AF_INET, addr.c_str(), buf) == 1) max_len = 32;
    else if (inet_pton(AF_INET6, addr.c_str(), buf) == 1) max_len = 128;
    else return false;
    return len <= max_len;
}

void parse_nic(ConfigParse& ctx, const toml::table& t, size_t i) {
    const std::string prefix = "nodes.nic[" + std::to_string(i) + "]";
    TableReader r(ctx.errors, t, prefix);
    NicSelector nic;
    nic.line = static_cast<int>(t.source().begin.line);
    r.string("description");
    if (auto v = r.string("nodes")) {
        if (!valid_hostlist(*v))
            r.error(*t.get("nodes"), "nodes",
                    "not a host list (write e.g. \"train[1-4]\", \"gpu*\" or \"*\"; no spaces)");
        else nic.nodes = *v;
    }
    const bool has_device = t.get("device") != nullptr, has_route = t.get("route_to") != nullptr;
    if (auto v = r.string("device")) {
        if (!valid_device(*v))
            r.error(*t.get("device"), "device", "not an interface name or glob (at most 15 characters, no '/')");
        else nic.device = *v;
    }
    if (auto v = r.string("route_to")) {
        if (!valid_prefix(*v))
            r.error(*t.get("route_to"), "route_to",
                    "not an IP address or prefix (write e.g. \"10.0.0.0/8\" or \"fd00::/8\")");
        else nic.route_to = *v;
    }
    if (has_device && has_route)
        r.error(*t.get("route_to"), "route_to", "give either \"device\" or \"route_to\", not both");
    if (!has_device && !has_route)
        r.error_here(prefix,
                     "missing key: give \"device\" (e.g. \"eth0\", \"ens*\") or \"route_to\" (e.g. \"10.0.0.0/8\")");
    if (auto rate = read_rate(r, "link_speed", true)) nic.link_speed_bits = rate->bits_per_second;
    r.finish();
    ctx.config.node.nics.push_back(std::move(nic));
}

}  // namespace

void parse_nodes_section(ConfigParse& ctx, const toml::table& t) {
    TableReader r(ctx.errors, t, "nodes");
    if (auto v = r.choice("foreign_qdisc", {"refuse", "adopt"}))
        ctx.config.node.foreign_qdisc = *v == "adopt" ? ForeignQdiscAction::Adopt : ForeignQdiscAction::Refuse;
    if (auto v = r.choice("classify_failure", {"fail", "warn"})) ctx.config.node.classify_failure_warns = *v == "warn";
    if (const toml::node* n = t.get("root_handle")) {
        r.get("root_handle");
        int64_t v = -1;
        if (n->is_integer()) {
            v = n->as_integer()->get();
        } else if (n->is_string()) {
            std::string s = n->as_string()->get();
            if (!s.empty() && s.back() == ':') s.pop_back();
            if (s.size() >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s = s.substr(2);
            if (!s.empty() && s.size() <= 4 &&
                std::all_of(s.begin(), s.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); }))
                v = std::stoll(s, nullptr, 16);
            else v = -2;
        } else {
            r.wrong_type(*n, "root_handle", "a hexadecimal handle such as \"1a4e\"");
            v = -3;
        }
        if (v == -2) r.error(*n, "root_handle", "not a hexadecimal qdisc major number (write e.g. \"1a4e\")");
        else if (v != -3 && (v < 1 || v > 0xfffe))
            r.error(*n, "root_handle", "out of range (1..fffe hexadecimal; ffff is the ingress qdisc's)");
        else if (v > 0) ctx.config.node.root_handle_major = static_cast<uint16_t>(v);
    }
    if (auto v = r.string("state_dir")) {
        if (v->empty() || v->front() != '/') r.error(*t.get("state_dir"), "state_dir", "must be an absolute path");
        else ctx.config.node.state_dir = *v;
    }
    if (auto v = r.string("cgroup_root")) {
        if (*v != "auto" && (v->empty() || v->front() != '/'))
            r.error(*t.get("cgroup_root"), "cgroup_root", "must be \"auto\" or an absolute path");
        else ctx.config.node.cgroup_root = *v;
    }
    if (auto rate = read_rate(r, "default_link_speed", true))
        ctx.config.node.default_link_speed_bits = rate->bits_per_second;
    if (const toml::node* n = r.get("unclassified_dscp")) {
        if (n->is_integer()) {
            const int64_t v = n->as_integer()->get();
            if (v < 0 || v > 63)
                r.error(*n, "unclassified_dscp", "value " + std::to_string(v) + " is out of range (0..63)");
            else ctx.config.node.unclassified_dscp = static_cast<uint8_t>(v);
        } else if (n->is_string() && n->as_string()->get() == "keep") {
            ctx.config.node.unclassified_dscp = std::nullopt;
        } else if (n->is_string()) {
            auto d = parse_dscp(n->as_string()->get());
            if (!d) r.error(*n, "unclassified_dscp", d.error().message + " (or \"keep\")");
            else ctx.config.node.unclassified_dscp = *d;
        } else {
            r.wrong_type(*n, "unclassified_dscp", "a DSCP name such as \"CS0\", a number 0..63, or \"keep\"");
        }
    }
    auto urate = read_rate(r, "unclassified_rate", false);
    auto uceil = read_rate(r, "unclassified_ceil", false);
    if (urate) ctx.config.node.unclassified_rate = *urate;
    if (uceil) ctx.config.node.unclassified_ceil = *uceil;
    if ((urate || uceil) &&
        ctx.config.node.unclassified_rate.is_relative() == ctx.config.node.unclassified_ceil.is_relative()) {
        const Rate& a = ctx.config.node.unclassified_rate;
        const Rate& b = ctx.config.node.unclassified_ceil;
        if (a.is_relative() ? b.percent < a.percent : b.bits_per_second < a.bits_per_second)
            r.error(*t.get(uceil ? "unclassified_ceil" : "unclassified_rate"),
                    uceil ? "unclassified_ceil" : "unclassified_rate",
                    "unclassified_ceil is below unclassified_rate (defaults: \"5%\" and \"25%\")");
    }
    if (const toml::node* n = r.get("gso_burst")) {
        std::string text = n->is_string() ? n->as_string()->get() : std::string();
        if (!n->is_string()) {
            r.wrong_type(*n, "gso_burst", "a time such as \"250us\" or \"1ms\", or \"off\"");
        } else if (text == "off") {
            ctx.config.node.gso_burst_us = std::nullopt;
        } else {
            uint64_t scale = 0;
            std::string digits = text;
            if (text.ends_with("us")) scale = 1, digits = text.substr(0, text.size() - 2);
            else if (text.ends_with("ms")) scale = 1000, digits = text.substr(0, text.size() - 2);
            bool ok = scale && !digits.empty() && digits.size() <= 6 &&
                      std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
            uint64_t us = ok ? std::stoull(digits) * scale : 0;
            if (!ok || us < 10 || us > 100000)
                r.error(*n, "gso_burst",
                        "not a time between \"10us\" and \"100ms\" (write e.g. \"250us\"), or \"off\"");
            else ctx.config.node.gso_burst_us = static_cast<uint32_t>(us);
        }
    }
    if (auto v = r.integer("parked_classes", 0, 4096)) ctx.config.node.parked_classes = static_cast<uint32_t>(*v);
    if (const toml::node* n = r.get("nic")) {
        const toml::array* arr = n->as_array();
        if (!arr || !arr->is_array_of_tables()) {
            r.error(*n, "nic", "expected [[nodes.nic]] tables, got " + type_name(*n));
        } else {
            size_t i = 0;
            for (const toml::node& e : *arr) parse_nic(ctx, *e.as_table(), i++);
        }
    }
    r.finish();
}

}  // namespace lanes::config_parse
