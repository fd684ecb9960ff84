// SPDX-License-Identifier: GPL-2.0-or-later
// slurmd (as root): its start, and the job prolog and epilog it runs.
//   start      reconcile: remove the shaping of jobs that are gone (state from
//              an earlier boot at once; jobs slurmctld says ended, in a
//              detached process that never holds up slurmd or a prolog)
//   prolog     SPANK_LANES_* (slurmctld's copy, with PrologFlags=Alloc) -> HTB
//              class, nft marks, job cgroup, state file
//   epilog     remove everything of the job; never fails (that would drain the node)
#include <dirent.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/cpu_time.hpp"
#include "core/job_env.hpp"
#include "glue/slurm_jobs.hpp"
#include "node/policy_routing.hpp"
#include "spank/common.hpp"

namespace lanes::spank {
namespace {

// slurmd's parsed slurm.conf, looked up at run time (srun and sbatch load this
// plugin too, and must not need the symbol).
const slurm_conf_t* slurmd_conf() { return static_cast<const slurm_conf_t*>(dlsym(RTLD_DEFAULT, "slurm_conf")); }

// In a process forked from slurmd: close what must stay slurmd's alone, so that
// a slurmd restarted meanwhile finds its port and its pidfile lock free. Sockets
// that listen and files this process holds a lock through are closed; the log
// file and the rest stay (the child logs through slurmd's log).
void release_slurmd_resources() {
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir("/proc/self/fd"), ::closedir);
    if (!dir) return;
    std::vector<int> to_close;
    while (dirent* e = ::readdir(dir.get())) {
        char* end = nullptr;
        long fd = std::strtol(e->d_name, &end, 10);
        if (end == e->d_name || *end || fd < 3 || fd == ::dirfd(dir.get())) continue;
        int listening = 0;
        socklen_t len = sizeof listening;
        bool close_it =
            ::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening;
        if (!close_it) {
            std::ifstream info("/proc/self/fdinfo/" + std::string(e->d_name));
            std::ostringstream text;
            text << info.rdbuf();
            close_it = text.str().find("\nlock:") != std::string::npos;
        }
        if (close_it) to_close.push_back(static_cast<int>(fd));
    }
    dir.reset();
    for (int fd : to_close) ::close(fd);
}

// The jobs that nothing on this node decides: slurmctld's word, asked in a
// process of its own (forked twice, so slurmd has no child to reap), so that
// slurmd's start and the prologs that follow never wait for the controller. The
// removal itself takes the shaper's lock like any prolog; a job whose prolog
// runs after the scan is not in it and is kept. The process ends by itself: the
// question is bounded (glue::kControllerTimeout) and an alarm bounds the rest.
void reconcile_with_slurmctld_in_background(std::unique_ptr<NodeShaper> shaper) {
    pid_t first = ::fork();
    if (first < 0) {
        slurm_error("lanes: reconcile at slurmd start: cannot fork to ask slurmctld: %m");
        return;
    }
    if (first > 0) {
        int status = 0;
        while (::waitpid(first, &status, 0) < 0 && errno == EINTR) {
        }
        return;
    }
    if (::fork() != 0) ::_exit(0);
    ::setsid();
    release_slurmd_resources();
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGALRM, SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGUSR2}) ::signal(sig, SIG_DFL);
    ::alarm(static_cast<unsigned>(glue::kControllerTimeout.count()) + 60);
    // slurmd has read slurm.conf already: nothing to prepare in the asking child.
    LivenessProbe probe(
        [](const std::vector<uint32_t>& ids) { return glue::ask_slurmctld(ids, glue::kControllerTimeout); });
    auto liveness = probe.check_all(shaper->list());
    for (const auto& [job, seen] : liveness)
        if (seen.alive && seen.why.find("slurmctld") != std::string::npos)
            slurm_info("lanes: JobId=%u: kept at slurmd start: %s", job, seen.why.c_str());
        else if (!seen.alive) slurm_info("lanes: JobId=%u: %s", job, seen.why.c_str());
    auto removed = shaper->reconcile([&](const JobState& st) {
        auto it = liveness.find(st.job_id);
        return it == liveness.end() || it->second.alive;  // appeared after the scan: just shaped
    });
    if (!removed) slurm_error("lanes: reconcile at slurmd start: %s", removed.error().message.c_str());
    else
        for (uint32_t job : *removed)
            slurm_info("lanes: JobId=%u: removed leftover state at slurmd start (slurmctld says it ended)", job);
    ::_exit(0);
}

