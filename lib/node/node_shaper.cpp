// SPDX-License-Identifier: GPL-2.0-or-later
#include "node/node_shaper.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <set>
#include <sstream>

#include "core/cpu_time.hpp"
#include "core/hostlist.hpp"
#include "node/burst_bound_plan.hpp"
#include "node/cgroup_tree.hpp"
#include "node/ingress_control.hpp"
#include "node/job_setup_plan.hpp"
#include "node/job_state_store.hpp"
#include "node/job_teardown_plan.hpp"
#include "node/node_facts.hpp"
#include "node/packet_marker.hpp"
#include "node/pool_plan.hpp"
#include "node/reconcile_plan.hpp"
#include "node/state_migration_plan.hpp"
#include "node/state_registry.hpp"
#include "node/step_key_plan.hpp"

namespace lanes {

struct NodeShaper::Impl {
    NodeConfig config;
    std::string hostname;
    LogSink log;
    std::unique_ptr<TrafficControl> tc;
    std::unique_ptr<PacketMarker> marker;
    std::unique_ptr<CgroupTree> cgroups;
    JobStateStore store;
    std::vector<NicFacts> nics;
    std::string leaf_kind;
    Cgroup2Mount mount;
    std::vector<int> levels;

    // Per-job ingress caps (ingress_control.hpp): on a real kernel only (open());
    // the control is made the first time a job needs it.
    bool ingress_enabled = false;
    std::unique_ptr<IngressControl> ingress;
    Result<IngressReport> converge_ingress_now(const std::vector<JobState>& jobs, bool dry_run) {
        if (!ingress_enabled) return IngressReport{};
        if (!ingress) {
            auto c = make_ingress_control(*tc);
            if (!c) return std::unexpected(c.error());
            ingress = std::move(*c);
        }
        return converge_ingress(*ingress, jobs, nics, leaf_kind, dry_run, log);
    }
    // After a prolog or an epilog changed a job with ingress caps: "" or what failed.
    std::string ingress_after_change() {
        auto rep = converge_ingress_now(store.load_all(), false);
        if (!rep) return rep.error().message;
        std::string out;
        for (const auto& p : rep->problems) out += (out.empty() ? "" : "; ") + p;
        return out;
    }

    Impl(const NodeConfig& c, std::string host, LogSink l)
        : config(c), hostname(std::move(host)), log(std::move(l)), store(c.state_dir) {}

    void say(LogLevel level, const std::string& line) const {
        if (log) log(level, line);
    }

    // ---- open -------------------------------------------------------------------

    // What is wrong with this node's [[nodes.nic]] setup (shaping goes on with
    // the NICs that work): logged, and shown by lanesctl check --node.
    std::vector<std::string> problems;

    // Selected NICs that cannot be shaped now but may be later (absent, or down
    // with a speed known only once it is up): a job applied now records them as
    // pending (JobState.pending_devices); converge() shapes them when they can be.
    std::vector<std::string> unready;
    bool quiet_problems = false;  // converge() re-selects every run: no log per run

    void problem(const std::string& what) {
        problems.push_back(what);
        if (!quiet_problems) say(LogLevel::Error, what);
    }

    // Shape what matches, links that are down included: tc keeps a down
    // device's qdiscs, classes and gso_max_size, which hold from the moment it
    // comes up (no unshaped window, and no drain for a cable pulled). A selector
    // that matches no interface, a NIC whose speed is unknown is reported and
    // skipped. Fails only when
    // none is left although the node has selectors ("nothing configured for this
    // node" is selects_nics() == false, checked by the caller).
    Result<void> select_nics() {
        std::vector<std::string> all;
        bool listed = false, selected = false;
        for (const auto& sel : config.nics) {
            std::string where = "[[nodes.nic]] at line " + std::to_string(sel.line);
            auto match = hostlist_matches(sel.nodes, hostname);
            if (!match) return fail(where + ": nodes: " + match.error().message);
            if (!*match) continue;
            selected = true;
            std::vector<std::string> devices;
            if (!sel.device.empty()) {
                if (!listed) {
                    auto d = tc->devices();
                    if (!d) return std::unexpected(d.error());
                    all = std::move(*d);
                    listed = true;
                }
                for (const auto& dev : all)
                    if (fnmatch(sel.device.c_str(), dev.c_str(), 0) == 0) devices.push_back(dev);
                if (devices.empty()) {
                    problem(where + ": no interface on " + hostname + " matches device \"" + sel.device + "\"");
                    // A name (not a pattern) may come back (renamed, recreated).
                    if (sel.device.find_first_of("*?[") == std::string::npos) unready.push_back(sel.device);
                    continue;
                }
            } else if (!sel.route_to.empty()) {
                auto d = tc->route_device(sel.route_to);
                if (!d) {
                    problem(where + ": " + d.error().message);
                    continue;
                }
                devices.push_back(*d);
            } else {
                return fail(where + ": needs device or route_to");
            }
            for (const auto& dev : devices) {
                if (std::any_of(nics.begin(), nics.end(), [&](const NicFacts& n) { return n.device == dev; })) continue;
                const bool down = link_is_down(dev);
                NicFacts f;
                f.device = dev;
                auto idx = tc->ifindex(dev);
                if (!idx) return std::unexpected(idx.error());
                f.ifindex = *idx;
                if (sel.link_speed_bits) f.link_speed_bits = *sel.link_speed_bits;
                else if (auto sysfs = tc->link_speed_bits(dev)) f.link_speed_bits = *sysfs;
                else f.link_speed_bits = config.default_link_speed_bits.value_or(0);
                if (f.link_speed_bits == 0 && down) {
                    problem("NIC " + dev +
                            ": link is down and its speed unknown until it is up; shaped when it comes up "
                            "(set link_speed in its [[nodes.nic]] (" +
                            where + ") or nodes.default_link_speed to shape it while it is down)");
                    unready.push_back(dev);
                    continue;
                }
                if (f.link_speed_bits == 0) {
                    problem("NIC " + dev +
                            ": link speed unknown (the driver reports none, as virtio "
                            "does); not shaped: set link_speed in its [[nodes.nic]] (" +
                            where + ") or nodes.default_link_speed");
                    unready.push_back(dev);
                    continue;
                }
                if (down && !quiet_problems)
                    say(LogLevel::Info,
                        "NIC " + dev + ": link is down; shaped now, the shaping holds when it comes up");
                nics.push_back(std::move(f));
            }
        }
        if (!selected) return fail("no [[nodes.nic]] selects node " + hostname);
        if (nics.empty()) {
            return fail("no NIC of node " + hostname + " can be shaped: " + join_errors(problems));
        }
        return {};
    }

    bool link_is_down(const std::string& dev) {
        if (auto down = tc->link_down(dev)) return *down;
        std::ifstream in("/sys/class/net/" + dev + "/operstate");
        std::string state;
        return in && std::getline(in, state) && state == "down";
    }

    // The leaf qdisc kind, probed once per boot (cached in state_dir).
    void choose_leaf_kind() {
        const std::string boot_id = current_boot_id();
        const std::string cache = config.state_dir + "/leaf_qdisc";
        if (std::ifstream in(cache); in && !boot_id.empty()) {
            std::string id, kind;
            if (in >> id >> kind && id == boot_id && (kind == "fq_codel" || kind == "pfifo")) {
                leaf_kind = kind;
                return;
            }
        }
        leaf_kind = tc->qdisc_kind_available("fq_codel") ? "fq_codel" : "pfifo";
        if (leaf_kind == "pfifo")
            say(LogLevel::Info,
                "this kernel has no fq_codel qdisc; job classes get pfifo leaves "
                "(no per-flow fairness inside a job)");
        if (!boot_id.empty()) (void)write_file_atomically(cache, boot_id + " " + leaf_kind + "\n", 0600);
    }

