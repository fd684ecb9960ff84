// SPDX-License-Identifier: GPL-2.0-or-later
// The policy API: the job proxy, the lanes table's functions and views, and
// the reading of classify()'s result. See lua_sandbox.hpp for the rules every
// lua_CFunction here follows, and lanes-policy(7) for the contract.
#include "ctld/policy_api.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/text.hpp"
#include "ctld/builtin_rules.hpp"
#include "ctld/windows.hpp"
#include "ctld/windows_config.hpp"

namespace lanes::policy_detail {

namespace {

constexpr size_t kMaxUserMessages = 16;

// Job fields the proxy exposes, in pairs() order.
enum JobField {
    kName = 1,
    kComment,
    kUser,
    kUid,
    kAccount,
    kPartition,
    kQos,
    kTresPerNode,
    kTresPerJob,
    kGpus,
    kMinNodes,
    kMaxNodes,
    kNumTasks,
    kTimeLimit,
    kFeatures,
    kBatch,
    kEnv,
    kLanesClass,
    kLanesCap,
    kSubmitTime,
    kBeginTime,
    kFieldEnd
};
const char* const kJobFieldNames[kFieldEnd] = {
    nullptr,         "name",         "comment",     "user",      "uid",         "account",   "partition",  "qos",
    "tres_per_node", "tres_per_job", "gpus",        "min_nodes", "max_nodes",   "num_tasks", "time_limit", "features",
    "batch",         "env",          "lanes_class", "lanes_cap", "submit_time", "begin_time"};

// Fields of the table classify() may return.
enum ResultField {
    rClass,
    rReason,
    rMessage,
    rReject,
    rPartition,
    rQos,
    rFeatures,
    rNice,
    rBeginTime,
    rTimeLimit,
    rUnknown
};
ResultField result_field(const char* key) {
    static const char* const names[] = {"class", "reason",   "message", "reject",     "partition",
                                        "qos",   "features", "nice",    "begin_time", "time_limit"};
    for (int i = 0; i < rUnknown; ++i)
        if (std::strcmp(key, names[i]) == 0) return static_cast<ResultField>(i);
    return rUnknown;
}

// --- noexcept helpers for the C functions --------------------------------

bool assign(std::string& dst, const char* p, size_t n) noexcept {
    try {
        dst.assign(p, n);
        return true;
    } catch (...) {
        return false;
    }
}

bool append(std::string& dst, const char* p, size_t n) noexcept {
    try {
        dst.append(p, n);
        return true;
    } catch (...) {
        return false;
    }
}

bool assign_opt(std::optional<std::string>& dst, const char* p, size_t n) noexcept {
    try {
        dst.emplace(p, n);
        return true;
    } catch (...) {
        return false;
    }
}

bool add_user_message(LuaState* s, const char* p, size_t n) noexcept {
    try {
        if (s->out.user_messages.size() >= kMaxUserMessages) return true;  // silently capped
        // Kept a little longer than shown, so printable() marks the cut.
        s->out.user_messages.emplace_back(p, std::min(n, 4 * kMaxUserMessageBytes));
        return true;
    } catch (...) {
        return false;
    }
}

void emit_log(LuaState* s, LogLevel level, const char* where, int line, const char* msg, size_t n) noexcept {
    try {
        if (!s->log || !*s->log) return;
        std::string text = "policy ";
        text += where;
        if (line > 0) text += ":" + std::to_string(line);
        text += ": ";
        text += printable(std::string_view(msg, n), kMaxUserMessageBytes);
        (*s->log)(level, text);
    } catch (...) {
    }
}

// 0: false/nil, 1: value in *result, -1: unknown window, -2: internal error.
enum class WindowOp { In, NextStart, NextEnd };
int query_window(LuaState* s, WindowOp op, const char* name, size_t n, int64_t at, int64_t* result) noexcept {
    try {
        if (!s->windows) return -1;
        std::string w(name, n);
        if (!s->windows->known(w)) return -1;
        SysSeconds t{std::chrono::seconds{at}};
        switch (op) {
            case WindowOp::In: return s->windows->in_window(w, t) ? 1 : 0;
            case WindowOp::NextStart:
            case WindowOp::NextEnd: {
                auto r = op == WindowOp::NextStart ? s->windows->next_start(w, t) : s->windows->next_end(w, t);
                if (!r) return 0;
                *result = r->time_since_epoch().count();
                return 1;
            }
        }
        return -2;
    } catch (...) {
        return -2;
    }
}

// lanes.signal(name): 1 known (fields filled), -1 unknown signal, -2 internal error.
int query_signal(LuaState* s, const char* name, size_t n, std::optional<double>* value, std::optional<int64_t>* age,
                 bool* fresh) noexcept {
    try {
        if (!s->windows) return -1;
        auto v = s->windows->signal(std::string(name, n));
        if (!v) return -1;
        *value = v->value;
        if (v->age) *age = v->age->count();
        *fresh = v->fresh;
        return 1;
    } catch (...) {
        return -2;
    }
}

// 1 absolute (*bits), 2 relative (*percent), 0 error (message in err).
int rate_of(const char* text, size_t n, int64_t* bits, double* percent, char* err, size_t errlen) noexcept {
    try {
        auto r = parse_rate(std::string_view(text, n));
        if (!r) {
            std::snprintf(err, errlen, "%s", r.error().message.c_str());
            return 0;
        }
        if (r->is_relative()) {
            *percent = r->percent;
            return 2;
        }
        if (r->bits_per_second > static_cast<uint64_t>(INT64_MAX)) {
            std::snprintf(err, errlen, "rate too large");
            return 0;
        }
        *bits = static_cast<int64_t>(r->bits_per_second);
        return 1;
    } catch (...) {
        std::snprintf(err, errlen, "internal error");
        return 0;
    }
}

// 1 minutes in *out, 2 unlimited, 0 error.
int duration_of(const char* text, size_t n, int64_t* out, char* err, size_t errlen) noexcept {
    try {
        auto r = parse_slurm_duration(std::string_view(text, n));
        if (!r) {
            std::snprintf(err, errlen, "%s", r.error().message.c_str());
            return 0;
        }
        if (!*r) return 2;
        *out = **r;
        return 1;
    } catch (...) {
        std::snprintf(err, errlen, "internal error");
        return 0;
    }
}

// The matching rule's class into cls, its description into where; false if none.
bool rules_of(LuaState* s, char* cls, size_t clslen, char* where, size_t wherelen) noexcept {
    try {
        if (!s->config || !s->job) return false;
        const ClassRule* rule = match_rules(s->config->rules, *s->job);
        if (!rule) return false;
        std::snprintf(cls, clslen, "%s", rule->class_name.c_str());
        std::snprintf(where, wherelen, "%s", describe_rule(s->config->rules, *rule, s->config->path).c_str());
        return true;
    } catch (...) {
        return false;
    }
}

const std::string* env_lookup(const JobView* job, const char* key, size_t n) noexcept {
    try {
        auto it = job->environment.find(std::string(key, n));
        return it == job->environment.end() ? nullptr : &it->second;
    } catch (...) {
        return nullptr;
    }
}

// The entry after `key` (the first if key is null).
const std::pair<const std::string, std::string>* env_after(const JobView* job, const char* key, size_t n) noexcept {
    try {
        auto it = key ? job->environment.upper_bound(std::string(key, n)) : job->environment.begin();
        return it == job->environment.end() ? nullptr : &*it;
    } catch (...) {
        return nullptr;
    }
}

int parse_duration_noexcept(const char* p, size_t n, uint32_t* minutes) noexcept {
    int64_t v = 0;
    char err[8];
    int r = duration_of(p, n, &v, err, sizeof err);
    if (r != 1 || v < 1 || v > INT32_MAX) return 0;
    *minutes = static_cast<uint32_t>(v);
    return 1;
}

// --- job proxy ----------------------------------------------------------------

int job_field_id(lua_State* L, int key_index) {
    if (lua_type(L, key_index) != LUA_TSTRING) return 0;
    lua_pushvalue(L, key_index);
    lua_rawget(L, lua_upvalueindex(1));  // name -> id
    int id = static_cast<int>(lua_tointeger(L, -1));
    lua_pop(L, 1);
    return id;
}

void push_string(lua_State* L, const std::string& s) { lua_pushlstring(L, s.data(), s.size()); }

void push_job_field(lua_State* L, LuaState* s, int id) {
    const JobView& j = *s->job;
    switch (id) {
        case kName: push_string(L, j.name); break;
        case kComment: push_string(L, j.comment); break;
        case kUser: push_string(L, j.user); break;
        case kUid: lua_pushinteger(L, j.uid); break;
        case kAccount: push_string(L, j.account); break;
        case kPartition: push_string(L, j.partition); break;
        case kQos: push_string(L, j.qos); break;
        case kTresPerNode: push_string(L, j.tres_per_node); break;
        case kTresPerJob: push_string(L, j.tres_per_job); break;
        case kGpus: lua_pushinteger(L, j.gpus); break;
        case kMinNodes: lua_pushinteger(L, j.min_nodes); break;
        case kMaxNodes: lua_pushinteger(L, j.max_nodes); break;
        case kNumTasks: lua_pushinteger(L, j.num_tasks); break;
        case kTimeLimit:
            if (j.time_limit_minutes) lua_pushinteger(L, *j.time_limit_minutes);
            else lua_pushnil(L);
            break;
        case kFeatures: push_string(L, j.features); break;
        case kBatch: lua_pushboolean(L, j.batch); break;
        case kEnv:
            if (j.batch) lua_rawgeti(L, LUA_REGISTRYINDEX, s->env_ref);
            else lua_pushnil(L);
            break;
        case kLanesClass:
            if (j.requested_class) push_string(L, *j.requested_class);
            else lua_pushnil(L);
            break;
        case kLanesCap:
            if (j.requested_cap) push_string(L, *j.requested_cap);
            else lua_pushnil(L);
            break;
        case kSubmitTime: lua_pushinteger(L, j.submit_time.time_since_epoch().count()); break;
        case kBeginTime:
            if (j.begin_time) lua_pushinteger(L, j.begin_time->time_since_epoch().count());
            else lua_pushnil(L);
            break;
        default: lua_pushnil(L);
    }
}

int job_index(lua_State* L) noexcept {
    LuaState* s = state_of(L);
    if (!s->job) return luaL_error(L, "job is only valid during classify()");
    int id = job_field_id(L, 2);
    if (id <= 0 || id >= kFieldEnd) {
        if (lua_type(L, 2) == LUA_TSTRING) return luaL_error(L, "job has no field '%s'", lua_tostring(L, 2));
        return luaL_error(L, "job fields are named by strings, not by a %s", luaL_typename(L, 2));
    }
    push_job_field(L, s, id);
    return 1;
}

int job_next(lua_State* L) noexcept {
    LuaState* s = state_of(L);
    if (!s->job) return luaL_error(L, "job is only valid during classify()");
    int id = lua_isnil(L, 2) ? 1 : job_field_id(L, 2) + 1;
    if (id <= 1 && !lua_isnil(L, 2)) return luaL_error(L, "invalid key to 'next' over job");
    for (; id < kFieldEnd; ++id) {
        lua_pushstring(L, kJobFieldNames[id]);
        push_job_field(L, s, id);
        if (!lua_isnil(L, -1)) return 2;
        lua_pop(L, 2);
    }
    lua_pushnil(L);
    return 1;
}

int job_pairs(lua_State* L) noexcept {
    lua_pushvalue(L, lua_upvalueindex(1));  // fields table
    lua_pushcclosure(L, job_next, 1);
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

int readonly_newindex(lua_State* L) noexcept {
    const char* what = lua_tostring(L, lua_upvalueindex(1));
    if (lua_type(L, 2) == LUA_TSTRING)
        return luaL_error(L, "%s is read-only (tried to set '%s')", what ? what : "table", lua_tostring(L, 2));
    return luaL_error(L, "%s is read-only", what ? what : "table");
}

int env_index(lua_State* L) noexcept {
    LuaState* s = state_of(L);
    if (!s->job) return luaL_error(L, "job.env is only valid during classify()");
    if (lua_type(L, 2) != LUA_TSTRING) {
        lua_pushnil(L);
        return 1;
    }
    size_t n;
    const char* key = lua_tolstring(L, 2, &n);
    const std::string* v = env_lookup(s->job, key, n);
    if (v) push_string(L, *v);
    else lua_pushnil(L);
    return 1;
}

int env_next(lua_State* L) noexcept {
    LuaState* s = state_of(L);
    if (!s->job) return luaL_error(L, "job.env is only valid during classify()");
    const char* key = nullptr;
    size_t n = 0;
    if (!lua_isnil(L, 2)) key = luaL_checklstring(L, 2, &n);
    auto* entry = env_after(s->job, key, n);
    if (!entry) {
        lua_pushnil(L);
        return 1;
    }
    push_string(L, entry->first);
    push_string(L, entry->second);
    return 2;
}

int env_pairs(lua_State* L) noexcept {
    lua_pushcfunction(L, env_next);
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

// --- read-only views of plain tables (lanes, lanes.classes, ...) ------------

int ro_next(lua_State* L) noexcept {
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_settop(L, 2);
    if (lua_next(L, 1)) return 2;
    lua_pushnil(L);
    return 1;
}

int ro_pairs(lua_State* L) noexcept {
    lua_pushcfunction(L, ro_next);
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_pushnil(L);
    return 3;
}

int ro_len(lua_State* L) noexcept {
    lua_pushinteger(L, static_cast<lua_Integer>(lua_rawlen(L, lua_upvalueindex(1))));
    return 1;
}

// Replace the table at the top of the stack with a read-only userdata view of it.
void make_readonly(lua_State* L, const char* what) {
    int t = lua_gettop(L);
    lua_newuserdatauv(L, 0, 1);
    lua_pushvalue(L, t);
    lua_setiuservalue(L, -2, 1);  // keeps the table alive
    lua_createtable(L, 0, 6);
    lua_pushvalue(L, t);
    lua_setfield(L, -2, "__index");
    lua_pushstring(L, what);
    lua_pushcclosure(L, readonly_newindex, 1);
    lua_setfield(L, -2, "__newindex");
    lua_pushvalue(L, t);
    lua_pushcclosure(L, ro_len, 1);
    lua_setfield(L, -2, "__len");
    lua_pushvalue(L, t);
    lua_pushcclosure(L, ro_pairs, 1);
    lua_setfield(L, -2, "__pairs");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_pushstring(L, what);
    lua_setfield(L, -2, "__name");
    lua_setmetatable(L, -2);
    lua_replace(L, t);
}

void push_string_array(lua_State* L, const std::vector<std::string>& items, const char* what) {
    lua_createtable(L, static_cast<int>(items.size()), 0);
    lua_Integer i = 1;
    for (const auto& item : items) {
        push_string(L, item);
        lua_rawseti(L, -2, i++);
    }
    make_readonly(L, what);
}

void set_rate_fields(lua_State* L, const std::optional<Rate>& rate, const char* abs_key, const char* pct_key) {
    if (!rate) return;
    if (rate->is_relative()) {
        lua_pushnumber(L, rate->percent);
        lua_setfield(L, -2, pct_key);
    } else {
        lua_pushinteger(L, static_cast<lua_Integer>(rate->bits_per_second));
        lua_setfield(L, -2, abs_key);
    }
}

const char* overrun_name(OverrunAction a) {
    switch (a) {
        case OverrunAction::Defer: return "defer";
        case OverrunAction::Shorten: return "shorten";
        case OverrunAction::Warn: return "warn";
        case OverrunAction::Reject: return "reject";
    }
    return "defer";
}

void push_class_info(lua_State* L, const ClassConfig& c) {
    lua_createtable(L, 0, 24);
    push_string(L, c.name);
    lua_setfield(L, -2, "name");
    lua_pushinteger(L, c.rank);
    lua_setfield(L, -2, "rank");
    push_string_array(L, c.partitions, "class.partitions");
    lua_setfield(L, -2, "partitions");
    push_string(L, c.qos);
    lua_setfield(L, -2, "qos");
    push_string_array(L, c.features, "class.features");
    lua_setfield(L, -2, "features");
    if (c.nice) {
        lua_pushinteger(L, *c.nice);
        lua_setfield(L, -2, "nice");
    }
    push_string_array(L, c.avoid_windows, "class.avoid_windows");
    lua_setfield(L, -2, "avoid_windows");
    lua_pushstring(L, overrun_name(c.window_overrun));
    lua_setfield(L, -2, "window_overrun");
    push_string_array(L, c.borrow_partitions, "class.borrow_partitions");
    lua_setfield(L, -2, "borrow_partitions");
    push_string_array(L, c.exempt_users, "class.exempt_users");
    lua_setfield(L, -2, "exempt_users");
    push_string_array(L, c.exempt_accounts, "class.exempt_accounts");
    lua_setfield(L, -2, "exempt_accounts");
    push_string_array(L, c.allowed_users, "class.allowed_users");
    lua_setfield(L, -2, "allowed_users");
    push_string_array(L, c.allowed_accounts, "class.allowed_accounts");
    lua_setfield(L, -2, "allowed_accounts");
    push_string_array(L, c.policy_overrides, "class.policy_overrides");
    lua_setfield(L, -2, "policy_overrides");
    if (c.dscp) {
        lua_pushinteger(L, *c.dscp);
        lua_setfield(L, -2, "dscp");
    }
    set_rate_fields(L, c.rate, "rate", "rate_percent");
    set_rate_fields(L, c.ceil ? c.ceil : c.rate, "ceil", "ceil_percent");
    lua_pushboolean(L, c.user_may_lower_cap);
    lua_setfield(L, -2, "user_may_lower_cap");
    make_readonly(L, "lanes.classes entry");
}

// --- the lanes table ------------------------------------------------------------

int l_log(lua_State* L) noexcept {
    static const char* const levels[] = {"info", "debug", "error", nullptr};
    size_t n;
    const char* msg = luaL_checklstring(L, 1, &n);
    int level = luaL_checkoption(L, 2, "info", levels);
    lua_Debug ar;
    int line = 0;
    const char* src = "?";
    if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar)) {
        line = ar.currentline;
        src = ar.short_src;
    }
    emit_log(state_of(L),
             level == 0   ? LogLevel::Info
             : level == 1 ? LogLevel::Debug
                          : LogLevel::Error,
             src, line, msg, n);
    return 0;
}

int l_print(lua_State* L) noexcept {
    int n = lua_gettop(L);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (int i = 1; i <= n; ++i) {
        luaL_tolstring(L, i, nullptr);
        luaL_addvalue(&b);
        if (i < n) luaL_addchar(&b, '\t');
    }
    luaL_pushresult(&b);
    lua_replace(L, 1);
    lua_settop(L, 1);
    return l_log(L);
}

int l_user_message(lua_State* L) noexcept {
    size_t n;
    const char* msg = luaL_checklstring(L, 1, &n);
    LuaState* s = state_of(L);
    if (!s->in_classify) return luaL_error(L, "lanes.user_message is only valid during classify()");
    if (!add_user_message(s, msg, n)) return luaL_error(L, "out of memory");
    return 0;
}

int l_reject(lua_State* L) noexcept {
    size_t n;
    const char* msg = luaL_optlstring(L, 1, "rejected by the site policy", &n);
    LuaState* s = state_of(L);
    if (!s->in_classify) return luaL_error(L, "reject() is only valid during classify()");
    lua_Debug ar;
    if (lua_getstack(L, 1, &ar) && lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
        s->return_line = ar.currentline;
        std::memcpy(s->return_src, ar.short_src, sizeof s->return_src);
    }
    s->rejected = true;
    if (!assign(s->out.reject_message, msg, n)) return luaL_error(L, "out of memory");
    // Unwind the script; the outcome is decided by `rejected`, even if the script
    // catches this with pcall.
    lua_pushliteral(L, "job rejected by reject()");
    return lua_error(L);
}

int l_now(lua_State* L) noexcept {
    lua_pushinteger(L, state_of(L)->now.time_since_epoch().count());
    return 1;
}

int window_query(lua_State* L, WindowOp op) {
    size_t n;
    const char* name = luaL_checklstring(L, 1, &n);
    LuaState* s = state_of(L);
    lua_Integer at = luaL_optinteger(L, 2, s->now.time_since_epoch().count());
    int64_t result = 0;
    int r = query_window(s, op, name, n, at, &result);
    if (r == -1) return luaL_error(L, "unknown window '%s'", name);
    if (r == -2) return luaL_error(L, "internal error in window query");
    if (op == WindowOp::In) {
        lua_pushboolean(L, r == 1);
    } else if (r == 1) {
        lua_pushinteger(L, result);
    } else {
        lua_pushnil(L);
    }
    return 1;
}

int l_in_window(lua_State* L) noexcept { return window_query(L, WindowOp::In); }
int l_next_start(lua_State* L) noexcept { return window_query(L, WindowOp::NextStart); }
int l_next_end(lua_State* L) noexcept { return window_query(L, WindowOp::NextEnd); }

// lanes.signal("name") -> value (nil when unusable), age in seconds of the last
// good value (nil if none), fresh (boolean).
int l_signal(lua_State* L) noexcept {
    size_t n;
    const char* name = luaL_checklstring(L, 1, &n);
    std::optional<double> value;
    std::optional<int64_t> age;
    bool fresh = false;
    int r = query_signal(state_of(L), name, n, &value, &age, &fresh);
    if (r == -1) return luaL_error(L, "unknown signal '%s'", name);
    if (r == -2) return luaL_error(L, "internal error in signal query");
    if (value) lua_pushnumber(L, *value);
    else lua_pushnil(L);
    if (age) lua_pushinteger(L, *age);
    else lua_pushnil(L);
    lua_pushboolean(L, fresh);
    return 3;
}

int l_parse_rate(lua_State* L) noexcept {
    size_t n;
    const char* text = luaL_checklstring(L, 1, &n);
    int64_t bits = 0;
    double pct = 0;
    char err[256];
    int r = rate_of(text, n, &bits, &pct, err, sizeof err);
    if (r == 0) return luaL_error(L, "lanes.parse_rate: %s", err);
    if (r == 2) {
        lua_pushnil(L);
        lua_pushnumber(L, pct);
        return 2;
    }
    lua_pushinteger(L, bits);
    return 1;
}

int l_parse_duration(lua_State* L) noexcept {
    size_t n;
    const char* text = luaL_checklstring(L, 1, &n);
    int64_t minutes = 0;
    char err[256];
    int r = duration_of(text, n, &minutes, err, sizeof err);
    if (r == 0) return luaL_error(L, "lanes.parse_duration: %s", err);
    if (r == 2) lua_pushnil(L);
    else lua_pushinteger(L, minutes);
    return 1;
}

int l_rules(lua_State* L) noexcept {
    luaL_checkudata(L, 1, "lanes.job");
    LuaState* s = state_of(L);
    if (!s->job) return luaL_error(L, "lanes.rules is only valid during classify()");
    char cls[256], where[256];
    if (!rules_of(s, cls, sizeof cls, where, sizeof where)) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushstring(L, cls);
    lua_pushstring(L, where);
    return 2;
}

}  // namespace

void install_policy_api(lua_State* L, LuaState* s) {
    lua_pushcfunction(L, l_print);
    lua_setglobal(L, "print");
    // Field name -> id, the upvalue of the job proxy functions.
    lua_createtable(L, 0, kFieldEnd);
    for (int id = 1; id < kFieldEnd; ++id) {
        lua_pushinteger(L, id);
        lua_setfield(L, -2, kJobFieldNames[id]);
    }
    int fields = lua_gettop(L);

    luaL_newmetatable(L, "lanes.job");
    lua_pushvalue(L, fields);
    lua_pushcclosure(L, job_index, 1);
    lua_setfield(L, -2, "__index");
    lua_pushliteral(L, "job");
    lua_pushcclosure(L, readonly_newindex, 1);
    lua_setfield(L, -2, "__newindex");
    lua_pushvalue(L, fields);
    lua_pushcclosure(L, job_pairs, 1);
    lua_setfield(L, -2, "__pairs");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 1);
    lua_newuserdatauv(L, 0, 0);
    luaL_setmetatable(L, "lanes.job");
    s->job_ref = luaL_ref(L, LUA_REGISTRYINDEX);

