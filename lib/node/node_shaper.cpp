#include "node/node_shaper.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "node/cgroup_tree.hpp"
#include "core/hostlist.hpp"
#include "node/job_state_store.hpp"
#include "node/node_facts.hpp"
#include "node/packet_marker.hpp"

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
    bool base_ready = false;

    Impl(const NodeConfig& c, std::string host, LogSink l)
        : config(c), hostname(std::move(host)), log(std::move(l)), store(c.state_dir) {}

    void say(LogLevel level, const std::string& line) const {
        if (log) log(level, line);
    }

    // ---- open -------------------------------------------------------------------

    // What is wrong with this node's [[nodes.nic]] setup (shaping goes on with
    // the NICs that work): logged, and shown by lanesctl check --node.
    std::vector<std::string> problems;

    void problem(const std::string& what) {
        problems.push_back(what);
        say(LogLevel::Error, what);
    }

    // Shape what matches: a selector that matches no interface, a NIC whose link
    // is down or whose speed is unknown is reported and skipped. Fails only when
    // none is left although the node has selectors ("nothing configured for this
    // node" is selects_nics() == false, checked by the caller).
    Result<void> select_nics() {
        std::vector<std::string> all;
        bool listed = false, selected = false;
        for (const auto& sel : config.nics) {
            std::string where = "lanes: [[nodes.nic]] at line " + std::to_string(sel.line);
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
                if (link_is_down(dev)) {
                    problem("lanes: NIC " + dev + ": link is down; not shaped until it is up");
                    continue;
                }
                NicFacts f;
                f.device = dev;
                auto idx = tc->ifindex(dev);
                if (!idx) return std::unexpected(idx.error());
                f.ifindex = *idx;
                if (sel.link_speed_bits)
                    f.link_speed_bits = *sel.link_speed_bits;
                else if (auto sysfs = tc->link_speed_bits(dev))
                    f.link_speed_bits = *sysfs;
                else
                    f.link_speed_bits = config.default_link_speed_bits.value_or(0);
                if (f.link_speed_bits == 0) {
                    problem("lanes: NIC " + dev + ": link speed unknown (the driver reports none, as virtio "
                            "does); not shaped: set link_speed in its [[nodes.nic]] (" + where.substr(7) +
                            ") or nodes.default_link_speed");
                    continue;
                }
                nics.push_back(std::move(f));
            }
        }
        if (!selected) return fail("lanes: no [[nodes.nic]] selects node " + hostname);
        if (nics.empty()) {
            std::string all_problems;
            for (const auto& p : problems) all_problems += (all_problems.empty() ? "" : "; ") + p.substr(7);
            return fail("lanes: no NIC of node " + hostname + " can be shaped: " + all_problems);
        }
        return {};
    }

    static bool link_is_down(const std::string& dev) {
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
            say(LogLevel::Info, "lanes: this kernel has no fq_codel qdisc; job classes get pfifo leaves "
                                "(no per-flow fairness inside a job)");
        if (!boot_id.empty()) (void)write_file_atomically(cache, boot_id + " " + leaf_kind + "\n", 0600);
    }

    Result<void> open() {
        if (config.root_handle_major == 0 || config.root_handle_major == 0xffff)
            return fail("lanes: node.root_handle_major must be in 1..fffe");
        auto r = store.prepare();
        if (!r) return r;
        auto m = cgroups->mount();
        if (!m) return std::unexpected(m.error());
        mount = *m;
        std::vector<int> slurm_levels;
        for (const auto& scope : cgroups->slurm_stepd_scopes()) slurm_levels.push_back(cgroup_level(mount, scope) + 1);
        auto lv = cgroup_levels(config.cgroup_root, mount, slurm_levels);
        if (!lv) return std::unexpected(lv.error());
        levels = *lv;
        r = select_nics();
        if (!r) return r;
        choose_leaf_kind();
        return {};
    }

    // ---- per job ----------------------------------------------------------------

    // Slurm's job_<id> dir: where it is, else where this node's stepd scope will
    // make it; nullopt when Slurm's cgroup/v2 plugin does not run here.
    std::optional<std::string> slurm_job_dir(uint32_t job_id) {
        auto scopes = cgroups->slurm_stepd_scopes();
        const std::string job = "/job_" + std::to_string(job_id);
        for (const auto& scope : scopes)
            if (cgroups->exists(scope + job)) return scope + job;
        if (scopes.empty()) return std::nullopt;
        // Several slurmd on one host: the scope named after this node.
        for (const auto& scope : scopes)
            if (scope.ends_with("/" + hostname + "_slurmstepd.scope")) return scope + job;
        return scopes.front() + job;
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
            Result<void> operator()(const EnsureRoot& o) { return self.tc->ensure_root(o); }
            Result<void> operator()(const AddClass& o) { return self.tc->add_class(o); }
            Result<void> operator()(const AddLeafQdisc& o) { return self.tc->add_leaf_qdisc(o); }
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
                if (!self.base_ready) {
                    auto r = self.marker->ensure_base(self.levels);
                    if (!r) return r;
                    self.base_ready = true;
                }
                NftEnsureJob with_id = o;
                with_id.cgroup_id = state.cgroup_id;
                with_id.chain_only = state.cgroup_slurm && state.cgroup_id == 0;
                return self.marker->add_job(with_id);
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

    Result<JobState> apply(const JobNetRequest& req) {
        auto lock = store.lock();
        if (!lock) return std::unexpected(lock.error());
        const std::string job = "lanes: job " + std::to_string(req.job_id);

        auto previous = store.load(req.job_id);
        if (!previous) return std::unexpected(previous.error());
        auto r = refresh_nic_facts();
        if (!r) return fail(job + ": " + r.error().message);

        // Where Slurm's cgroup/v2 plugin runs (a stepd scope exists), the job is
        // keyed on Slurm's job_<id> dir: no task leaves Slurm's tree. With
        // PrologFlags=Contain that dir does not exist yet; the job's first step
        // (the extern step) keys it (classify_step).
        std::optional<std::string> slurm_dir;
        if ((config.cgroup_root == "auto" || config.cgroup_root.empty()) && mount.mount_point == kNftCgroupBase)
            slurm_dir = slurm_job_dir(req.job_id);
        auto place = place_job_cgroup(config.cgroup_root, mount, req.job_id, slurm_dir);
        if (!place) return std::unexpected(place.error());

        uint16_t minor = 0;
        bool claimed = false;
        if (*previous) {
            minor = (*previous)->minor;
        } else {
            auto m = allocate_minor(req.job_id, config.root_handle_major, [&](uint16_t candidate) {
                auto owner = store.minor_owner(candidate);
                return owner && *owner != req.job_id && ::access(store.job_path(*owner).c_str(), F_OK) == 0;
            });
            if (!m) return std::unexpected(m.error());
            minor = *m;
            auto c = store.claim_minor(minor, req.job_id);
            if (!c) return std::unexpected(c.error());
            claimed = true;
        }

        NodeFacts facts{nics, leaf_kind, place->dir, place->parent, place->key, place->owned, !place->owned};
        auto plan = plan_apply(config, facts, req, minor, *previous);
        if (!plan) {
            if (claimed) (void)store.release_minor(minor, req.job_id);
            return std::unexpected(plan.error());
        }
        for (const auto& w : plan->warnings) say(LogLevel::Error, w);
        JobState state = plan->state;
        state.boot_id = current_boot_id();  // a later boot knows this job is gone
        if (!place->owned) {
            auto id = cgroups->dir_id(place->dir);
            if (id) state.cgroup_id = *id;
        }
        // Intent first: a crash from here on leaves a state file that remove() cleans.
        r = store.save(state);
        if (!r) {
            if (claimed) (void)store.release_minor(minor, req.job_id);
            return std::unexpected(r.error());
        }
        for (const auto& op : plan->operations) {
            say(LogLevel::Debug, job + ": " + describe(op));
            r = execute(op, state);
            if (!r) break;
        }
        if (!r) {
            if (!*previous) {
                auto undo = plan_remove(state, config.root_handle_major);
                (void)execute_all_best_effort(undo.operations, state);
                (void)store.erase(req.job_id);
                (void)store.release_minor(minor, req.job_id);
            } else {
                (void)store.save(state);
            }
            return fail(job + ": " + r.error().message);
        }
        r = store.save(state);
        if (!r) return std::unexpected(r.error());
        say(LogLevel::Info, job + ": class " + req.class_name + " shaped as " +
                                nft_priority(tc_handle(config.root_handle_major, minor)) + " on " +
                                std::to_string(state.devices.size()) + " NIC(s), cgroup " + state.cgroup);
        return state;
    }

    Result<void> remove_locked(uint32_t job_id) {
        auto st = store.load(job_id);
        if (!st) {
            // A corrupt state file must not block the epilog forever: drop it.
            say(LogLevel::Error, st.error().message + " (removing it)");
            (void)store.erase(job_id);
            return {};
        }
        if (!*st) return {};
        JobState state = **st;
        auto plan = plan_remove(state, config.root_handle_major);
        auto r = execute_all_best_effort(plan.operations, state);
        if (!r) return fail("lanes: job " + std::to_string(job_id) + ": remove: " + r.error().message);
        r = store.erase(job_id);
        if (!r) return r;
        (void)store.release_minor(state.minor, job_id);
        say(LogLevel::Info, "lanes: job " + std::to_string(job_id) + ": shaping removed");
        return {};
    }

    void drop_stale_claims() {
        DIR* d = ::opendir(store.dir().c_str());
        if (!d) return;
        std::vector<uint16_t> stale;
        while (dirent* e = ::readdir(d)) {
            std::string_view name = e->d_name;
            if (!name.starts_with("minor_") || name.size() != 10) continue;
            auto minor = static_cast<uint16_t>(std::strtoul(e->d_name + 6, nullptr, 16));
            auto owner = store.minor_owner(minor);
            if (!owner || ::access(store.job_path(*owner).c_str(), F_OK) != 0) stale.push_back(minor);
        }
        ::closedir(d);
        for (uint16_t m : stale) {
            auto owner = store.minor_owner(m);
            char buf[16];
            std::snprintf(buf, sizeof buf, "minor_%04x", m);
            if (owner ? ::access(store.job_path(*owner).c_str(), F_OK) != 0 : true)
                ::unlink((store.dir() + "/" + buf).c_str());
        }
    }
};