    Result<void> open() {
        if (config.root_handle_major == 0 || config.root_handle_major == 0xffff)
            return fail("node.root_handle_major must be in 1..fffe");
        auto r = store.prepare();
        if (!r) return r;
        r = prepare_marker();
        if (!r) return r;
        register_state_dir();
        r = select_nics();
        if (!r) return r;
        choose_leaf_kind();
        return {};
    }

    // The cgroup2 mount, the levels nft matches and the base the marker keeps
    // (unclassified DSCP included): open() and classify_step().
    Result<void> prepare_marker() {
        auto m = cgroups->mount();
        if (!m) return std::unexpected(m.error());
        mount = *m;
        std::vector<int> slurm_levels;
        for (const auto& scope : cgroups->slurm_stepd_scopes())
            slurm_levels.push_back(cgroup_dir_level(mount, scope) + 1);
        auto lv = cgroup_levels(config.cgroup_root, mount, slurm_levels);
        if (!lv) return std::unexpected(lv.error());
        levels = *lv;
        MarkerBase base;
        base.levels.insert(levels.begin(), levels.end());
        base.unclassified = config.unclassified_dscp;
        if (marker) marker->set_base(base);
        return {};
    }

    // ---- per job ----------------------------------------------------------------

    // Slurm's job_<id> dir (absolute): where it is, else where this node's stepd
    // scope will make it; nullopt when Slurm's cgroup/v2 plugin does not run here
    // (no stepd scope under the cgroup2 mount).
    std::optional<std::string> slurm_job_dir(uint32_t job_id) {
        return slurm_job_dir_of(
            cgroups->slurm_stepd_scopes(), [&](const std::string& dir) { return cgroups->exists(dir); }, hostname,
            job_id);
    }

    Result<void> refresh_nic_facts() {
        for (auto& nic : nics) {
            auto idx = tc->ifindex(nic.device);
            if (!idx) return std::unexpected(idx.error());
            nic.ifindex = *idx;
            auto root = tc->root_qdisc(nic.ifindex);
            if (!root) return std::unexpected(root.error());
            nic.root_kind = root->kind;
            nic.root_handle = root->handle;
            nic.has_our_root = root->kind == "htb" && root->handle == tc_handle(config.root_handle_major, 0);
            nic.has_foreign_root_qdisc = !nic.has_our_root && root->handle != 0;
        }
        return {};
    }

    Result<void> execute(const Operation& op, JobState& state) {
        struct Run {
            Impl& self;
            JobState& state;
            Result<void> operator()(const EnsureRoot& o) {
                auto r = self.tc->ensure_root(o);
                if (r && !o.root_exists) self.remember_root(o.device, o.major);
                return r;
            }
            Result<void> operator()(const AddClass& o) { return self.tc->add_class(o); }
            Result<void> operator()(const AddLeafQdisc& o) { return self.tc->add_leaf_qdisc(o); }
            Result<void> operator()(const DeleteLeafQdisc& o) { return self.tc->delete_leaf_qdisc(o); }
            Result<void> operator()(const DeleteClass& o) { return self.tc->delete_class(o); }
            Result<void> operator()(const DeleteRoot& o) { return self.tc->delete_root(o); }
            Result<void> operator()(const EnsureCgroup& o) {
                auto id = self.cgroups->ensure_dir(o.path);
                if (!id) return std::unexpected(id.error());
                state.cgroup_id = *id;
                return {};
            }
            Result<void> operator()(const RemoveCgroup& o) { return self.cgroups->remove_dir(o.path, o.parent); }
            Result<void> operator()(const NftEnsureJob& o) {
                NftEnsureJob with_id = o;
                if (state.cgroup_id) with_id.cgroup_id = state.cgroup_id;
                if (state.cgroup_level) with_id.level = state.cgroup_level;
                bool rebuilt = false;
                auto where = self.marker->add_job(with_id, &rebuilt);
                if (!where) return std::unexpected(where.error());
                state.cgroup_id = where->id;
                state.cgroup_level = where->level;
                if (rebuilt) return self.remark_all(state);
                return {};
            }
            Result<void> operator()(const NftRemoveJob& o) { return self.marker->remove_job(o); }
        };
        return std::visit(Run{*this, state}, op);
    }

    // Every operation is tried; the first error is returned.
    Result<void> execute_all_best_effort(const std::vector<Operation>& ops, JobState& state) {
        Result<void> first;
        for (const auto& op : ops) {
            auto r = execute(op, state);
            if (!r && first) first = r;
        }
        return first;
    }

    // The marks every keyed job should have (`current`: a job being applied, in
    // place of its stored state): what converge() checks the ruleset against.
    std::vector<NftEnsureJob> wanted_marks(const JobState* current = nullptr) {
        std::vector<NftEnsureJob> out;
        auto add = [&](JobState st) {
            if (!st.unshaped.empty() || st.cgroup_id == 0) return;
            if (st.root_major == 0) st.root_major = config.root_handle_major;
            out.push_back(nft_job_of(st));
        };
        for (const auto& st : store.load_all())
            if (!current || st.job_id != current->job_id) add(st);
        if (current) add(*current);
        return out;
    }

    // The nft part of converge(), as planned by plan_converge_nft(): a rebuild of
    // the table with every job's marks (one transaction) or the missing elements.
    // Returns the repairs done; what failed goes to `problems`.
    std::vector<Repair> apply_nft(const NftConverge& plan, std::vector<std::string>& problems) {
        std::vector<Repair> done;
        if (plan.rebuild) {
            if (auto r = marker->rebuild(plan.marks); !r) problems.push_back("nft: " + r.error().message);
            else done = plan.repairs;
            return done;
        }
        for (std::size_t i = 0; i < plan.marks.size(); ++i) {
            bool rebuilt = false;
            auto r = marker->add_job(plan.marks[i], &rebuilt);
            if (!r) problems.push_back("nft: " + r.error().message);
            else done.push_back(plan.repairs[i]);
        }
        return done;
    }

    // The table was missing when a job was added (a flushed ruleset, or the first
    // job since boot): the prolog's cheap half of converge(). Every job with a
    // state file gets its marks back, in one transaction with the table.
    Result<void> remark_all(const JobState& current) {
        auto wanted = wanted_marks(&current);
        if (wanted.size() <= 1) return {};  // only this job: add_job made it all
        std::vector<std::string> problems;
        auto done = apply_nft(plan_converge_nft(wanted, MarkerCheck{false, {}}), problems);
        if (!problems.empty()) return fail(problems.front());
        for (const auto& rep : done)
            say(LogLevel::Error, "converge: repaired " + repair_text(rep) +
                                     " (found by the prolog of JobId=" + std::to_string(current.job_id) + ")");
        return {};
    }

    // Roots Lanes made ("<dev> <major>" lines, next to the state dirs registry): an
    // idle root of ours under an older root_handle is replaced, not refused as foreign.
    // (state_registry.hpp: the paths and lines.)
    static std::string read_text(const std::string& path) {
        std::ifstream in(path);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
    static void append_line(const std::string& path, const std::string& line) {
        int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) return;
        (void)!::write(fd, line.data(), line.size());
        ::close(fd);
    }
    std::string roots_path() const { return roots_registry_path(registry_path()); }
    bool is_our_old_root(const std::string& dev, uint16_t major) const {
        return root_listed(read_text(roots_path()), dev, major);
    }
    void remember_root(const std::string& dev, uint16_t major) {
        if (is_our_old_root(dev, major)) return;
        append_line(roots_path(), root_line(dev, major));
    }

