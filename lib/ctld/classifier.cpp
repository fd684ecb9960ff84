// SPDX-License-Identifier: GPL-2.0-or-later
// ClassifierImpl: one immutable Generation (config + compiled policy + windows)
// swapped atomically on reload; in-flight calls finish on the one they started with.
#include "ctld/classifier.hpp"
#include "core/text.hpp"

#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "core/cap_request.hpp"
#include "ctld/builtin_rules.hpp"
#include "ctld/policy.hpp"
#include "ctld/router.hpp"
#include "ctld/signal_oracle.hpp"
#include "ctld/windows_config.hpp"

namespace lanes {

namespace {

struct FileStamp {
    bool exists = false;
    int64_t mtime_ns = 0;
    ino_t inode = 0;
    off_t size = 0;
    bool operator==(const FileStamp&) const = default;
};

FileStamp stamp_of(const std::string& path) {
    FileStamp st;
    if (path.empty()) return st;
    struct stat sb {};
    if (::stat(path.c_str(), &sb) != 0) return st;
    st.exists = true;
    st.mtime_ns = static_cast<int64_t>(sb.st_mtim.tv_sec) * 1000000000 + sb.st_mtim.tv_nsec;
    st.inode = sb.st_ino;
    st.size = sb.st_size;
    return st;
}

struct Generation {
    std::shared_ptr<const Config> config;
    std::shared_ptr<Policy> policy;  // null: built-in rules only
    std::shared_ptr<const WindowOracle> windows;
    FileStamp config_stamp;
    FileStamp script_stamp;
    // At start (options.start_without_policy): why the policy is not loaded;
    // every job then gets on_error with this reason until a reload fixes it.
    std::string policy_error;
};

std::string with_lanes_prefix(const std::string& msg) { return msg.rfind("lanes:", 0) == 0 ? msg : "lanes: " + msg; }

std::string describe_rate(const Rate& r) { return format_rate(r) + (r.is_relative() ? " of the link" : ""); }

// A job in a log line, as slurmctld names one in its own lines. At job_submit
// time Slurm has not given it a JobId yet: JobName and UserId are what exist.
std::string job_label(const JobView& job) {
    return "JobName=" + log_field(job.name, 256) + " UserId=" + (job.user.empty() ? "?" : log_field(job.user, 256)) +
           "(" + std::to_string(job.uid) + ")";
}

// Builds a generation from files: config, then the policy it names, then a self-check.
Result<std::shared_ptr<Generation>> build_generation(const std::string& config_path, const LogSink& log,
                                                     const ClassifierOptions& options, FileStamp& config_stamp,
                                                     FileStamp& script_stamp, std::string& script_path,
                                                     bool at_start = false) {
    config_stamp = stamp_of(config_path);
    auto config = load_controller_config(config_path);
    if (!config) return fail(config.error());
    if (options.check_config) {
        std::string refused = options.check_config(*config);
        if (!refused.empty()) return fail(refused);
    }
    auto gen = std::make_shared<Generation>();
    gen->config_stamp = config_stamp;
    script_path = config->policy.script;
    auto shared = std::make_shared<const Config>(std::move(*config));
    gen->config = shared;
    gen->windows = with_signals(std::make_shared<WindowSetOracle>(windows_of(*shared)), shared, options.signals);
    if (!shared->policy.script.empty()) {
        script_stamp = stamp_of(shared->policy.script);
        gen->script_stamp = script_stamp;
        auto policy = Policy::load_file(shared->policy.script, shared, log, options.max_lua_states);
        std::string error;
        if (!policy) {
            error = policy.error().message;
        } else {
            auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
            if (auto ok = (*policy)->self_check(now, *gen->windows); !ok) error = ok.error().message;
        }
        if (!error.empty()) {
            if (!at_start || !options.start_without_policy) return fail(error);
            gen->policy_error = error;
            if (log)
                log(LogLevel::Error,
                    "the policy " + shared->policy.script + " is not loaded: " + error +
                        "; until a reload fixes it, every job gets policy.on_error (" +
                        (shared->policy.on_error == PolicyFailureMode::Reject ? "reject" : "accept-default") + ")");
            return gen;
        }
        if (options.wake_maintainer) (*policy)->build_in_background(options.wake_maintainer);
        gen->policy = std::move(*policy);
    } else {
        script_stamp = FileStamp{};
    }
    return gen;
}

class ClassifierImpl final : public Classifier {
public:
    ClassifierImpl(std::string config_path, LogSink log, ClassifierOptions options,
                   std::shared_ptr<const Generation> gen)
        : config_path_(std::move(config_path)), log_(std::move(log)), options_(options), current_(std::move(gen)) {
        last_check_ns_.store(steady_ns());
    }

