// SPDX-License-Identifier: GPL-2.0-or-later
// The Lua sandbox under the policy engine: one lua_State with a counting
// allocator, instruction/time budgets enforced by a debug hook, and a base
// library without file access, bytecode, finalizers or weak tables.
// Internal to lib/ctld/policy_*.cpp (see policy.hpp for the interface).
// Rules for every lua_CFunction in the policy files:
//  * it is noexcept and catches nothing itself: anything that may throw (string
//    building, C++ callbacks) runs in a small noexcept helper with try/catch;
//  * no C++ object with a non-trivial destructor is alive in a frame that calls
//    a Lua API function that may raise (lua_error/luaL_error longjmp past it).
#pragma once

#include <lua.hpp>

#include <chrono>
#include <cstdint>
#include <string>

#include "ctld/bounded_strings.hpp"
#include "ctld/policy.hpp"

namespace lanes {

namespace policy_detail {

using Clock = std::chrono::steady_clock;

enum class Abort { None, Instructions, Time };

}  // namespace policy_detail

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
    uint64_t instruction_limit = 0;  // this call's: instruction_budget x arm_budget's factor
    int hook_chunk = 1000;
    uint64_t instructions = 0;
    std::chrono::microseconds time_budget{0};
    policy_detail::Clock::time_point deadline{};
    policy_detail::Abort abort = policy_detail::Abort::None;
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
    StringMeter meter{};  // the metered string functions' link to the budgets

    ~LuaState() {
        // Scripts cannot set __gc (see l_setmetatable), so closing runs no
        // script code: it frees at most memory_limit bytes.
        if (L) {
            job = nullptr;
            lua_close(L);
        }
    }
};

namespace policy_detail {

inline LuaState* state_of(lua_State* L) { return *static_cast<LuaState**>(lua_getextraspace(L)); }

// lua_newstate's allocator; ud is the LuaState (memory_limit accounting).
void* counting_alloc(void* ud, void* ptr, size_t osize, size_t nsize) noexcept;
int on_panic(lua_State* L) noexcept;

// Start a call's budgets: factor times the configured instruction and time
// budgets (the top level of a script gets more).
void arm_budget(LuaState* s, int factor);
// StringMeter callbacks (see bounded_strings.hpp).
void charge_steps(lua_State* L, uint64_t steps);
void string_too_large(lua_State* L, const char* function, int64_t bytes);

// Open the allowed standard libraries and replace or remove the unsafe parts
// of the base library. Called inside a protected call (may raise).
void open_sandbox(lua_State* L, LuaState* s);

// Message handler for the script's pcalls, and the text of a failed call.
int locate_error(lua_State* L) noexcept;
std::string error_text(lua_State* L, int status);

}  // namespace policy_detail
}  // namespace lanes