    // Remember every state dir used since boot in a small registry next to the
    // default one, so an epilog finds a job whose prolog ran with another state_dir.
    std::string registry_path() const { return state_dirs_registry_path(config.state_dir); }
    std::vector<std::string> registered_dirs() const {
        return other_state_dirs(read_text(registry_path()), config.state_dir);
    }
    void register_state_dir() {
        if (state_dir_registered(read_text(registry_path()), config.state_dir)) return;
        append_line(registry_path(), state_dir_line(config.state_dir));
    }

    LockTimes lock_times;

    Result<JobState> apply(const JobNetRequest& req) {
        const auto asked = std::chrono::steady_clock::now();
        auto lock = store.lock();
        if (!lock) return std::unexpected(lock.error());
        const auto got = std::chrono::steady_clock::now();
        const double cpu_got = process_cpu_ms();
        const auto runqueue_got = thread_runqueue_wait_ms();
        auto st = apply_with_replan(req);
        lock_times.wait_ms = std::chrono::duration<double, std::milli>(got - asked).count();
        lock_times.held_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - got).count();
        lock_times.held_cpu_ms = process_cpu_ms() - cpu_got;
        const auto runqueue_now = thread_runqueue_wait_ms();
        lock_times.held_runqueue_ms.reset();
        if (runqueue_got && runqueue_now) lock_times.held_runqueue_ms = *runqueue_now - *runqueue_got;
        return st;
    }

    // apply_locked(), planned and run again when it failed because the NICs
    // changed under its plan (a root qdisc deleted or a NIC recreated between
    // its read of the kernel and its tc operations; the failed attempt undid
    // itself). Any other failure, or one that outlasts kSetupAttempts, is the
    // caller's: the launch fails closed with the last attempt's message.
    Result<JobState> apply_with_replan(const JobNetRequest& req) {
        for (int attempt = 1;; ++attempt) {
            auto st = apply_locked(req);
            if (st || attempt == kSetupAttempts) return st;
            const std::vector<NicFacts> planned = nics;
            if (!refresh_nic_facts()) return st;
            const std::string changed = nics_changed_under_setup(planned, nics);
            if (changed.empty()) return st;
            say(LogLevel::Error, "JobId=" + std::to_string(req.job_id) + ": the NICs changed during its setup (" +
                                     changed + "); planning it again (attempt " + std::to_string(attempt + 1) + " of " +
                                     std::to_string(kSetupAttempts) +
                                     "); the failed attempt said: " + st.error().message);
        }
    }

    // apply() under the node's lock.
    Result<JobState> apply_locked(const JobNetRequest& req) {
        const std::string job = "JobId=" + std::to_string(req.job_id);

        auto previous = store.load(req.job_id);
        if (!previous) return std::unexpected(previous.error());
        auto r = refresh_nic_facts();
        if (!r) return fail(job + ": " + r.error().message);
        // The cheap half of converge(): other jobs are shaped here but a NIC has
        // no root of ours (a `tc qdisc del`, a recreated NIC): the full converge()
        // runs once this job is applied.
        const bool root_lost = prolog_finds_root_lost(store.shaped_jobs(), previous->has_value(), nics);

        Result<CgroupPlacement> place;
        if (!req.cgroup.empty()) {
            // The caller's dir (Slurm's job cgroup): any depth, never ours to make or remove.
            place = place_named_cgroup(mount, req.cgroup, job);
            if (!place) return std::unexpected(place.error());
            if (!cgroups->exists(place->dir)) return fail(job + ": cgroup " + place->dir + " does not exist");
        } else {
            // Where Slurm's cgroup/v2 plugin runs (a stepd scope exists), the job is
            // keyed on Slurm's job_<id> dir: no task leaves Slurm's tree. With
            // PrologFlags=Contain that dir does not exist yet; the job's first step
            // (the extern step) keys it (classify_step).
            std::optional<std::string> slurm_dir;
            if ((config.cgroup_root == "auto" || config.cgroup_root.empty()) && mount.mount_point == kNftCgroupBase)
                slurm_dir = slurm_job_dir(req.job_id);
            place = place_job_cgroup(config.cgroup_root, mount, req.job_id, slurm_dir);
            if (!place) return std::unexpected(place.error());
        }

        // The root of the job's class (node.root_handle changed while jobs run).
        JobRoot root = plan_job_root(
            config, job, *previous ? (*previous)->root_major : 0, nics,
            [&](uint16_t major) {
                const auto all = store.load_all();
                return std::any_of(all.begin(), all.end(), [&](const JobState& o) { return o.root_major == major; });
            },
            [&](const std::string& dev, uint16_t major) { return is_our_old_root(dev, major); });
        nics = root.nics;
        for (const auto& note : root.notes) say(LogLevel::Info, note);
        const NodeConfig& effective = root.effective;
        // The class: the job's own on a re-apply, else a parked one on the same
        // NICs under the same root (a change, not a create: see ParkedClass), else
        // a new minor.
        uint16_t minor = 0;
        bool claimed = false;
        bool took_parked = false;
        if (*previous) {
            minor = (*previous)->minor;
        } else {
            auto parked = take_parked(req.job_id, effective.root_handle_major);
            if (!parked) return std::unexpected(parked.error());
            if (*parked) {
                minor = **parked;
                took_parked = true;
            } else {
                auto m = allocate_minor(req.job_id, effective.root_handle_major, [&](uint16_t candidate) {
                    if (store.is_parked(candidate)) return true;
                    auto owner = store.minor_owner(candidate);
                    return owner && *owner != req.job_id && ::access(store.job_path(*owner).c_str(), F_OK) == 0;
                });
                if (!m) return std::unexpected(m.error());
                minor = *m;
                auto c = store.claim_minor(minor, req.job_id);
                if (!c) return std::unexpected(c.error());
            }
            claimed = true;
        }

        NodeFacts facts{nics, leaf_kind, place->dir, place->parent, place->key, place->owned};
        facts.cgroup_slurm = !place->owned && req.cgroup.empty();
        facts.cgroup_pending = facts.cgroup_slurm && !cgroups->exists(place->dir);
        auto plan = plan_apply(effective, facts, req, minor, *previous);
        if (!plan) {
            if (claimed) (void)store.release_minor(minor, req.job_id);
            return std::unexpected(plan.error());
        }
        for (const auto& w : setup_warnings(*plan, root)) say(LogLevel::Error, w);
        std::optional<uint64_t> dir_id;
        if (!place->owned) {
            if (auto id = cgroups->dir_id(place->dir)) dir_id = *id;
        }
        JobState state = recorded_setup_state(plan->state, current_boot_id(), unready, *place, dir_id);
        state.ingress_devices = resolve_ingress(state.net, nics);
        // Intent first: a crash from here on leaves a state file that remove() cleans.
        r = store.save(state);
        if (!r) {
            if (claimed) (void)store.release_minor(minor, req.job_id);
            return std::unexpected(r.error());
        }
        if (took_parked) (void)store.erase_parked(minor);  // the job's state names it now
        for (const auto& op : plan->operations) {
            say(LogLevel::Debug, job + ": " + describe(op));
            r = execute(op, state);
            if (!r) break;
        }
        if (r && (!state.ingress_devices.empty() || (*previous && !(*previous)->ingress_devices.empty()))) {
            // The job's ingress class on each NIC's IFB (ingress_plan.hpp): fails closed,
            // saying what the node lacks (IFB devices, the netdev egress hook) if that is why.
            if (std::string why = ingress_after_change(); !why.empty()) {
                if (!state.ingress_devices.empty())
                    if (auto support = check_ingress_support(state.ingress_devices.front().device); !support)
                        why = "this node cannot take ingress caps (ingress_rate/ingress_ceil of class " +
                              state.class_name + "): " + support.error().message + " (" + why + ")";
                r = fail(why);
            }
        }
        if (r && setup_changes_gso(*previous, state)) {
            // The GSO bound follows the job's cap (a changed request: out with the old).
            if (*previous) (void)gso_account(**previous, -1);
            r = gso_account(state, +1);
            if (!r) r = fail("node.gso_burst: " + r.error().message);
        }
        if (!r) {
            if (!*previous) {
                auto undo = plan_remove(state, effective.root_handle_major);
                (void)execute_all_best_effort(undo.operations, state);
                (void)store.erase(req.job_id);
                (void)store.release_minor(minor, req.job_id);
                if (!state.ingress_devices.empty()) (void)ingress_after_change();
            } else {
                (void)store.save(state);
            }
            return fail(job + ": " + r.error().message);
        }
        if (took_parked) record_counter_base(state);
        r = store.save(state);
        if (!r) return std::unexpected(r.error());
        if (!*previous) (void)store.set_shaped_jobs(store.shaped_jobs() + 1);
        say(LogLevel::Info, setup_done_line(state, job, took_parked, facts.cgroup_pending));
        if (root_lost) {
            auto rep = converge_locked(false);
            if (!rep) say(LogLevel::Error, job + ": converge: " + rep.error().message);
        }
        return state;
    }

