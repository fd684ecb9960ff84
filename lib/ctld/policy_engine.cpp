// SPDX-License-Identifier: GPL-2.0-or-later
// The policy engine: compiles the script into a pool of sandboxed
// lua_States and runs classify() on one of them per job. The sandbox is in
// lua_sandbox.cpp, what the script sees in policy_api.cpp.
#include "ctld/policy.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/text.hpp"
#include "ctld/lua_sandbox.hpp"
#include "ctld/policy_api.hpp"
#include "ctld/policy_pool.hpp"

namespace lanes {

using namespace policy_detail;

namespace {

constexpr int kLoadBudgetFactor = 10;  // the top level may do some setup work

int setup_state(lua_State* L) noexcept {
    LuaState* s = state_of(L);
    open_sandbox(L, s);
    install_policy_api(L, s);
    return 0;
}

int capture_classify(lua_State* L) noexcept {
    LuaState* s = state_of(L);
    lua_getglobal(L, "classify");
    if (lua_type(L, -1) != LUA_TFUNCTION)
        return luaL_error(L, "%s: the policy must define a global function classify(job) (found %s)",
                          s->chunk_name->c_str(), luaL_typename(L, -1));
    s->classify_ref = luaL_ref(L, LUA_REGISTRYINDEX);
    return 0;
}

int run_classify(lua_State* L) noexcept {
    LuaState* s = state_of(L);
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->classify_ref);
    lua_rawgeti(L, LUA_REGISTRYINDEX, s->job_ref);
    lua_call(L, 1, 1);
    s->in_classify = false;  // reading the result does not move the return line
    read_result(L, s, lua_gettop(L));
    return 0;
}

}  // namespace

std::vector<std::string> PolicyOutcome::overrides() const {
    std::vector<std::string> names;
    if (partition) names.push_back("partition");
    if (qos) names.push_back("qos");
    if (features) names.push_back("features");
    if (nice) names.push_back("nice");
    if (begin_time) names.push_back("begin_time");
    if (time_limit_minutes) names.push_back("time_limit");
    return names;
}

Policy::Policy(std::string source, std::string chunk_name, std::shared_ptr<const Config> config, LogSink log,
               size_t max_states)
    : source_(std::move(source)), chunk_name_(std::move(chunk_name)), config_(std::move(config)), log_(std::move(log)) {
    if (max_states == 0) max_states = std::clamp<size_t>(std::thread::hardware_concurrency(), 2, 8);
    max_states_ = max_states;
}

Policy::~Policy() = default;

Result<std::shared_ptr<Policy>> Policy::compile(std::string source, std::string chunk_name,
                                                std::shared_ptr<const Config> config, LogSink log, size_t max_states) {
    if (!config) return fail("policy: no configuration");
    std::shared_ptr<Policy> policy(
        new Policy(std::move(source), std::move(chunk_name), std::move(config), std::move(log), max_states));
    if (!policy->config_->policy.worker.empty()) {
        const Config& c = *policy->config_;
        if (c.text.empty())
            return fail(policy->chunk_name_ + ": policy.worker is set but the configuration has no text to give it");
        WorkerPoolOptions options;
        options.program = c.policy.worker;
        options.workers = c.policy.workers ? c.policy.workers : policy->max_states_;
        options.queue = c.policy.queue;
        options.overrun_cooldown = c.policy.overrun_cooldown;
        options.time_budget = c.policy.time_budget;
        options.start_timeout = kLoadBudgetFactor * c.policy.time_budget + std::chrono::seconds(2);
        wire::Init init{c.text, c.path, policy->chunk_name_, policy->source_};
        auto pool = PolicyWorkerPool::start(std::move(init), std::move(options), policy->log_);
        if (!pool) return fail(pool.error());
        policy->pool_ = std::move(*pool);
        policy->source_.clear();
        return policy;
    }
    auto state = policy->new_state();
    if (!state) return fail(state.error());
    policy->idle_.push_back(std::move(*state));
    policy->total_ = 1;
    return policy;
}

Result<std::shared_ptr<Policy>> Policy::load_file(const std::string& path, std::shared_ptr<const Config> config,
                                                  LogSink log, size_t max_states) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(path + ": cannot read the policy script: " + std::strerror(errno));
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) return fail(path + ": error reading the policy script");
    return compile(text.str(), path, std::move(config), std::move(log), max_states);
}

