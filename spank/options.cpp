// SPDX-License-Identifier: GPL-2.0-or-later
// srun/sbatch/salloc: --lanes-class and --lanes-cap. Checked here, so users see a
// mistake before anything is submitted; sent to slurmctld as LANES_REQUEST_*
// job-control environment, where job_submit/lanes validates them again. The node
// never trusts the user's copy (remote), only slurmctld's decision.
#include <optional>
#include <string>

#include "core/job_env.hpp"
#include "core/text.hpp"
#include "spank/common.hpp"

namespace lanes::spank {
namespace {

std::optional<std::string> g_requested_class;
std::optional<std::string> g_requested_cap;

// Idempotent: Slurm may call an option callback twice.
template <typename Check>
int take_option(const char* optarg, int remote, std::optional<std::string>& slot, Check check) noexcept {
    if (remote) return 0;
    return guard_entry(
        -1, [](const char* what) { slurm_error("lanes: option: %s", what); },
        [&]() -> int {
            auto checked = check(optarg ? optarg : "");
            if (!checked) {
                // Quotes the user's option value; srun prints it on their terminal.
                slurm_error("lanes: %s", lanes::user_message(checked.error().message).c_str());
                return -1;
            }
            slot = *checked;
            return 0;
        });
}

int on_class_option(int, const char* optarg, int remote) noexcept {
    return take_option(optarg, remote, g_requested_class, check_class_option);
}

int on_cap_option(int, const char* optarg, int remote) noexcept {
    return take_option(optarg, remote, g_requested_cap, check_cap_option);
}

char kClassName[] = "lanes-class";
char kClassArg[] = "CLASS";
char kClassUsage[] = "[lanes] ask for traffic class CLASS (e.g. inference); allowed only where lanes.toml permits";
char kCapName[] = "lanes-cap";
char kCapArg[] = "[out=]RATE[,in=RATE]";
char kCapUsage[] =
    "[lanes] cap this job's bandwidth below its class caps: what it sends (out=, the default) and "
    "receives (in=), e.g. 5Gbit or out=2Gbit,in=5Gbit";

struct spank_option g_options[] = {
    {kClassName, kClassArg, kClassUsage, 1, 0, on_class_option},
    {kCapName, kCapArg, kCapUsage, 1, 0, on_cap_option},
};

int pass(spank_t sp, std::string_view name, const std::optional<std::string>& value, const char* option) {
    if (!value) return 0;
    if (spank_job_control_setenv(sp, std::string(name).c_str(), value->c_str(), 1) == ESPANK_SUCCESS) return 0;
    slurm_error("lanes: cannot pass --%s to the controller", option);
    return -1;
}

}  // namespace

int register_options(spank_t sp) {
    for (auto& option : g_options)
        if (spank_option_register(sp, &option) != ESPANK_SUCCESS) {
            slurm_error("lanes: cannot register --%s", option.name);
            return -1;
        }
    return 0;
}

int pass_options_to_controller(spank_t sp) {
    if (pass(sp, kEnvRequestClass, g_requested_class, kClassName) != 0) return -1;
    return pass(sp, kEnvRequestCap, g_requested_cap, kCapName);
}

}  // namespace lanes::spank