    // A job whose prolog ran with another state_dir (lanes.toml changed since):
    // its state is there; remove it with what that file says.
    Result<bool> remove_from_other_dir(uint32_t job_id) {
        for (const auto& dir : registered_dirs()) {
            JobStateStore other(dir);
            auto st = other.load(job_id);
            if (!st || !*st) continue;
            MigratedTeardown plan = plan_migrated_teardown(job_id, dir, **st, config.root_handle_major);
            auto r = execute_all_best_effort(plan.removal.operations, plan.state);
            if (!r) return fail(plan.failed + r.error().message);
            (void)other.erase(job_id);
            (void)other.release_minor(plan.state.minor, job_id);
            say(LogLevel::Info, plan.done);
            drop_unused_old_root(plan.state);
            return true;
        }
        return false;
    }

    // The job's root major is no longer the configured one (lanes.toml changed
    // while it ran): once no job uses it on a NIC, that old root goes, so the next
    // prolog does not see it as foreign.
    void drop_unused_old_root(const JobState& state) {
        if (!hangs_from_old_root(state, config.root_handle_major)) return;
        for (const auto& root : idle_old_roots(state, config.root_handle_major, store.load_all()))
            if (tc->delete_root(root)) say(LogLevel::Info, old_root_removed_line(root));
    }

    Result<void> remove_locked(uint32_t job_id) {
        auto st = store.load(job_id);
        if (!st) {
            // A corrupt state file must not block the epilog forever: drop it.
            say(LogLevel::Error, st.error().message + " (removing it)");
            (void)store.erase(job_id);
            return {};
        }
        if (!*st) {
            auto other = remove_from_other_dir(job_id);
            if (!other) return std::unexpected(other.error());
            return {};
        }
        JobState state = **st;
        JobTeardown plan = plan_teardown(state, store.shaped_jobs(), config.root_handle_major);
        const bool parked = plan.may_park && park(state);
        if (!parked) {
            auto r = execute_all_best_effort(plan.removal.operations, state);
            if (!r) return fail("JobId=" + std::to_string(job_id) + ": remove: " + r.error().message);
        }
        auto r = store.erase(job_id);
        if (!r) return r;
        (void)store.release_minor(state.minor, job_id);
        if (!state.ingress_devices.empty())
            if (std::string why = ingress_after_change(); !why.empty())
                say(LogLevel::Error, "JobId=" + std::to_string(job_id) + ": " + why);
        if (plan.shaped) (void)store.set_shaped_jobs(plan.shaped_left);
        if (plan.drain_pool) drain_parked();
        if (auto g = gso_account(state, -1); !g)
            say(LogLevel::Error, "JobId=" + std::to_string(job_id) + ": " + g.error().message);
        say(LogLevel::Info, teardown_done_line(state, parked));
        drop_unused_old_root(state);
        return {};
    }

    // ---- the parked pool (ParkedClass, node.parked_classes) ---------------------
    // At a job's end its class is parked instead of deleted while other jobs still
    // run and the pool has room; a new job on the same NICs takes one over. The
    // pool is deleted when the node's last shaped job ends, and by remove_all().

    // Park `state`'s classes (its nft element is removed first). false = not
    // parked (pool full, another root, a NIC gone, a kernel error): delete instead.
    bool park(const JobState& state) {
        if (!parkable(config, state) || !pool_has_room(config, store.parked_count())) return false;
        std::map<std::string, int> ifindex;
        for (const auto& dev : state.devices) {
            auto idx = ifindex_of(dev.device);
            if (!idx) return false;
            ifindex[dev.device] = *idx;
        }
        const ParkedClass p = parked_record_of(state);
        if (!store.save_parked(p)) return false;
        JobState scratch = state;
        auto r = execute_all_best_effort(plan_park(state, ifindex).operations, scratch);
        if (!r) {
            say(LogLevel::Error, "JobId=" + std::to_string(state.job_id) + ": parking its class failed (" +
                                     r.error().message + "); deleting it");
            (void)store.erase_parked(p.minor);
            return false;
        }
        return true;
    }

    // A parked class on exactly this node's NICs under `major`, claimed for
    // `job_id`; nullopt when there is none.
    Result<std::optional<uint16_t>> take_parked(uint32_t job_id, uint16_t major) {
        if (config.parked_classes == 0) return std::optional<uint16_t>{};
        std::vector<std::string> here;
        for (const auto& nic : nics) here.push_back(nic.device);
        for (const auto& p : takeover_candidates(store.load_parked(), major, std::move(here))) {
            if (!store.claim_minor(p.minor, job_id)) {
                // A running job holds it: the record is stale. Any other failure
                // keeps the record, so the drain still deletes the class.
                auto owner = store.minor_owner(p.minor);
                if (owner && ::access(store.job_path(*owner).c_str(), F_OK) == 0) (void)store.erase_parked(p.minor);
                continue;
            }
            return std::optional<uint16_t>(p.minor);
        }
        return std::optional<uint16_t>{};
    }

    // HTB counts over a class's life: a job that took a parked class over counts
    // from what it held then.
    void record_counter_base(JobState& state) {
        for (const auto& dev : state.devices) {
            auto idx = ifindex_of(dev.device);
            auto c = idx ? tc->class_counters(*idx, tc_handle(state.root_major, state.minor))
                         : Result<ClassCounters>(std::unexpected(idx.error()));
            if (!c) {
                say(LogLevel::Error, "JobId=" + std::to_string(state.job_id) + ": counters of its class on " +
                                         dev.device + " count from the class's creation: " + c.error().message);
                continue;
            }
            state.counter_base[dev.device] = CounterBase{c->bytes, c->packets, c->drops, c->overlimits};
        }
    }

    // A selected NIC's index as refreshed by this prolog/epilog's open(), else
    // the kernel's.
    Result<int> ifindex_of(const std::string& device) {
        for (const auto& nic : nics)
            if (nic.device == device && nic.ifindex > 0) return nic.ifindex;
        return tc->ifindex(device);
    }

    // Every parked class and its record.
    void drain_parked() {
        for (const auto& p : store.load_parked()) {
            JobState none;
            for (const auto& del : plan_drain({p})) {
                auto r = execute(del, none);
                if (!r) say(LogLevel::Error, r.error().message);
            }
            (void)store.erase_parked(p.minor);
        }
    }

    // ---- converge: the one reconciler (converge_plan.hpp) ----------------------

