// SPDX-License-Identifier: GPL-2.0-or-later
// job_submit/lanes: slurmctld glue. Translates the job, asks the Classifier,
// writes the decision back. Every entry point is noexcept and goes through guarded().
//
// slurm.conf:  JobSubmitPlugins=lanes   (also "lua,lanes")
//              PrologFlags=Alloc        (required: the nodes trust slurmctld's copy)
// Config:      $LANES_CONFIG, else lanes.toml next to slurm.conf.

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
#include <slurm/slurmdb.h>
}

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "config.h"
#include "core/text.hpp"
#include "ctld/classifier.hpp"
#include "ctld/controller_metrics.hpp"
#include "ctld/user_names.hpp"
#include "glue/slurm_glue.hpp"
#include "job_submit/job_desc_translate.hpp"
#include "job_submit/job_record_view.hpp"
#include "signals/signal_monitor.hpp"

extern "C" {
char* slurm_xstrdup(const char* str);
void slurm_xfree(void** ptr);

extern const char plugin_name[] = "Lanes job_submit plugin: classify and route training/inference jobs";
extern const char plugin_type[] = "job_submit/lanes";
extern const uint32_t plugin_version = SLURM_VERSION_NUMBER;
}

namespace {

using lanes::Classifier;
using lanes::Decision;

struct PluginState {
    std::unique_ptr<Classifier> classifier;
    // Bumped by job_submit per decision; read by write_metrics().
    lanes::ControllerCounters decisions;
    // [signals.NAME]: refreshed by the monitor's own threads; job_submit only
    // reads its latest snapshot (a pointer copy), never the network.
    std::shared_ptr<lanes::SignalMonitor> signals;
    std::shared_ptr<const lanes::Config> signals_config;  // what the monitor follows
    lanes::UserNames user_names;
    std::string config_path;
    // validate_operator() lives in slurmctld; resolved at init when present.
    bool (*validate_operator)(uid_t) = nullptr;
    // Where this Slurm release keeps the job record's fields job_modify reads
    // (job_record_view.hpp); null for a release Lanes has not measured.
    const lanes::JobRecordLayout* job_record_layout = nullptr;
    std::atomic<bool> job_record_error_logged{false};
    // slurmctld's association cache (src/common/assoc_mgr.h; the same
    // signatures and lock struct in 22.05, 24.11 and 26.05): the user's default
    // account for a job submitted without -A. Null outside slurmctld.
    int (*fill_in_user)(void*, slurmdb_user_rec_t*, int, slurmdb_user_rec_t**, bool) = nullptr;
    void (*assoc_lock)(void*) = nullptr;
    void (*assoc_unlock)(void*) = nullptr;
    void** acct_db_conn = nullptr;

    // Reloads happen here, once a second, never in job_submit: parsing lanes.toml
    // and compiling the policy must not run under slurmctld's job write lock.
    // The same thread rebuilds the policy's Lua states after a budget overrun
    // (woken at once by wake_maintainer), so job_submit never builds one.
    std::thread reloader;
    std::mutex reloader_mutex;
    std::condition_variable reloader_wake;
    bool stopping = false;
    bool maintenance_due = false;

    void wake_maintainer() {
        {
            std::lock_guard lock(reloader_mutex);
            maintenance_due = true;
        }
        reloader_wake.notify_all();
    }

