// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/path_plan.hpp"

#include <arpa/inet.h>
#include <fnmatch.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <set>

#include "core/hostlist.hpp"
#include "core/text.hpp"

namespace lanes {

uint32_t path_mark(std::string_view class_name) {
    uint32_t h = 2166136261u;  // FNV-1a
    for (char c : class_name) {
        h ^= static_cast<unsigned char>(c);
        h *= 16777619u;
    }
    uint32_t id = (h >> 16) ^ (h & 0xffff);
    if (id == 0) id = 1;
    return kPathMarkBase | id;
}

bool is_path_mark(uint32_t mark) { return (mark & kPathMarkMask) == kPathMarkBase && (mark & 0xffff) != 0; }

Result<std::map<std::string, uint32_t>> path_marks(const Config& config) {
    std::map<std::string, uint32_t> out;
    std::map<uint32_t, std::string> by_mark;
    for (const auto& [name, c] : config.classes) {
        if (!c.path || (!c.path->table && c.path->table_name.empty() && c.path->device.empty())) continue;
        const uint32_t m = path_mark(name);
        if (auto it = by_mark.find(m); it != by_mark.end())
            return fail("classes " + it->second + " and " + name + " get the same path mark " + path_mark_text(m) +
                        "; rename one of them");
        by_mark[m] = name;
        out[name] = m;
    }
    return out;
}

Result<bool> path_declared_on(const NodeConfig& node, const ClassPath& path, const std::string& hostname) {
    if (path.device.empty()) return true;
    bool named = false;
    for (const auto& sel : node.nics) {
        if (sel.device.empty() || fnmatch(sel.device.c_str(), path.device.c_str(), 0) != 0) continue;
        named = true;
        auto match = hostlist_matches(sel.nodes, hostname);
        if (!match)
            return fail("[[nodes.nic]] at line " + std::to_string(sel.line) + ": nodes: " + match.error().message);
        if (*match) return true;
    }
    return !named;
}

std::optional<uint32_t> rt_tables_lookup(std::string_view text, std::string_view name) {
    std::optional<uint32_t> found;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        if (auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
        // "<number> <name>", whitespace separated; the number in decimal or 0x hex.
        auto skip = [&](std::size_t i) {
            while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
            return i;
        };
        std::size_t a = skip(0), b = a;
        while (b < line.size() && line[b] != ' ' && line[b] != '\t') ++b;
        std::size_t c = skip(b), d = c;
        while (d < line.size() && line[d] != ' ' && line[d] != '\t' && line[d] != '\r') ++d;
        if (a == b || c == d || line.substr(c, d - c) != name) continue;
        const std::string num(line.substr(a, b - a));
        char* endp = nullptr;
        const unsigned long long v = std::strtoull(num.c_str(), &endp, 0);
        if (endp && *endp == '\0' && v > 0 && v <= 0xffffffffull) found = static_cast<uint32_t>(v);
    }
    return found;
}

std::string path_mark_text(uint32_t mark) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", mark);
    return buf;
}

std::string subnet_of(std::string_view address, int prefix_len) {
    const std::string a(address);
    unsigned char bin[16] = {};
    int family = AF_INET, bits = 32;
    if (inet_pton(AF_INET, a.c_str(), bin) != 1) {
        if (inet_pton(AF_INET6, a.c_str(), bin) != 1) return "";
        family = AF_INET6;
        bits = 128;
    }
    if (prefix_len < 0 || prefix_len > bits) return "";
    for (int i = 0; i < bits / 8; ++i) {
        const int keep = std::clamp(prefix_len - 8 * i, 0, 8);
        bin[i] = static_cast<unsigned char>(bin[i] & (0xff00 >> keep));
    }
    char buf[INET6_ADDRSTRLEN] = {};
    inet_ntop(family, bin, buf, sizeof buf);
    return std::string(buf) + "/" + std::to_string(prefix_len);
}