    // This node's NICs chosen again (a NIC that came up, renamed, recreated): the
    // problems of this selection replace the old ones, without a log line per run.
    void reselect_nics() {
        nics.clear();
        problems.clear();
        unready.clear();
        quiet_problems = true;
        auto r = select_nics();
        quiet_problems = false;
        if (!r) problems.push_back(r.error().message);
    }

    static std::string repair_text(const Repair& r) {
        return r.object + " " + r.cause + (r.job_id ? " JobId=" + std::to_string(r.job_id) : std::string()) +
               (r.device.empty() ? std::string() : " on " + r.device) + ": " + r.detail;
    }

    Result<ConvergeReport> converge_locked(bool dry_run) {
        ConvergeReport out;
        reselect_nics();
        std::vector<std::string> errors;
        auto jobs = store.load_all(&errors);
        out.jobs = jobs.size();
        for (auto& e : errors) out.problems.push_back(std::move(e));
        for (const auto& p : problems) out.problems.push_back(p);

        // tc, NIC by NIC.
        std::vector<NicObserved> observed;
        for (auto& nic : nics) {
            auto idx = tc->ifindex(nic.device);
            if (!idx) {
                out.problems.push_back(idx.error().message);
                continue;
            }
            nic.ifindex = *idx;
            auto snap = tc->snapshot(nic.ifindex);
            if (!snap) return fail("converge: NIC " + nic.device + ": " + snap.error().message);
            nic.root_kind = snap->root.kind;
            nic.root_handle = snap->root.handle;
            nic.has_our_root = snap->root.kind == "htb" && snap->root.handle == tc_handle(config.root_handle_major, 0);
            nic.has_foreign_root_qdisc = !nic.has_our_root && snap->root.handle != 0;
            observed.push_back(NicObserved{nic, std::move(*snap)});
        }
        for (const auto& n : nics) out.nics.push_back(n.device);
        ConvergePlan tcplan = plan_converge_tc(config, jobs, observed, leaf_kind);
        for (auto& p : tcplan.problems) out.problems.push_back(std::move(p));

        // nftables: every keyed job's marks.
        const std::vector<NftEnsureJob> wanted = wanted_marks();
        NftConverge nftplan;
        if (!wanted.empty()) {
            auto c = marker->check(wanted);
            if (!c) return fail("converge: nft: " + c.error().message);
            nftplan = plan_converge_nft(wanted, *c);
        }

        // The GSO bound of NICs with capped jobs, recounted from the desired state
        // (the ceils in force: a shift's file write lost in a crash), then the size
        // (a recreated NIC has its own again, or someone changed it).
        std::vector<std::pair<Repair, std::pair<int, GsoSize>>> gso_fixes;
        std::vector<std::pair<std::string, GsoFile>> gso_recounts;
        if (config.gso_burst_us) {
            for (const auto& nic : nics) {
                auto f = load_gso(nic.device);
                if (!f) continue;
                std::map<uint64_t, uint32_t> ceils;
                for (const auto& job : jobs)
                    for (const auto& d : job.devices)
                        if (d.device == nic.device && d.ceil_in_force() < nic.link_speed_bits)
                            ++ceils[d.ceil_in_force()];
                if (auto recount = plan_gso_recount(*f, ceils, *config.gso_burst_us)) {
                    f = *recount;
                    gso_recounts.push_back({nic.device, *recount});
                }
                auto now = tc->gso_size(nic.ifindex);
                if (!now) continue;
                auto want = f->ceils.empty()
                                ? (now->max != f->orig.max ? std::optional<GsoSize>(f->orig) : std::nullopt)
                                : plan_gso_repair(*f, *now);
                if (!want) continue;
                gso_fixes.push_back({Repair{"gso_max_size", "changed", 0, nic.device,
                                            "gso_max_size " + std::to_string(now->max) + ", desired " +
                                                std::to_string(want->max) + " (node.gso_burst)"},
                                     {nic.ifindex, *want}});
            }
        }

        // Ingress caps: the IFBs, their classes and the netdev table (ingress_plan.hpp),
        // from the desired state as saved (after the jobs that grew, below).
        // What a NIC that came up needs there is no error: cause "link_up", as on egress.
        std::set<std::pair<uint32_t, std::string>> ingress_grown;
        for (const auto& grown : tcplan.changed_jobs)
            for (const auto& d : grown.ingress_devices) ingress_grown.insert({grown.job_id, d.device});
        for (const auto& job : jobs)
            for (const auto& d : job.ingress_devices) ingress_grown.erase({job.job_id, d.device});
        std::set<std::string> nics_grown;
        for (const auto& g : ingress_grown) nics_grown.insert(g.second);
        auto converge_ingress_of = [&](const std::vector<JobState>& desired) {
            if (auto ing = converge_ingress_now(desired, dry_run)) {
                for (auto rep : ing->repairs) {
                    const bool grew = rep.job_id ? ingress_grown.count({rep.job_id, rep.device}) > 0
                                                 : nics_grown.count(rep.device) > 0;
                    if (grew && rep.cause != "stale") rep.cause = "link_up";
                    out.repairs.push_back(std::move(rep));
                }
                for (const auto& p : ing->problems) out.problems.push_back(p);
            } else {
                out.problems.push_back("ingress: " + ing.error().message);
            }
        };

        if (dry_run) {
            std::vector<JobState> desired = jobs;
            for (const auto& grown : tcplan.changed_jobs)
                for (auto& j : desired)
                    if (j.job_id == grown.job_id) j.ingress_devices = grown.ingress_devices;
            converge_ingress_of(desired);
            for (const auto& step : tcplan.steps) out.repairs.push_back(step.repair);
            for (const auto& r : nftplan.repairs) out.repairs.push_back(r);
            for (const auto& g : gso_fixes) out.repairs.push_back(g.first);
            return out;
        }

        // The burst bound before the jobs that grew (a NIC that came up) count in.
        for (const auto& [dev, f] : gso_recounts) {
            if (f.ceils.empty()) ::unlink(gso_path(dev).c_str());
            else if (auto r = save_gso(dev, f); !r) out.problems.push_back(r.error().message);
        }
        for (const auto& [rep, fix] : gso_fixes) {
            if (auto r = tc->set_gso_size(fix.first, fix.second); !r) out.problems.push_back(r.error().message);
            else out.repairs.push_back(rep);
        }

        // Desired state first (a NIC that came up): then the kernel.
        for (const auto& grown : tcplan.changed_jobs) {
            auto before =
                std::find_if(jobs.begin(), jobs.end(), [&](const JobState& j) { return j.job_id == grown.job_id; });
            JobState added;  // only the new devices, for the GSO count
            added.job_id = grown.job_id;
            for (const auto& d : grown.devices)
                if (before == jobs.end() || std::none_of(before->devices.begin(), before->devices.end(),
                                                         [&](const JobDevice& o) { return o.device == d.device; }))
                    added.devices.push_back(d);
            JobState next = before != jobs.end() ? *before : grown;
            next.devices = grown.devices;
            next.pending_devices = grown.pending_devices;
            next.ingress_devices = grown.ingress_devices;
            if (auto r = store.save(next); !r) {
                out.problems.push_back(r.error().message);
                continue;
            }
            if (before != jobs.end()) *before = next;
            if (auto g = gso_account(added, +1); !g) out.problems.push_back("node.gso_burst: " + g.error().message);
        }
        for (const auto& step : tcplan.steps) {
            JobState scratch;
            Result<void> r;
            for (const auto& op : step.operations) {
                r = execute(op, scratch);
                if (!r) break;
            }
            if (!r) {
                out.problems.push_back("cannot repair " + repair_text(step.repair) + ": " + r.error().message);
                continue;
            }
            out.repairs.push_back(step.repair);
        }
        for (auto& rep : apply_nft(nftplan, out.problems)) out.repairs.push_back(std::move(rep));
        converge_ingress_of(jobs);
        for (const auto& rep : out.repairs)
            say(rep.cause == "link_up" ? LogLevel::Info : LogLevel::Error, "converge: repaired " + repair_text(rep));
        return out;
    }

