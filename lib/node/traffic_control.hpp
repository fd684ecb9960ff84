// SPDX-License-Identifier: GPL-2.0-or-later
// The tc side of shaping, behind a small interface: one real implementation over
// rtnetlink (libnl-3 socket and message helpers; one socket per object, opened
// once), and the recording fake in the unit tests.
//
// Messages are built here, iproute2-style: HTB classes carry TCA_HTB_PARMS with the
// 32-bit fields saturated plus TCA_HTB_RATE64/CEIL64 when a rate is 2^32 bytes/s or
// more (100-400 GbE); quantum, burst and cburst are always explicit.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.hpp"
#include "node/shaping_plan.hpp"

namespace lanes {

// Per device, from a job's HTB class (lanesctl status).
struct ClassCounters {
    uint64_t bytes = 0;
    uint64_t packets = 0;
    uint64_t drops = 0;
    uint64_t overlimits = 0;
    uint64_t backlog = 0;  // bytes queued now
};

struct RootQdisc {
    std::string kind;     // "htb", "mq", "noqueue", ...; "" = none reported
    uint32_t handle = 0;  // 0 for the kernel's default root
};

// A NIC's largest GSO/TSO packet (IFLA_GSO_MAX_SIZE; IPv4's own limit on kernels
// that have IFLA_GSO_IPV4_MAX_SIZE, 0 where they do not).
struct GsoSize {
    uint32_t max = 0;
    uint32_t ipv4_max = 0;
    bool operator==(const GsoSize&) const = default;
};

// What one NIC's tc shows (NodeShaper::converge() compares it with the jobs'
// desired state): its root, every class (HTB parameters decoded) and every
// qdisc below the root.
struct ObservedClass {
    uint32_t classid = 0;
    uint32_t parent = 0;
    std::string kind;  // "htb"
    uint64_t rate_bits = 0;
    uint64_t ceil_bits = 0;
    uint32_t prio = 0;
    uint32_t quantum = 0;
    bool operator==(const ObservedClass&) const = default;
};
struct ObservedQdisc {
    uint32_t handle = 0;
    uint32_t parent = 0;
    std::string kind;
    bool operator==(const ObservedQdisc&) const = default;
};
struct TcSnapshot {
    RootQdisc root;
    std::vector<ObservedClass> classes;
    std::vector<ObservedQdisc> qdiscs;  // not the root
};
const ObservedClass* find_class(const TcSnapshot& tc, uint32_t classid);
// The qdisc whose parent is `parent` (a class's leaf).
const ObservedQdisc* find_leaf(const TcSnapshot& tc, uint32_t parent);
// The kernel keeps rates in bytes/s: compare at that grain.
bool same_htb(const ObservedClass& seen, const HtbParams& want);

class TrafficControl {
public:
    virtual ~TrafficControl() = default;

    // Devices of this network namespace, by name.
    virtual Result<std::vector<std::string>> devices() = 0;
    virtual Result<int> ifindex(const std::string& device) = 0;
    // The device the kernel routes `prefix` ("10.1.0.0/16", "fd00::/8") through.
    virtual Result<std::string> route_device(const std::string& prefix) = 0;
    // /sys/class/net/DEV/speed in bits/s; nullopt when unknown (-1, unreadable).
    virtual std::optional<uint64_t> link_speed_bits(const std::string& device) = 0;
    virtual Result<RootQdisc> root_qdisc(int ifindex) = 0;
    // Whether the kernel can create a qdisc of `kind` (probed without side effects).
    virtual bool qdisc_kind_available(const std::string& kind) = 0;

    virtual Result<void> ensure_root(const EnsureRoot& op) = 0;
    virtual Result<void> add_class(const AddClass& op) = 0;
    virtual Result<void> add_leaf_qdisc(const AddLeafQdisc& op) = 0;
    virtual Result<void> delete_leaf_qdisc(const DeleteLeafQdisc& op) = 0;  // absent = success
    virtual Result<void> delete_class(const DeleteClass& op) = 0;           // absent = success
    virtual Result<void> delete_root(const DeleteRoot& op) = 0;             // absent/not ours = success
    virtual Result<ClassCounters> class_counters(int ifindex, uint32_t classid) = 0;
    // classids of the HTB classes under root major `major` on the device.
    virtual Result<std::vector<uint32_t>> classes(int ifindex, uint16_t major) = 0;
    // GSO/TSO packet size of the device (rtnetlink link attributes).
    virtual Result<GsoSize> gso_size(int ifindex) = 0;
    virtual Result<void> set_gso_size(int ifindex, const GsoSize& size) = 0;
    // Whether the device is down (administratively, or operstate "down"), asked
    // over netlink in this process's network namespace (sysfs shows the one it
    // was mounted in). nullopt: unknown (the caller reads sysfs).
    virtual std::optional<bool> link_down(const std::string& /*device*/) { return std::nullopt; }
    // Root, classes and qdiscs of the device: two netlink dumps. (Not pure
    // virtual so that older fakes still build; they cannot converge.)
    virtual Result<TcSnapshot> snapshot(int ifindex) {
        return fail("ifindex " + std::to_string(ifindex) + ": this TrafficControl cannot dump classes");
    }
};

// The real one. Fails if the netlink socket cannot be opened.
Result<std::unique_ptr<TrafficControl>> make_netlink_traffic_control();

// The HTB buffer field is a time: bytes at `rate_bits` in psched ticks (64 ns),
// saturated at UINT32_MAX. Exposed for tests.
uint32_t htb_buffer_ticks(uint32_t bytes, uint64_t rate_bits);

// The RTM_NEWTCLASS message add_class() sends, as bytes (unit tests parse it).
std::vector<uint8_t> htb_class_message(const AddClass& op);

}  // namespace lanes
