// The Lua policy engine. Rules for every lua_CFunction here:
//  * it is noexcept and catches nothing itself: anything that may throw (string
//    building, C++ callbacks) runs in a small noexcept helper with try/catch;
//  * no C++ object with a non-trivial destructor is alive in a frame that calls
//    a Lua API function that may raise (lua_error/luaL_error longjmp past it).
#include "ctld/policy.hpp"

#include <lua.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "ctld/bounded_strings.hpp"
#include "ctld/builtin_rules.hpp"
#include "core/text.hpp"

namespace lanes {

namespace {

using Clock = std::chrono::steady_clock;

enum class Abort { None, Instructions, Time };

constexpr size_t kMaxUserMessages = 16;
constexpr size_t kMaxUserMessageBytes = 1024;
constexpr int kLoadBudgetFactor = 10;  // the top level may do some setup work

// Job fields the proxy exposes, in pairs() order.
enum JobField {
    kName = 1, kComment, kUser, kUid, kAccount, kPartition, kQos, kTresPerNode, kTresPerJob, kGpus,
    kMinNodes, kMaxNodes, kNumTasks, kTimeLimit, kFeatures, kBatch, kEnv, kLanesClass, kLanesCap,
    kSubmitTime, kBeginTime, kFieldEnd
};
const char* const kJobFieldNames[kFieldEnd] = {
    nullptr, "name", "comment", "user", "uid", "account", "partition", "qos", "tres_per_node", "tres_per_job",
    "gpus", "min_nodes", "max_nodes", "num_tasks", "time_limit", "features", "batch", "env", "lanes_class",
    "lanes_cap", "submit_time", "begin_time"};

// Fields of the table classify() may return.
enum ResultField { rClass, rReason, rMessage, rReject, rPartition, rQos, rFeatures, rNice, rBeginTime, rTimeLimit, rUnknown };
ResultField result_field(const char* key) {
    static const char* const names[] = {"class", "reason", "message", "reject", "partition",
                                        "qos", "features", "nice", "begin_time", "time_limit"};
    for (int i = 0; i < rUnknown; ++i)
        if (std::strcmp(key, names[i]) == 0) return static_cast<ResultField>(i);
    return rUnknown;
}

}  // namespace

// One lua_State and everything its C functions need. Pointed to by the state's
// extra space and used as the allocator's userdata.
struct LuaState {
    lua_State* L = nullptr;
    // Memory accounting.
    size_t mem_used = 0;
    size_t mem_limit = 0;
    bool mem_refused = false;
    // Budgets.
    uint64_t instruction_budget = 0;
    int hook_chunk = 1000;
    uint64_t instructions = 0;
    std::chrono::microseconds time_budget{0};
    Clock::time_point deadline{};
    Abort abort = Abort::None;
    // The current call.
    const JobView* job = nullptr;
    SysSeconds now{};
    const WindowOracle* windows = nullptr;
    const Config* config = nullptr;
    const LogSink* log = nullptr;
    const std::string* chunk_name = nullptr;
    bool in_classify = false;
    bool rejected = false;
    int return_line = 0;
    char return_src[LUA_IDSIZE] = {};
    PolicyOutcome out;
    // Set up once.
    int classify_ref = LUA_NOREF;
    int job_ref = LUA_NOREF;
    int env_ref = LUA_NOREF;
    bool tainted = false;  // budget exceeded: discard rather than reuse
    uint64_t calls = 0;    // function calls seen by the hook this call
    int unplaced = 0;      // aborts seen in calls with no Lua line to name yet
    int last_line = 0;     // where the count hook last saw the script (names out-of-memory errors)
    char last_src[LUA_IDSIZE] = {};
    StringMeter meter{};   // the metered string functions' link to the budgets