    // The current generation; a plain mutex around a pointer copy (tens of ns)
    // keeps it simple and visible to race checkers.
    std::shared_ptr<const Generation> current() const {
        std::lock_guard lock(current_mutex_);
        return current_;
    }
    void publish(std::shared_ptr<const Generation> gen) {
        std::shared_ptr<const Generation> old;
        {
            std::lock_guard lock(current_mutex_);
            old = std::move(current_);
            current_ = std::move(gen);
        }
        // The counters of a replaced policy's workers carry over (Prometheus
        // counters only go up while slurmctld runs).
        if (old && old->policy) {
            WorkerPoolStats s = old->policy->worker_stats();
            std::lock_guard lock(retired_mutex_);
            retired_.classifications += s.classifications;
            retired_.overruns += s.overruns;
            retired_.kills += s.kills;
            retired_.queue_rejections += s.queue_rejections;
            retired_.queue_timeouts += s.queue_timeouts;
            retired_.cooling_down += s.cooling_down;
            retired_.worker_deaths += s.worker_deaths;
            retired_.respawns += s.respawns;
            retired_.spawn_failures += s.spawn_failures;
        }
        // `old` is released here, outside the lock; calls in flight keep their own copy.
    }

    Decision classify(const JobView& job, SysSeconds now, bool is_admin) noexcept override {
        std::shared_ptr<const Generation> gen = current();
        try {
            return decide(*gen, job, now, is_admin);
        } catch (const std::exception& e) {
            return internal_error(*gen, job, e.what());
        } catch (...) {
            return internal_error(*gen, job, "unknown exception");
        }
    }

    bool reload_if_changed() noexcept override {
        try {
            return reload();
        } catch (const std::exception& e) {
            log(LogLevel::Error, std::string("reload failed: ") + e.what());
        } catch (...) {
        }
        return false;
    }

    std::shared_ptr<const Config> config() const override { return current()->config; }

    OwnerVerdict judge_owner_update(const OwnerUpdate& update, const HeldJob* held,
                                    SysSeconds now) const noexcept override {
        OwnerVerdict failed;
        failed.action = OwnerVerdict::Action::Refuse;
        try {
            auto gen = current();
            RouteOptions ro;
            ro.min_shorten_minutes = options_.min_shorten_minutes;
            return lanes::judge_owner_update(update, held, *gen->config, now, *gen->windows, ro);
        } catch (const std::exception& e) {
            failed.message = std::string("lanes: cannot check the update: ") + e.what();
        } catch (...) {
            failed.message = "lanes: cannot check the update";
        }
        return failed;
    }

    ClassifierStats stats() const noexcept override {
        ClassifierStats s;
        s.reloads = reloads_.load();
        s.reload_failures = reload_failures_.load();
        try {
            auto gen = current();
            if (gen->policy) s.policy = gen->policy->worker_stats();
            std::lock_guard lock(retired_mutex_);
            s.policy.classifications += retired_.classifications;
            s.policy.overruns += retired_.overruns;
            s.policy.kills += retired_.kills;
            s.policy.queue_rejections += retired_.queue_rejections;
            s.policy.queue_timeouts += retired_.queue_timeouts;
            s.policy.cooling_down += retired_.cooling_down;
            s.policy.worker_deaths += retired_.worker_deaths;
            s.policy.respawns += retired_.respawns;
            s.policy.spawn_failures += retired_.spawn_failures;
        } catch (...) {
        }
        return s;
    }

    void maintain() noexcept override {
        try {
            auto gen = current();
            if (gen->policy) gen->policy->maintain();
        } catch (const std::exception& e) {
            log(LogLevel::Error, std::string("policy maintenance failed: ") + e.what());
        } catch (...) {
        }
    }

private:
    static int64_t steady_ns() {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count();
    }