    void start_reloader() {
        reloader = std::thread([this] {
            std::unique_lock lock(reloader_mutex);
            while (!stopping) {
                reloader_wake.wait_for(lock, std::chrono::seconds(1), [this] { return stopping || maintenance_due; });
                if (stopping) break;
                maintenance_due = false;
                lock.unlock();
                lanes::guard_entry(
                    0, [](const char* what) { slurm_error("lanes: reload failed: %s", what); },
                    [this] {
                        int changed = classifier->reload_if_changed() ? 1 : 0;
                        note_reload(changed != 0);
                        classifier->maintain();
                        follow_signals();
                        log_stats_if_changed();
                        write_metrics();
                        return changed;
                    });
                lock.lock();
            }
        });
    }
    // The policy workers' and reloads' counters, logged when something other
    // than the count of classifications changed, at most every 10 seconds.
    std::string last_stats;
    std::chrono::steady_clock::time_point last_stats_at{};
    void log_stats_if_changed() {
        auto stats = classifier->stats();
        stats.policy.classifications = 0;
        stats.policy.busy = stats.policy.waiting = 0;
        std::string key = lanes::describe_stats(stats);
        auto now = std::chrono::steady_clock::now();
        if (key == last_stats || now - last_stats_at < std::chrono::seconds(10)) return;
        last_stats = key;
        last_stats_at = now;
        slurm_info("lanes: %s", lanes::describe_stats(classifier->stats()).c_str());
    }
    // When reloads happened, for the metrics. Reloader thread only.
    int64_t last_reload_unix = 0;
    int64_t last_reload_success_unix = 0;
    uint64_t reload_failures_seen = 0;
    void note_reload(bool done) {
        int64_t now =
            std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        uint64_t failures = classifier->stats().reload_failures;
        if (done) last_reload_unix = last_reload_success_unix = now;
        if (failures != reload_failures_seen) last_reload_unix = now;
        reload_failures_seen = failures;
    }
    lanes::ControllerSnapshot metrics_snapshot() const {
        lanes::ControllerSnapshot snapshot;
        snapshot.classes = decisions.classes();
        snapshot.policy_errors = decisions.policy_errors();
        snapshot.classifier = classifier->stats();
        snapshot.last_reload_unix = last_reload_unix;
        snapshot.last_reload_success_unix = last_reload_success_unix;
        if (auto signal_snapshot = signals ? signals->snapshot() : nullptr) {
            for (const auto& [name, signal] : signal_snapshot->signals) {
                lanes::SignalHealth health;
                health.name = name;
                if (signal.value.age) health.age_seconds = signal.value.age->count();
                health.fresh = signal.value.fresh;
                health.last_error = signal.state.last_error;
                snapshot.signals.push_back(std::move(health));
            }
        }
        return snapshot;
    }
    // [policy] metrics_file: the counters for node_exporter's textfile
    // collector, rewritten (atomically) every 10 seconds. Reloader thread only.
    std::chrono::steady_clock::time_point last_metrics_at{};
    std::string metrics_error;
    void write_metrics() {
        auto config = classifier->config();
        const std::string& path = config->policy.metrics_file;
        auto now = std::chrono::steady_clock::now();
        if (path.empty() || now - last_metrics_at < std::chrono::seconds(10)) return;
        last_metrics_at = now;
        std::string tmp = path + ".tmp";
        std::string text = lanes::controller_metrics_text(metrics_snapshot());
        std::FILE* f = std::fopen(tmp.c_str(), "w");
        bool ok = f && std::fwrite(text.data(), 1, text.size(), f) == text.size();
        if (f && std::fclose(f) != 0) ok = false;
        if (ok && std::rename(tmp.c_str(), path.c_str()) != 0) ok = false;
        std::string error = ok ? "" : path + ": " + std::strerror(errno);
        if (!ok) std::remove(tmp.c_str());
        if (error != metrics_error && !error.empty())  // once per distinct failure
            slurm_error("lanes: cannot write policy.metrics_file %s", error.c_str());
        metrics_error = error;
    }
    // (Re)start the signal threads when lanes.toml's signals changed. Reloader
    // thread and init only.
    void follow_signals() {
        auto config = classifier->config();
        if (config == signals_config) return;
        signals_config = config;
        signals->configure(config->signals, config->signal_windows);
    }
    ~PluginState() {
        {
            std::lock_guard lock(reloader_mutex);
            stopping = true;
        }
        reloader_wake.notify_all();
        if (reloader.joinable()) reloader.join();
        if (signals) signals->stop();
    }
};

std::unique_ptr<PluginState> g_state;
std::mutex g_init_mutex;

using lanes::glue::log_sink;

bool is_admin(uint32_t uid) {
    if (uid == 0) return true;
    if (g_state && g_state->validate_operator) return g_state->validate_operator(uid);
    return false;
}

// Adds text to what the user sees. With JobSubmitPlugins=lua,lanes an earlier
// plugin's message (slurm.user_msg) is already in *err_msg: keep it, above
// ours, and free the old string with Slurm's allocator.
void add_err_msg(char** err_msg, const std::string& text) noexcept {
    if (!err_msg || text.empty()) return;
    try {
        char* old = *err_msg;
        // What Lanes says reaches the user's terminal: escaped (core/text.hpp).
        std::string safe = lanes::user_message(text);
        std::string combined = old && *old ? std::string(old) + "\n" + safe : safe;
        *err_msg = slurm_xstrdup(combined.c_str());
        if (old) slurm_xfree(reinterpret_cast<void**>(&old));
    } catch (...) {
        // Out of memory: the earlier message stays as it was.
    }
}

// Every entry point runs through here: an exception is logged ("lanes: WHERE
// failed: ...") and, where Slurm takes one, told to the user; Slurm gets `on_error`.
template <typename Body>
int guarded(const char* where, int on_error, char** err_msg, Body&& body) noexcept {
    return lanes::guard_entry(
        on_error,
        [&](const char* what) {
            slurm_error("lanes: %s failed: %s", where, what);
            add_err_msg(err_msg, std::string("lanes: internal error: ") + what);
        },
        body);
}
template <typename Body>
int guarded(const char* where, int on_error, Body&& body) noexcept {
    return guarded(where, on_error, nullptr, std::forward<Body>(body));
}

// slurmctld's parsed slurm.conf (libslurmfull's global); null where no
// slurm.conf was read into it (outside slurmctld, e.g. a test that dlopens us).
const slurm_conf_t* slurmctld_conf() {
    auto* conf = static_cast<const slurm_conf_t*>(dlsym(RTLD_DEFAULT, "slurm_conf"));
    return conf && conf->slurm_conf ? conf : nullptr;
}

constexpr uint16_t kEnforceAssociations = 0x0001;  // Slurm's ACCOUNTING_ENFORCE_ASSOCS

// The first setting of `config` that decides by account, or "".
std::string account_rule_of(const lanes::Config& config) {
    auto named = [](const std::vector<std::string>& accounts) {
        for (const auto& a : accounts)
            if (a != "*") return true;
        return false;
    };
    for (const auto& [name, cls] : config.classes) {
        if (named(cls.allowed_accounts)) return "classes." + name + ".allowed_accounts";
        if (named(cls.exempt_accounts)) return "classes." + name + ".exempt_accounts";
    }
    for (const auto& rule : config.rules)
        if (named(rule.accounts)) return "[[rules]] accounts (line " + std::to_string(rule.line) + ")";
    return "";
}

// What Lanes needs from slurm.conf, checked at start and before each reload.
std::string check_slurm_conf(const lanes::Config& config) {
    const slurm_conf_t* conf = slurmctld_conf();
    if (!conf) return "";
    if (!(conf->prolog_flags & PROLOG_FLAG_ALLOC))
        return "slurm.conf lacks PrologFlags=Alloc: without it the prolog of every node but the batch "
               "host runs from srun's copy of the job, which users can forge, so the nodes cannot trust the "
               "class slurmctld decided; add PrologFlags=Alloc and restart slurmctld and the slurmds";
    std::string rule = account_rule_of(config);
    if (!rule.empty() && !(conf->accounting_storage_enforce & kEnforceAssociations))
        return config.path + ": " + rule +
               " decides by account, but slurm.conf's AccountingStorageEnforce does not include "
               "associations, so Slurm accepts any account a user names with -A (Lanes resolves only a job "
               "without -A, to the user's default account) and the rule would trust what the user typed; set "
               "AccountingStorageEnforce=associations (with slurmdbd) or remove the account rules";
    return "";
}

// assoc_mgr_lock_t (src/common/assoc_mgr.h, unchanged 22.05..26.05): one
// lock_level_t (NO_LOCK, READ_LOCK, WRITE_LOCK) per cache.
struct AssocMgrLocks {
    int assoc, file, qos, res, tres, user, wckey;
};
constexpr int kReadLock = 1;

// The account Slurm gives a job submitted without -A: the user's default
// account in slurmctld's association cache, read as Slurm's job_submit/lua
// does, but copied while the read lock (assoc + user) is held (the record's
// strings belong to the cache). "" when there is no cache (no accounting, or
// not in slurmctld) or the user has no association. A linear scan of the cached
// users, no I/O: it runs under slurmctld's job write lock, which Slurm takes
// before the assoc_mgr locks, as here.
std::string default_account(const PluginState& state, uint32_t uid) {
    if (!state.fill_in_user || !state.assoc_lock || !state.assoc_unlock) return "";
    slurmdb_user_rec_t user;
    std::memset(&user, 0, sizeof user);
    user.uid = uid;
    AssocMgrLocks locks{};
    locks.assoc = kReadLock;
    locks.user = kReadLock;
    char buffer[256] = "";
    state.assoc_lock(&locks);
    // enforce = 0: with the locks held Slurm does not load a missing cache, and
    // only with enforce unset does it answer "nothing" instead of walking it.
    if (state.fill_in_user(state.acct_db_conn ? *state.acct_db_conn : nullptr, &user, 0, nullptr, true) ==
            SLURM_SUCCESS &&
        user.default_acct)
        std::snprintf(buffer, sizeof buffer, "%s", user.default_acct);  // no allocation under the lock
    state.assoc_unlock(&locks);
    return buffer;
}

lanes::SysSeconds now_seconds() {
    return std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
}

}  // namespace