// " and R ms waiting for a CPU" for the prolog's line: how much of the lock's
// hold the holder was preempted; nothing where the kernel does not say.
std::string preempted_text(const std::optional<double>& runqueue_ms) {
    if (!runqueue_ms) return "";
    char text[64];
    std::snprintf(text, sizeof text, " and %.1f ms waiting for a CPU", *runqueue_ms);
    return text;
}

}  // namespace

int slurmd_start(int ac, char** av) {
    auto args = parse_args(ac, av);
    if (!args) return -1;
    // Without PrologFlags=Alloc, prologs on the non-batch nodes of a job run at
    // its first srun with srun's copy of the decision, which the user controls:
    // refuse to run that way.
    if (const slurm_conf_t* conf = slurmd_conf()) {
        if (!(conf->prolog_flags & PROLOG_FLAG_ALLOC)) {
            slurm_error(
                "lanes: slurm.conf lacks PrologFlags=Alloc: spank_lanes needs it (without it a job's "
                "prologs may trust the user's copy of the Lanes decision); slurmd not started");
            return -1;
        }
    } else {
        slurm_info("lanes: cannot read slurmd's configuration; check that slurm.conf has PrologFlags=Alloc");
    }
    auto config = load(*args);
    if (!config) {
        // slurmd still starts: a node without Lanes is better than a node down. Its
        // prologs fail the same way for jobs that need shaping, and say why.
        slurm_error("lanes: no usable lanes.toml at slurmd start; leftovers not reconciled");
        return 0;
    }
    auto node = node_config_for(config->node, node_name());
    if (!node) {
        slurm_error("lanes: node setup: %s", node.error().message.c_str());
        return 0;
    }
    if (!NodeShaper::selects_nics(*node, node_name())) {
        slurm_info("lanes: no [[nodes.nic]] for node %s: its jobs run unshaped", node_name().c_str());
        return 0;
    }
    // The node's setup, checked now rather than at the first job's prolog: each
    // problem (no interface matches, link down, link speed unknown) is logged by
    // open(); a node where nothing can be shaped says so here.
    auto shaper = open_shaper(*config);
    if (!shaper) {
        slurm_error("lanes: node setup of %s is broken, its jobs' prologs will fail: %s", node_name().c_str(),
                    shaper.error().message.c_str());
        return 0;
    }
    if (!args->reconcile_on_start) return 0;
    // Here and now, what this node proves alone: state from an earlier boot goes
    // (no epilog will come), so the first prolog finds a clean store.
    LivenessProbe probe;
    bool ask_slurmctld = false;
    auto removed = (*shaper)->reconcile([&](const JobState& st) {
        auto local = probe.local(st);
        auto alive = decide_liveness(local, std::nullopt);
        if (!alive.alive) slurm_info("lanes: JobId=%u: %s", st.job_id, alive.why.c_str());
        if (alive.alive && local.alive.empty()) ask_slurmctld = true;
        return alive.alive;
    });
    if (!removed) {
        slurm_error("lanes: reconcile at slurmd start: %s", removed.error().message.c_str());
        return 0;  // leftovers are not worth keeping slurmd down; lanesctl gc can retry
    }
    for (uint32_t job : *removed) slurm_info("lanes: JobId=%u: removed leftover state at slurmd start", job);
    // A job with nothing running here may have ended while its epilog failed
    // (NIC renamed, lanes.toml broken): only slurmctld can tell.
    if (ask_slurmctld) reconcile_with_slurmctld_in_background(std::move(*shaper));
    return 0;
}