    ~LuaState() {
        // Scripts cannot set __gc (see l_setmetatable), so closing runs no
        // script code: it frees at most memory_limit bytes.
        if (L) {
            job = nullptr;
            lua_close(L);
        }
    }
};

namespace {

LuaState* state_of(lua_State* L) { return *static_cast<LuaState**>(lua_getextraspace(L)); }

// Where the script is, for an out-of-memory error (which unwinds before
// anyone can ask). Read-only debug queries: they allocate nothing.
void note_position(LuaState* s) noexcept {
    if (!s->L) return;
    lua_Debug ar;
    for (int level = 0; lua_getstack(s->L, level, &ar); ++level) {
        if (lua_getinfo(s->L, "Sl", &ar) && ar.currentline > 0) {
            s->last_line = ar.currentline;
            std::memcpy(s->last_src, ar.short_src, sizeof s->last_src);
            return;
        }
    }
}

void* counting_alloc(void* ud, void* ptr, size_t osize, size_t nsize) noexcept {
    auto* s = static_cast<LuaState*>(ud);
    size_t old = ptr ? osize : 0;
    if (nsize == 0) {
        std::free(ptr);
        s->mem_used -= old;
        return nullptr;
    }
    if (nsize > old && s->mem_used - old + nsize > s->mem_limit) {
        s->mem_refused = true;
        note_position(s);
        return nullptr;
    }
    void* p = std::realloc(ptr, nsize);
    if (!p) {
        if (nsize <= old) return ptr;  // Lua assumes shrinking never fails; the old block still fits
        s->mem_refused = true;
        return nullptr;
    }
    s->mem_used = s->mem_used - old + nsize;
    return p;
}

int on_panic(lua_State* L) noexcept {
    // Everything runs under lua_pcall; reaching this is a bug in this file.
    const char* msg = lua_tostring(L, -1);
    std::fprintf(stderr, "lanes: policy: unprotected Lua error: %s\n", msg ? msg : "?");
    return 0;  // Lua aborts
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
        std::string text = "lanes: policy ";
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

// --- the hook: budgets and the line classify() returned from ---------------

// Records the first budget the state has run past; true once one has been.
bool note_overrun(LuaState* s) {
    if (s->abort == Abort::None) {
        if (s->instructions > s->instruction_budget)
            s->abort = Abort::Instructions;
        else if (Clock::now() > s->deadline)
            s->abort = Abort::Time;
    }
    return s->abort != Abort::None;
}

void budget_hook(lua_State* L, lua_Debug* ar) noexcept {
    LuaState* s = state_of(L);
    bool is_call = ar->event == LUA_HOOKCALL || ar->event == LUA_HOOKTAILCALL;
    if (ar->event == LUA_HOOKCOUNT || is_call) {
        // Calls count too: C functions called from C (a gsub callback, a sort
        // comparator) run no VM instruction, so only the call hook sees them.
        // The clock is read on every call: one C call on a string of up to
        // memory_limit bytes (string.upper of 16 MiB, some ms) is then the
        // most that runs between two checks.
        if (is_call) {
            ++s->instructions;
            ++s->calls;
        } else {
            s->instructions += static_cast<uint64_t>(s->hook_chunk);
            if (s->abort == Abort::None && lua_getinfo(L, "Sl", ar) && ar->currentline > 0) {
                s->last_line = ar->currentline;
                std::memcpy(s->last_src, ar->short_src, sizeof s->last_src);
            }
        }
        if (!note_overrun(s)) return;
        // From now on fire on every instruction and call, so pcall() in the
        // script cannot swallow the abort and carry on.
        lua_sethook(L, budget_hook, LUA_MASKCOUNT | LUA_MASKCALL, 1);
        int line = 0;
        const char* src = "?";
        char caller_src[LUA_IDSIZE];
        if (is_call) {
            // The function being called has not started (and may be C called
            // from C, as gsub calls string.lower): name the nearest Lua line.
            lua_Debug caller;
            for (int level = 1; lua_getstack(L, level, &caller); ++level) {
                if (lua_getinfo(L, "Sl", &caller) && caller.currentline > 0) {
                    line = caller.currentline;
                    std::memcpy(caller_src, caller.short_src, sizeof caller_src);
                    src = caller_src;
                    break;
                }
            }
            // None (a __close of the C library's own buffers runs with no
            // visible caller): the next event, one instruction after the C
            // code returns to Lua, names the line; a bounded number of times.
            if (line == 0 && ++s->unplaced < 64) return;
        } else if (lua_getinfo(L, "Sl", ar)) {
            line = ar->currentline;
            src = ar->short_src;
        }
        if (s->abort == Abort::Instructions)
            lua_pushfstring(L, "%s:%d: instruction budget exceeded (%I VM instructions)", src, line,
                            static_cast<lua_Integer>(s->instruction_budget));
        else
            lua_pushfstring(L, "%s:%d: time budget exceeded (%I us)", src, line,
                            static_cast<lua_Integer>(s->time_budget.count()));
        lua_error(L);
    } else if (ar->event == LUA_HOOKRET && s->in_classify) {
        // The last Lua function that returns straight to C made the decision:
        // classify() itself, or what it tail-called (`return training(job)`).
        // Functions returning into pcall() come earlier and are overwritten.
        lua_Debug caller;
        if (!lua_getstack(L, 1, &caller) || !lua_getinfo(L, "S", &caller) || caller.what[0] != 'C') return;
        if (lua_getinfo(L, "Sl", ar) && ar->currentline > 0) {
            s->return_line = ar->currentline;
            std::memcpy(s->return_src, ar->short_src, sizeof s->return_src);
        }
    }
}

void arm_budget(LuaState* s, int factor) {
    s->instructions = 0;
    s->abort = Abort::None;
    s->mem_refused = false;
    s->deadline = Clock::now() + s->time_budget * factor;
    uint64_t budget = s->instruction_budget * static_cast<uint64_t>(factor);
    s->hook_chunk = static_cast<int>(std::clamp<uint64_t>(budget / 100, 1, 1000));
    s->calls = 0;
    s->unplaced = 0;
    s->last_line = 0;
    lua_sethook(s->L, budget_hook, LUA_MASKCOUNT | LUA_MASKRET | LUA_MASKCALL, s->hook_chunk);
}

// StringMeter::charge: work done inside the metered string functions counts
// as VM instructions; past a budget, abort as the hook does, naming the line
// of the Lua code that called the string function.
void charge_steps(lua_State* L, uint64_t steps) {
    LuaState* s = state_of(L);
    s->instructions += steps;
    if (!note_overrun(s)) return;
    lua_sethook(L, budget_hook, LUA_MASKCOUNT | LUA_MASKCALL, 1);
    luaL_where(L, 1);
    if (s->abort == Abort::Instructions)
        lua_pushfstring(L, "instruction budget exceeded (%I VM instructions) in a string or table function",
                        static_cast<lua_Integer>(s->instruction_budget));
    else
        lua_pushfstring(L, "time budget exceeded (%I us) in a string or table function",
                        static_cast<lua_Integer>(s->time_budget.count()));
    lua_concat(L, 2);
    lua_error(L);
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
            if (j.time_limit_minutes) lua_pushinteger(L, *j.time_limit_minutes); else lua_pushnil(L);
            break;
        case kFeatures: push_string(L, j.features); break;
        case kBatch: lua_pushboolean(L, j.batch); break;
        case kEnv:
            if (j.batch) lua_rawgeti(L, LUA_REGISTRYINDEX, s->env_ref); else lua_pushnil(L);
            break;
        case kLanesClass:
            if (j.requested_class) push_string(L, *j.requested_class); else lua_pushnil(L);
            break;
        case kLanesCap:
            if (j.requested_cap) push_string(L, *j.requested_cap); else lua_pushnil(L);
            break;
        case kSubmitTime: lua_pushinteger(L, j.submit_time.time_since_epoch().count()); break;
        case kBeginTime:
            if (j.begin_time) lua_pushinteger(L, j.begin_time->time_since_epoch().count()); else lua_pushnil(L);
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
    if (v) push_string(L, *v); else lua_pushnil(L);
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
    emit_log(state_of(L), level == 0 ? LogLevel::Info : level == 1 ? LogLevel::Debug : LogLevel::Error, src, line, msg,
             n);
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
    if (value) lua_pushnumber(L, *value); else lua_pushnil(L);
    if (age) lua_pushinteger(L, *age); else lua_pushnil(L);
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
    if (r == 2) lua_pushnil(L); else lua_pushinteger(L, minutes);
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

// load(chunk [, name [, mode [, env]]]): text chunks only, from strings only.
int l_load(lua_State* L) noexcept {
    size_t n;
    const char* text = luaL_checklstring(L, 1, &n);
    charge_steps(L, n);  // the parser runs in C: one step a byte
    const char* name = luaL_optstring(L, 2, "=(load)");
    int has_env = !lua_isnone(L, 4);
    int status = luaL_loadbufferx(L, text, n, name, "t");
    if (status == LUA_OK) {
        if (has_env) {
            lua_pushvalue(L, 4);
            if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
        }
        return 1;
    }
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
}

int l_collectgarbage(lua_State* L) noexcept {
    const char* opt = luaL_optstring(L, 1, "collect");
    if (std::strcmp(opt, "count") == 0) {
        int kb = lua_gc(L, LUA_GCCOUNT, 0);
        int b = lua_gc(L, LUA_GCCOUNTB, 0);
        lua_pushnumber(L, static_cast<lua_Number>(kb) + static_cast<lua_Number>(b) / 1024);
        return 1;
    }
    return luaL_error(L, "collectgarbage('%s') is not available in policies", opt);
}

// A snapshot metatable remembers here whether the script's metatable was
// protected (had a __metatable field).
const char kProtectedKey = 0;

// StringMeter::too_large: a string.rep result over memory_limit is a memory
// bomb like any other (reported as the memory limit, state discarded).
void string_too_large(lua_State* L, const char* function, int64_t bytes) {
    LuaState* s = state_of(L);
    s->mem_refused = true;
    luaL_error(L, "%s: a result of %I bytes: memory limit of %I bytes exceeded", function,
               static_cast<lua_Integer>(bytes),
               static_cast<lua_Integer>(s->mem_limit));
}

// setmetatable(t, mt), with the metatable read once, now: t gets a snapshot
// (a shallow copy) of mt, so fields added to mt later change nothing, and
// getmetatable(t) still returns mt (or mt.__metatable). __gc and __mode are
// refused: finalizers run with hooks off, so no budget could stop them, and
// weak tables make the collector's work superlinear. Without them, lua_close
// and every collection run no script code and free at most memory_limit bytes.
int l_setmetatable(lua_State* L) noexcept {
    luaL_checktype(L, 1, LUA_TTABLE);
    int type = lua_type(L, 2);
    luaL_argexpected(L, type == LUA_TNIL || type == LUA_TTABLE, 2, "nil or table");
    if (lua_getmetatable(L, 1)) {
        lua_rawgetp(L, -1, &kProtectedKey);
        if (lua_toboolean(L, -1)) return luaL_error(L, "cannot change a protected metatable");
        lua_pop(L, 2);
    }
    lua_settop(L, 2);
    if (type == LUA_TNIL) {
        lua_setmetatable(L, 1);
        return 1;
    }
    for (const char* key : {"__gc", "__mode"}) {
        lua_pushstring(L, key);
        if (lua_rawget(L, 2) != LUA_TNIL)
            return luaL_error(L,
                              "setmetatable: %s is not allowed in policies (finalizers and weak tables run "
                              "outside the budgets)",
                              key);
        lua_settop(L, 2);
    }
    lua_createtable(L, 0, 8);
    int snapshot = lua_gettop(L);
    uint64_t copied = 0;
    lua_pushnil(L);
    while (lua_next(L, 2)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_rawset(L, snapshot);
        if ((++copied & 1023) == 0) charge_steps(L, 1024);
    }
    lua_pushliteral(L, "__metatable");
    bool is_protected = lua_rawget(L, 2) != LUA_TNIL;
    lua_pop(L, 1);
    if (!is_protected) {
        lua_pushvalue(L, 2);
        lua_setfield(L, snapshot, "__metatable");
    }
    lua_pushboolean(L, is_protected);
    lua_rawsetp(L, snapshot, &kProtectedKey);
    lua_setmetatable(L, 1);
    lua_settop(L, 1);
    return 1;
}

int setup_state(lua_State* L) noexcept {
    LuaState* s = state_of(L);
    // Libraries: base, string, table, math, utf8. Not os, io, package, debug, coroutine.
    luaL_requiref(L, LUA_GNAME, luaopen_base, 1);
    luaL_requiref(L, LUA_STRLIBNAME, luaopen_string, 1);
    luaL_requiref(L, LUA_TABLIBNAME, luaopen_table, 1);
    luaL_requiref(L, LUA_MATHLIBNAME, luaopen_math, 1);
    luaL_requiref(L, LUA_UTF8LIBNAME, luaopen_utf8, 1);
    lua_settop(L, 0);
    install_bounded_strings(L, &s->meter);
    lua_pushcfunction(L, l_setmetatable);
    lua_setglobal(L, "setmetatable");
    for (const char* name : {"dofile", "loadfile", "warn", "require"}) {
        lua_pushnil(L);
        lua_setglobal(L, name);
    }
    lua_pushcfunction(L, l_load);
    lua_setglobal(L, "load");
    lua_pushcfunction(L, l_collectgarbage);
    lua_setglobal(L, "collectgarbage");
    lua_pushcfunction(L, l_print);
    lua_setglobal(L, "print");
    lua_getglobal(L, LUA_STRLIBNAME);
    lua_pushnil(L);
    lua_setfield(L, -2, "dump");
    lua_pop(L, 1);
    // Make package.loaded (the registry's _LOADED) unreachable by name: no package lib.

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
    lua_createtable(L, static_cast<int>(s->config->windows.all().size()), 0);
    lua_Integer i = 1;
    for (const auto& entry : s->config->windows.all()) {
        push_string(L, entry.first);
        lua_rawseti(L, -2, i++);
    }
    make_readonly(L, "lanes.windows");
    lua_setfield(L, -2, "windows");
    make_readonly(L, "lanes");
    lua_setglobal(L, "lanes");
    lua_pushcfunction(L, l_reject);
    lua_setglobal(L, "reject");
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

// Message handler of the script's pcalls: an error object that is not a
// string (error({}), error(nil)) gets the line it was raised at, which is
// only known here, before the stack unwinds.
int locate_error(lua_State* L) noexcept {
    if (lua_type(L, 1) == LUA_TSTRING || lua_type(L, 1) == LUA_TNUMBER) return 1;
    lua_Debug ar;
    for (int level = 1; lua_getstack(L, level, &ar); ++level) {
        if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
            lua_pushfstring(L, "%s:%d: error object is a %s value", ar.short_src, ar.currentline,
                            luaL_typename(L, 1));
            return 1;
        }
    }
    return 1;
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

std::string error_text(lua_State* L, int status) {
    if (status == LUA_ERRMEM) return "not enough memory";
    size_t n = 0;
    const char* p = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &n) : nullptr;
    if (p) return std::string(p, n);
    return std::string("error object is a ") + luaL_typename(L, -1) + " value";
}

std::string basename_of(const std::string& path) {
    size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
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
    auto give_up = Clock::now() + std::max<std::chrono::microseconds>(config_->policy.time_budget,
                                                                      std::chrono::milliseconds(1));
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
    {
        std::lock_guard lock(mutex_);
        background_ = true;
        wake_ = std::move(wake);
    }
    if (wake_) wake_();
}

void Policy::maintain() {
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
            if (log_) log_(LogLevel::Error, "lanes: policy: cannot rebuild a Lua state: " + made.error().message);
        }
    }
}

size_t Policy::state_count() const {
    std::lock_guard lock(mutex_);
    return total_;
}

uint64_t Policy::rebuilds() const {
    std::lock_guard lock(mutex_);
    return rebuilds_;
}

PolicyOutcome Policy::classify(const JobView& job, SysSeconds now, const WindowOracle& windows) noexcept {
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
                    ": self-check: classify() returned unknown class '" + out.class_name + "'");
    return {};
}

}  // namespace lanes