    luaL_newmetatable(L, "lanes.env");
    lua_pushcfunction(L, env_index);
    lua_setfield(L, -2, "__index");
    lua_pushliteral(L, "job.env");
    lua_pushcclosure(L, readonly_newindex, 1);
    lua_setfield(L, -2, "__newindex");
    lua_pushcfunction(L, env_pairs);
    lua_setfield(L, -2, "__pairs");
    lua_pushboolean(L, 0);
    lua_setfield(L, -2, "__metatable");
    lua_pop(L, 1);
    lua_newuserdatauv(L, 0, 0);
    luaL_setmetatable(L, "lanes.env");
    s->env_ref = luaL_ref(L, LUA_REGISTRYINDEX);

    static const luaL_Reg lanes_functions[] = {
        {"log", l_log},
        {"user_message", l_user_message},
        {"reject", l_reject},
        {"now", l_now},
        {"in_window", l_in_window},
        {"next_start", l_next_start},
        {"next_end", l_next_end},
        {"signal", l_signal},
        {"parse_rate", l_parse_rate},
        {"parse_duration", l_parse_duration},
        {"rules", l_rules},
        {nullptr, nullptr},
    };
    luaL_newlib(L, lanes_functions);
    lua_createtable(L, 0, static_cast<int>(s->config->classes.size()));
    for (const auto& entry : s->config->classes) {
        push_class_info(L, entry.second);
        lua_setfield(L, -2, entry.first.c_str());
    }
    make_readonly(L, "lanes.classes");
    lua_setfield(L, -2, "classes");
    push_string(L, s->config->default_class);
    lua_setfield(L, -2, "default_class");
    lua_createtable(L, static_cast<int>(windows_of(*s->config).all().size()), 0);
    lua_Integer i = 1;
    for (const auto& entry : windows_of(*s->config).all()) {
        push_string(L, entry.first);
        lua_rawseti(L, -2, i++);
    }
    make_readonly(L, "lanes.windows");
    lua_setfield(L, -2, "windows");
    make_readonly(L, "lanes");
    lua_setglobal(L, "lanes");
    lua_pushcfunction(L, l_reject);
    lua_setglobal(L, "reject");
}

