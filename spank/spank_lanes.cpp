// spank_lanes: the node half of Lanes. Thin glue; the work is in lib/.
//
//   plugstack.conf:  required spank_lanes.so config=/etc/slurm/lanes.toml
//
// Context            callback                         what it does
// srun/sbatch/salloc init, option callbacks, post_opt  --lanes-class / --lanes-cap: checked here,
//                                                      sent as LANES_REQUEST_* job-control env;
//                                                      job_submit/lanes validates them
// slurmd             init                              reconcile: remove state of dead jobs
// prolog (root)      job_prolog                        SPANK_LANES_* (slurmctld's copy, with
//                                                      PrologFlags=Alloc) -> HTB class, nft marks,
//                                                      job cgroup, state file
// slurmstepd         init                              load lanes.toml once per step
// task (root, child) task_init_privileged              move the task into the job cgroup before
//                                                      exec; NCCL/UCX traffic-class variables
// epilog (root)      job_epilog                        remove everything of the job
//
// Every callback logs "lanes: ..." and never lets an exception out: each body runs
// inside guarded(), which is noexcept. The definitions themselves carry no noexcept
// because spank.h (Slurm 23.02 and later) declares them, with C linkage and no
// exception specification, and a definition must match that declaration exactly.

extern "C" {
#include <slurm/slurm.h>
#include <slurm/spank.h>
}

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config.h"
#include "core/lanes_toml.hpp"
#include "core/entry_guard.hpp"
#include "core/job_env.hpp"
#include "node/job_state_store.hpp"
#include "node/node_shaper.hpp"
#include "spank/spank_args.hpp"
#include "node/task_env.hpp"