int job_prolog(spank_t sp, int ac, char** av) {
    // The times the "shaped" line reports: Lanes' whole setup of the job on this
    // node, from reading lanes.toml to the last tc/nft object, in wall and CPU
    // time, and of it the node lock's share: waiting for it, holding it and the
    // CPU used while holding it (bench/launch_storm.sh).
    const auto started = std::chrono::steady_clock::now();
    const double cpu_started = process_cpu_ms();
    auto job_id = job_id_of(sp);
    if (!job_id) {
        slurm_error("lanes: prolog: no job id");
        return -1;
    }
    auto args = parse_args(ac, av);
    if (!args) return -1;
    auto config = load(*args);
    if (!config) {
        slurm_error("lanes: JobId=%u: prolog: no usable lanes.toml", *job_id);
        return -1;
    }
    auto node = node_config_for(config->node, node_name());
    if (!node) {
        slurm_error("lanes: JobId=%u: prolog: %s", *job_id, node.error().message.c_str());
        return -1;
    }
    // Every job gets a record here, shaped or not, so that a task finding none
    // fails its launch (fail closed) instead of running unclassified.
    auto unshaped = [&](const std::string& class_name, const std::string& why) {
        slurm_debug("lanes: JobId=%u: nothing to shape on %s: %s", *job_id, node_name().c_str(), why.c_str());
        auto r = NodeShaper::record_unshaped(*node, *job_id, class_name, why);
        if (r) return 0;
        slurm_error("lanes: JobId=%u: prolog: %s", *job_id, r.error().message.c_str());
        return -1;
    };
    auto vars = lanes_environment();
    if (vars.empty()) return unshaped("", "no Lanes decision (job_submit/lanes did not classify it)");
    auto directive = decode_directive(vars);
    if (!directive) {
        slurm_error("lanes: JobId=%u: bad decision from slurmctld: %s", *job_id, directive.error().message.c_str());
        return -1;
    }
    if (!directive->network.dscp && !directive->network.rate && !directive->network.ceil &&
        !directive->network.ingress_rate && !directive->network.ingress_ceil)
        return unshaped(directive->class_name, "class " + directive->class_name + " has no network settings");
    if (!NodeShaper::selects_nics(*node, node_name()))
        return unshaped(directive->class_name, "no [[nodes.nic]] is configured for node " + node_name());
    auto shaper = NodeShaper::open(*node, node_name(), log_sink);
    if (!shaper) {
        // Configured for this node but not usable: a real error, the job must not
        // run unshaped.
        slurm_error("lanes: JobId=%u: cannot shape on %s: %s", *job_id, node_name().c_str(),
                    shaper.error().message.c_str());
        return -1;
    }
    // The class's path (route_table / egress_device / vlan) is checked before
    // anything is shaped: a missing one fails the launch with nothing applied.
    auto path = prepare_job_path(*config, *node, node_name(), directive->class_name, log_sink);
    if (!path) {
        slurm_error("lanes: JobId=%u: %s", *job_id, path.error().message.c_str());
        return -1;
    }
    if (!path->warning.empty()) slurm_error("lanes: JobId=%u: %s", *job_id, path->warning.c_str());
    JobNetRequest request;
    request.job_id = *job_id;
    request.class_name = directive->class_name;
    request.net = directive->network;
    auto state = (*shaper)->apply(request);
    if (!state) {
        slurm_error("lanes: JobId=%u: %s", *job_id, state.error().message.c_str());
        return -1;
    }
    if (auto r = attach_job_path(*path, *job_id, (uint32_t{state->root_major} << 16) | state->minor); !r) {
        slurm_error("%s", r.error().message.c_str());
        if (auto undo = (*shaper)->remove(*job_id); !undo)
            slurm_error("lanes: JobId=%u: undo after the path failed: %s", *job_id, undo.error().message.c_str());
        return -1;
    }
    if (path->router)
        slurm_info("lanes: JobId=%u class %s takes path %s", *job_id, directive->class_name.c_str(),
                   path->path.describe().c_str());
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - started;
    const auto lock = (*shaper)->last_lock_times();
    slurm_info(
        "lanes: JobId=%u class %s shaped on %zu NIC(s) in %.1f ms (%.1f ms CPU; %.1f ms waiting for the node "
        "lock, %.1f ms holding it with %.1f ms CPU%s)%s",
        *job_id, directive->class_name.c_str(), state->devices.size(), took.count(), process_cpu_ms() - cpu_started,
        lock.wait_ms, lock.held_ms, lock.held_cpu_ms, preempted_text(lock.held_runqueue_ms).c_str(),
        state->cgroup_slurm && state->cgroup_id == 0 ? " (keyed on Slurm's job cgroup at its first step)" : "");
    return 0;
}

int job_epilog(spank_t sp, int ac, char** av) {
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
        slurm_error("lanes: JobId=%u: no usable lanes.toml; its shaping (if any) is left for lanesctl gc", *job_id);
        return 0;
    }
    auto node = node_config_for(config->node, node_name());
    if (!node) {
        slurm_error("lanes: JobId=%u: epilog: %s", *job_id, node.error().message.c_str());
        return 0;
    }
    if (auto r = detach_job_path(*node, *job_id, log_sink); !r)
        slurm_error("lanes: JobId=%u: path left for lanesctl gc: %s", *job_id, r.error().message.c_str());
    auto shaper = open_shaper(*config);
    if (!shaper) {
        // Nothing can be shaped here; only the prolog's "unshaped" record is left.
        if (auto r = NodeShaper::forget_unshaped(*node, *job_id); !r)
            slurm_error("lanes: JobId=%u: epilog: %s", *job_id, r.error().message.c_str());
        return 0;
    }
    auto removed = (*shaper)->remove(*job_id);
    if (!removed)
        slurm_error("lanes: JobId=%u: teardown incomplete, left for lanesctl gc: %s", *job_id,
                    removed.error().message.c_str());
    return 0;
}

}  // namespace lanes::spank