std::vector<PathDestination> path_destinations(const std::vector<DeviceAddress>& addresses,
                                               const std::vector<std::string>& egress_prefixes) {
    std::map<std::pair<int, std::string>, std::string> routes;  // (family, dst) -> src
    std::map<int, std::string> first;                           // family -> the device's first address
    for (const auto& a : addresses) {
        if (a.address.empty()) continue;
        first.emplace(a.family, a.address);
        if (!a.subnet.empty()) routes.emplace(std::make_pair(a.family, a.subnet), a.address);
    }
    for (const auto& p : egress_prefixes) {
        const int family = p.find(':') != std::string::npos ? AF_INET6 : AF_INET;
        if (auto it = first.find(family); it != first.end()) routes.emplace(std::make_pair(family, p), it->second);
    }
    std::vector<PathDestination> out;
    for (const auto& [key, src] : routes) out.push_back(PathDestination{key.first, key.second, src});
    std::sort(out.begin(), out.end());
    return out;
}

std::string ResolvedPath::describe() const {
    if (!owned_table) return "table " + std::to_string(table);
    return device + " (table " + path_mark_text(table) + ")";
}

std::string encode_path_job(const PathJob& job) {
    const ResolvedPath& p = job.path;
    std::string s;
    s += "job=" + std::to_string(job.job_id) + "\n";
    s += "priority=" + std::to_string(job.priority) + "\n";
    s += "class=" + p.class_name + "\n";
    s += "mark=" + std::to_string(p.mark) + "\n";
    s += "table=" + std::to_string(p.table) + "\n";
    s += "owned_table=" + std::string(p.owned_table ? "1" : "0") + "\n";
    s += "device=" + p.device + "\n";
    s += "ifindex=" + std::to_string(p.ifindex) + "\n";
    s += "src4=" + p.src4 + "\n";
    s += "src6=" + p.src6 + "\n";
    // The table's routes, explicitly (a record without them is an older one:
    // decode_path_job reads it as the default routes it meant).
    s += "routes=" + std::to_string(p.destinations.size()) + "\n";
    for (const auto& d : p.destinations) s += "route=" + d.dst + " " + d.src + "\n";
    return s;
}

Result<PathJob> decode_path_job(std::string_view text) {
    PathJob job;
    std::set<std::string> seen;
    std::optional<uint64_t> routes;
    std::size_t pos = 0;
    auto number = [](const std::string& v, uint64_t max) -> std::optional<uint64_t> {
        if (v.empty() || v.size() > 10 || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return std::nullopt;
        uint64_t n = std::stoull(v);
        if (n > max) return std::nullopt;
        return n;
    };
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        const std::string line(text.substr(pos, end - pos));
        pos = end + 1;
        if (line.empty()) continue;
        const std::size_t eq = line.find('=');
        if (eq == std::string::npos) return fail("path record: not key=value: " + line);
        const std::string k = line.substr(0, eq), v = line.substr(eq + 1);
        seen.insert(k);
        std::optional<uint64_t> n;
        if (k == "job" && (n = number(v, 0xffffffffu))) job.job_id = static_cast<uint32_t>(*n);
        else if (k == "priority" && (n = number(v, 0xffffffffu))) job.priority = static_cast<uint32_t>(*n);
        else if (k == "class") job.path.class_name = v;
        else if (k == "mark" && (n = number(v, 0xffffffffu))) job.path.mark = static_cast<uint32_t>(*n);
        else if (k == "table" && (n = number(v, 0xffffffffu))) job.path.table = static_cast<uint32_t>(*n);
        else if (k == "owned_table" && (v == "0" || v == "1")) job.path.owned_table = v == "1";
        else if (k == "device") job.path.device = v;
        else if (k == "ifindex" && (n = number(v, 0x7fffffff))) job.path.ifindex = static_cast<int>(*n);
        else if (k == "src4") job.path.src4 = v;
        else if (k == "src6") job.path.src6 = v;
        else if (k == "routes" && (n = number(v, 0xffffffffu))) routes = *n;
        else if (k == "route") {
            const std::size_t sp = v.find(' ');
            const std::string dst = v.substr(0, sp), src = sp == std::string::npos ? "" : v.substr(sp + 1);
            const int family = dst.find(':') != std::string::npos ? AF_INET6 : AF_INET;
            const std::size_t slash = dst.find('/');
            if (sp == std::string::npos || slash == std::string::npos || src.empty() ||
                subnet_of(dst.substr(0, slash), std::atoi(dst.c_str() + slash + 1)) != dst)
                return fail("path record: bad value for route: " + v);
            job.path.destinations.push_back(PathDestination{family, dst, src});
        } else if (k == "job" || k == "priority" || k == "mark" || k == "table" || k == "owned_table" ||
                   k == "ifindex" || k == "routes")
            return fail("path record: bad value for " + k + ": " + v);
        // unknown keys: a newer version's, ignored
    }
    for (const char* k : {"job", "priority", "mark", "table"})
        if (!seen.count(k)) return fail(std::string("path record: missing ") + k);
    if (!is_path_mark(job.path.mark))
        return fail("path record: mark " + path_mark_text(job.path.mark) + " is not Lanes'");
    if (routes && *routes != job.path.destinations.size())
        return fail("path record: routes=" + std::to_string(*routes) + " but " +
                    std::to_string(job.path.destinations.size()) + " route lines");
    if (!routes && job.path.owned_table) {
        // Written before egress_prefixes: the table held a default route per
        // family via the device, and the job keeps it until it ends.
        if (!job.path.src4.empty())
            job.path.destinations.push_back(PathDestination{AF_INET, "0.0.0.0/0", job.path.src4});
        if (!job.path.src6.empty()) job.path.destinations.push_back(PathDestination{AF_INET6, "::/0", job.path.src6});
    }
    return job;
}