    void log(LogLevel level, const std::string& line) const noexcept {
        try {
            if (log_) log_(level, line);
        } catch (...) {
        }
    }

    bool reload() {
        if (config_path_.empty()) return false;  // from_config(): nothing to watch
        int64_t now = steady_ns();
        int64_t last = last_check_ns_.load();
        auto interval = std::chrono::duration_cast<std::chrono::nanoseconds>(options_.min_reload_interval).count();
        if (now - last < interval) return false;
        if (!last_check_ns_.compare_exchange_strong(last, now)) return false;  // another thread is checking
        std::unique_lock lock(reload_mutex_, std::try_to_lock);
        if (!lock) return false;

        auto gen = current();
        FileStamp cs = stamp_of(config_path_);
        FileStamp ss = stamp_of(gen->config->policy.script);
        if (cs == gen->config_stamp && ss == gen->script_stamp) return false;
        if (failed_ && cs == failed_config_stamp_ && stamp_of(failed_script_path_) == failed_script_stamp_)
            return false;  // the same broken version: logged already

        FileStamp new_cs, new_ss;
        std::string script_path;
        auto fresh = build_generation(config_path_, log_, options_, new_cs, new_ss, script_path);
        if (!fresh) {
            failed_ = true;
            failed_config_stamp_ = new_cs;
            failed_script_stamp_ = new_ss;
            failed_script_path_ = script_path;
            ++reload_failures_;
            log(LogLevel::Error, "reload failed, keeping the previous configuration: " + fresh.error().message);
            return false;
        }
        failed_ = false;
        ++reloads_;
        publish(std::shared_ptr<const Generation>(std::move(*fresh)));
        log(LogLevel::Info,
            "reloaded " + config_path_ + (script_path.empty() ? std::string() : " and policy " + script_path));
        return true;
    }

    Decision internal_error(const Generation& gen, const JobView& job, const std::string& what) const noexcept {
        Decision d;
        try {
            log(LogLevel::Error, job_label(job) + ": internal error: " + what);
            if (gen.config->policy.on_error == PolicyFailureMode::Reject) {
                d.verdict = Decision::Verdict::Reject;
                d.reject_kind = Decision::RejectKind::Policy;
                d.reason = "lanes: job rejected: internal error in the lanes classifier: " + what;
            } else {
                d.class_name = gen.config->default_class;
                d.defaulted = true;
                d.reason = "internal error: " + what + "; default class";
            }
        } catch (...) {
        }
        return d;
    }

    static Decision reject(Decision::RejectKind kind, std::string message) {
        Decision d;
        d.verdict = Decision::Verdict::Reject;
        d.reject_kind = kind;
        d.reason = with_lanes_prefix(message);
        return d;
    }

    // The explicit --lanes-class check; nullopt when allowed.
    static std::optional<Decision> check_requested_class(const Config& cfg, const JobView& job, bool is_admin,
                                                         const ClassConfig*& requested) {
        requested = nullptr;
        if (!job.requested_class) return std::nullopt;
        requested = cfg.find_class(*job.requested_class);
        if (!requested) {
            std::vector<std::string> names;
            for (const auto& [name, cls] : cfg.classes)
                if (is_admin || listed(cls.allowed_users, job.user) || listed(cls.allowed_accounts, job.account))
                    names.push_back(name);
            return reject(Decision::RejectKind::InvalidOption,
                          "lanes: unknown class '" + log_field(*job.requested_class, 256) + "' (--lanes-class); " +
                              (names.empty() ? std::string("you may not request any class")
                                             : "classes you may request: " + join(names, ", ")));
        }
        if (is_admin || listed(requested->allowed_users, job.user) || listed(requested->allowed_accounts, job.account))
            return std::nullopt;
        std::string why = requested->allowed_users.empty() && requested->allowed_accounts.empty()
                              ? "it cannot be requested explicitly (no allowed_users/allowed_accounts)"
                              : "user '" + log_field(job.user, 256) + "' and account '" + log_field(job.account, 256) +
                                    "' are not in its allowed_users/allowed_accounts";
        Decision refused = reject(Decision::RejectKind::ClassNotAllowed,
                                  "lanes: you may not request class '" + requested->name + "' (--lanes-class): " + why);
        refused.class_name = requested->name;  // counted per class in the controller's metrics
        return refused;
    }