namespace {

// --- classify() result -------------------------------------------------------

[[noreturn]] void result_error(lua_State* L, const char* fmt, const char* a, const char* b = "") {
    lua_pushfstring(L, fmt, a, b);
    lua_error(L);
    std::abort();  // not reached
}

// A string, or an array of strings joined with sep, into dst.
void read_string_or_list(lua_State* L, int idx, const char* field, const char* sep, std::optional<std::string>& dst) {
    if (lua_type(L, idx) == LUA_TSTRING) {
        size_t n;
        const char* p = lua_tolstring(L, idx, &n);
        if (!assign_opt(dst, p, n)) result_error(L, "%s", "out of memory");
        return;
    }
    if (lua_type(L, idx) != LUA_TTABLE)
        result_error(L, "classify(): field '%s' must be a string or a list of strings, not a %s", field,
                     luaL_typename(L, idx));
    if (!assign_opt(dst, "", 0)) result_error(L, "%s", "out of memory");
    lua_Integer len = static_cast<lua_Integer>(lua_rawlen(L, idx));
    for (lua_Integer i = 1; i <= len; ++i) {
        lua_rawgeti(L, idx, i);
        if (lua_type(L, -1) != LUA_TSTRING)
            result_error(L, "classify(): field '%s' must list strings, found a %s", field, luaL_typename(L, -1));
        size_t n;
        const char* p = lua_tolstring(L, -1, &n);
        if ((i > 1 && !append(*dst, sep, std::strlen(sep))) || !append(*dst, p, n))
            result_error(L, "%s", "out of memory");
        lua_pop(L, 1);
    }
}

lua_Integer read_integer(lua_State* L, int idx, const char* field) {
    int isnum = 0;
    lua_Integer v = 0;
    if (lua_type(L, idx) == LUA_TNUMBER) v = lua_tointegerx(L, idx, &isnum);
    if (!isnum)
        result_error(L, "classify(): field '%s' must be an integer, not a %s", field,
                     lua_type(L, idx) == LUA_TNUMBER ? "fractional number" : luaL_typename(L, idx));
    return v;
}

}  // namespace