    static Reapplied reapplied_of(const ConvergeReport& rep) {
        Reapplied out;
        out.jobs = rep.jobs;
        out.needed = !rep.repairs.empty();
        for (const auto& r : rep.repairs)
            out.what += (out.what.empty() ? "" : "; ") + r.object + " " + r.cause +
                        (r.job_id ? " (JobId=" + std::to_string(r.job_id) + ")" : std::string()) +
                        (r.device.empty() ? std::string() : " on " + r.device);
        return out;
    }

    // ---- ceil shifts (set_ceils) ------------------------------------------------
    Result<std::vector<CeilSet>> set_ceils_locked(const std::vector<CeilChange>& changes, const std::string& why) {
        std::string cause = why;
        for (char& c : cause)
            if (c == '\n' || c == '\r') c = ' ';
        std::vector<CeilSet> out;
        std::map<uint32_t, JobState> touched;
        for (const auto& ch : changes) {
            CeilSet done{ch.job_id, ch.device, 0, 0, ""};
            const std::string job = "JobId=" + std::to_string(ch.job_id);
            auto it = touched.find(ch.job_id);
            if (it == touched.end()) {
                auto st = store.load(ch.job_id);
                if (!st || !*st || !(*st)->unshaped.empty()) {
                    done.error = job + ": no shaped job on this node (it ended?)";
                    out.push_back(done);
                    continue;
                }
                it = touched.emplace(ch.job_id, **st).first;
                if (it->second.root_major == 0) it->second.root_major = config.root_handle_major;
            }
            JobState& st = it->second;
            auto dev = std::find_if(st.devices.begin(), st.devices.end(),
                                    [&](const JobDevice& d) { return d.device == ch.device; });
            if (dev == st.devices.end()) {
                done.error = job + ": no class on NIC " + ch.device;
                out.push_back(done);
                continue;
            }
            done.from_bits = dev->ceil_in_force();
            const uint64_t to = std::clamp(ch.ceil_bits, dev->rate_bits, dev->ceil_bits);
            dev->ceil_now_bits = to == dev->ceil_bits ? 0 : to;
            done.to_bits = dev->ceil_in_force();
            const bool shifted = std::any_of(st.devices.begin(), st.devices.end(),
                                             [](const JobDevice& d) { return d.ceil_now_bits != 0; });
            st.ceil_cause = shifted ? (cause.empty() ? "shift" : cause) : "";
            // Desired state first, then the kernel: a crash in between leaves the
            // next converge() to apply it.
            if (auto r = store.save(st); !r) {
                done.error = r.error().message;
                out.push_back(done);
                continue;
            }
            auto idx = ifindex_of(dev->device);
            auto r = idx ? tc->add_class(plan_job_class(st, *dev, *idx)) : Result<void>(std::unexpected(idx.error()));
            if (!r) done.error = job + ": " + r.error().message;
            // The burst bound follows the ceil in force (the desired state is saved:
            // a failure here is converge()'s to repair).
            if (auto g = gso_shift(dev->device, done.from_bits, done.to_bits); !g && done.error.empty())
                done.error = job + ": node.gso_burst: " + g.error().message;
            out.push_back(done);
        }
        return out;
    }

    // ---- the GSO/TSO burst bound (node.gso_burst, burst_bound_plan.hpp) --------
    // Jobs without a cap never touch it (no file, no netlink).
    std::string gso_path(const std::string& dev) const { return store.dir() + "/gso_" + dev; }
    std::optional<GsoFile> load_gso(const std::string& dev) const {
        std::ifstream in(gso_path(dev));
        if (!in) return std::nullopt;
        std::ostringstream text;
        text << in.rdbuf();
        return parse_gso_file(text.str());
    }
    Result<void> save_gso(const std::string& dev, const GsoFile& f) {
        const std::string text = format_gso_file(f);
        const std::string path = gso_path(dev), tmp = path + ".tmp";
        int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0) return fail(tmp + ": " + std::strerror(errno));
        bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
        ok = ::close(fd) == 0 && ok && std::rename(tmp.c_str(), path.c_str()) == 0;
        if (!ok) {
            ::unlink(tmp.c_str());
            return fail(path + ": cannot write");
        }
        return {};
    }

    // Count `st`'s capped NICs in (+1) or out (-1), at the ceil in force (a
    // busy shift's included), then set or restore the size as plan_gso_account() says.
    Result<void> gso_account(const JobState& st, int delta) {
        if (!config.gso_burst_us) return {};
        for (const auto& dev : st.devices) {
            auto nic =
                std::find_if(nics.begin(), nics.end(), [&](const NicFacts& n) { return n.device == dev.device; });
            if (delta > 0 && (nic == nics.end() || dev.ceil_in_force() >= nic->link_speed_bits)) continue;
            auto file = load_gso(dev.device);
            if (!file && delta < 0) continue;
            auto idx = tc->ifindex(dev.device);
            if (!idx) {
                if (delta < 0) {
                    ::unlink(gso_path(dev.device).c_str());  // the NIC is gone
                    continue;
                }
                return std::unexpected(idx.error());
            }
            auto f = file ? Result<GsoFile>(*file) : gso_file_now(*idx);
            if (!f) return std::unexpected(f.error());
            auto r = apply_gso_step(dev.device, *idx,
                                    plan_gso_account(std::move(*f), dev.ceil_in_force(), delta, *config.gso_burst_us));
            if (!r) return r;
        }
        return {};
    }

    // A ceil shift on one NIC: the count moves from the old ceil in force to the
    // new one (set_ceils), so the bound follows the busy ceil and back.
    Result<void> gso_shift(const std::string& device, uint64_t from_bits, uint64_t to_bits) {
        if (!config.gso_burst_us || from_bits == to_bits) return {};
        auto nic = std::find_if(nics.begin(), nics.end(), [&](const NicFacts& n) { return n.device == device; });
        if (nic == nics.end()) return {};  // not shaped now: converge() counts it when it comes back
        auto idx = tc->ifindex(device);
        if (!idx) return std::unexpected(idx.error());
        auto file = load_gso(device);
        auto f = file ? Result<GsoFile>(*file) : gso_file_now(*idx);
        if (!f) return std::unexpected(f.error());
        return apply_gso_step(
            device, *idx,
            plan_gso_shift(std::move(*f), from_bits, to_bits, nic->link_speed_bits, *config.gso_burst_us));
    }

    // No file yet: the NIC's sizes now are its own.
    Result<GsoFile> gso_file_now(int ifindex) {
        auto now = tc->gso_size(ifindex);
        if (!now) return std::unexpected(now.error());
        GsoFile f;
        f.orig = *now;
        f.set = now->max;
        return f;
    }

    Result<void> apply_gso_step(const std::string& device, int ifindex, const GsoStep& step) {
        switch (step.action) {
            case GsoStep::Action::Nothing: return {};
            case GsoStep::Action::Restore: {
                auto r = tc->set_gso_size(ifindex, step.size);
                if (!r) return r;
                ::unlink(gso_path(device).c_str());
                say(LogLevel::Info, "NIC " + device + ": gso_max_size back to " + std::to_string(step.size.max) +
                                        " (no capped job left)");
                return {};
            }
            case GsoStep::Action::Set: {
                auto r = tc->set_gso_size(ifindex, step.size);
                if (!r) return r;
                say(LogLevel::Info, "NIC " + device + ": gso_max_size " + std::to_string(step.size.max) +
                                        " (lowest ceil in force " + format_rate(step.file.ceils.begin()->first) +
                                        ", node.gso_burst " + std::to_string(*config.gso_burst_us) + "us)");
                break;
            }
            case GsoStep::Action::Save: break;
        }
        return save_gso(device, step.file);
    }

    // Every NIC back to its own GSO size (remove_all).
    void gso_restore_all() {
        for (const auto& nic : nics) {
            auto f = load_gso(nic.device);
            if (!f) continue;
            auto idx = tc->ifindex(nic.device);
            if (idx) (void)tc->set_gso_size(*idx, f->orig);
            ::unlink(gso_path(nic.device).c_str());
        }
    }

    void drop_stale_claims() {
        DIR* d = ::opendir(store.dir().c_str());
        if (!d) return;
        std::vector<MinorClaim> claims;
        while (dirent* e = ::readdir(d)) {
            auto minor = minor_of_claim_name(e->d_name);
            if (!minor) continue;
            auto owner = store.minor_owner(*minor);
            claims.push_back(MinorClaim{*minor, owner, owner && ::access(store.job_path(*owner).c_str(), F_OK) == 0});
        }
        ::closedir(d);
        for (uint16_t m : stale_claims(claims)) {
            auto owner = store.minor_owner(m);
            if (owner ? ::access(store.job_path(*owner).c_str(), F_OK) != 0 : true)
                ::unlink((store.dir() + "/" + claim_name(m)).c_str());
        }
    }
};