NodeShaper::NodeShaper(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NodeShaper::~NodeShaper() = default;

Result<std::unique_ptr<NodeShaper>> NodeShaper::open(const NodeConfig& config, const std::string& hostname,
                                                     LogSink log) {
    auto tc = make_netlink_traffic_control();
    if (!tc) return std::unexpected(tc.error());
    auto marker = make_nftables_packet_marker(log);
    if (!marker) return std::unexpected(marker.error());
    return open_with(config, hostname, std::move(*tc), std::move(*marker), make_cgroup_tree(), std::move(log));
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

bool NodeShaper::selects_nics(const NodeConfig& config, const std::string& hostname) {
    for (const auto& sel : config.nics) {
        auto match = hostlist_matches(sel.nodes, hostname);
        if (!match || *match) return true;  // a bad expression is open()'s error to report
    }
    return false;
}

const std::vector<std::string>& NodeShaper::problems() const { return impl_->problems; }

Result<void> NodeShaper::attach(uint32_t job_id, pid_t pid) {
    auto st = impl_->store.load(job_id);
    if (!st) return std::unexpected(st.error());
    if (!*st) return fail("lanes: job " + std::to_string(job_id) + ": no shaping state on this node (prolog not run?)");
    if (!(*st)->cgroup_owned) return {};
    return impl_->cgroups->attach((*st)->cgroup, pid);
}

Result<void> NodeShaper::attach_task(const NodeConfig& config, uint32_t job_id, pid_t pid) {
    JobStateStore store(config.state_dir);
    auto st = store.load(job_id);
    if (!st) return std::unexpected(st.error());
    if (!*st) return fail("lanes: job " + std::to_string(job_id) + ": no shaping state on this node (prolog not run?)");
    if (!(*st)->cgroup_owned) return {};
    return make_cgroup_tree()->attach((*st)->cgroup, pid);
}

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
    const std::string job = "lanes: JobId=" + std::to_string(job_id) + ": ";
    JobStateStore store(config.state_dir);
    auto st = store.load(job_id);
    if (!st) return std::unexpected(st.error());
    if (!*st)
        return fail(job + "no Lanes record on this node (the prolog did not run, or its record was removed)");
    if (!(*st)->unshaped.empty() || !(*st)->cgroup_slurm) return **st;  // nothing to key, or our own cgroup
    auto cgroups = make_cgroup_tree();
    auto impl = std::make_unique<Impl>(config, hostname, log);
    impl->cgroups = std::move(cgroups);
    auto dir = impl->slurm_job_dir(job_id);
    if (!dir || !impl->cgroups->exists(*dir))
        return fail(job + "Slurm's job cgroup job_" + std::to_string(job_id) + " not found under any slurmstepd.scope" +
                    (dir ? " (looked for " + *dir + ")" : ""));
    auto id = impl->cgroups->dir_id(*dir);
    if (!id) return fail(job + id.error().message);
    if ((*st)->cgroup_id == *id && (*st)->cgroup == *dir) return **st;  // keyed by an earlier step: no nft
    auto lock = store.lock();
    if (!lock) return std::unexpected(lock.error());
    auto fresh = store.load(job_id);  // an epilog may have run meanwhile
    if (!fresh) return std::unexpected(fresh.error());
    if (!*fresh) return fail(job + "its Lanes record was removed while the step started");
    JobState state = **fresh;
    auto marker = make_nftables_packet_marker(log);
    if (!marker) return fail(job + marker.error().message);
    auto r = (*marker)->add_job_cgroup(job_id, *id);
    if (!r) return fail(job + r.error().message);
    state.cgroup = *dir;
    state.cgroup_key = relative_path(*dir, kNftCgroupBase);
    state.cgroup_id = *id;
    r = store.save(state);
    if (!r) return std::unexpected(r.error());
    if (log) log(LogLevel::Info, job + "traffic keyed on Slurm's cgroup " + state.cgroup_key);
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
    if (!*st) return fail("lanes: job " + std::to_string(job_id) + ": no shaping state on this node");
    std::map<std::string, ClassCounters> out;
    for (const auto& dev : (*st)->devices) {
        auto idx = impl_->tc->ifindex(dev.device);
        if (!idx) return std::unexpected(idx.error());
        auto c = impl_->tc->class_counters(*idx, tc_handle(impl_->config.root_handle_major, (*st)->minor));
        if (!c) return std::unexpected(c.error());
        out[dev.device] = *c;
    }
    return out;
}

Result<std::vector<uint32_t>> NodeShaper::reconcile(const std::function<bool(const JobState&)>& job_alive) {
    auto lock = impl_->store.lock();
    if (!lock) return std::unexpected(lock.error());
    std::vector<uint32_t> removed;
    std::string errors;
    for (const auto& st : impl_->store.load_all()) {
        if (job_alive(st)) continue;
        auto r = impl_->remove_locked(st.job_id);
        if (r)
            removed.push_back(st.job_id);
        else
            errors += (errors.empty() ? "" : "; ") + r.error().message;
    }
    impl_->drop_stale_claims();
    if (!errors.empty()) return fail(errors);
    return removed;
}

Result<void> NodeShaper::remove_all() {
    auto lock = impl_->store.lock();
    if (!lock) return std::unexpected(lock.error());
    std::string errors;
    auto note = [&](const Result<void>& r) {
        if (!r) errors += (errors.empty() ? "" : "; ") + r.error().message;
    };
    for (const auto& st : impl_->store.load_all()) note(impl_->remove_locked(st.job_id));
    impl_->drop_stale_claims();
    note(impl_->marker->remove_all());
    impl_->base_ready = false;
    note(impl_->refresh_nic_facts());
    JobState none;
    for (const auto& op : plan_remove_all({}, impl_->nics, impl_->config.root_handle_major))
        note(impl_->execute(op, none));
    note(impl_->refresh_nic_facts());
    // Our own base dir, if we made one and it is empty now.
    if (impl_->config.cgroup_root == "auto" || impl_->config.cgroup_root.empty()) {
        auto own = place_job_cgroup(impl_->config.cgroup_root, impl_->mount, 0, std::nullopt);
        if (own && own->owned) ::rmdir(own->parent.c_str());
    }
    if (!errors.empty()) return fail(errors);
    return {};
}

const std::vector<NicFacts>& NodeShaper::nics() const { return impl_->nics; }
const std::string& NodeShaper::leaf_qdisc_kind() const { return impl_->leaf_kind; }

}  // namespace lanes