void read_result(lua_State* L, LuaState* s, int idx) {
    PolicyOutcome& out = s->out;
    int type = lua_type(L, idx);
    if (type == LUA_TNIL || (type == LUA_TBOOLEAN && !lua_toboolean(L, idx))) {
        out.kind = PolicyOutcome::Kind::FallThrough;
        return;
    }
    if (type == LUA_TSTRING) {
        size_t n;
        const char* p = lua_tolstring(L, idx, &n);
        if (n == 0) result_error(L, "%s", "classify() returned an empty class name");
        if (!assign(out.class_name, p, n)) result_error(L, "%s", "out of memory");
        out.kind = PolicyOutcome::Kind::Class;
        return;
    }
    if (type != LUA_TTABLE)
        result_error(L, "classify() must return a class name, a table or nil, not a %s", luaL_typename(L, idx));

    bool has_class = false, has_reject = false;
    lua_pushnil(L);
    while (lua_next(L, idx)) {
        if (lua_type(L, -2) != LUA_TSTRING)
            result_error(L, "classify() returned a table with a %s key; only named fields are allowed",
                         luaL_typename(L, -2));
        const char* key = lua_tostring(L, -2);
        int v = lua_gettop(L);
        size_t n = 0;
        const char* p = nullptr;
        switch (result_field(key)) {
            case rClass:
            case rReason:
            case rReject:
            case rQos:
                if (lua_type(L, v) != LUA_TSTRING)
                    result_error(L, "classify(): field '%s' must be a string, not a %s", key, luaL_typename(L, v));
                p = lua_tolstring(L, v, &n);
                if (std::strcmp(key, "class") == 0) {
                    if (n == 0) result_error(L, "%s", "classify() returned an empty class name");
                    if (!assign(out.class_name, p, n)) result_error(L, "%s", "out of memory");
                    has_class = true;
                } else if (std::strcmp(key, "reason") == 0) {
                    if (!assign(out.reason, p, n)) result_error(L, "%s", "out of memory");
                } else if (std::strcmp(key, "reject") == 0) {
                    if (!assign(out.reject_message, p, n)) result_error(L, "%s", "out of memory");
                    has_reject = true;
                } else {
                    if (!assign_opt(out.qos, p, n)) result_error(L, "%s", "out of memory");
                }
                break;
            case rMessage:
                if (lua_type(L, v) == LUA_TSTRING) {
                    p = lua_tolstring(L, v, &n);
                    if (!add_user_message(s, p, n)) result_error(L, "%s", "out of memory");
                } else if (lua_type(L, v) == LUA_TTABLE) {
                    lua_Integer len = static_cast<lua_Integer>(lua_rawlen(L, v));
                    for (lua_Integer i = 1; i <= len; ++i) {
                        lua_rawgeti(L, v, i);
                        if (lua_type(L, -1) != LUA_TSTRING)
                            result_error(L, "classify(): field '%s' must list strings, found a %s", key,
                                         luaL_typename(L, -1));
                        p = lua_tolstring(L, -1, &n);
                        if (!add_user_message(s, p, n)) result_error(L, "%s", "out of memory");
                        lua_pop(L, 1);
                    }
                } else {
                    result_error(L, "classify(): field '%s' must be a string or a list of strings, not a %s", key,
                                 luaL_typename(L, v));
                }
                break;
            case rPartition: read_string_or_list(L, v, key, ",", out.partition); break;
            case rFeatures: read_string_or_list(L, v, key, "&", out.features); break;
            case rNice: {
                lua_Integer nice = read_integer(L, v, key);
                if (nice < -2147483645LL || nice > 2147483645LL)
                    result_error(L, "classify(): field '%s' is out of range%s", key);
                out.nice = static_cast<int32_t>(nice);
                break;
            }
            case rBeginTime: {
                lua_Integer t = read_integer(L, v, key);
                if (t < 0) result_error(L, "classify(): field '%s' must be a time in seconds since the epoch%s", key);
                out.begin_time = SysSeconds{std::chrono::seconds{t}};
                break;
            }
            case rTimeLimit: {
                if (lua_type(L, v) == LUA_TSTRING) {
                    p = lua_tolstring(L, v, &n);
                    uint32_t minutes = 0;
                    if (!parse_duration_noexcept(p, n, &minutes))
                        result_error(L, "classify(): field 'time_limit' = '%s' is not a Slurm time limit%s", p);
                    out.time_limit_minutes = minutes;
                } else {
                    lua_Integer m = read_integer(L, v, key);
                    if (m < 1 || m > INT32_MAX)
                        result_error(L, "classify(): field '%s' must be a positive number of minutes%s", key);
                    out.time_limit_minutes = static_cast<uint32_t>(m);
                }
                break;
            }
            case rUnknown:
                result_error(L,
                             "classify() returned unknown field '%s' (known: class, reason, message, reject, "
                             "partition, qos, features, nice, begin_time, time_limit)%s",
                             key);
        }
        lua_settop(L, v - 1);
    }
    if (has_reject) {
        s->rejected = true;
        return;
    }
    if (!has_class) result_error(L, "%s", "classify() returned a table without 'class' (or 'reject')");
    out.kind = PolicyOutcome::Kind::Class;
}

}  // namespace lanes::policy_detail