NodeShaper::NodeShaper(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NodeShaper::~NodeShaper() = default;

Result<std::unique_ptr<NodeShaper>> NodeShaper::open(const NodeConfig& config, const std::string& hostname,
                                                     LogSink log) {
    auto tc = make_netlink_traffic_control();
    if (!tc) return std::unexpected(tc.error());
    auto cgroups = make_cgroup_tree();
    auto mount = cgroups->mount();
    if (!mount) return std::unexpected(mount.error());
    auto marker = make_nftables_packet_marker(*mount, log);
    if (!marker) return std::unexpected(marker.error());
    auto shaper = open_with(config, hostname, std::move(*tc), std::move(*marker), std::move(cgroups), std::move(log));
    if (shaper) (*shaper)->impl_->ingress_enabled = true;
    return shaper;
}

Result<std::unique_ptr<NodeShaper>> NodeShaper::open_with(const NodeConfig& config, const std::string& hostname,
                                                          std::unique_ptr<TrafficControl> tc,
                                                          std::unique_ptr<PacketMarker> marker,
                                                          std::unique_ptr<CgroupTree> cgroups, LogSink log) {
    auto impl = std::make_unique<Impl>(config, hostname, std::move(log));
    impl->tc = std::move(tc);
    impl->marker = std::move(marker);
    impl->cgroups = std::move(cgroups);
    auto r = impl->open();
    if (!r) return std::unexpected(r.error());
    return std::unique_ptr<NodeShaper>(new NodeShaper(std::move(impl)));
}

Result<JobState> NodeShaper::apply(const JobNetRequest& request) { return impl_->apply(request); }
NodeShaper::LockTimes NodeShaper::last_lock_times() const { return impl_->lock_times; }

Result<void> NodeShaper::attach(uint32_t job_id, pid_t pid) {
    auto st = impl_->store.load(job_id);
    if (!st) return std::unexpected(st.error());
    if (!*st) return fail("JobId=" + std::to_string(job_id) + ": no shaping state on this node (prolog not run?)");
    if (!(*st)->cgroup_owned) return {};
    return impl_->cgroups->attach((*st)->cgroup, pid);
}

Result<void> NodeShaper::attach_task(const NodeConfig& config, uint32_t job_id, pid_t pid) {
    JobStateStore store(config.state_dir);
    auto st = store.load(job_id);
    if (!st) return std::unexpected(st.error());
    if (!*st) return fail("JobId=" + std::to_string(job_id) + ": no shaping state on this node (prolog not run?)");
    if (!(*st)->cgroup_owned) return {};
    return make_cgroup_tree()->attach((*st)->cgroup, pid);
}

bool NodeShaper::selects_nics(const NodeConfig& config, const std::string& hostname) {
    for (const auto& sel : config.nics) {
        auto match = hostlist_matches(sel.nodes, hostname);
        if (!match || *match) return true;  // a bad expression is open()'s error to report
    }
    return false;
}

const std::vector<std::string>& NodeShaper::problems() const { return impl_->problems; }

Result<void> NodeShaper::record_unshaped(const NodeConfig& config, uint32_t job_id, const std::string& class_name,
                                         const std::string& why) {
    JobStateStore store(config.state_dir);
    auto r = store.prepare();
    if (!r) return r;
    auto lock = store.lock();
    if (!lock) return std::unexpected(lock.error());
    auto existing = store.load(job_id);
    if (!existing) return std::unexpected(existing.error());
    if (*existing && (*existing)->unshaped.empty()) return {};  // shaped by an earlier prolog run
    JobState st;
    st.job_id = job_id;
    st.class_name = class_name;
    st.boot_id = current_boot_id();
    st.unshaped = why.empty() ? "nothing to shape" : why;
    for (char& c : st.unshaped)
        if (c == '\n' || c == '\r') c = ' ';
    return store.save(st);
}

Result<void> NodeShaper::forget_unshaped(const NodeConfig& config, uint32_t job_id) {
    JobStateStore store(config.state_dir);
    auto st = store.load(job_id);
    if (!st) return std::unexpected(st.error());
    if (!*st || (*st)->unshaped.empty()) return {};
    return store.erase(job_id);
}

Result<JobState> NodeShaper::classify_step(const NodeConfig& config, const std::string& hostname, uint32_t job_id,
                                           LogSink log) {
    return classify_step_with(
        config, hostname, job_id, make_cgroup_tree(),
        [log](const Cgroup2Mount& mount) { return make_nftables_packet_marker(mount, log); }, log);
}

Result<JobState> NodeShaper::classify_step_with(const NodeConfig& config, const std::string& hostname, uint32_t job_id,
                                                std::unique_ptr<CgroupTree> cgroups, const MarkerFactory& make_marker,
                                                LogSink log) {
    const std::string job = "JobId=" + std::to_string(job_id) + ": ";
    auto impl = std::make_unique<Impl>(config, hostname, log);
    impl->cgroups = std::move(cgroups);
    auto st = impl->store.load(job_id);
    if (!st) return std::unexpected(st.error());
    if (!*st) return fail(step_no_record_error(job_id));
    if (!step_needs_key(**st)) return **st;  // nothing to key, or our own cgroup
    auto m = impl->cgroups->mount();
    if (!m) return fail(job + m.error().message);
    impl->mount = *m;
    auto dir = impl->slurm_job_dir(job_id);
    if (!dir || !impl->cgroups->exists(*dir)) return fail(step_no_slurm_dir_error(job_id, dir));
    auto id = impl->cgroups->dir_id(*dir);
    if (!id) return fail(job + id.error().message);
    if (step_keyed(**st, *dir, *id)) return **st;  // keyed by an earlier step: no nft

    auto lock = impl->store.lock();
    if (!lock) return std::unexpected(lock.error());
    auto fresh = impl->store.load(job_id);  // an epilog or another step may have run meanwhile
    if (!fresh) return std::unexpected(fresh.error());
    if (!*fresh) return fail(job + "its Lanes record was removed while the step started");
    if (step_keyed(**fresh, *dir, *id)) return **fresh;
    auto marker = make_marker(impl->mount);
    if (!marker) return fail(job + marker.error().message);
    impl->marker = std::move(*marker);
    auto r = impl->prepare_marker();
    if (!r) return fail(job + r.error().message);
    StepKey plan = plan_step_key(**fresh, *dir, *id, impl->mount, config.root_handle_major);
    if (plan.old_key) {
        // Slurm made the dir anew (another inode): the old key goes.
        r = impl->marker->remove_job(*plan.old_key);
        if (!r) return fail(job + r.error().message);
    }
    JobState& state = plan.state;
    bool rebuilt = false;
    auto where = impl->marker->add_job(plan.marks, &rebuilt);
    if (!where) return fail(job + where.error().message);
    state.cgroup_id = where->id;
    state.cgroup_level = where->level;
    r = impl->store.save(state);
    if (!r) return std::unexpected(r.error());
    if (rebuilt) {
        r = impl->remark_all(state);
        if (!r) impl->say(LogLevel::Error, job + r.error().message);
    }
    impl->say(LogLevel::Info, step_keyed_line(state));
    return state;
}

Result<void> NodeShaper::remove(uint32_t job_id) {
    auto lock = impl_->store.lock();
    if (!lock) return std::unexpected(lock.error());
    return impl_->remove_locked(job_id);
}

std::vector<JobState> NodeShaper::list() const {
    std::vector<std::string> errors;
    auto all = impl_->store.load_all(&errors);
    for (const auto& e : errors) impl_->say(LogLevel::Error, e);
    return all;
}

Result<std::map<std::string, ClassCounters>> NodeShaper::counters(uint32_t job_id) {
    auto st = impl_->store.load(job_id);
    if (!st) return std::unexpected(st.error());
    if (!*st) return fail("JobId=" + std::to_string(job_id) + ": no shaping state on this node");
    std::map<std::string, ClassCounters> out;
    for (const auto& dev : (*st)->devices) {
        auto idx = impl_->tc->ifindex(dev.device);
        if (!idx) return std::unexpected(idx.error());
        const uint16_t major = (*st)->root_major ? (*st)->root_major : impl_->config.root_handle_major;
        auto c = impl_->tc->class_counters(*idx, tc_handle(major, (*st)->minor));
        if (!c) return std::unexpected(c.error());
        // A class taken over from the pool: only what this job sent.
        if (auto base = (*st)->counter_base.find(dev.device); base != (*st)->counter_base.end()) {
            auto since = [](uint64_t now, uint64_t then) { return now >= then ? now - then : now; };
            c->bytes = since(c->bytes, base->second.bytes);
            c->packets = since(c->packets, base->second.packets);
            c->drops = since(c->drops, base->second.drops);
            c->overlimits = since(c->overlimits, base->second.overlimits);
        }
        out[dev.device] = *c;
    }
    return out;
}

std::vector<ParkedClass> NodeShaper::parked() const {
    std::vector<std::string> errors;
    auto all = impl_->store.load_parked(&errors);
    for (const auto& e : errors) impl_->say(LogLevel::Error, e);
    return all;
}

Result<std::vector<uint32_t>> NodeShaper::reconcile(const std::function<bool(const JobState&)>& job_alive) {
    auto lock = impl_->store.lock();
    if (!lock) return std::unexpected(lock.error());
    std::vector<uint32_t> removed;
    std::vector<std::string> errors;
    for (const auto& st : impl_->store.load_all()) {
        if (job_alive(st)) continue;
        auto r = impl_->remove_locked(st.job_id);
        if (r) removed.push_back(st.job_id);
        else errors.push_back(r.error().message);
    }
    impl_->drop_stale_claims();
    // The count of shaped jobs from the records themselves (a crash may have
    // left it off); no job left: the pool goes.
    const ShapedCount count = recount_shaped(impl_->store.load_all(), impl_->store.shaped_jobs());
    if (count.rewrite) (void)impl_->store.set_shaped_jobs(count.shaped);
    if (count.drain_pool) impl_->drain_parked();
    if (!errors.empty()) return fail(join_errors(errors));
    return removed;
}

Result<void> NodeShaper::remove_all() {
    auto lock = impl_->store.lock();
    if (!lock) return std::unexpected(lock.error());
    std::vector<std::string> errors;
    auto note = [&](const Result<void>& r) {
        if (!r) errors.push_back(r.error().message);
    };
    for (const auto& st : impl_->store.load_all()) note(impl_->remove_locked(st.job_id));
    impl_->drain_parked();
    (void)impl_->store.set_shaped_jobs(0);
    impl_->drop_stale_claims();
    impl_->gso_restore_all();
    note(impl_->marker->remove_all());
    note(impl_->refresh_nic_facts());
    if (auto ing = impl_->converge_ingress_now({}, false); !ing) errors.push_back(ing.error().message);
    else
        for (const auto& p : ing->problems) errors.push_back(p);
    JobState none;
    for (const auto& op : plan_remove_all({}, impl_->nics, impl_->config.root_handle_major))
        note(impl_->execute(op, none));
    note(impl_->refresh_nic_facts());
    // Our own base dir, if we made one and it is empty now.
    if (impl_->config.cgroup_root == "auto" || impl_->config.cgroup_root.empty()) {
        auto own = place_job_cgroup(impl_->config.cgroup_root, impl_->mount, 0, std::nullopt);
        if (own && own->owned) ::rmdir(own->parent.c_str());
    }
    if (!errors.empty()) return fail(join_errors(errors));
    return {};
}

Result<NodeShaper::Reapplied> NodeShaper::check() {
    auto rep = converge(true);
    if (!rep) return std::unexpected(rep.error());
    return Impl::reapplied_of(*rep);
}

Result<NodeShaper::Reapplied> NodeShaper::reapply(bool /*only_if_needed: converge never touches what is in place*/) {
    auto rep = converge(false);
    if (!rep) return std::unexpected(rep.error());
    if (!rep->problems.empty() && rep->repairs.empty() && rep->nics.empty())
        return fail("reapply: " + join_errors(rep->problems));
    return Impl::reapplied_of(*rep);
}

Result<ConvergeReport> NodeShaper::converge(bool dry_run) {
    auto lock = impl_->store.lock();
    if (!lock) return std::unexpected(lock.error());
    return impl_->converge_locked(dry_run);
}

Result<std::vector<CeilSet>> NodeShaper::set_ceils(const std::vector<CeilChange>& changes, const std::string& cause) {
    auto lock = impl_->store.lock();
    if (!lock) return std::unexpected(lock.error());
    return impl_->set_ceils_locked(changes, cause);
}

const std::vector<NicFacts>& NodeShaper::nics() const { return impl_->nics; }
const std::string& NodeShaper::leaf_qdisc_kind() const { return impl_->leaf_kind; }

Result<std::map<std::string, ClassCounters>> NodeShaper::ingress_counters(uint32_t job_id) {
    auto st = impl_->store.load(job_id);
    if (!st) return std::unexpected(st.error());
    if (!*st) return fail("JobId=" + std::to_string(job_id) + ": no state on this node");
    std::map<std::string, ClassCounters> out;
    if ((*st)->ingress_devices.empty() || !impl_->ingress_enabled) return out;
    if (!impl_->ingress) {
        auto c = make_ingress_control(*impl_->tc);
        if (!c) return std::unexpected(c.error());
        impl_->ingress = std::move(*c);
    }
    for (const auto& dev : (*st)->ingress_devices) {
        auto c =
            impl_->ingress->class_counters(ifb_device_name(dev.device), tc_handle((*st)->root_major, (*st)->minor));
        if (!c)
            return fail("JobId=" + std::to_string(job_id) + ": ingress on " + dev.device + ": " + c.error().message);
        out[dev.device] = *c;
    }
    return out;
}

}  // namespace lanes
