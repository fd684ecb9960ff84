// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl windows: the calendar of lanes.toml's windows and reservation commands,
// and (--apply) the reservations themselves, created through libslurm.
extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
}

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "core/lanes_toml.hpp"
#include "ctld/windows_config.hpp"
#include "lanesctl/commands.hpp"
#include "lanesctl/time_spec.hpp"
#include "lanesctl/windows_report.hpp"

namespace lanes::ctl {

namespace {

// One reservation: "created", "exists" (same name: an earlier run), or an error.
Result<bool> create_reservation(const Reservation& r, const ReservationRequest& request) {
    resv_desc_msg_t desc;
    slurm_init_resv_desc_msg(&desc);
    std::string name = r.name, nodes = r.partition.empty() ? r.nodes : std::string("ALL");
    std::string partition = r.partition, accounts = request.accounts, users = request.users;
    desc.name = name.data();
    desc.start_time = static_cast<time_t>(r.start.time_since_epoch().count());
    desc.end_time = static_cast<time_t>(r.end.time_since_epoch().count());
    desc.node_list = nodes.data();
    if (!partition.empty()) desc.partition = partition.data();
    desc.flags = RESERVE_FLAG_IGN_JOBS | RESERVE_FLAG_MAGNETIC | (partition.empty() ? 0 : RESERVE_FLAG_PART_NODES);
    if (!accounts.empty()) desc.accounts = accounts.data();
    if (!users.empty()) desc.users = users.data();
    errno = 0;
    char* created = slurm_create_reservation(&desc);
    if (created) {
        std::free(created);
        return true;
    }
    int err = errno;
    if (err == ESLURM_RESERVATION_NAME_DUP) return false;
    return fail(r.name + ": " + slurm_strerror(err));
}

int apply_reservations(const WindowsReport& report, const ReservationRequest& request) {
    SlurmSession slurm;
    // Slurm checks the overlap before the name, so look the names up first.
    std::set<std::string> existing;
    reserve_info_msg_t* resv = nullptr;
    if (slurm_load_reservations(0, &resv) != SLURM_SUCCESS) {
        int err = errno;
        print_error(std::string("cannot list reservations: ") + slurm_strerror(err));
        return kExitRuntime;
    }
    for (uint32_t i = 0; resv && i < resv->record_count; ++i)
        if (resv->reservation_array[i].name) existing.insert(resv->reservation_array[i].name);
    slurm_free_reservation_info_msg(resv);
    int rc = kExitOk;
    for (const auto& r : report.reservations) {
        if (existing.count(r.name)) {
            print_human(r.name + " exists (" + r.window + ")\n");
            continue;
        }
        auto done = create_reservation(r, request);
        if (!done) {
            print_error("cannot create reservation " + done.error().message);
            rc = kExitRuntime;
            continue;
        }
        print_human(r.name + (*done ? " created" : " exists") + " (" + r.window + ")\n");
    }
    return rc;
}

}  // namespace

int run_windows(const Options& options, const Context& context) {
    auto from = time_option("--from", options.from, context, context.now);
    if (!from) return kExitUsage;
    auto config = load_controller_config(context.config_path);
    if (!config) {
        print_error(config.error().message);
        return kExitRuntime;
    }
    std::optional<ReservationRequest> request;
    if (options.reservations)
        request =
            ReservationRequest{options.reservation_nodes, options.reservation_accounts, options.reservation_users};
    auto report = build_windows_report(*config, *from, options.days, options.window_names, request);
    if (!report) {
        print_error(report.error().message);
        return kExitUsage;
    }
    if (options.apply) return apply_reservations(*report, *request);
    if (options.json) {
        print_json(windows_json(*report));
    } else if (options.parsable) {
        std::string text = format_windows_parsable(*report, !options.noheader);
        print_human(text);
    } else {
        std::string text = format_windows_human(*report);
        print_human(text);
    }
    return kExitOk;
}

}  // namespace lanes::ctl