extern "C" int init(void) noexcept {
    return guarded("init", SLURM_ERROR, [&]() -> int {
        std::lock_guard lock(g_init_mutex);
        auto state = std::make_unique<PluginState>();
        state->config_path = lanes::default_config_path(true);  // $LANES_CONFIG, next to $SLURM_CONF, default
        state->validate_operator = reinterpret_cast<bool (*)(uid_t)>(dlsym(RTLD_DEFAULT, "validate_operator"));
        state->job_record_layout = lanes::job_record_layout(SLURM_VERSION_NUMBER);
        if (!state->job_record_layout)
            slurm_error(
                "lanes: this build does not know where Slurm %d.%02d.%d keeps a job's fields, so owners' "
                "changes of Nice, StartTime and TimeLimit are refused; rebuild Lanes with "
                "contrib/job-record-offsets.sh run for this release",
                SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER),
                SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER));
        state->fill_in_user = reinterpret_cast<int (*)(void*, slurmdb_user_rec_t*, int, slurmdb_user_rec_t**, bool)>(
            dlsym(RTLD_DEFAULT, "assoc_mgr_fill_in_user"));
        state->assoc_lock = reinterpret_cast<void (*)(void*)>(dlsym(RTLD_DEFAULT, "assoc_mgr_lock"));
        state->assoc_unlock = reinterpret_cast<void (*)(void*)>(dlsym(RTLD_DEFAULT, "assoc_mgr_unlock"));
        state->acct_db_conn = static_cast<void**>(dlsym(RTLD_DEFAULT, "acct_db_conn"));
        state->signals = std::make_shared<lanes::SignalMonitor>(log_sink);
        lanes::ClassifierOptions options;
        options.signals = state->signals;
        PluginState* raw = state.get();
        options.wake_maintainer = [raw] { raw->wake_maintainer(); };
        options.check_config = check_slurm_conf;
        options.start_without_policy = true;  // a broken policy never stops slurmctld's start
        auto classifier = Classifier::create(state->config_path, log_sink, options);
        if (!classifier) {
            slurm_error("lanes: cannot load %s: %s", state->config_path.c_str(),
                        lanes::log_field(classifier.error().message, lanes::kLogLineBytes).c_str());
            return SLURM_ERROR;
        }
        state->classifier = std::move(*classifier);
        state->follow_signals();
        g_state = std::move(state);
        g_state->start_reloader();
        slurm_info("lanes: loaded %s", g_state->config_path.c_str());
        return SLURM_SUCCESS;
    });
}

