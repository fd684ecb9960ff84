// SPDX-License-Identifier: GPL-2.0-or-later
// The metered string functions give Lua 5.4's results (differential test
// against the stock library on the same cases) and report their work.
#include <gtest/gtest.h>

#include <lua.hpp>

#include <string>
#include <vector>

#include "ctld/bounded_strings.hpp"

namespace lanes {
namespace {

uint64_t g_steps = 0;
uint64_t g_limit = ~0ull;

void count_steps(lua_State* L, uint64_t steps) {
    g_steps += steps;
    if (g_steps > g_limit) luaL_error(L, "budget gone");
}

void too_large(lua_State* L, const char* function, int64_t bytes) {
    luaL_error(L, "%s: %I bytes is too large", function, static_cast<lua_Integer>(bytes));
}

const StringMeter kMeter{count_steps, 1u << 20, too_large};

// Runs `chunk` (which returns one string) in a fresh state; bounded or stock.
std::string run(const std::string& chunk, bool bounded) {
    lua_State* L = luaL_newstate();
    luaL_openlibs(L);
    if (bounded) install_bounded_strings(L, &kMeter);
    std::string out;
    if (luaL_loadstring(L, chunk.c_str()) != LUA_OK) {
        out = std::string("load error: ") + lua_tostring(L, -1);
    } else if (lua_pcall(L, 0, 1, 0) != LUA_OK) {
        out = std::string("error: ") + (lua_tostring(L, -1) ? lua_tostring(L, -1) : "?");
    } else {
        size_t n = 0;
        const char* p = lua_tolstring(L, -1, &n);
        out = p ? std::string(p, n) : "(not a string)";
    }
    lua_close(L);
    return out;
}

// A Lua helper that renders any list of results as one string.
const char* kShow = R"(
local function show(...)
  local t = table.pack(...)
  local parts = {}
  for i = 1, t.n do parts[#parts + 1] = type(t[i]) .. ":" .. tostring(t[i]) end
  return table.concat(parts, "|")
end
)";

struct PatternCase {
    const char* subject;
    const char* pattern;
};

const std::vector<PatternCase> kPatternCases = {
    {"hello world", "o"},
    {"hello world", "l+"},
    {"hello world", "l*"},
    {"hello world", "l-o"},
    {"hello world", "^h"},
    {"hello world", "^w"},
    {"hello world", "d$"},
    {"hello world", "o$"},
    {"a$b", "$b"},
    {"hello world", "(o)(r)"},
    {"hello world", "()ll()"},
    {"hello world", "%w+"},
    {"hello world", "%W"},
    {"key = value", "(%w+)%s*=%s*(%w+)"},
    {"THE (quick) fox", "%((%a+)%)"},
    {"f(a(b)c)d", "%b()"},
    {"THE (quick) fox", "%f[%a]%a+"},
    {"THE (quick) fox", "%f[%a]%a+%f[%A]"},
    {"aaa", "a-"},
    {"aaa", "a-$"},
    {"aaab", "a?b"},
    {"ab", "a?a?b"},
    {"x]y", "[]]"},
    {"x^y", "[%^]"},
    {"a-b", "[a%-]+"},
    {"hello", "[^l]+"},
    {"abc123def", "[a-c]+()"},
    {"abc123def", "[%d]+"},
    {"abcabc", "(abc)%1"},
    {"abcab", "(abc)%1"},
    {"", ""},
    {"", ".*"},
    {"abc", ""},
    {"abc", ".-"},
    {"a.b.c", "%."},
    {"a+b", "+"},
    {"hello", "(h)(e)(l)(l)(o)"},
    {"x=1, y=22, z=333", "(%a)=(%d+)"},
    {"one two  three", "%s*"},
    {"abc", "((a)(b))"},
    {"gpu:4", "^gpu:(%d+)$"},
    {"gres/gpu:8,gres/gpu:a100:2", "gpu:?%w*:?(%d+)"},
    {"a\\0b\\0c", "%z"},
    {"a\\0b", "[%z]"},
    {"a\\0b\\0c", "\\0"},
    {"ÿþ", "[\xfe-\xff]+"},
};

TEST(BoundedStrings, SameResultsAsLua) {
    for (const auto& c : kPatternCases) {
        for (const char* init : {"1", "2", "-2", "0", "100"}) {
            std::string chunk = std::string(kShow) + "local s, p, i = ...\n";
            std::string args = std::string("local s = ") + "'" + c.subject + "'" + " local p = '" + c.pattern +
                               "' local i = " + init + "\n";
            std::string body = std::string(kShow) + args +
                               "local out = {show(s:find(p, i)), show(s:find(p, i, true)), show(s:match(p, i)),"
                               " show(s:gsub(p, '<%0>')), show(s:gsub(p, '%%', 2)),"
                               " show(s:gsub(p, function(a) return a and a .. '!' end)),"
                               " show(s:gsub(p, {a = 'A', l = false}))}\n"
                               "for a, b in s:gmatch(p, i) do out[#out + 1] = show(a, b) end\n"
                               "return table.concat(out, '\\n')\n";
            EXPECT_EQ(run(body, true), run(body, false))
                << "subject '" << c.subject << "' pattern '" << c.pattern << "' init " << init;
        }
    }
}

TEST(BoundedStrings, SameErrorsAsLua) {
    for (const char* p : {"%", "[a", "(()", "a)", "%1", "(a)%2", "%f", "%fa", "%b", "%g(", "[%"}) {
        for (const char* call : {"find", "match", "gsub"}) {
            std::string body = std::string("local ok, e = pcall(string.") + call + ", 'abc(', '" + p + "'" +
                               (std::string(call) == "gsub" ? ", 'x'" : "") +
                               ") return tostring(ok) .. ' ' .. tostring(e)";
            EXPECT_EQ(run(body, true), run(body, false)) << call << " '" << p << "'";
        }
    }
    EXPECT_EQ(run("return tostring((pcall(string.gsub, 'abc', 'b', '%x')))", true), "false");
    EXPECT_EQ(run("local ok, e = pcall(string.gsub, 'abc', 'b', '%x') return e", true),
              run("local ok, e = pcall(string.gsub, 'abc', 'b', '%x') return e", false));
    EXPECT_EQ(run("local ok, e = pcall(string.gsub, 'abc', 'b', {b = {}}) return e", true),
              run("local ok, e = pcall(string.gsub, 'abc', 'b', {b = {}}) return e", false));
}

TEST(BoundedStrings, RepAndMoveLikeLua) {
    for (const char* chunk : {"return ('ab'):rep(3)", "return ('ab'):rep(3, ', ')", "return ('ab'):rep(0)",
                              "return ('ab'):rep(-1)", "return (''):rep(5, '-')", "return (''):rep(1, '-')",
                              "return table.concat(table.move({1, 2, 3}, 1, 3, 2), ',')",
                              "return table.concat(table.move({1, 2, 3}, 2, 3, 1, {9, 9, 9}), ',')",
                              "return tostring(#table.move({1, 2}, 2, 1, 5))"}) {
        EXPECT_EQ(run(chunk, true), run(chunk, false)) << chunk;
    }
}

TEST(BoundedStrings, EmptyRepeatedForeverIsInstant) {
    g_steps = 0;
    g_limit = ~0ull;
    EXPECT_EQ(run("return string.rep('', math.maxinteger) .. 'ok'", true), "ok");
    EXPECT_EQ(run("return tostring(#string.rep('', math.maxinteger, ''))", true), "0");
}

TEST(BoundedStrings, OversizedRepIsRefusedUpFront) {
    std::string r = run("return string.rep('x', 1 << 40)", true);
    EXPECT_NE(r.find("string.rep: 1099511627776 bytes is too large"), std::string::npos) << r;
    r = run("return string.rep('x', math.maxinteger, 'yy')", true);
    EXPECT_NE(r.find("too large"), std::string::npos) << r;
    EXPECT_EQ(run("return tostring(#string.rep('x', 1 << 20))", true), "1048576");
}

TEST(BoundedStrings, BacktrackingPatternIsCharged) {
    // Cubic in the subject: three .- on 1000 characters that never match.
    g_steps = 0;
    g_limit = 5'000'000;
    std::string r = run("local s = string.rep('a', 1000) return tostring(s:find('.-.-.-b'))", true);
    EXPECT_NE(r.find("budget gone"), std::string::npos) << r;
    EXPECT_GT(g_steps, 5'000'000u);
    g_limit = ~0ull;
}

TEST(BoundedStrings, CallbacksPerMatchAreCharged) {
    g_steps = 0;
    g_limit = ~0ull;
    EXPECT_EQ(run("local s = string.rep('A', 100000) return (s:gsub('.', string.lower)):sub(1, 3)", true), "aaa");
    EXPECT_GE(g_steps, 100000u);
}

TEST(BoundedStrings, MovingNilsIsCharged) {
    g_steps = 0;
    g_limit = 1'000'000;
    std::string r = run("table.move({}, 1, math.maxinteger - 1, 1) return 'moved'", true);
    EXPECT_NE(r.find("budget gone"), std::string::npos) << r;
    g_limit = ~0ull;
}

}  // namespace
}  // namespace lanes
