// SPDX-License-Identifier: GPL-2.0-or-later
// Metered replacements for the Lua functions whose work is not bounded by the
// heap cap and runs in C, where no VM hook can stop it: string.find, match,
// gmatch and gsub (backtracking patterns are O(n^k) in the subject, a C
// callback per match runs no VM instruction), string.rep (an empty string
// repeated math.maxinteger times allocates nothing), table.move (moving nils
// allocates nothing either), and table.sort, concat and unpack (one call over
// an array built at load ran for ~150 ms against a 20 ms budget). Same results
// and error messages as Lua 5.4's; the matcher and the sort here are our own
// and report their work, in steps, to the policy's budget.
#pragma once

#include <lua.hpp>

#include <cstdint>

namespace lanes {

struct StringMeter {
    // Called with the steps done since the last call (at least every 1024
    // steps, and at the end of each call). Raises a Lua error (does not return)
    // when the budget is gone.
    void (*charge)(lua_State* L, uint64_t steps);
    // A result of string.rep above this many bytes is refused up front, by
    // calling too_large (which raises a Lua error, as running out of memory would).
    uint64_t max_string_bytes;
    void (*too_large)(lua_State* L, const char* function, int64_t bytes);
};

// Replace string.find/match/gmatch/gsub/rep and table.move/sort/concat/unpack in the state's
// `string` and `table` libraries (already opened) with metered ones. `meter`
// must outlive the state. Runs inside lua_pcall (may raise on out of memory).
void install_bounded_strings(lua_State* L, const StringMeter* meter);

}  // namespace lanes
