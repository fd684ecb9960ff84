// SPDX-License-Identifier: GPL-2.0-or-later
// A generator of random Lua 5.4 policies over the whole API the sandbox
// allows: the base, string, table, math and utf8 libraries, the `lanes` table,
// the job proxy, metamethods, pcall/xpcall/error with message handlers, string
// patterns (pathological ones too), closures, upvalues, long strings,
// recursion, goto and integer/float edge cases, and a classify(job) that
// returns classes, nil, reject tables and malformed values. Deterministic
// from a seed. Used by tests/fuzz/policy_fuzz.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <vector>

namespace lanes::fuzz {

// The job name the generated classify() answers "inference" to before doing
// anything else: the canary that shows the state still works.
inline constexpr const char* kCanaryJob = "lanes-fuzz-canary";
inline constexpr const char* kCanaryClass = "inference";

class LuaGen {
public:
    // open_holes: also write the attacks the in-process sandbox is known not to
    // bound (see kOpenHoles below), for the day classification runs where an
    // overrun can be cut short from outside.
    explicit LuaGen(uint64_t seed, bool open_holes = false) : rng_(seed), open_holes_(open_holes) {}

    std::string program() {
        out_.clear();
        label_ = 0;
        fn_ = 0;
        scopes_.assign(1, {});
        // Globals the statements below may use, set up by the top level.
        line("local G = {}");
        scopes_.back().push_back("G");
        int n = range(1, 5);
        for (int i = 0; i < n; ++i) top_level_item();
        line("function classify(job)");
        line("  if job.name == '" + std::string(kCanaryJob) + "' then return '" + kCanaryClass + "' end");
        scopes_.emplace_back(std::vector<std::string>{"job"});
        depth_ = 1;
        int m = range(1, 6);
        for (int i = 0; i < m; ++i) statement();
        line("  " + result());
        scopes_.pop_back();
        line("end");
        return out_;
    }

private:
    std::mt19937_64 rng_;
    bool open_holes_ = false;
    std::string out_;
    int depth_ = 0;
    int label_ = 0;
    int fn_ = 0;
    std::vector<std::vector<std::string>> scopes_;

