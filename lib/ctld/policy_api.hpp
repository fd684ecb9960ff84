// SPDX-License-Identifier: GPL-2.0-or-later
// What a policy script sees and returns: the job proxy, the read-only
// `lanes` table (lanes-policy(7)) and the table classify() returns.
// Internal to lib/ctld/policy_*.cpp.
#pragma once

#include <cstddef>

#include "ctld/lua_sandbox.hpp"

namespace lanes::policy_detail {

// Longest user message, reject text, reason, error or log line kept from a script.
constexpr size_t kMaxUserMessageBytes = 1024;

// Install print, the job and job.env proxies (registry refs in s), the
// read-only `lanes` table and reject(). Called inside a protected call.
void install_policy_api(lua_State* L, LuaState* s);

// Read classify()'s return value at idx into s->out (or s->rejected);
// raises a Lua error on a malformed value.
void read_result(lua_State* L, LuaState* s, int idx);

}  // namespace lanes::policy_detail
