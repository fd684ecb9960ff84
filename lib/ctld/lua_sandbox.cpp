// SPDX-License-Identifier: GPL-2.0-or-later
// The Lua sandbox: allocator, budgets (the debug hook), the replaced parts of
// the base library. See lua_sandbox.hpp for the rules every lua_CFunction
// here follows.
#include "ctld/lua_sandbox.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace lanes::policy_detail {

namespace {

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

void budget_hook(lua_State* L, lua_Debug* ar) noexcept;

// One VM instruction may copy or build a string of up to memory_limit bytes
// (`s .. t`), and the count hook runs only every hook_chunk instructions (up to
// 1000): a loop of such instructions ran for seconds between two checks. A
// large block allocated during a call reads the clock, and past the deadline
// makes the hook run at the very next instruction. lua_sethook() is safe at
// any point (Lua allows it in signal handlers).
constexpr size_t kLargeBlock = 64 * 1024;

void check_clock_on_large_block(LuaState* s) noexcept {
    if (!s->L || s->deadline == Clock::time_point{} || s->abort != Abort::None) return;
    if (Clock::now() > s->deadline) lua_sethook(s->L, budget_hook, LUA_MASKCOUNT | LUA_MASKCALL, 1);
}

}  // namespace

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
        // Only for a new block. A block grown in place may be the Lua stack:
        // Lua 5.4.5 and later turn the stack's pointers into offsets while
        // luaD_reallocstack() asks for a bigger one (deep recursion), and
        // lua_getinfo() then reads offsets as pointers and crashes (it did,
        // with Debian 13's Lua 5.4.7 and unstable's 5.4.9). A refused growth
        // is named by the line the count hook saw last.
        if (!ptr) note_position(s);
        return nullptr;
    }
    void* p = std::realloc(ptr, nsize);
    if (!p) {
        if (nsize <= old) return ptr;  // Lua assumes shrinking never fails; the old block still fits
        s->mem_refused = true;
        return nullptr;
    }
    s->mem_used = s->mem_used - old + nsize;
    if (nsize >= kLargeBlock) check_clock_on_large_block(s);
    return p;
}

int on_panic(lua_State* L) noexcept {
    // Everything runs under lua_pcall; reaching this is a bug in this file.
    const char* msg = lua_tostring(L, -1);
    std::fprintf(stderr, "lanes: policy: unprotected Lua error: %s\n", msg ? msg : "?");
    return 0;  // Lua aborts
}

// --- the hook: budgets and the line classify() returned from ---------------

namespace {

// Records the first budget the state has run past; true once one has been.
bool note_overrun(LuaState* s) {
    if (s->abort == Abort::None) {
        if (s->instructions > s->instruction_limit) s->abort = Abort::Instructions;
        else if (Clock::now() > s->deadline) s->abort = Abort::Time;
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
                            static_cast<lua_Integer>(s->instruction_limit));
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

}  // namespace

void arm_budget(LuaState* s, int factor) {
    s->instructions = 0;
    s->abort = Abort::None;
    s->mem_refused = false;
    s->deadline = Clock::now() + s->time_budget * factor;
    // The top level gets `factor` times the instruction budget too (it got
    // only the time budget's factor, against lanes-policy(7)).
    uint64_t budget = s->instruction_budget * static_cast<uint64_t>(factor);
    s->instruction_limit = budget;
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
                        static_cast<lua_Integer>(s->instruction_limit));
    else
        lua_pushfstring(L, "time budget exceeded (%I us) in a string or table function",
                        static_cast<lua_Integer>(s->time_budget.count()));
    lua_concat(L, 2);
    lua_error(L);
}

namespace {

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

// xpcall(f, msgh, ...) with the handler guarded. Lua runs a message handler
// where the error is raised, before unwinding; a budget error is raised inside
// the debug hook, where Lua has turned hooks off, so the script's handler ran
// with no budget at all (`xpcall(f, function() while true do end end)` never
// returned, and slurmctld spun). Once a budget is spent the guard passes the
// error on without running the script's handler; before that the handler runs
// metered like any other function.
int guarded_handler(lua_State* L) noexcept {
    if (state_of(L)->abort != Abort::None) return 1;
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

int l_xpcall(lua_State* L) noexcept {
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, guarded_handler, 1);
    lua_replace(L, 2);
    lua_pushvalue(L, lua_upvalueindex(1));  // the library's xpcall
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

// A snapshot metatable remembers here whether the script's metatable was
// protected (had a __metatable field).
const char kProtectedKey = 0;

}  // namespace

// StringMeter::too_large: a string.rep result over memory_limit is a memory
// bomb like any other (reported as the memory limit, state discarded).
void string_too_large(lua_State* L, const char* function, int64_t bytes) {
    LuaState* s = state_of(L);
    s->mem_refused = true;
    luaL_error(L, "%s: a result of %I bytes: memory limit of %I bytes exceeded", function,
               static_cast<lua_Integer>(bytes), static_cast<lua_Integer>(s->mem_limit));
}

namespace {

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

}  // namespace

void open_sandbox(lua_State* L, LuaState* s) {
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
    lua_getglobal(L, "xpcall");
    lua_pushcclosure(L, l_xpcall, 1);
    lua_setglobal(L, "xpcall");
    lua_getglobal(L, LUA_STRLIBNAME);
    lua_pushnil(L);
    lua_setfield(L, -2, "dump");
    lua_pop(L, 1);
    // Make package.loaded (the registry's _LOADED) unreachable by name: no package lib.
}

// Message handler of the script's pcalls: an error object that is not a
// string (error({}), error(nil)) gets the line it was raised at, which is
// only known here, before the stack unwinds.
int locate_error(lua_State* L) noexcept {
    if (lua_type(L, 1) == LUA_TSTRING || lua_type(L, 1) == LUA_TNUMBER) return 1;
    lua_Debug ar;
    for (int level = 1; lua_getstack(L, level, &ar); ++level) {
        if (lua_getinfo(L, "Sl", &ar) && ar.currentline > 0) {
            lua_pushfstring(L, "%s:%d: error object is a %s value", ar.short_src, ar.currentline, luaL_typename(L, 1));
            return 1;
        }
    }
    return 1;
}

std::string error_text(lua_State* L, int status) {
    if (status == LUA_ERRMEM) return "not enough memory";
    size_t n = 0;
    const char* p = lua_type(L, -1) == LUA_TSTRING ? lua_tolstring(L, -1, &n) : nullptr;
    if (p) return std::string(p, n);
    return std::string("error object is a ") + luaL_typename(L, -1) + " value";
}

}  // namespace lanes::policy_detail
