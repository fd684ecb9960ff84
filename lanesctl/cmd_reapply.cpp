// SPDX-License-Identifier: GPL-2.0-or-later
// lanesctl reapply: put back what `nft flush ruleset` (or `systemctl reload
// nftables`, whose nftables.conf starts with it) or a `tc qdisc del` took from the
// running jobs: the nft table with every job's marks and every job's HTB classes,
// from the state files. Nothing changes when everything is in place.
#include <cstdio>

#include "lanesctl/commands.hpp"
#include "lanesctl/json.hpp"
#include "node/node_shaper.hpp"

namespace lanes::ctl {

Result<std::unique_ptr<NodeShaper>> open_node_shaper(const Context& context);  // cmd_status.cpp

int run_reapply(const Options& options, const Context& context) {
    auto shaper = open_node_shaper(context);
    if (!shaper) {
        print_error(shaper.error().message);
        return kExitRuntime;
    }
    auto done = options.dry_run ? (*shaper)->check() : (*shaper)->reapply(true);
    if (!done) {
        print_error(done.error().message);
        return kExitRuntime;
    }
    if (options.json) {
        print_json(json::Object{{"node", context.node},
                                {"dry_run", options.dry_run},
                                {"jobs", static_cast<int64_t>(done->jobs)},
                                {"missing", done->what},
                                {"reapplied", done->needed && !options.dry_run}});
    } else if (!done->needed) {
        print_human(context.node + ": all " + std::to_string(done->jobs) +
                    " job(s) marked and shaped; nothing to reapply\n");
    } else {
        print_human(context.node + ": " + done->what + ": " +
                    (options.dry_run ? "would reapply (dry run)" : "reapplied") + "\n");
    }
    return options.dry_run && done->needed ? kExitFailed : kExitOk;
}

}  // namespace lanes::ctl