Result<std::unique_ptr<LuaState>> Policy::new_state() {
    auto s = std::make_unique<LuaState>();
    const PolicyConfig& limits = config_->policy;
    s->mem_limit = limits.memory_limit_bytes;
    s->meter.charge = charge_steps;
    s->meter.max_string_bytes = limits.memory_limit_bytes;
    s->meter.too_large = string_too_large;
    s->instruction_budget = std::max<uint64_t>(limits.instruction_budget, 1);
    s->time_budget = limits.time_budget;
    s->config = config_.get();
    s->log = &log_;
    s->chunk_name = &chunk_name_;
    s->now = std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now());
    s->L = lua_newstate(counting_alloc, s.get());
    if (!s->L) return fail(chunk_name_ + ": cannot create a Lua state (policy.memory_limit too small?)");
    lua_State* L = s->L;
    *static_cast<LuaState**>(lua_getextraspace(L)) = s.get();
    lua_atpanic(L, on_panic);

    lua_pushcfunction(L, setup_state);
    int status = lua_pcall(L, 0, 0, 0);
    if (status != LUA_OK) {
        std::string msg = error_text(L, status);
        return fail(chunk_name_ + ": cannot set up the Lua sandbox: " + msg +
                    (s->mem_refused ? " (policy.memory_limit too small?)" : ""));
    }
    // Text only: a precompiled (binary) chunk is refused.
    status = luaL_loadbufferx(L, source_.data(), source_.size(), ("@" + chunk_name_).c_str(), "t");
    if (status != LUA_OK) return fail(error_text(L, status));
    arm_budget(s.get(), kLoadBudgetFactor);
    lua_pushcfunction(L, locate_error);
    lua_insert(L, -2);
    status = lua_pcall(L, 0, 0, lua_gettop(L) - 1);
    if (status != LUA_OK) {
        std::string msg = error_text(L, status);
        if (status == LUA_ERRMEM || s->mem_refused)
            msg = chunk_name_ + ": memory limit of " + std::to_string(s->mem_limit) + " bytes exceeded while loading";
        return fail(msg);
    }
    lua_pushcfunction(L, capture_classify);
    status = lua_pcall(L, 0, 0, 0);
    if (status != LUA_OK) return fail(error_text(L, status));
    lua_settop(L, 0);
    lua_gc(L, LUA_GCCOLLECT);
    return s;
}

std::unique_ptr<LuaState> Policy::acquire(std::string& error) {
    std::unique_lock lock(mutex_);
    // In the background mode a caller waits at most this long for a state.
    auto give_up =
        Clock::now() + std::max<std::chrono::microseconds>(config_->policy.time_budget, std::chrono::milliseconds(1));
    while (true) {
        if (!idle_.empty()) {
            auto s = std::move(idle_.back());
            idle_.pop_back();
            return s;
        }
        if (background_) {
            if (idle_cv_.wait_until(lock, give_up) == std::cv_status::timeout && idle_.empty()) {
                error = chunk_name_ + ": no policy Lua state became free within the time budget (" +
                        std::to_string(total_) + " in use, " + std::to_string(max_states_ - total_) +
                        " being rebuilt after budget overruns)";
                return nullptr;
            }
            continue;
        }
        if (total_ < max_states_) {
            ++total_;
            lock.unlock();
            auto made = new_state();
            if (made) return std::move(*made);
            lock.lock();
            --total_;
            idle_cv_.notify_one();
            error = made.error().message;
            return nullptr;
        }
        idle_cv_.wait(lock);
    }
}

void Policy::release(std::unique_ptr<LuaState> state) {
    std::unique_ptr<LuaState> discard;
    bool wake = false;
    {
        std::lock_guard lock(mutex_);
        if (state->tainted) {
            --total_;
            ++rebuilds_;
            if (background_) {
                graveyard_.push_back(std::move(state));
                wake = true;
            } else {
                discard = std::move(state);
            }
        } else {
            idle_.push_back(std::move(state));
        }
        idle_cv_.notify_one();
    }
    if (wake && wake_) wake_();
    // discard's lua_close runs outside the lock.
}

void Policy::build_in_background(std::function<void()> wake) {
    if (pool_) return pool_->build_in_background(std::move(wake));
    {
        std::lock_guard lock(mutex_);
        background_ = true;
        wake_ = std::move(wake);
    }
    if (wake_) wake_();
}

void Policy::maintain() {
    if (pool_) return pool_->maintain();
    std::vector<std::unique_ptr<LuaState>> dead;
    size_t missing = 0;
    {
        std::lock_guard lock(mutex_);
        dead.swap(graveyard_);
        missing = max_states_ > total_ ? max_states_ - total_ : 0;
        total_ += missing;  // reserved; given back below if a build fails
    }
    dead.clear();
    for (size_t i = 0; i < missing; ++i) {
        auto made = new_state();
        std::lock_guard lock(mutex_);
        if (made) {
            idle_.push_back(std::move(*made));
            idle_cv_.notify_one();
        } else {
            --total_;
            if (log_) log_(LogLevel::Error, "policy: cannot rebuild a Lua state: " + made.error().message);
        }
    }
}

size_t Policy::state_count() const {
    if (pool_) return pool_->stats().workers;
    std::lock_guard lock(mutex_);
    return total_;
}

WorkerPoolStats Policy::worker_stats() const { return pool_ ? pool_->stats() : WorkerPoolStats{}; }

uint64_t Policy::rebuilds() const {
    if (pool_) return pool_->stats().respawns;
    std::lock_guard lock(mutex_);
    return rebuilds_;
}

