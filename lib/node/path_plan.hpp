// SPDX-License-Identifier: GPL-2.0-or-later
// A path per class (lanes.toml route_table / egress_device / vlan), the pure part:
// marks, tables, what the kernel should hold for the jobs on paths. The kernel
// side is policy_routing.hpp.
//
// How a job's packets take its class's path:
//   1. The job's nft element (packet_marker.hpp) sets skb->priority to its HTB
//      class M:<minor> in `inet lanes` chain out (priority mangle).
//   2. `inet lanes_paths` chain out (type route, priority mangle + 1) maps that
//      priority to the class's fwmark: one map element per job on a path. A type
//      route chain that changes the mark makes the kernel route the packet again.
//   3. `ip rule pref 14000 fwmark MARK lookup TABLE` (IPv4 and IPv6) sends it to the
//      class's table: the admin's (route_table) or Lanes' own (egress_device, vlan).
//      Lanes' own holds the device's connected subnets (one on-link route per
//      global address, `src` that address) and the class's egress_prefixes (on-link
//      via the device, `src` its first address of the family); nothing else. A
//      destination the table does not route is a miss: the rule lookup goes on to
//      the next rules, i.e. the main table, so the job's own traffic to the
//      controller, DNS or storage leaves as it would without the path.
//   4. `inet lanes_paths` chain post (nat, srcnat) masquerades marked packets to
//      the address of the device they leave on: a socket chooses its source
//      address before the mark exists (from the main table), and replies must come
//      back on the path taken. A packet already from that address keeps it.
//      Chain done (postrouting, after it) sets the mark to 0x4c4e0000, which no
//      rule matches and chain out leaves alone: a tunnel on the path (VXLAN)
//      routes its outer packet, which keeps the job's priority, by the main
//      table, not back into itself.
//
// Marks: 0x4c4e0000 | id ("LN" in the upper 16 bits; id 1..0xffff from the class
// name, FNV-1a folded), compared under the full 32-bit mask. Lanes' own tables use
// the same number as the mark. Rule preference 14000 is Lanes': every rule there
// with a mark in 0x4c4e0000/16 is Lanes' to add and delete. Kubernetes (0x4000,
// 0x8000), Calico (0xffff0000 by default: configure Calico's iptablesMarkMask to
// leave 0x4c4e0000 alone), Cilium (0x0f00, 0x0200) and firewalld (0x1-0xff on zones)
// do not use these bits.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/lanes_toml.hpp"
#include "core/result.hpp"

