// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl rate: parse_rate and format_rate for scripts (bench/fabric.sh), so
// that no shell code keeps its own rules for rates (tc reads "bps" as bytes per
// second; Lanes refuses the spelling).
#include <cstdio>

#include "core/lanes_toml.hpp"
#include "lanesctl/commands.hpp"

namespace lanes::ctl {

int run_rate(const Options& options) {
    int status = kExitOk;
    for (const auto& text : options.rates) {
        auto rate = parse_rate(text);
        if (!rate) {
            print_error(rate.error().message);
            status = kExitFailed;
            continue;
        }
        std::printf("%s\n", format_rate(*rate, RateStyle::Bits).c_str());
    }
    return status;
}

}  // namespace lanes::ctl