extern "C" {
void slurm_info(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void slurm_error(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void slurm_debug(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

extern const char plugin_name[] = "lanes";
extern const char plugin_type[] = "spank";
extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
extern const unsigned int spank_plugin_version = 1;
}

namespace {

using lanes::Config;
using lanes::NodeShaper;

// ---- user options (srun/sbatch/salloc) -------------------------------------------

std::optional<std::string> g_requested_class;
std::optional<std::string> g_requested_cap;

// Idempotent: Slurm may call an option callback twice. The node never trusts the
// user's copy (remote), only slurmctld's decision.
template <typename Check>
int take_option(const char* optarg, int remote, std::optional<std::string>& slot, Check check) noexcept {
    if (remote) return 0;
    return lanes::guard_entry(-1, [](const char* what) { slurm_error("lanes: option: %s", what); }, [&]() -> int {
        auto checked = check(optarg ? optarg : "");
        if (!checked) {
            slurm_error("lanes: %s", checked.error().message.c_str());
            return -1;
        }
        slot = *checked;
        return 0;
    });
}

int on_class_option(int, const char* optarg, int remote) noexcept {
    return take_option(optarg, remote, g_requested_class, lanes::check_class_option);
}

int on_cap_option(int, const char* optarg, int remote) noexcept {
    return take_option(optarg, remote, g_requested_cap, lanes::check_cap_option);
}

char kClassName[] = "lanes-class";
char kClassArg[] = "CLASS";
char kClassUsage[] = "[lanes] ask for traffic class CLASS (e.g. inference); allowed only where lanes.toml permits";
char kCapName[] = "lanes-cap";
char kCapArg[] = "RATE";
char kCapUsage[] = "[lanes] cap this job's egress bandwidth below its class cap (e.g. 5Gbit, 800Mbit)";

struct spank_option g_options[] = {
    {kClassName, kClassArg, kClassUsage, 1, 0, on_class_option},
    {kCapName, kCapArg, kCapUsage, 1, 0, on_cap_option},
};

// ---- shared helpers ------------------------------------------------------------

void log_sink(lanes::LogLevel level, const std::string& message) {
    const char* text = message.c_str();
    // lib/ lines already start "lanes: " where they name an object; keep one prefix.
    const char* prefix = message.rfind("lanes: ", 0) == 0 ? "" : "lanes: ";
    switch (level) {
        case lanes::LogLevel::Error: slurm_error("%s%s", prefix, text); break;
        case lanes::LogLevel::Info: slurm_info("%s%s", prefix, text); break;
        case lanes::LogLevel::Debug: slurm_debug("%s%s", prefix, text); break;
    }
}

std::optional<lanes::SpankArgs> parse_args(int ac, char** av) {
    std::vector<std::string> args(av, av + ac);
    auto parsed = lanes::parse_spank_args(args, LANES_DEFAULT_CONFIG);
    if (!parsed) {
        slurm_error("lanes: %s", parsed.error().message.c_str());
        return std::nullopt;
    }
    return *parsed;
}

// Nodes have no long-lived process to keep the last good lanes.toml in memory, so
// a copy of the last one that loaded is kept (root-only): a config broken mid-run
// leaves running and new jobs on the last good one.
std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A directory root may write into and read trusted files from: root-owned, not a
// symlink, writable by nobody else.
bool is_private_dir(const std::string& dir) {
    struct stat st{};
    return lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 022) == 0;
}

std::string dir_of(const std::string& path) {
    auto slash = path.rfind('/');
    return slash == std::string::npos || slash == 0 ? std::string("/") : path.substr(0, slash);
}

void remember_good_config(const std::string& path, const std::string& copy) {
    std::string text = read_file(path);
    if (text.empty() || text == read_file(copy)) return;
    std::string dir = dir_of(copy);
    mkdir(dir.c_str(), 0700);
    if (!is_private_dir(dir)) {
        slurm_error("lanes: %s is not a root-only directory; not keeping a last good config there", dir.c_str());
        return;
    }
    std::string tmp = copy + ".tmp." + std::to_string(getpid());
    int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return;
    bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    close(fd);
    if (!written || rename(tmp.c_str(), copy.c_str()) != 0) unlink(tmp.c_str());
}

std::optional<Config> load(const lanes::SpankArgs& args) {
    auto config = lanes::load_config(args.config_path);
    if (config) {
        remember_good_config(args.config_path, args.last_good_config);
        return std::move(*config);
    }
    slurm_error("lanes: %s", config.error().message.c_str());
    if (!is_private_dir(dir_of(args.last_good_config))) return std::nullopt;
    auto fallback = lanes::load_config(args.last_good_config);
    if (!fallback) return std::nullopt;
    slurm_error("lanes: %s is broken; using the last good copy %s", args.config_path.c_str(),
                args.last_good_config.c_str());
    return std::move(*fallback);
}

std::optional<uint32_t> job_id_of(spank_t sp) {
    uint32_t job_id = 0;
    if (spank_get_item(sp, S_JOB_ID, &job_id) == ESPANK_SUCCESS && job_id != 0) return job_id;
    // Prolog/epilog: slurmd sets the environment, not the user.
    if (spank_context() != S_CTX_JOB_SCRIPT) return std::nullopt;
    if (const char* env = std::getenv("SLURM_JOB_ID")) {
        char* end = nullptr;
        unsigned long v = std::strtoul(env, &end, 10);
        if (end && *end == '\0' && v > 0 && v <= 0xffffffffUL) return static_cast<uint32_t>(v);
    }
    return std::nullopt;
}

// The node's name from the environment slurmd/slurmstepd set for themselves (the
// prolog's, the stepd's own), else the host name. Never the job's environment.
std::string node_name() {
    if (const char* env = std::getenv("SLURMD_NODENAME"); env && *env) return env;
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    return host;
}

// The job's decision, as slurmctld put it in the prolog's environment.
std::map<std::string, std::string> lanes_environment() {
    std::map<std::string, std::string> vars;
    for (char** e = environ; e && *e; ++e) {
        std::string_view entry(*e);
        if (!lanes::is_lanes_entry(entry)) continue;
        auto eq = entry.find('=');
        if (eq == std::string_view::npos) continue;
        vars.emplace(std::string(entry.substr(0, eq)), std::string(entry.substr(eq + 1)));
    }
    return vars;
}

// Jobs with a live slurmstepd in this network namespace ("slurmstepd: [123.0]").
bool job_has_stepd(uint32_t job_id) {
    struct stat own_ns{};
    if (stat("/proc/self/ns/net", &own_ns) != 0) return true;  // unsure: keep
    std::unique_ptr<DIR, int (*)(DIR*)> proc(opendir("/proc"), closedir);
    if (!proc) return true;
    const std::string needle = "slurmstepd: [" + std::to_string(job_id) + ".";
    while (auto* entry = readdir(proc.get())) {
        if (!std::isdigit(static_cast<unsigned char>(entry->d_name[0]))) continue;
        std::string base = std::string("/proc/") + entry->d_name;
        std::ifstream cmdline(base + "/cmdline");
        std::string title;
        std::getline(cmdline, title, '\0');
        if (title.rfind(needle, 0) != 0) continue;
        // Any user can set a process title; only root runs slurmstepd.
        struct stat owner{};
        if (stat(base.c_str(), &owner) != 0 || owner.st_uid != 0) continue;
        struct stat ns{};
        if (stat((base + "/ns/net").c_str(), &ns) == 0 && ns.st_ino == own_ns.st_ino && ns.st_dev == own_ns.st_dev)
            return true;
    }
    return false;
}

// Every callback runs through here: an exception is logged, Slurm gets `on_error`.
template <typename Body>
int guarded(const char* where, int on_error, Body&& body) noexcept {
    return lanes::guard_entry(on_error, [where](const char* what) { slurm_error("lanes: %s: %s", where, what); },
                              body);
}

// Slurm's own cgroup v2 job directory of this process, if Slurm's cgroup plugin
// placed it in one ("0::/system.slice/<node>_slurmstepd.scope/job_7/step_0/...").
std::optional<std::string> slurm_job_cgroup(uint32_t job_id) {
    std::ifstream in("/proc/self/cgroup");
    std::string line;
    const std::string component = "/job_" + std::to_string(job_id) + "/";
    while (std::getline(in, line)) {
        if (line.rfind("0::", 0) != 0) continue;
        std::string path = line.substr(3) + "/";
        if (path.find("slurmstepd.scope/") != std::string::npos && path.find(component) != std::string::npos)
            return line.substr(3);
    }
    return std::nullopt;
}

// The node's shaper, with "%n" in lanes.toml's node paths expanded.
lanes::Result<std::unique_ptr<NodeShaper>> open_shaper(const Config& config) {
    auto node = lanes::node_config_for(config.node, node_name());
    if (!node) return std::unexpected(node.error());
    return NodeShaper::open(*node, node_name(), log_sink);
}

// ---- per-context work ------------------------------------------------------------

// slurmstepd keeps the parsed config for its tasks (forked after init).
std::optional<Config> g_step_config;

int init_allocator_or_local(spank_t sp) {
    for (auto& option : g_options)
        if (spank_option_register(sp, &option) != ESPANK_SUCCESS) {
            slurm_error("lanes: cannot register --%s", option.name);
            return -1;
        }
    return 0;
}

int reconcile_on_slurmd_start(const lanes::SpankArgs& args) {
    auto config = load(args);
    if (!config) {
        // slurmd still starts: a node without Lanes is better than a node down. Its
        // prologs fail the same way for jobs that need shaping, and say why.
        slurm_error("lanes: no usable lanes.toml at slurmd start; leftovers not reconciled");
        return 0;
    }
    if (!args.reconcile_on_start) return 0;
    auto shaper = open_shaper(*config);
    if (!shaper) {
        // No NIC selected for this node is a normal configuration: nothing to shape.
        slurm_info("lanes: not shaping on %s: %s", node_name().c_str(), shaper.error().message.c_str());
        return 0;
    }
    auto removed = (*shaper)->reconcile(job_has_stepd);
    if (!removed) {
        slurm_error("lanes: reconcile at slurmd start: %s", removed.error().message.c_str());
        return 0;  // leftovers are not worth keeping slurmd down; lanesctl gc can retry
    }
    for (uint32_t job : *removed) slurm_info("lanes: removed leftover state of job %u at slurmd start", job);
    return 0;
}

}  // namespace

extern "C" int slurm_spank_init(spank_t sp, int ac, char** av) {
    return guarded("init", -1, [&]() -> int {
        switch (spank_context()) {
            case S_CTX_LOCAL:
            case S_CTX_ALLOCATOR:
                return init_allocator_or_local(sp);
            case S_CTX_REMOTE: {
                // Options must be known remotely too, though their values are ignored there.
                if (init_allocator_or_local(sp) != 0) return -1;
                auto args = parse_args(ac, av);
                if (!args) return -1;
                g_step_config = load(*args);
                if (g_step_config) {
                    // slurmstepd's own environment (set by Slurm), never the job's.
                    auto node = lanes::node_config_for(g_step_config->node, node_name());
                    if (!node) {
                        slurm_error("%s", node.error().message.c_str());
                        g_step_config.reset();
                    } else {
                        g_step_config->node = *node;
                    }
                }
                // A broken lanes.toml must not kill the user's step: tasks then run
                // unclassified, and the prolog (which failed the same way) said so.
                return 0;
            }
            case S_CTX_SLURMD: {
                auto args = parse_args(ac, av);
                if (!args) return -1;
                return reconcile_on_slurmd_start(*args);
            }
            default:
                return 0;
        }
    });
}

extern "C" int slurm_spank_init_post_opt(spank_t sp, int, char**) {
    return guarded("init_post_opt", -1, [&]() -> int {
        auto context = spank_context();
        if (context != S_CTX_LOCAL && context != S_CTX_ALLOCATOR) return 0;
        if (g_requested_class &&
            spank_job_control_setenv(sp, std::string(lanes::kEnvRequestClass).c_str(), g_requested_class->c_str(), 1) !=
                ESPANK_SUCCESS) {
            slurm_error("lanes: cannot pass --lanes-class to the controller");
            return -1;
        }
        if (g_requested_cap &&
            spank_job_control_setenv(sp, std::string(lanes::kEnvRequestCap).c_str(), g_requested_cap->c_str(), 1) !=
                ESPANK_SUCCESS) {
            slurm_error("lanes: cannot pass --lanes-cap to the controller");
            return -1;
        }
        return 0;
    });
}

extern "C" int slurm_spank_job_prolog(spank_t sp, int ac, char** av) {
    return guarded("prolog", -1, [&]() -> int {
        auto job_id = job_id_of(sp);
        if (!job_id) {
            slurm_error("lanes: prolog: no job id");
            return -1;
        }
        auto vars = lanes_environment();
        if (vars.empty()) {
            slurm_debug("lanes: job %u has no Lanes decision (job_submit/lanes not configured?)", *job_id);
            return 0;
        }
        auto directive = lanes::decode_directive(vars);
        if (!directive) {
            slurm_error("lanes: job %u: bad decision from slurmctld: %s", *job_id, directive.error().message.c_str());
            return -1;
        }
        if (!directive->network.dscp && !directive->network.rate && !directive->network.ceil) {
            slurm_debug("lanes: job %u class %s has no network settings", *job_id, directive->class_name.c_str());
            return 0;
        }
        auto args = parse_args(ac, av);
        if (!args) return -1;
        auto config = load(*args);
        if (!config) return -1;
        auto shaper = open_shaper(*config);
        if (!shaper) {
            slurm_info("lanes: job %u: not shaping on %s: %s", *job_id, node_name().c_str(),
                       shaper.error().message.c_str());
            return 0;
        }
        lanes::JobNetRequest request;
        request.job_id = *job_id;
        request.class_name = directive->class_name;
        request.net = directive->network;
        auto state = (*shaper)->apply(request);
        if (!state) {
            slurm_error("lanes: job %u: %s", *job_id, state.error().message.c_str());
            return -1;
        }
        slurm_info("lanes: job %u class %s shaped on %zu NIC(s)", *job_id, directive->class_name.c_str(),
                   state->devices.size());
        return 0;
    });
}

extern "C" int slurm_spank_task_init_privileged(spank_t sp, int, char**) {
    return guarded("task init", -1, [&]() -> int {
        if (!g_step_config) return 0;
        auto job_id = job_id_of(sp);
        if (!job_id) return 0;
        auto state = lanes::JobStateStore(g_step_config->node.state_dir).load(*job_id);
        if (!state) {  // unreadable or untrusted state: fail closed, the task would dodge its cap
            slurm_error("lanes: job %u: %s", *job_id, state.error().message.c_str());
            return -1;
        }
        if (!*state) return 0;  // nothing is shaped for this job on this node
        const lanes::JobState& job = **state;
        if (job.cgroup_owned) {
            if (auto slurm_cgroup = slurm_job_cgroup(*job_id)) {
                // Moving the task would take it out of Slurm's limits (memory, cores,
                // devices); keep Slurm's placement and say the job is not marked.
                slurm_error("lanes: job %u: Slurm manages this task's cgroup (%s); not moving it to %s, so its "
                            "traffic is not classified (see LIMITATIONS in spank_lanes(8))",
                            *job_id, slurm_cgroup->c_str(), job.cgroup.c_str());
            } else {
                // In the forked task, before exec: S_TASK_PID is not set yet, getpid() is the task.
                auto attached = NodeShaper::attach_task(g_step_config->node, *job_id, getpid());
                if (!attached) {
                    slurm_error("lanes: job %u: cannot place task %d in its cgroup: %s", *job_id,
                                static_cast<int>(getpid()), attached.error().message.c_str());
                    return -1;  // an unclassified task would dodge the cap: fail the launch
                }
            }
        }
        for (const auto& [name, value] : lanes::task_environment(job.class_name, job.net))
            spank_setenv(sp, name.c_str(), value.c_str(), 1);
        return 0;
    });
}

extern "C" int slurm_spank_job_epilog(spank_t sp, int ac, char** av) {
    return guarded("epilog", 0, [&]() -> int {
        auto job_id = job_id_of(sp);
        if (!job_id) {
            slurm_error("lanes: epilog: no job id");
            return 0;
        }
        // A failing epilog drains the node. Nothing left behind here is worth that:
        // leftovers are logged and removed by slurmd's start-up reconcile or
        // `lanesctl gc`, so every path below returns 0.
        auto args = parse_args(ac, av);
        if (!args) return 0;
        auto config = load(*args);
        if (!config) {
            slurm_error("lanes: job %u: no usable lanes.toml; its shaping (if any) is left for lanesctl gc", *job_id);
            return 0;
        }
        auto shaper = open_shaper(*config);
        if (!shaper) return 0;  // nothing is shaped on this node
        auto removed = (*shaper)->remove(*job_id);
        if (!removed)
            slurm_error("lanes: job %u: teardown incomplete, left for lanesctl gc: %s", *job_id,
                        removed.error().message.c_str());
        return 0;
    });
}