namespace lanes {

inline constexpr uint32_t kPathMarkBase = 0x4c4e0000;
inline constexpr uint32_t kPathMarkMask = 0xffff0000;
inline constexpr uint32_t kPathRulePriority = 14000;
inline constexpr const char* kPathNftTable = "lanes_paths";

// The class's mark: 0x4c4e0001..0x4c4effff, the same on every node.
uint32_t path_mark(std::string_view class_name);
bool is_path_mark(uint32_t mark);

// Every class with a path and its mark. Fails naming both classes when two
// classes' names give the same mark (rename one).
Result<std::map<std::string, uint32_t>> path_marks(const Config& config);

// Whether the class's path is on `hostname`, as [[nodes.nic]] declares it: a
// device (a VLAN's NIC) that some [[nodes.nic]] names, exactly or by glob, is on
// the nodes those entries select (and shaped there too); elsewhere the class
// takes the default path. A device no entry names, and a route_table, are on
// every node (and checked against the kernel at launch). Fails on a bad
// hostlist in `nodes`.
Result<bool> path_declared_on(const NodeConfig& node, const ClassPath& path, const std::string& hostname);

// The table `name` in rt_tables(5) text (the last line naming it wins).
std::optional<uint32_t> rt_tables_lookup(std::string_view text, std::string_view name);

// "10.1.0.0/24" for `address` (an IPv4 or IPv6 address) and `prefix_len`: the
// subnet a kernel connected route covers. "" for a bad address or length.
std::string subnet_of(std::string_view address, int prefix_len);

// A destination routed via the device of a table Lanes owns.
struct PathDestination {
    int family = 0;   // AF_INET, AF_INET6
    std::string dst;  // canonical CIDR: "10.1.0.0/24", "::/0"
    std::string src;  // the device's address the route gives as source
    bool operator==(const PathDestination&) const = default;
    auto operator<=>(const PathDestination&) const = default;
};

// One address on the path's device, as the kernel lists it.
struct DeviceAddress {
    int family = 0;
    std::string address;  // IFA_LOCAL (the source)
    std::string subnet;   // the connected subnet, "10.1.0.0/24" (subnet_of IFA_ADDRESS)
};

// What Lanes' table for a device routes: each address's subnet (with that
// address as source), then `egress_prefixes` (with the first address of the
// prefix's family; a family the device has no address of is left to the main
// table). Sorted, one route per (family, dst), the first source wins.
std::vector<PathDestination> path_destinations(const std::vector<DeviceAddress>& addresses,
                                               const std::vector<std::string>& egress_prefixes);

// One class's path on this node, resolved against the kernel (policy_routing.hpp).
struct ResolvedPath {
    std::string class_name;
    uint32_t mark = 0;
    uint32_t table = 0;
    bool owned_table = false;  // Lanes fills it: `destinations` via `device`
    std::string device;        // the interface packets leave on ("" for a route_table path)
    int ifindex = 0;
    std::string src4, src6;  // the device's first addresses ("" = none of that family)
    // owned_table: the routes of the table. A record written before
    // egress_prefixes (no "routes=" line) meant a default route per family
    // via the device, and reads back as that.
    std::vector<PathDestination> destinations;
    bool operator==(const ResolvedPath&) const = default;
    // "table 100", "eth1 (table 0x4c4e12ab)", "eth0.200 (table ...)" for logs and status.
    std::string describe() const;
};

// A job on a path: its record in state_dir/paths/job_<id>.
struct PathJob {
    uint32_t job_id = 0;
    uint32_t priority = 0;  // the job's skb->priority, M:<minor> (the map key)
    ResolvedPath path;
    bool operator==(const PathJob&) const = default;
};
std::string encode_path_job(const PathJob& job);
Result<PathJob> decode_path_job(std::string_view text);

// What the kernel should hold for the jobs on paths.
struct PathRule {
    int family = 0;  // AF_INET, AF_INET6
    uint32_t mark = 0;
    uint32_t table = 0;
    bool operator==(const PathRule&) const = default;
    auto operator<=>(const PathRule&) const = default;
};
struct PathRoute {  // an on-link route in a table Lanes owns
    int family = 0;
    uint32_t table = 0;
    std::string dst;  // canonical CIDR, "0.0.0.0/0" for a default route
    int ifindex = 0;
    std::string src;
    bool operator==(const PathRoute&) const = default;
    auto operator<=>(const PathRoute&) const = default;
};
struct PathObjects {
    std::vector<PathRule> rules;            // sorted, unique
    std::vector<PathRoute> routes;          // sorted, unique
    std::map<uint32_t, uint32_t> elements;  // priority -> mark
    bool operator==(const PathObjects&) const = default;
};
PathObjects desired_path_objects(const std::vector<PathJob>& jobs);

// What differs between desired and observed (the kernel's rules at
// kPathRulePriority with a path mark, routes in Lanes' tables, map elements).
struct PathRepairs {
    std::vector<PathRule> add_rules, delete_rules;
    std::vector<PathRoute> add_routes, delete_routes;
    std::map<uint32_t, uint32_t> add_elements;  // missing or pointing at another mark
    std::vector<uint32_t> delete_elements;
    bool empty() const {
        return add_rules.empty() && delete_rules.empty() && add_routes.empty() && delete_routes.empty() &&
               add_elements.empty() && delete_elements.empty();
    }
};
PathRepairs plan_path_repairs(const PathObjects& desired, const PathObjects& observed);

// The `inet lanes_paths` table, its map and chains, rewritten in one transaction.
// Idempotent: the map and its elements stay, each chain is flushed and gets its
// one rule again.
std::string path_nft_base_script();

// The table as `nft list table inet lanes_paths` prints it: the map's elements
// (priority -> mark), and what differs from the base script ("" when the map
// and the three chains are there, each with its hook and only its own rule).
// Damage is what a firewall reload, an admin's `nft delete chain` or a rule
// added to one of the chains leaves; the base script repairs all of it.
struct PathNftListing {
    std::map<uint32_t, uint32_t> elements;
    std::string damage;
    std::vector<std::string> foreign_chains;  // chains not Lanes' (in the damage)
};
PathNftListing parse_path_nft_listing(std::string_view listing);
// The base script, and the deletion of chains that are not Lanes': the repair
// of the damage `parse_path_nft_listing` found.
std::string path_nft_repair_script(const PathNftListing& listing);
std::string path_mark_text(uint32_t mark);  // "0x4c4e12ab"

}  // namespace lanes