extern "C" int fini(void) noexcept {
    return guarded("fini", SLURM_SUCCESS, [&]() -> int {
        std::lock_guard lock(g_init_mutex);
        g_state.reset();
        return SLURM_SUCCESS;
    });
}

extern "C" int job_submit(job_desc_msg_t* job_desc, uint32_t submit_uid, char** err_msg) noexcept {
    return guarded("job_submit", SLURM_ERROR, err_msg, [&]() -> int {
        if (!g_state || !job_desc) return SLURM_ERROR;
        auto& state = *g_state;
        auto now = now_seconds();
        auto job = lanes::job_view_from_desc(*job_desc, submit_uid, state.user_names, now);
        if (job.account.empty()) {
            // No -A: decide on the account Slurm will charge (#11.10), not on "".
            job.account = default_account(state, job.uid);
            if (job.account.empty()) {
                std::string rule = account_rule_of(*state.classifier->config());
                if (!rule.empty()) {
                    std::string text = "lanes: job " + lanes::log_field(job.name, 256) + " of user " + job.user +
                                       " names no account (-A) and the user's default account is unknown to "
                                       "slurmctld (no association in slurmdbd); " +
                                       rule + " decides by account, so the job is refused; submit with -A";
                    add_err_msg(err_msg, text);
                    slurm_info("lanes: JobName=%s UserId=%s(%u): rejected: no account and no default account for %s",
                               lanes::log_field(job.name, 256).c_str(), lanes::log_field(job.user, 256).c_str(),
                               job.uid, lanes::log_field(rule).c_str());
                    lanes::strip_lanes_env(*job_desc);
                    Decision refused;
                    refused.verdict = Decision::Verdict::Reject;
                    state.decisions.record(refused);
                    return ESLURM_INVALID_ACCOUNT;
                }
            }
        }
        Decision decision = state.classifier->classify(job, now, is_admin(submit_uid));
        state.decisions.record(decision);
        if (decision.verdict == Decision::Verdict::Reject) {
            std::string text = decision.reason.empty() ? "lanes: job rejected by policy" : decision.reason;
            for (const auto& line : decision.user_messages) text += "\n" + line;
            add_err_msg(err_msg, text);
            slurm_info("lanes: JobName=%s UserId=%s(%u): rejected: %s", lanes::log_field(job.name, 256).c_str(),
                       lanes::log_field(job.user, 256).c_str(), job.uid,
                       lanes::log_field(decision.reason, 4096).c_str());
            // Strip any forged LANES_* entries even on reject; nothing of it will run.
            lanes::strip_lanes_env(*job_desc);
            return lanes::reject_code(decision);
        }
        std::string message = lanes::apply_decision_to_desc(*job_desc, decision);
        add_err_msg(err_msg, message);
        slurm_debug("lanes: JobName=%s UserId=%s(%u): class %s (%s)", lanes::log_field(job.name, 256).c_str(),
                    lanes::log_field(job.user, 256).c_str(), job.uid,
                    lanes::log_field(decision.class_name, 256).c_str(),
                    lanes::log_field(decision.reason, 4096).c_str());
        return SLURM_SUCCESS;
    });
}