    // One direction of --lanes-cap: lowers `ceil` (and `rate` with it) below the
    // class's `class_cap` ("out=" against ceil, "in=" against ingress_ceil).
    static std::optional<Decision> lower_cap(const ClassConfig& cls, const std::string& text, const Rate& cap,
                                             std::optional<Rate> class_cap, std::string_view dir,
                                             std::string_view class_key, std::optional<Rate>& rate,
                                             std::optional<Rate>& ceil) {
        const std::string option = "--lanes-cap " + std::string(dir) + "=";
        const std::string example = std::string(dir == "in" ? "in=" : "");
        if (class_cap) {
            if (class_cap->is_relative() != cap.is_relative())
                return reject(Decision::RejectKind::InvalidOption,
                              "lanes: --lanes-cap=" + text + " cannot be compared with class '" + cls.name + "' " +
                                  std::string(class_key) + " of " + describe_rate(*class_cap) +
                                  " before the job runs; give " + option + " " +
                                  (class_cap->is_relative() ? "as a percentage (e.g. --lanes-cap=" + example + "10%)"
                                                            : "as a rate (e.g. --lanes-cap=" + example + "5Gbit)"));
            bool above =
                cap.is_relative() ? cap.percent > class_cap->percent : cap.bits_per_second > class_cap->bits_per_second;
            if (above)
                return reject(Decision::RejectKind::InvalidOption,
                              "lanes: --lanes-cap=" + text + ": " + option + describe_rate(cap) + " is above class '" +
                                  cls.name + "' " + std::string(class_key) + " of " + describe_rate(*class_cap) +
                                  "; a cap may only lower it");
        }
        ceil = cap;
        // The guarantee never exceeds the ceiling (HTB needs rate <= ceil).
        if (rate && rate->is_relative() == cap.is_relative()) {
            bool rate_above =
                cap.is_relative() ? rate->percent > cap.percent : rate->bits_per_second > cap.bits_per_second;
            if (rate_above) rate = cap;
        }
        return std::nullopt;
    }

    // --lanes-cap: lowers the class's ceilings (egress, and ingress with in=).
    // Returns a rejection, or nullopt.
    static std::optional<Decision> apply_cap(const ClassConfig& cls, const JobView& job, NetworkDecision& net) {
        if (!job.requested_cap) return std::nullopt;
        // The user's own text, quoted in what they and the log see: escaped.
        const std::string text = log_field(*job.requested_cap, 256);
        auto cap = parse_cap_request(*job.requested_cap);
        if (!cap)
            return reject(Decision::RejectKind::InvalidOption,
                          "lanes: --lanes-cap=" + text + ": " + cap.error().message);
        if (!cls.user_may_lower_cap)
            return reject(Decision::RejectKind::InvalidOption,
                          "lanes: class '" + cls.name + "' does not allow --lanes-cap (user_may_lower_cap = false)");
        if (cap->out) {
            if (cap->in) {
                if (auto refused = lower_cap(cls, text, *cap->out, cls.ceil ? cls.ceil : cls.rate, "out", "ceil",
                                             net.rate, net.ceil))
                    return refused;
            } else if (auto refused = lower_cap_single(cls, text, *cap->out, net)) {
                return refused;
            }
        }
        if (cap->in)
            if (auto refused = lower_cap(cls, text, *cap->in, cls.ingress_ceil ? cls.ingress_ceil : cls.ingress_rate,
                                         "in", "ingress_ceil", net.ingress_rate, net.ingress_ceil))
                return refused;
        return std::nullopt;
    }