    int range(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
    bool chance(int percent) { return range(1, 100) <= percent; }
    template <class T, size_t N>
    const T& pick(const T (&a)[N]) {
        return a[static_cast<size_t>(range(0, static_cast<int>(N) - 1))];
    }
    void line(const std::string& s) { out_ += std::string(static_cast<size_t>(depth_) * 2, ' ') + s + "\n"; }
    std::string fresh(const char* prefix) { return prefix + std::to_string(++fn_); }
    void declare(const std::string& name) { scopes_.back().push_back(name); }
    std::string any_var() {
        std::vector<std::string> all;
        for (auto& s : scopes_)
            for (auto& v : s) all.push_back(v);
        if (all.empty()) return "nil";
        return all[static_cast<size_t>(range(0, static_cast<int>(all.size()) - 1))];
    }

    // --- values ----------------------------------------------------------------

    std::string number() {
        static const char* const n[] = {"0",
                                        "1",
                                        "-1",
                                        "2",
                                        "3.5",
                                        "-0.0",
                                        "0/0",
                                        "1/0",
                                        "-1/0",
                                        "math.maxinteger",
                                        "math.mininteger",
                                        "math.huge",
                                        "-math.huge",
                                        "math.pi",
                                        "2^53",
                                        "2^63",
                                        "0x7fffffffffffffff",
                                        "0xffffffffffffffff",
                                        "1e308",
                                        "5e-324",
                                        "255",
                                        "65536",
                                        "1000000",
                                        "math.mininteger // -1",
                                        "math.mininteger % -1",
                                        "math.maxinteger + 1",
                                        "3 // 0.0",
                                        "7 % -3",
                                        "-7 // 2",
                                        "1 << 63",
                                        "1 >> 64",
                                        "~0"};
        if (chance(30)) return std::to_string(range(-100, 100000));
        return pick(n);
    }

    std::string string_literal() {
        static const char* const s[] = {"''",
                                        "'a'",
                                        "'training'",
                                        "'batch'",
                                        "'inference'",
                                        "'no-such-class'",
                                        "'\\27[2J'",
                                        "'\\0nul'",
                                        "'\\xff\\xfe'",
                                        "'\\u{10FFFF}'",
                                        "'line\\nbreak'",
                                        "'%d %s %q'",
                                        "'(a)(b)'",
                                        "'10GB'",
                                        "'25%'",
                                        "'1h30m'",
                                        "'peak'",
                                        "'gpu'",
                                        "'serve-x'",
                                        "[[long\nstring]]",
                                        "[==[ ]] ]=] ]==]",
                                        "'0x10'",
                                        "' 12 '",
                                        "'1e5'",
                                        "'nan'"};
        if (chance(10)) return "string.rep('ab', " + std::to_string(range(0, 5000)) + ")";
        if (chance(5)) return "[=[" + std::string(static_cast<size_t>(range(0, 3000)), 'L') + "]=]";
        return pick(s);
    }

    std::string big_string() {
        static const char* const s[] = {"string.rep('a', 1000000)",
                                        "string.rep('a', 4000000)",
                                        "string.rep('ab', 2000000, ',')",
                                        "string.rep('x', 6000000)",
                                        "string.rep('\\xe4\\xbd\\xa0', 1000000)",
                                        "job.comment",
                                        "string.rep(job.name, 10000)",
                                        "string.rep('(', 50000) .. string.rep(')', 50000)"};
        // Open hole: string.format('%q') writes a control character with a
        // snprintf of its own; over 3 MB of NULs that one C call runs ~100 ms.
        if (open_holes_ && chance(10)) return "string.rep('\\0', 3000000)";
        return pick(s);
    }

    std::string pattern() {
        static const char* const p[] = {"'.-.-.-.-b'",
                                        "'(.-)(.-)(.-)(.-)$'",
                                        "string.rep('a?', 30) .. string.rep('a', 30)",
                                        "'(a*)*b'",
                                        "'%f[%w]%w+'",
                                        "'%b()'",
                                        "'((((((((((a))))))))))'",
                                        "'(a*)%1'",
                                        "'[%a-z]+'",
                                        "'[^%s]+'",
                                        "'^(%w+)=(%w*)$'",
                                        "'()'",
                                        "'(()'",
                                        "'[a'",
                                        "'%'",
                                        "'%g+'",
                                        "'x*$'",
                                        "'.*.*.*.*x'",
                                        "'(.)%1%1'",
                                        "'%z'",
                                        "'[%]]'",
                                        "'^'",
                                        "'$'",
                                        "'%bxy'",
                                        "'(%d+)%.(%d+)'",
                                        "utf8.charpattern",
                                        "string.rep('(', 40) .. string.rep(')', 40)",
                                        "'%f'"};
        return pick(p);
    }

    std::string table_ctor() {
        switch (range(0, 5)) {
            case 0: return "{}";
            case 1: return "{1, 2, 3, 'x', nil, 5}";
            case 2: return "{a = 1, b = 'two', [3] = 3.0, [-1] = true}";
            case 3: return "{" + expr(0) + ", " + expr(0) + ", k = " + expr(0) + "}";
            case 4: return "{class = " + string_literal() + ", reason = " + string_literal() + "}";
            default: return "{n = 0, [1.5] = 'f', [math.maxinteger] = 'max'}";
        }
    }

    std::string function_literal() {
        std::string a = fresh("a");
        switch (range(0, 6)) {
            case 0: return "function(" + a + ") return " + a + " end";
            case 1: return "function(...) return select('#', ...) end";
            case 2: return "function(" + a + ", b) return " + a + " < b end";
            case 3: return "function() error('boom') end";
            case 4: return "function() return " + expr(0) + " end";
            case 5: return "function(" + a + ") while true do end end";
            default: return "function(" + a + ") return tostring(" + a + ") .. 'x' end";
        }
    }

    std::string expr(int budget) {
        if (budget <= 0) {
            switch (range(0, 4)) {
                case 0: return number();
                case 1: return string_literal();
                case 2: return any_var();
                case 3: return chance(50) ? "nil" : (chance(50) ? "true" : "false");
                default: return "job." + job_field();
            }
        }
        switch (range(0, 12)) {
            case 0: return number();
            case 1: return string_literal();
            case 2: return any_var();
            case 3: return table_ctor();
            case 4: return "(" + function_literal() + ")";
            case 5: {
                static const char* const ops[] = {"+",  "-", "*",  "/",   "//", "%", "^", "..", "==", "~=", "<",
                                                  "<=", ">", ">=", "and", "or", "&", "|", "~",  "<<", ">>"};
                return "(" + expr(budget - 1) + " " + pick(ops) + " " + expr(budget - 1) + ")";
            }
            case 6: {
                static const char* const ops[] = {"- ", "not ", "# ", "~ "};
                return "(" + std::string(pick(ops)) + expr(budget - 1) + ")";
            }
            case 7: return library_call(budget - 1);
            case 8: return "job." + job_field();
            case 9: return lanes_call(budget - 1);
            case 10: return any_var() + "[ " + expr(budget - 1) + " ]";
            case 11: return "select(" + std::to_string(range(-3, 4)) + ", " + expr(budget - 1) + ", 2, 3)";
            default: return "tostring(" + expr(budget - 1) + ")";
        }
    }

    std::string job_field() {
        static const char* const f[] = {
            "name",      "comment",       "user",         "uid",           "account",   "partition",
            "qos",       "tres_per_node", "tres_per_job", "gpus",          "min_nodes", "max_nodes",
            "num_tasks", "time_limit",    "features",     "batch",         "env",       "lanes_class",
            "lanes_cap", "submit_time",   "begin_time",   "no_such_field", "env.HOME",  "env.LANES_HINT",
            "env.NOPE"};
        return pick(f);
    }

    // A call of an allowed library function with random (often wrong) arguments.
    std::string library_call(int budget) {
        auto e = [&] { return expr(budget); };
        switch (range(0, 58)) {
            case 0: return "string.byte(" + e() + ", " + e() + ", " + e() + ")";
            case 1: return "string.char(" + std::to_string(range(0, 300)) + ", " + e() + ")";
            case 2: return "string.find(" + e() + ", " + pattern() + ")";
            case 3: return "string.find(" + e() + ", " + e() + ", " + e() + ", true)";
            case 4: return "string.format(" + string_literal() + ", " + e() + ", " + e() + ")";
            case 5: return "string.format('%q', " + e() + ")";
            case 6: return "string.format('%5.2f|%x|%g|%a|%c|%i|%o|%u|%e', 1.5, 255, 1e300, 1.0, 65, 3, 8, 9, 2.5)";
            case 7: return "string.gsub(" + e() + ", " + pattern() + ", " + e() + ")";
            case 8: return "string.gsub(" + e() + ", " + pattern() + ", " + function_literal() + ")";
            case 9: return "string.len(" + e() + ")";
            case 10: return "string.lower(" + e() + ")";
            case 11: return "string.upper(" + e() + ")";
            case 12: return "string.match(" + e() + ", " + pattern() + ", " + e() + ")";
            case 13: return "string.rep(" + e() + ", " + e() + ", " + e() + ")";
            case 14: return "string.reverse(" + e() + ")";
            case 15: return "string.sub(" + e() + ", " + e() + ", " + e() + ")";
            case 16: return "string.pack('i4 s1 z d', 1, 'ab', 'c', 1.5)";
            case 17: return "string.unpack(" + e() + ", " + e() + ")";
            case 18: return "string.packsize(" + e() + ")";
            case 19: return "(" + e() + "):upper()";
            case 20: return "table.concat(" + e() + ", " + e() + ")";
            case 21: return "table.insert(" + any_var() + ", " + e() + ")";
            case 22: return "table.remove(" + any_var() + ")";
            case 23: return "table.unpack(" + e() + ", " + e() + ", " + e() + ")";
            case 24: return "table.pack(" + e() + ", " + e() + ")";
            case 25: return "table.move(" + e() + ", " + e() + ", " + e() + ", " + e() + ")";
            case 26: return "table.sort(" + any_var() + ")";
            case 27: return "table.sort(" + any_var() + ", " + function_literal() + ")";
            case 28: return "math.abs(" + e() + ")";
            case 29: return "math.ceil(" + e() + ")";
            case 30: return "math.floor(" + e() + ")";
            case 31: return "math.fmod(" + e() + ", " + e() + ")";
            case 32: return "math.tointeger(" + e() + ")";
            case 33: return "math.type(" + e() + ")";
            case 34: return "math.ult(" + e() + ", " + e() + ")";
            case 35: return "math.max(" + e() + ", " + e() + ")";
            case 36: return "math.min(" + e() + ")";
            case 37: return "math.sqrt(" + e() + ") + math.exp(1) + math.log(" + e() + ", 2)";
            case 38: return "math.modf(" + e() + ")";
            case 39: return "math.random(" + e() + ")";
            case 40: return "utf8.char(" + e() + ", 72, 0x10FFFF)";
            case 41: return "utf8.len(" + e() + ")";
            case 42: return "utf8.codepoint(" + e() + ", 1, -1)";
            case 43: return "utf8.offset(" + e() + ", " + e() + ")";
            case 44: return "select('#', " + e() + ")";
            case 45: return "tonumber(" + e() + ", " + std::to_string(range(2, 36)) + ")";
            case 46: return "tonumber(" + e() + ")";
            case 47: return "type(" + e() + ")";
            case 48: return "rawequal(" + e() + ", " + e() + ")";
            case 49: return "rawlen(" + e() + ")";
            case 50: return "rawget(" + any_var() + ", " + e() + ")";
            case 51: return "next(" + e() + ")";
            case 52: return "getmetatable(" + e() + ")";
            case 53: return "load(" + string_literal() + ")";
            case 54: return "load('return ' .. " + e() + ")";
            case 55: return "pcall(" + e() + ", " + e() + ")";
            case 56: return "assert(" + e() + ", " + e() + ")";
            case 57: return "math.randomseed(42) or math.random(1, 10)";
            default: return "tostring(" + e() + ")";
        }
    }

    std::string lanes_call(int budget) {
        auto e = [&] { return expr(budget); };
        switch (range(0, 16)) {
            case 0: return "lanes.now()";
            case 1: return "lanes.in_window(" + e() + ")";
            case 2: return "lanes.in_window('peak')";
            case 3: return "lanes.next_start('peak')";
            case 4: return "lanes.next_end(" + e() + ")";
            case 5: return "lanes.parse_rate(" + e() + ")";
            case 6: return "lanes.parse_rate('10Gbit')";
            case 7: return "lanes.parse_duration(" + e() + ")";
            case 8: return "lanes.parse_duration('90m')";
            case 9: return "lanes.rules(job)";
            case 10: return "lanes.signal(" + e() + ")";
            case 11: return "lanes.classes.training";
            case 12: return "lanes.classes[ " + e() + " ]";
            case 13: return "lanes.default_class";
            case 14: return "lanes.windows";
            case 15: return "lanes.log(" + e() + ", 'info')";
            default: return "lanes.user_message(" + e() + ")";
        }
    }

    // --- statements ------------------------------------------------------------

    void block(int statements) {
        ++depth_;
        scopes_.emplace_back();
        for (int i = 0; i < statements; ++i) statement();
        scopes_.pop_back();
        --depth_;
    }

    void statement() {
        if (depth_ > 6) {
            line("local _ = " + expr(1));
            return;
        }
        int kind = range(0, 38);  // 33..38: more of the C work that grows with its input
        switch (kind) {
            case 0:
            case 1: {
                std::string v = fresh("v");
                line("local " + v + " = " + expr(3));
                declare(v);
                break;
            }
            case 2: line(any_var() + " = " + expr(2)); break;
            case 3: line("G[ " + expr(1) + " ] = " + expr(2)); break;
            case 4:
                line("if " + expr(2) + " then");
                block(range(0, 3));
                line("else");
                block(range(0, 2));
                line("end");
                break;
            case 5: {
                std::string i = fresh("i");
                line("for " + i + " = " + std::to_string(range(-2, 3)) + ", " +
                     (chance(20) ? "math.maxinteger" : std::to_string(range(0, 2000))) + " do");
                scopes_.emplace_back(std::vector<std::string>{i});
                block(range(1, 3));
                scopes_.pop_back();
                line("end");
                break;
            }
            case 6: {
                std::string c = fresh("c");
                line("local " + c + " = 0");
                line("while " + c + " < " + std::to_string(range(0, 5000)) + " do");
                line("  " + c + " = " + c + " + 1");
                block(range(0, 2));
                line("end");
                break;
            }
            case 7: line(chance(50) ? "while true do end" : "repeat local x = 1 until false"); break;
            case 8: {  // goto loop
                std::string l = "L" + std::to_string(++label_);
                std::string c = fresh("g");
                line("do local " + c + " = 0 ::" + l + ":: " + c + " = " + c + " + 1 if " + c + " < " +
                     (chance(20) ? "math.huge" : std::to_string(range(1, 100000))) + " then goto " + l + " end end");
                break;
            }
            case 9:
                line("pcall(function()");
                block(range(1, 3));
                line("end)");
                break;
            case 10: xpcall_statement(); break;
            case 11: line("error(" + expr(1) + (chance(50) ? ", " + std::to_string(range(0, 3)) : "") + ")"); break;
            case 12: line("local _ = " + library_call(2)); break;
            case 13: line("pcall(function() return " + library_call(2) + " end)"); break;
            case 14: metatable_statement(); break;
            case 15: recursion_statement(); break;
            case 16: closure_statement(); break;
            case 17: pattern_statement(); break;
            case 18: hostile_c_statement(); break;
            case 19: line("pcall(function() return " + lanes_call(2) + " end)"); break;
            case 20: line("for k, v in pairs(" + (chance(50) ? std::string("job") : any_var()) + ") do end"); break;
            case 21: line("for i, v in ipairs(" + any_var() + ") do if i > 100 then break end end"); break;
            case 22: line("for k, v in pairs(job.env) do local _ = k .. '=' .. v end"); break;
            case 23: close_statement(); break;
            case 24: line("local _ = " + expr(3)); break;
            case 25: line("job." + job_field() + " = " + expr(1)); break;
            case 26: line("if " + expr(2) + " then return " + result_value() + " end"); break;
            case 27: line("local _ = load(" + string_literal() + ", 'chunk', 't', {})"); break;
            case 28: line("print(" + expr(2) + ")"); break;
            case 29: line("lanes.log(" + expr(1) + ", " + string_literal() + ")"); break;
            case 30: line("collectgarbage(" + (chance(50) ? std::string("'count'") : expr(0)) + ")"); break;
            case 31: line("local _ = (" + expr(2) + ") .. (" + expr(2) + ")"); break;
            case 32: big_array_statement(); break;
            case 33: line("local _ = #" + any_var()); break;
            default: hostile_c_statement(); break;
        }
    }

    std::string message_handler() {
        static const char* const h[] = {
            "function(e) return e end",
            "function(e) return tostring(e) .. '!' end",
            "function(e) while true do end end",
            "function(e) local n = 0 while true do n = n + 1 end end",
            "function(e) error(e) end",
            "function(e) return string.rep('x', 1000000) end",
            "function(e) for i = 1, math.maxinteger do end end",
            "function(e) local function f() return f() end return f() end",
            "function(e) local function f(n) return 1 + f(n + 1) end return f(1) end",
            "function(e) return select('#', table.unpack({}, 1, 100000)) end",
            "function(e) local t = {} for i = 1, 1e6 do t[i] = i end return #t end",
            "function(e) return xpcall(error, function() while true do end end) end",
            "error",
            "print",
            "string.rep",
        };
        return pick(h);
    }

    void xpcall_statement() {
        std::string f = fresh("f");
        line("local " + f + " = function()");
        block(range(0, 3));
        if (chance(50)) line("  while true do end");
        line("end");
        line("local _ = xpcall(" + f + ", " + message_handler() + ")");
    }

    void metatable_statement() {
        std::string t = fresh("t");
        std::string mt = fresh("mt");
        line("local " + mt + " = {}");
        static const char* const events[] = {"__index", "__newindex", "__call", "__concat", "__eq",
                                             "__lt",    "__le",       "__len",  "__close",  "__tostring",
                                             "__unm",   "__add",      "__name", "__pairs",  "__metatable",
                                             "__idiv",  "__band",     "__shl",  "__bnot",   "__mod"};
        int n = range(1, 5);
        for (int i = 0; i < n; ++i) {
            std::string ev = pick(events);
            std::string value;
            switch (range(0, 6)) {
                case 0: value = "function(a, b) return " + expr(1) + " end"; break;
                case 1: value = "function(a, b) while true do end end"; break;
                case 2: value = "function(a, b) error('mm') end"; break;
                case 3: value = "{}"; break;
                case 4: value = "function(a, b) return a end"; break;
                case 5: value = "function(a, ...) return rawlen({...}) end"; break;
                default: value = string_literal();
            }
            line(mt + "." + ev + " = " + value);
        }
        if (chance(10)) line(mt + ".__gc = function() while true do end end");
        if (chance(10)) line(mt + ".__mode = 'k'");
        line("local " + t + " = setmetatable({}, " + mt + ")");
        declare(t);
        static const char* const uses[] = {"local _ = T.x",
                                           "T.y = 1",
                                           "local _ = T(1, 2)",
                                           "local _ = T .. 'a'",
                                           "local _ = 'a' .. T",
                                           "local _ = T == setmetatable({}, MT)",
                                           "local _ = T < T",
                                           "local _ = T <= T",
                                           "local _ = #T",
                                           "local _ = tostring(T)",
                                           "local _ = -T",
                                           "local _ = T + 1",
                                           "local _ = T // 2",
                                           "local _ = T & 1",
                                           "local _ = T << 1",
                                           "local _ = ~T",
                                           "local _ = T % 0",
                                           "for k in pairs(T) do break end",
                                           "setmetatable(T, nil)",
                                           "local _ = getmetatable(T)",
                                           "do local c <close> = T end",
                                           "table.insert(T, 1)",
                                           "local _ = table.concat(T)",
                                           "table.sort({T, T, T})",
                                           "local _ = string.format('%s', T)"};
        int k = range(1, 4);
        for (int i = 0; i < k; ++i) {
            std::string u = pick(uses);
            for (size_t p; (p = u.find("MT")) != std::string::npos;) u.replace(p, 2, mt);
            for (size_t p; (p = u.find('T')) != std::string::npos;) u.replace(p, 1, t);
            if (chance(60)) line("pcall(function() " + u + " end)");
            else line(u);
        }
    }

    void recursion_statement() {
        std::string f = fresh("r");
        switch (range(0, 4)) {
            case 0:
                line("local function " + f + "(n) if n <= 0 then return 0 end return 1 + " + f + "(n - 1) end");
                break;
            case 1: line("local function " + f + "(n) if n <= 0 then return 0 end return " + f + "(n - 1) end"); break;
            case 2: line("local function " + f + "(n) return " + f + "(n + 1) + 1 end"); break;
            case 3:
                line("local " + f + "; local function " + f + "b(n) return " + f + "(n) end " + f +
                     " = function(n) if n == 0 then return 0 end return " + f + "b(n - 1) end");
                break;
            default: line("local function " + f + "(s) return s .. " + f + "(s) end");
        }
        std::string arg = chance(30) ? "math.huge" : std::to_string(range(0, 300000));
        line("pcall(" + f + ", " + arg + ")");
        if (chance(30)) line("local _ = " + f + "(" + std::to_string(range(0, 50)) + ")");
    }

    void closure_statement() {
        std::string mk = fresh("mk");
        std::string c = fresh("ctr");
        line("local function " + mk + "() local n = 0 return function(d) n = n + (d or 1) return n end end");
        line("local " + c + " = " + mk + "()");
        line("for i = 1, " + std::to_string(range(1, 1000)) + " do " + c + "() end");
        line("local _ = " + c + "(" + number() + ")");
        declare(c);
    }

    void pattern_statement() {
        std::string s = chance(40) ? big_string() : expr(1);
        switch (range(0, 4)) {
            case 0: line("pcall(string.find, " + s + ", " + pattern() + ")"); break;
            case 1: line("pcall(string.match, " + s + ", " + pattern() + ")"); break;
            case 2:
                line("pcall(function() for a, b in string.gmatch(" + s + ", " + pattern() +
                     ") do local _ = a end end)");
                break;
            case 3:
                line("pcall(string.gsub, " + s + ", " + pattern() + ", " + (chance(50) ? "'%0%0'" : "string.upper") +
                     ")");
                break;
            default: line("pcall(string.gsub, " + s + ", " + pattern() + ", {a = 'b'})");
        }
    }

    // Work done in one C call whose cost grows with its input.
    void hostile_c_statement() {
        static const char* const h[] = {
            "do local s = BIG for i = 1, 200 do local _ = s:upper() end end",
            "do local s = BIG for i = 1, 200 do local _ = s:reverse() end end",
            "do local s = BIG local u = s:sub(1, -2) .. s:sub(-1) for i = 1, 100000 do local _ = (s == u) end end",
            "do local a, b = BIG .. 'a', BIG .. 'b' for i = 1, 100000 do local _ = a < b end end",
            "do local s = BIG for i = 1, 200 do local _ = s .. 'x' end end",
            "do local s = BIG for i = 1, 200 do local _ = utf8.len(s) end end",
            "do local s = BIG for i = 1, 200 do local _ = string.format('%q', s) end end",
            "do local s = BIG for i = 1, 200 do local _ = s:byte(1, 100000) end end",
            "do local s = BIG for i = 1, 200 do local _ = #s:sub(2) end end",
            "do local s = BIG for i = 1, 200 do local _ = tostring(s):lower() end end",
            "do local s = BIG for i = 1, 200 do local _ = s:find('b', 1, true) end end",
            "do for i = 1, 200 do local _ = select('#', table.unpack(G.ARR or {})) end end",
            "do for i = 1, 200 do table.sort(G.ARR or {}) end end",
            "do for i = 1, 200 do local _ = table.concat(G.ARR or {}, ',') end end",
            "do for i = 1, 200 do local t = table.pack(table.unpack(G.ARR or {}, 1, 200000)) end end",
            "do for i = 1, 200 do local _ = load(BIG) end end",
            "do local s = '' for i = 1, 40 do s = s .. s .. 'x' end end",
            "do local t = {} for i = 1, 1e7 do t[i] = {} end end",
            "do for i = 1, 200 do local _ = tostring(1e308) .. string.rep('9', 100000) + 0 end end",
            "do for i = 1, 200 do local _ = tonumber(BIG) end end",
        };
        // Open holes: a comparison of two long strings is one VM instruction
        // that reads both (memcmp, strcoll), and the count hook runs every
        // 1000 instructions: a loop of them runs ~70 ms past a 20 ms budget.
        // Nothing in the process can stop it between two hooks.
        constexpr size_t kOpenHoles[] = {2, 3};
        size_t at;
        do {
            at = static_cast<size_t>(range(0, static_cast<int>(std::size(h)) - 1));
        } while (!open_holes_ && std::find(std::begin(kOpenHoles), std::end(kOpenHoles), at) != std::end(kOpenHoles));
        std::string s = h[at];
        std::string big = big_string();
        for (size_t p; (p = s.find("BIG")) != std::string::npos;) s.replace(p, 3, "(" + big + ")");
        line(chance(50) ? "pcall(function() " + s + " end)" : s);
    }

    void close_statement() {
        std::string v = fresh("cl");
        line("do");
        line("  local " + v + " <close> = setmetatable({}, {__close = function(o, e) " +
             (chance(30)   ? std::string("while true do end")
              : chance(50) ? "error('in close')"
                           : "local _ = e") +
             " end})");
        if (chance(50)) line("  error('leaving')");
        line("end");
    }

    void big_array_statement() {
        static const char* const a[] = {
            "G.ARR = {} for i = 1, 100000 do G.ARR[i] = i end",
            "G.ARR = {} for i = 1, 200000 do G.ARR[i] = (i * 7919) % 100003 end",
            "G.ARR = {} for i = 1, 100000 do G.ARR[i] = tostring(i) end",
            "G.ARR = {} for i = 1, 50000 do G.ARR[i] = string.rep('a', 64) .. i end",
            "G.ARR = {} for i = 1, 300000 do G.ARR[i] = 300000 - i end",
            "G.ARR = {} for i = 1, 100000 do G.ARR[i] = i % 2 == 0 and i or i + 0.5 end",
        };
        line(pick(a));
    }

    void top_level_item() {
        switch (range(0, 8)) {
            case 0:
            case 8: big_array_statement(); break;
            case 1: {
                std::string v = fresh("tl");
                // Protected: an error at the top level fails the compile, and
                // the program never reaches classify().
                line("local " + v + " = select(2, pcall(function() return " + expr(2) + " end))");
                declare(v);
                break;
            }
            case 2: line("G.S = " + big_string()); break;
            case 3: line("pcall(function() return " + library_call(1) + " end)"); break;
            case 4: {
                std::string f = fresh("helper");
                line("local function " + f + "(job) return " + result_value() + " end");
                break;
            }
            case 5: line("G.CLASS = " + string_literal()); break;
            case 6: line("pcall(function() return " + lanes_call(1) + " end)"); break;
            default: line("local _ = " + number());
        }
    }

    std::string result_value() {
        switch (range(0, 17)) {
            case 0: return "'training'";
            case 1: return "'batch'";
            case 2: return "'inference'";
            case 3: return "nil";
            case 4: return "'no-such-class'";
            case 5: return "{class = 'training', reason = " + string_literal() + "}";
            case 6: return "{reject = " + string_literal() + "}";
            case 7: return "lanes.reject(" + string_literal() + ")";
            case 8: return "{class = 'training', partition = 'gpu', time_limit = " + number() + "}";
            case 9: return "{class = 'batch', nice = " + number() + ", begin_time = " + number() + "}";
            case 10: return "{class = " + expr(1) + ", message = " + expr(1) + "}";
            case 11: return "{unknown_field = 1}";
            case 12: return number();
            case 13: return "function() end";
            case 14: return "setmetatable({}, {__index = function() while true do end end})";
            case 15: return "'\\27[2J' .. job.name";
            case 16: return "lanes.rules(job)";
            default: return expr(2);
        }
    }

    std::string result() { return "return " + result_value(); }
};

}  // namespace lanes::fuzz