PathObjects desired_path_objects(const std::vector<PathJob>& jobs) {
    std::set<PathRule> rules;
    std::set<PathRoute> routes;
    PathObjects out;
    for (const auto& j : jobs) {
        const ResolvedPath& p = j.path;
        for (int family : {AF_INET, AF_INET6}) rules.insert(PathRule{family, p.mark, p.table});
        if (p.owned_table)
            for (const auto& d : p.destinations) routes.insert(PathRoute{d.family, p.table, d.dst, p.ifindex, d.src});
        if (j.priority) out.elements[j.priority] = p.mark;
    }
    out.rules.assign(rules.begin(), rules.end());
    out.routes.assign(routes.begin(), routes.end());
    return out;
}

PathRepairs plan_path_repairs(const PathObjects& desired, const PathObjects& observed) {
    PathRepairs r;
    auto has = [](const auto& v, const auto& x) { return std::find(v.begin(), v.end(), x) != v.end(); };
    for (const auto& x : desired.rules)
        if (!has(observed.rules, x)) r.add_rules.push_back(x);
    for (const auto& x : observed.rules)
        if (!has(desired.rules, x)) r.delete_rules.push_back(x);
    for (const auto& x : desired.routes)
        if (!has(observed.routes, x)) r.add_routes.push_back(x);
    // A route in one of our tables that no job wants (or an outdated one: another
    // device, another source) goes; the wanted one is added back.
    for (const auto& x : observed.routes)
        if (!has(desired.routes, x)) r.delete_routes.push_back(x);
    for (const auto& [prio, mark] : desired.elements) {
        auto it = observed.elements.find(prio);
        if (it == observed.elements.end() || it->second != mark) r.add_elements[prio] = mark;
    }
    for (const auto& [prio, mark] : observed.elements)
        if (!desired.elements.count(prio)) r.delete_elements.push_back(prio);
    return r;
}

std::string path_nft_base_script() {
    const std::string t = std::string("inet ") + kPathNftTable;
    const std::string ours = "meta mark and " + path_mark_text(kPathMarkMask) + " == " + path_mark_text(kPathMarkBase);
    const std::string routed = path_mark_text(kPathMarkBase);
    std::string s;
    s += "add table " + t + "\n";
    s += "add map " + t + " marks { type classid : mark; }\n";
    s += "add chain " + t + " out { type route hook output priority mangle + 1; policy accept; }\n";
    s += "flush chain " + t + " out\n";
    s += "add rule " + t + " out meta mark != " + routed + " meta mark set meta priority map @marks\n";
    s += "add chain " + t + " post { type nat hook postrouting priority srcnat; policy accept; }\n";
    s += "flush chain " + t + " post\n";
    s += "add rule " + t + " post " + ours + " meta mark != " + routed + " oifname != \"lo\" masquerade\n";
    // Routed: the mark has done its work. It becomes 0x4c4e0000 (no rule matches
    // it, and chain out leaves it alone) so that a tunnel device on the path
    // (VXLAN, GRE) routes its outer packet, which keeps the job's priority, by the
    // main table instead of back into itself.
    s += "add chain " + t + " done { type filter hook postrouting priority srcnat + 1; policy accept; }\n";
    s += "flush chain " + t + " done\n";
    s += "add rule " + t + " done " + ours + " meta mark set " + routed + "\n";
    return s;
}

