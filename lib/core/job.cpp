// SPDX-License-Identifier: GPL-2.0-or-later
// GPU counting from Slurm's TRES strings, shared by job_submit/lanes and lanesctl.
#include "core/job.hpp"

#include <charconv>

namespace lanes {

namespace {

// Number after the last ':' or '=' of one TRES item ("gres/gpu:a100:2" -> 2); 1 if none.
uint32_t item_count(std::string_view item) {
    auto pos = item.find_last_of(":=");
    if (pos == std::string_view::npos) return 1;
    std::string_view digits = item.substr(pos + 1);
    uint32_t value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (ec != std::errc() || end != digits.data() + digits.size()) return 1;  // "gpu:a100" -> 1
    return value;
}

}  // namespace

uint32_t count_gpus(std::string_view tres) {
    uint32_t total = 0;
    std::string_view rest = tres;
    while (!rest.empty()) {
        auto comma = rest.find_first_of(",;");
        std::string_view item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
        // "gres/gpu...", "gres:gpu...", "gpu..." all name GPUs.
        std::string_view kind = item;
        for (std::string_view prefix : {"gres/", "gres:"})
            if (kind.starts_with(prefix)) kind.remove_prefix(prefix.size());
        if (kind == "gpu" || kind.starts_with("gpu:") || kind.starts_with("gpu=")) total += item_count(item);
    }
    return total;
}

}  // namespace lanes
