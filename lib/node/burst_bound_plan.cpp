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

GsoStep plan_gso_account(GsoFile f, uint64_t ceil_bits, int delta, uint64_t burst_us) {
    GsoStep step;
    if (delta > 0) {
        f.ceils[ceil_bits] += 1;
    } else {
        auto it = f.ceils.find(ceil_bits);
        if (it == f.ceils.end()) return step;
        if (--it->second == 0) f.ceils.erase(it);
    }
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

std::optional<GsoSize> plan_gso_repair(const GsoFile& file, const GsoSize& now) {
    if (file.ceils.empty() || now.max == file.set) return std::nullopt;
    return gso_size_for(file.set, file.orig);
}

}  // namespace lanes