    // The single-value form, with the messages it always had.
    static std::optional<Decision> lower_cap_single(const ClassConfig& cls, const std::string& text, const Rate& cap,
                                                    NetworkDecision& net) {
        std::optional<Rate> class_cap = cls.ceil ? cls.ceil : cls.rate;
        if (class_cap) {
            if (class_cap->is_relative() != cap.is_relative())
                return reject(Decision::RejectKind::InvalidOption,
                              "lanes: --lanes-cap=" + text + " cannot be compared with class '" + cls.name +
                                  "' cap of " + describe_rate(*class_cap) + " before the job runs; give it " +
                                  (class_cap->is_relative() ? "as a percentage (e.g. --lanes-cap=10%)"
                                                            : "as a rate (e.g. --lanes-cap=5Gbit)"));
            bool above =
                cap.is_relative() ? cap.percent > class_cap->percent : cap.bits_per_second > class_cap->bits_per_second;
            if (above)
                return reject(Decision::RejectKind::InvalidOption,
                              "lanes: --lanes-cap=" + text + " is above class '" + cls.name + "' cap of " +
                                  describe_rate(*class_cap) + "; a cap may only lower it");
        }
        return lower_cap(cls, text, cap, std::nullopt, "out", "ceil", net.rate, net.ceil);
    }

    static NetworkDecision network_of(const ClassConfig& cls) {
        NetworkDecision n;
        n.dscp = cls.dscp;
        n.rate = cls.rate;
        n.ceil = cls.ceil ? cls.ceil : cls.rate;
        if (cls.dscp || cls.rdma_traffic_class) n.rdma_traffic_class = cls.effective_rdma_traffic_class();
        n.rdma_service_level = cls.rdma_service_level;
        n.rank = cls.rank;
        n.ingress_rate = cls.ingress_rate;
        n.ingress_ceil = cls.ingress_ceil ? cls.ingress_ceil : cls.ingress_rate;
        return n;
    }

