// SPDX-License-Identifier: GPL-2.0-or-later
// The pure half of the GSO/TSO burst bound (node.gso_burst): on a NIC with a
// capped job (ceil below the link), the largest GSO/TSO packet is what the
// lowest such ceil sends in gso_burst, so one skb never puts more than that on
// the wire at line rate in one go. state_dir/gso_<dev> holds the NIC's own
// sizes (restored when its last capped job ends) and how many capped jobs have
// each ceil. This file parses and formats that file and plans, for one job's
// NIC counted in or out, the new file and the size to set; NodeShaper reads
// and writes the file and runs TrafficControl::set_gso_size(). No I/O here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "node/traffic_control.hpp"  // GsoSize

namespace lanes {

// The contents of state_dir/gso_<dev>.
struct GsoFile {
    GsoSize orig;                        // the NIC's own sizes
    uint32_t set = 0;                    // the gso_max_size Lanes set
    std::map<uint64_t, uint32_t> ceils;  // ceil bits/s -> capped jobs
    bool operator==(const GsoFile&) const = default;
};

// nullopt: no usable file (no "orig" line, or orig max 0).
std::optional<GsoFile> parse_gso_file(const std::string& text);
std::string format_gso_file(const GsoFile& file);

// Two full-size frames: the smallest GSO size Lanes sets (unless the NIC's own is smaller).
inline constexpr uint64_t kMinGsoBytes = 3028;

// The gso_max_size for the lowest capped ceil: what it sends in burst_us,
// clamped to [min(kMinGsoBytes, orig.max), orig.max].
uint32_t gso_target(uint64_t ceil_bits, const GsoSize& orig, uint64_t burst_us);

// The size pair set for `max`: gso_ipv4_max_size follows when the NIC has one.
GsoSize gso_size_for(uint32_t max, const GsoSize& orig);

// One capped NIC of a job counted in (delta > 0) or out (delta < 0).
struct GsoStep {
    enum class Action {
        Nothing,  // the count is unchanged (a job counted out that was not in): no write
        Save,     // save `file`, the size unchanged
        Set,      // set `size`, then save `file`
        Restore,  // the last capped job left: set `size` (the NIC's own), delete the file
    };
    Action action = Action::Nothing;
    GsoSize size;
    GsoFile file;
};

// `file`: the stored file, or, when there is none, the NIC's sizes now as orig
// and set (the caller reads them). `ceil_bits`: the job's ceil on this NIC.
GsoStep plan_gso_account(GsoFile file, uint64_t ceil_bits, int delta, uint64_t burst_us);

// A job's ceil on this NIC moves from `from_bits` to `to_bits` (a signal's busy
// shift, or its end; both the ceil in force): its count moves with it, so the
// bound follows the lowest ceil in force. Each side counts only when capped
// (below `link_bits`). `file` as for plan_gso_account(); one step, one size.
GsoStep plan_gso_shift(GsoFile file, uint64_t from_bits, uint64_t to_bits, uint64_t link_bits, uint64_t burst_us);

// converge(): the stored file made to agree with the desired state: `ceils` are
// the ceils in force of the capped jobs on this NIC (how many of each), and
// `set` follows the lowest. nullopt when the stored file already agrees. A
// result without ceils means: restore orig and delete the file.
std::optional<GsoFile> plan_gso_recount(const GsoFile& file, const std::map<uint64_t, uint32_t>& ceils,
                                        uint64_t burst_us);

// converge(): the size to put back on a NIC whose file has capped jobs but
// whose gso_max_size is `now.max` (a recreated NIC has its own again);
// nullopt when nothing is to be done (no capped job, or the size is in place).
std::optional<GsoSize> plan_gso_repair(const GsoFile& file, const GsoSize& now);

}  // namespace lanes
