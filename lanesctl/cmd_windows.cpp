// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl windows: the calendar of lanes.toml's windows and reservation commands.
#include <cstdio>

#include "lanesctl/commands.hpp"
#include "core/lanes_toml.hpp"
#include "lanesctl/time_spec.hpp"
#include "lanesctl/windows_report.hpp"

namespace lanes::ctl {

int run_windows(const Options& options, const Context& context) {
    SysSeconds from = context.now;
    if (!options.from.empty()) {
        auto parsed = parse_time_spec(options.from, context.local_zone.get(), context.now, load_zone);
        if (!parsed) {
            print_error("--from: " + parsed.error().message);
            return kExitUsage;
        }
        from = *parsed;
    }
    auto config = load_config(context.config_path);
    if (!config) {
        print_error(config.error().message);
        return kExitRuntime;
    }
    std::optional<ReservationRequest> request;
    if (options.reservations)
        request = ReservationRequest{options.reservation_nodes, options.reservation_accounts,
                                     options.reservation_users};
    auto report = build_windows_report(*config, from, options.days, options.window_names, request);
    if (!report) {
        print_error(report.error().message);
        return kExitUsage;
    }
    if (options.json) {
        print_json(windows_json(*report));
    } else if (options.parsable) {
        std::string text = format_windows_parsable(*report, !options.noheader);
        std::fputs(text.c_str(), stdout);
    } else {
        std::string text = format_windows_human(*report);
        std::fputs(text.c_str(), stdout);
    }
    return kExitOk;
}

}  // namespace lanes::ctl