    Decision decide(const Generation& gen, const JobView& job, SysSeconds now, bool is_admin) const {
        const Config& cfg = *gen.config;
        const ClassConfig* requested = nullptr;
        if (auto refused = check_requested_class(cfg, job, is_admin, requested)) return *refused;

        std::vector<std::string> messages;
        const ClassConfig* cls = nullptr;
        std::string source;
        PolicyOutcome po;
        bool use_overrides = false;
        bool policy_failed = false;
        if (gen.policy || !gen.policy_error.empty()) {
            if (gen.policy) {
                po = gen.policy->classify(job, now, *gen.windows);
            } else {
                po.kind = PolicyOutcome::Kind::Error;
                po.error = "the policy did not load: " + gen.policy_error;
            }
            messages = po.user_messages;
            std::string policy_where = po.location.empty() ? "policy" : "policy " + po.location;
            std::string error;
            switch (po.kind) {
                case PolicyOutcome::Kind::Reject: {
                    Decision d = reject(Decision::RejectKind::Policy, po.reject_message);
                    d.user_messages = std::move(messages);
                    log(LogLevel::Info, job_label(job) + ": rejected by " + policy_where + ": " + po.reject_message);
                    return d;
                }
                case PolicyOutcome::Kind::Error: error = po.error; break;
                case PolicyOutcome::Kind::Class: {
                    cls = cfg.find_class(po.class_name);
                    if (!cls) {
                        // Refused like any name not in [classes]; quoted escaped, since
                        // it reaches slurmctld.log and the user's terminal.
                        error = policy_where + ": classify() returned unknown class '" + log_field(po.class_name, 256) +
                                "'";
                        break;
                    }
                    for (const auto& field : po.overrides()) {
                        if (!listed(cls->policy_overrides, field)) {
                            error = policy_where + ": classify() set '" + field + "' but class '" + cls->name +
                                    "' does not list it in policy_overrides";
                            cls = nullptr;
                            break;
                        }
                    }
                    if (!cls) break;
                    use_overrides = true;
                    source = policy_where + (po.reason.empty() ? "" : " (" + po.reason + ")");
                    break;
                }
                case PolicyOutcome::Kind::FallThrough: break;
            }
            if (!error.empty()) {
                if (cfg.policy.on_error == PolicyFailureMode::Reject) {
                    log(LogLevel::Error, job_label(job) + ": policy error: " + error + "; job rejected");
                    Decision d = reject(Decision::RejectKind::Policy,
                                        "lanes: job rejected because the site policy failed: " + error);
                    d.policy_failed = true;
                    return d;
                }
                cls = cfg.find_class(cfg.default_class);
                log(LogLevel::Error, job_label(job) + ": policy error: " + error + "; accepted with default class '" +
                                         cfg.default_class + "'");
                // What the failed run said is void; the user learns that it failed.
                // It says why (a budget, a full queue), never a silent default.
                messages.assign(
                    1, "lanes: the site policy failed; job placed in class '" + cfg.default_class + "': " + error);
                source = "policy error: " + error + "; default_class";
                po = PolicyOutcome{};
                policy_failed = true;
            }
        }
        if (!cls && requested) {
            cls = requested;
            source = "requested with --lanes-class";
        }
        if (!cls) {
            if (const ClassRule* rule = match_rules(cfg.rules, job)) {
                cls = cfg.find_class(rule->class_name);
                source = describe_rule(cfg.rules, *rule, cfg.path);
            }
        }
        bool defaulted = policy_failed;
        if (!cls) {
            cls = cfg.find_class(cfg.default_class);
            if (source.empty()) source = "default_class";
            defaulted = true;
        }
        Decision d;
        d.user_messages = std::move(messages);
        d.defaulted = defaulted;
        d.policy_failed = policy_failed;
        if (!cls) {
            d.reason = "no class: default_class '" + cfg.default_class + "' is not configured";
            return d;
        }
        d.class_name = cls->name;
        d.network = network_of(*cls);
        if (auto refused = apply_cap(*cls, job, d.network)) {
            refused->user_messages = std::move(d.user_messages);
            return *refused;
        }

        RouteOptions ro;
        ro.min_shorten_minutes = options_.min_shorten_minutes;
        if (use_overrides) {
            ro.begin_time = po.begin_time;
            ro.time_limit_minutes = po.time_limit_minutes;
        }
        Route r = route_job(*cls, job, now, *gen.windows, ro);
        if (r.reject) {
            Decision rej = reject(Decision::RejectKind::TimeWindow, r.reject_message);
            rej.class_name = cls->name;
            rej.user_messages = std::move(d.user_messages);
            return rej;
        }
        d.partition = use_overrides && po.partition ? po.partition : r.partition;
        d.qos = use_overrides && po.qos ? po.qos : r.qos;
        d.features = use_overrides && po.features ? po.features : r.features;
        d.nice = use_overrides && po.nice ? po.nice : r.nice;
        d.begin_time = r.begin_time;
        d.time_limit_minutes = r.time_limit_minutes;
        for (auto& m : r.user_messages) d.user_messages.push_back(std::move(m));
        d.reason = "class " + cls->name + ": " + source;
        if (job.requested_cap) d.reason += "; --lanes-cap=" + log_field(*job.requested_cap, 256);
        for (const auto& why : r.reasons) d.reason += "; " + why;
        return d;
    }