namespace {

// The job id of an update request (NO_VAL when only job_id_str names the job).
// Slurm 26.05 moved it from job_desc_msg_t.job_id into job_desc_msg_t.step_id.
uint32_t desc_job_id(const job_desc_msg_t& desc) {
#ifdef HAVE_JOB_DESC_MSG_T_STEP_ID
    return desc.step_id.job_id;
#else
    return desc.job_id;
#endif
}

// The job as slurmctld holds it, from the record itself (no file: this runs
// under the job write lock); null when this release's layout is unknown or
// the record does not match it (logged once).
std::optional<lanes::HeldJob> held_job(PluginState& state, void* job_ptr) {
    if (!state.job_record_layout || !job_ptr) return std::nullopt;
    auto record = lanes::read_job_record(job_ptr, *state.job_record_layout);
    if (!record) {
        if (!state.job_record_error_logged.exchange(true))
            slurm_error(
                "lanes: cannot read a job record of Slurm %d.%02d.%d: %s; owners' changes of Nice, StartTime "
                "and TimeLimit are refused",
                SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER),
                SLURM_VERSION_MICRO(SLURM_VERSION_NUMBER), record.error().message.c_str());
        return std::nullopt;
    }
    return lanes::held_job_from_record(*record, state.user_names);
}