PolicyOutcome Policy::classify(const JobView& job, SysSeconds now, const WindowOracle& windows) noexcept {
    if (pool_) return pool_->classify(job, now, windows);
    try {
        std::string error;
        auto s = acquire(error);
        if (!s) {
            PolicyOutcome out;
            out.kind = PolicyOutcome::Kind::Error;
            out.error = error;
            return out;
        }
        // Back to the pool however this ends.
        struct Release {
            Policy* policy;
            std::unique_ptr<LuaState>& state;
            ~Release() {
                if (state) policy->release(std::move(state));
            }
        } release_guard{this, s};
        lua_State* L = s->L;
        s->out = PolicyOutcome{};
        s->job = &job;
        s->now = now;
        s->windows = &windows;
        s->rejected = false;
        s->return_line = 0;
        s->return_src[0] = '\0';
        s->in_classify = true;
        lua_settop(L, 0);
        arm_budget(s.get(), 1);
        lua_pushcfunction(L, locate_error);
        lua_pushcfunction(L, run_classify);
        int status = lua_pcall(L, 0, 0, 1);
        s->in_classify = false;

        PolicyOutcome out = std::move(s->out);
        if (s->return_line > 0) {
            s->return_src[sizeof s->return_src - 1] = '\0';
            out.location = basename_of(s->return_src) + ":" + std::to_string(s->return_line);
        }
        if (s->abort != Abort::None || s->mem_refused) s->tainted = true;
        if (s->rejected) {
            out.kind = PolicyOutcome::Kind::Reject;
            if (out.reject_message.empty()) out.reject_message = "rejected by the site policy";
        } else if (s->abort != Abort::None && status != LUA_ERRMEM) {
            out.kind = PolicyOutcome::Kind::Error;
            out.error = error_text(L, status);
        } else if (status == LUA_ERRMEM || (status != LUA_OK && s->mem_refused)) {
            out.kind = PolicyOutcome::Kind::Error;
            std::string limit = "memory limit of " + std::to_string(s->mem_limit) + " bytes exceeded";
            if (status != LUA_ERRMEM) {  // raised with a position (string.rep, or the script's own error)
                std::string text = error_text(L, status);
                out.error = text.find("memory limit") != std::string::npos ? text : text + " (" + limit + ")";
            } else if (s->last_line > 0) {  // no frame left to ask: where the hook last saw the script
                s->last_src[sizeof s->last_src - 1] = '\0';
                out.error = basename_of(s->last_src) + ":" + std::to_string(s->last_line) + ": " + limit;
            } else {
                out.error = basename_of(chunk_name_) + ": " + limit;
            }
        } else if (status != LUA_OK) {
            out.kind = PolicyOutcome::Kind::Error;
            out.error = error_text(L, status);
        }
        if (out.kind == PolicyOutcome::Kind::Error) {
            out.class_name.clear();
            if (out.error.find(basename_of(chunk_name_)) == std::string::npos &&
                out.error.find(chunk_name_) == std::string::npos)
                out.error = basename_of(chunk_name_) + ": " + out.error;
        }
        lua_settop(L, 0);
        s->job = nullptr;
        s->windows = nullptr;
        // What the script wrote reaches users' terminals and slurmctld's log:
        // one line each, no control characters, at most 1 KiB.
        out.reject_message = printable(out.reject_message, kMaxUserMessageBytes);
        out.reason = printable(out.reason, kMaxUserMessageBytes);
        out.error = printable(out.error, kMaxUserMessageBytes);
        for (auto& m : out.user_messages) m = printable(m, kMaxUserMessageBytes);
        return out;
    } catch (const std::exception& e) {
        PolicyOutcome out;
        out.kind = PolicyOutcome::Kind::Error;
        try {
            out.error = std::string("internal error: ") + e.what();
        } catch (...) {
        }
        return out;
    } catch (...) {
        PolicyOutcome out;
        out.kind = PolicyOutcome::Kind::Error;
        return out;
    }
}

JobView synthetic_job(const Config& config, SysSeconds now) {
    JobView j;
    j.name = "lanes-self-check";
    j.user = "lanes-self-check";
    j.uid = 65534;
    j.account = "lanes-self-check";
    const ClassConfig* def = config.find_class(config.default_class);
    if (def && !def->partitions.empty()) j.partition = def->partitions.front();
    j.tres_per_node = "gres:gpu:1";
    j.gpus = 1;
    j.min_nodes = 1;
    j.max_nodes = 1;
    j.num_tasks = 1;
    j.time_limit_minutes = 60;
    j.batch = true;
    j.environment["PATH"] = "/usr/bin:/bin";
    j.submit_time = now;
    return j;
}

Result<void> Policy::self_check(SysSeconds now, const WindowOracle& windows) {
    JobView job = synthetic_job(*config_, now);
    PolicyOutcome out = classify(job, now, windows);
    if (out.kind == PolicyOutcome::Kind::Error)
        return fail(chunk_name_ + ": self-check on a synthetic job failed: " + out.error);
    if (out.kind == PolicyOutcome::Kind::Class && !config_->find_class(out.class_name))
        return fail(chunk_name_ + (out.location.empty() ? "" : " (" + out.location + ")") +
                    ": self-check: classify() returned unknown class '" + log_field(out.class_name, 256) + "'");
    return {};
}

}  // namespace lanes
