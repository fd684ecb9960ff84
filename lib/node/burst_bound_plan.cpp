// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/burst_bound_plan.hpp"

#include <algorithm>
#include <sstream>

namespace lanes {

std::optional<GsoFile> parse_gso_file(const std::string& text) {
    std::istringstream in(text);
    GsoFile f;
    std::string key;
    while (in >> key) {
        if (key == "orig") in >> f.orig.max >> f.orig.ipv4_max;
        else if (key == "set") in >> f.set;
        else if (key == "ceil") {
            uint64_t bits = 0;
            uint32_t n = 0;
            if (in >> bits >> n && n > 0) f.ceils[bits] = n;
        } else break;
    }
    if (f.orig.max == 0) return std::nullopt;
    return f;
}

std::string format_gso_file(const GsoFile& f) {
    std::string text = "orig " + std::to_string(f.orig.max) + " " + std::to_string(f.orig.ipv4_max) + "\nset " +
                       std::to_string(f.set) + "\n";
    for (const auto& [bits, n] : f.ceils) text += "ceil " + std::to_string(bits) + " " + std::to_string(n) + "\n";
    return text;
}

uint32_t gso_target(uint64_t ceil_bits, const GsoSize& orig, uint64_t burst_us) {
    const uint64_t bytes = ceil_bits / 8 * burst_us / 1'000'000;
    return static_cast<uint32_t>(std::clamp<uint64_t>(bytes, std::min<uint64_t>(kMinGsoBytes, orig.max), orig.max));
}

GsoSize gso_size_for(uint32_t max, const GsoSize& orig) {
    return GsoSize{max, orig.ipv4_max ? std::min(max, orig.ipv4_max) : 0};
}

namespace {
// The step once `f`'s counts are updated: restore, set or save.
GsoStep step_for(GsoFile f, uint64_t burst_us) {
    GsoStep step;
    if (f.ceils.empty()) {
        step.action = GsoStep::Action::Restore;
        step.size = f.orig;
        step.file = std::move(f);
        return step;
    }
    const uint32_t want = gso_target(f.ceils.begin()->first, f.orig, burst_us);
    if (want != f.set) {
        step.action = GsoStep::Action::Set;
        step.size = gso_size_for(want, f.orig);
        f.set = want;
    } else {
        step.action = GsoStep::Action::Save;
    }
    step.file = std::move(f);
    return step;
}

// One count of `bits` out of `f`; false when there was none.
bool count_out(GsoFile& f, uint64_t bits) {
    auto it = f.ceils.find(bits);
    if (it == f.ceils.end()) return false;
    if (--it->second == 0) f.ceils.erase(it);
    return true;
}
}  // namespace

GsoStep plan_gso_account(GsoFile f, uint64_t ceil_bits, int delta, uint64_t burst_us) {
    if (delta > 0) f.ceils[ceil_bits] += 1;
    else if (!count_out(f, ceil_bits)) return GsoStep{};
    return step_for(std::move(f), burst_us);
}

GsoStep plan_gso_shift(GsoFile f, uint64_t from_bits, uint64_t to_bits, uint64_t link_bits, uint64_t burst_us) {
    bool changed = false;
    if (from_bits < link_bits) changed = count_out(f, from_bits);
    if (to_bits < link_bits) {
        f.ceils[to_bits] += 1;
        changed = true;
    }
    if (!changed) return GsoStep{};
    return step_for(std::move(f), burst_us);
}

std::optional<GsoFile> plan_gso_recount(const GsoFile& file, const std::map<uint64_t, uint32_t>& ceils,
                                        uint64_t burst_us) {
    if (file.ceils == ceils) return std::nullopt;
    GsoFile f = file;
    f.ceils = ceils;
    if (!ceils.empty()) f.set = gso_target(ceils.begin()->first, f.orig, burst_us);
    return f;
}

std::optional<GsoSize> plan_gso_repair(const GsoFile& file, const GsoSize& now) {
    if (file.ceils.empty() || now.max == file.set) return std::nullopt;
    return gso_size_for(file.set, file.orig);
}

}  // namespace lanes