    std::string config_path_;
    LogSink log_;
    ClassifierOptions options_;
    mutable std::mutex current_mutex_;
    std::shared_ptr<const Generation> current_;
    std::atomic<int64_t> last_check_ns_{0};
    std::mutex reload_mutex_;
    bool failed_ = false;
    std::atomic<uint64_t> reloads_{0};
    mutable std::mutex retired_mutex_;
    WorkerPoolStats retired_;  // counters of replaced policies' workers
    std::atomic<uint64_t> reload_failures_{0};
    FileStamp failed_config_stamp_;
    FileStamp failed_script_stamp_;
    std::string failed_script_path_;
};

}  // namespace

std::string describe_stats(const ClassifierStats& s) {
    const WorkerPoolStats& p = s.policy;
    return "policy workers: " + std::to_string(p.workers) + " alive, " + std::to_string(p.busy) + " busy, " +
           std::to_string(p.waiting) + " waiting; " + std::to_string(p.classifications) + " classifications, " +
           std::to_string(p.overruns) + " over the time budget (worker killed), " + std::to_string(p.worker_deaths) +
           " worker failures, " + std::to_string(p.queue_rejections) + " refused with the queue full, " +
           std::to_string(p.queue_timeouts) + " refused with no worker free in time, " +
           std::to_string(p.cooling_down) + " refused while their owner cooled down, " + std::to_string(p.respawns) +
           " workers started, " + std::to_string(p.spawn_failures) +
           " failed to start; reloads: " + std::to_string(s.reloads) + " done, " + std::to_string(s.reload_failures) +
           " refused";
}

std::string stats_prometheus(const ClassifierStats& s) {
    const WorkerPoolStats& p = s.policy;
    std::string out;
    auto metric = [&](const char* name, const char* type, const char* help,
                      std::initializer_list<std::pair<const char*, uint64_t>> samples) {
        out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
        for (const auto& [labels, value] : samples)
            out += std::string(name) + labels + " " + std::to_string(value) + "\n";
    };
    metric("lanes_policy_classifications_total", "counter", "Jobs classified by a policy worker.",
           {{"", p.classifications}});
    metric("lanes_policy_overruns_total", "counter",
           "Classifications abandoned at time_budget + 1 ms (the worker was killed).", {{"", p.overruns}});
    metric("lanes_policy_worker_kills_total", "counter", "Policy workers killed (overruns, protocol errors).",
           {{"", p.kills}});
    metric("lanes_policy_worker_failures_total", "counter", "Policy workers that ended or spoke garbage.",
           {{"", p.worker_deaths}});
    metric("lanes_policy_refused_total", "counter",
           "Jobs not classified: the queue was full, no worker was free, or their owner's last job overran.",
           {{"{reason=\"queue_full\"}", p.queue_rejections},
            {"{reason=\"no_worker_free\"}", p.queue_timeouts},
            {"{reason=\"cooling_down\"}", p.cooling_down}});
    metric("lanes_policy_workers_started_total", "counter", "Policy workers started after the first.",
           {{"", p.respawns}});
    metric("lanes_policy_worker_start_failures_total", "counter", "Policy workers that failed to start.",
           {{"", p.spawn_failures}});
    metric("lanes_policy_workers", "gauge", "Policy workers alive.", {{"", p.workers}});
    metric("lanes_reloads_total", "counter", "lanes.toml/policy reloads by outcome.",
           {{"{outcome=\"done\"}", s.reloads}, {"{outcome=\"refused\"}", s.reload_failures}});
    return out;
}

Result<std::unique_ptr<Classifier>> Classifier::create(const std::string& config_path, LogSink log) {
    return create(config_path, std::move(log), ClassifierOptions{});
}

Result<std::unique_ptr<Classifier>> Classifier::create(const std::string& config_path, LogSink log,
                                                       const ClassifierOptions& options) {
    try {
        FileStamp cs, ss;
        std::string script_path;
        auto gen = build_generation(config_path, log, options, cs, ss, script_path, true);
        if (!gen) return fail(gen.error());
        return std::unique_ptr<Classifier>(new ClassifierImpl(config_path, std::move(log), options,
                                                              std::shared_ptr<const Generation>(std::move(*gen))));
    } catch (const std::exception& e) {
        return fail(std::string("cannot create the classifier: ") + e.what());
    }
}

Result<std::unique_ptr<Classifier>> Classifier::from_config(Config config, LogSink log,
                                                            const ClassifierOptions& options,
                                                            std::shared_ptr<const WindowOracle> windows) {
    try {
        auto gen = std::make_shared<Generation>();
        auto shared = std::make_shared<const Config>(std::move(config));
        gen->config = shared;
        gen->windows =
            windows ? std::move(windows)
                    : with_signals(std::make_shared<WindowSetOracle>(windows_of(*shared)), shared, options.signals);
        if (!shared->policy.script.empty()) {
            auto policy = Policy::load_file(shared->policy.script, shared, log, options.max_lua_states);
            if (!policy) return fail(policy.error());
            auto now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
            if (auto ok = (*policy)->self_check(now, *gen->windows); !ok) return fail(ok.error());
            if (options.wake_maintainer) (*policy)->build_in_background(options.wake_maintainer);
            gen->policy = std::move(*policy);
        }
        return std::unique_ptr<Classifier>(
            new ClassifierImpl(std::string(), std::move(log), options, std::shared_ptr<const Generation>(gen)));
    } catch (const std::exception& e) {
        return fail(std::string("cannot create the classifier: ") + e.what());
    }
}

}  // namespace lanes