// What the update asks for, as the owner-update checks see it.
lanes::OwnerUpdate owner_update_of(const job_desc_msg_t& desc) {
    lanes::OwnerUpdate update;
    update.routed_field = lanes::routed_field_changed(desc);
    if (desc.nice != NO_VAL) update.nice = static_cast<int32_t>(static_cast<int64_t>(desc.nice) - NICE_OFFSET);
    if (desc.begin_time != 0) update.begin_time = lanes::SysSeconds{std::chrono::seconds{desc.begin_time}};
    if (desc.time_limit != NO_VAL) {
        update.time_limit_set = true;
        if (desc.time_limit != INFINITE) update.time_limit_minutes = desc.time_limit;
    }
    return update;
}

int modify_code(lanes::OwnerVerdict::Code code) {
    switch (code) {
        case lanes::OwnerVerdict::Code::AccessDenied: return ESLURM_ACCESS_DENIED;
        case lanes::OwnerVerdict::Code::InvalidTimeLimit: return ESLURM_INVALID_TIME_LIMIT;
    }
    return ESLURM_ACCESS_DENIED;
}

// What a non-admin may change on an existing job (lanes-policy(7), "What a
// job's owner may change"): every field Lanes routes is refused, a nice below
// the class's, and a start time or time limit that breaks the class's window
// rules are refused. Admins (root, SlurmUser, operators) keep Slurm's powers.
int check_modify(const job_desc_msg_t& desc, void* job_ptr, uint32_t submit_uid, std::string& message) {
    if (is_admin(submit_uid)) return SLURM_SUCCESS;
    auto& state = *g_state;
    auto update = owner_update_of(desc);
    std::optional<lanes::HeldJob> held;
    if (!update.routed_field && (update.nice || update.begin_time || update.time_limit_set))
        held = held_job(state, job_ptr);
    auto verdict = state.classifier->judge_owner_update(update, held ? &*held : nullptr, now_seconds());
    message = lanes::printable(verdict.message, 2048);
    return verdict.action == lanes::OwnerVerdict::Action::Refuse ? modify_code(verdict.code) : SLURM_SUCCESS;
}

}  // namespace

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
extern "C" int job_modify(job_desc_msg_t* job_desc, void* job_ptr, uint32_t submit_uid, char** err_msg) noexcept {
#else
extern "C" int job_modify(job_desc_msg_t* job_desc, void* job_ptr, uint32_t submit_uid) noexcept {
    char** err_msg = nullptr;
#endif
    int rc = guarded("job_modify", SLURM_ERROR, [&]() -> int {
        if (!job_desc) return SLURM_SUCCESS;
        if (!g_state) return SLURM_ERROR;
        std::string message;
        int rc = check_modify(*job_desc, job_ptr, submit_uid, message);
        if (rc != SLURM_SUCCESS) {
            // The message is for the user ("lanes: ..."); the log line has its own prefix.
            const char* text = message.rfind("lanes: ", 0) == 0 ? message.c_str() + 7 : message.c_str();
            std::string job_id =
                job_desc->job_id_str ? std::string(job_desc->job_id_str) : std::to_string(desc_job_id(*job_desc));
            slurm_info("lanes: JobId=%s: refused update by uid %u: %s", lanes::log_field(job_id, 64).c_str(),
                       submit_uid, lanes::log_field(text, 4096).c_str());
            add_err_msg(err_msg, message);
        }
        return rc;
    });
    // slurmctld's _update_job() reads errno after a lookup that returns NULL
    // without an error: on a partition or account change, with no slurmdbd,
    // _retrieve_new_assoc() finds no association and the update fails with
    // whatever errno was left over. Slurm 26.05 leaves EAGAIN there, so an
    // administrator's `scontrol update Partition=` of a pending job failed
    // with "Resource temporarily unavailable". Whatever we were asked, leave
    // errno clear on success.
    if (rc == SLURM_SUCCESS) errno = 0;
    return rc;
}