static std::string_view trim_spaces(std::string_view s) {
    const auto first = s.find_first_not_of(" \t\r");
    if (first == std::string_view::npos) return {};
    return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

PathNftListing parse_path_nft_listing(std::string_view listing) {
    struct Expected {
        const char* chain;
        std::string hook;  // in the chain's type line
        std::string rule;  // in its one rule, as every nft version prints it
    };
    const std::vector<Expected> expected = {
        {"out", "hook output", "@marks"},
        {"post", "hook postrouting", "masquerade"},
        {"done", "hook postrouting", "meta mark set " + path_mark_text(kPathMarkBase)},
    };
    struct Block {
        std::string type_line;
        std::vector<std::string> rules;
    };
    std::map<std::string, Block> chains;
    std::string map_text;
    bool has_map = false;
    enum class In { Table, Map, Chain } in = In::Table;
    Block* chain = nullptr;
    static const std::regex chain_start(R"(^\s*chain (\S+) \{)"), map_start(R"(^\s*map marks \{)");
    size_t pos = 0;
    while (pos <= listing.size()) {
        size_t end = listing.find('\n', pos);
        if (end == std::string_view::npos) end = listing.size();
        const std::string line(trim_spaces(listing.substr(pos, end - pos)));
        pos = end + 1;
        std::smatch m;
        if (line.empty()) continue;
        if (in == In::Table) {
            if (std::regex_search(line, m, chain_start)) {
                chain = &chains[m[1].str()];
                in = In::Chain;
            } else if (std::regex_search(line, m, map_start)) {
                has_map = true;
                in = In::Map;
            }
        } else if (line == "}") {
            in = In::Table;
        } else if (in == In::Map) {
            map_text += line + "\n";
        } else if (line.find("hook ") != std::string::npos && line.rfind("type ", 0) == 0) {
            chain->type_line = line;
        } else {
            chain->rules.push_back(line);
        }
    }
    PathNftListing out;
    static const std::regex element(R"(([0-9a-f]+):([0-9a-f]+)\s*:\s*(0x[0-9a-f]+))");
    for (std::sregex_iterator it(map_text.begin(), map_text.end(), element), e; it != e; ++it) {
        const uint32_t major = static_cast<uint32_t>(std::stoul((*it)[1].str(), nullptr, 16));
        const uint32_t minor = static_cast<uint32_t>(std::stoul((*it)[2].str(), nullptr, 16));
        out.elements[(major << 16) | minor] = static_cast<uint32_t>(std::stoul((*it)[3].str(), nullptr, 16));
    }
    std::vector<std::string> wrong;
    if (!has_map) wrong.push_back("map marks missing");
    for (const auto& x : expected) {
        auto c = chains.find(x.chain);
        const std::string name = std::string("chain ") + x.chain;
        if (c == chains.end()) {
            wrong.push_back(name + " missing");
        } else if (c->second.type_line.find(x.hook) == std::string::npos) {
            wrong.push_back(name + " not on its hook");
        } else if (c->second.rules.size() != 1 || c->second.rules[0].find(x.rule) == std::string::npos) {
            wrong.push_back(name + " has " + std::to_string(c->second.rules.size()) + " rule" +
                            (c->second.rules.size() == 1 ? " (not Lanes')" : "s") + " instead of Lanes' one");
        }
    }
    for (const auto& [name, block] : chains)
        if (std::none_of(expected.begin(), expected.end(), [&](const Expected& x) { return name == x.chain; })) {
            wrong.push_back("chain " + name + " is not Lanes'");
            out.foreign_chains.push_back(name);
        }
    out.damage = join(wrong, ", ");
    return out;
}

std::string path_nft_repair_script(const PathNftListing& listing) {
    std::string s = path_nft_base_script();
    const std::string t = std::string("inet ") + kPathNftTable;
    for (const auto& name : listing.foreign_chains)
        s += "flush chain " + t + " " + name + "\ndelete chain " + t + " " + name + "\n";
    return s;
}

}  // namespace lanes
