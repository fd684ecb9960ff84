// SPDX-License-Identifier: GPL-2.0-or-later
// Metered Lua string functions (see bounded_strings.hpp). Every function here
// is a lua_CFunction or called only from one: plain C-style code, no C++ object
// with a destructor in any frame, because luaL_error() longjmps through them.
//
// Lua pattern semantics (Lua 5.4 reference manual, section 6.4.1): single
// character classes, sets, the quantifiers * + - ?, %n back-references, %bxy,
// %f[set], captures and position captures, ^ and $ anchors.
#include "ctld/bounded_strings.hpp"

#include <cctype>
#include <chrono>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace lanes {

namespace {

constexpr int kMaxCaptures = 32;     // LUA_MAXCAPTURES
constexpr int kMaxMatchDepth = 200;  // MAXCCALLS: recursion of the matcher
constexpr uint64_t kFlushEvery = 1024;
constexpr ptrdiff_t kCapUnfinished = -1;
constexpr ptrdiff_t kCapPosition = -2;
constexpr char kSpecials[] = "^$*+?.([%-";

struct Capture {
    const char* init;
    ptrdiff_t len;
};

struct Matcher {
    const char* src_init;
    const char* src_end;
    const char* p_end;
    lua_State* L;
    const StringMeter* meter;
    uint64_t pending;
    int depth;
    int level;
    Capture capture[kMaxCaptures];
};

const StringMeter* meter_of(lua_State* L) {
    return static_cast<const StringMeter*>(lua_touserdata(L, lua_upvalueindex(1)));
}

// The work done, charged to the meter every kFlushEvery steps and at the end
// (`Metered`: a Matcher or a ListMeter, each with L, meter and pending).
template <typename Metered>
inline void step(Metered* m, uint64_t n = 1) {
    m->pending += n;
    if (m->pending >= kFlushEvery) {
        uint64_t done = m->pending;
        m->pending = 0;
        m->meter->charge(m->L, done);
    }
}

template <typename Metered>
inline void flush(Metered* m) {
    uint64_t done = m->pending;
    m->pending = 0;
    if (done) m->meter->charge(m->L, done);
}

void init_matcher(Matcher* m, lua_State* L, const StringMeter* meter, const char* s, size_t ls, const char* p,
                  size_t lp) {
    m->L = L;
    m->meter = meter;
    m->pending = 0;
    m->src_init = s;
    m->src_end = s + ls;
    m->p_end = p + lp;
    m->depth = kMaxMatchDepth;
    m->level = 0;
}

inline void restart(Matcher* m) {
    m->level = 0;
    m->depth = kMaxMatchDepth;
}

inline unsigned char uc(char c) { return static_cast<unsigned char>(c); }

const char* class_end(Matcher* m, const char* p) {
    if (*p++ == '%') {
        if (p == m->p_end) luaL_error(m->L, "malformed pattern (ends with '%%')");
        return p + 1;
    }
    if (p[-1] == '[') {
        if (*p == '^') p++;
        do {  // the first character of a set may be a literal ']'
            if (p == m->p_end) luaL_error(m->L, "malformed pattern (missing ']')");
            if (*(p++) == '%' && p < m->p_end) p++;
        } while (*p != ']');
        return p + 1;
    }
    return p;
}

bool class_matches(int c, int cl) {
    bool res;
    switch (std::tolower(cl)) {
        case 'a': res = std::isalpha(c); break;
        case 'c': res = std::iscntrl(c); break;
        case 'd': res = std::isdigit(c); break;
        case 'g': res = std::isgraph(c); break;
        case 'l': res = std::islower(c); break;
        case 'p': res = std::ispunct(c); break;
        case 's': res = std::isspace(c); break;
        case 'u': res = std::isupper(c); break;
        case 'w': res = std::isalnum(c); break;
        case 'x': res = std::isxdigit(c); break;
        case 'z': res = (c == 0); break;  // deprecated in Lua, still accepted
        default: return cl == c;
    }
    return std::isupper(cl) ? !res : res;
}

// p at '[', ec at the closing ']'.
bool set_matches(int c, const char* p, const char* ec) {
    bool in = true;
    if (*(p + 1) == '^') {
        in = false;
        p++;
    }
    while (++p < ec) {
        if (*p == '%') {
            p++;
            if (class_matches(c, uc(*p))) return in;
        } else if (*(p + 1) == '-' && p + 2 < ec) {
            p += 2;
            if (uc(*(p - 2)) <= c && c <= uc(*p)) return in;
        } else if (uc(*p) == c) {
            return in;
        }
    }
    return !in;
}

bool single_matches(Matcher* m, const char* s, const char* p, const char* ep) {
    if (s >= m->src_end) return false;
    int c = uc(*s);
    switch (*p) {
        case '.': return true;
        case '%': return class_matches(c, uc(*(p + 1)));
        case '[': return set_matches(c, p, ep - 1);
        default: return uc(*p) == c;
    }
}

const char* do_match(Matcher* m, const char* s, const char* p);

const char* match_balance(Matcher* m, const char* s, const char* p) {
    if (p >= m->p_end - 1) luaL_error(m->L, "malformed pattern (missing arguments to '%%b')");
    if (s >= m->src_end || *s != *p) return nullptr;
    char open = *p, close = *(p + 1);
    int depth = 1;
    while (++s < m->src_end) {
        step(m);
        if (*s == close) {
            if (--depth == 0) return s + 1;
        } else if (*s == open) {
            depth++;
        }
    }
    return nullptr;
}

const char* max_expand(Matcher* m, const char* s, const char* p, const char* ep) {
    ptrdiff_t i = 0;
    while (single_matches(m, s + i, p, ep)) {
        step(m);
        i++;
    }
    while (i >= 0) {  // try the longest run first, then shorter ones
        step(m);
        const char* res = do_match(m, s + i, ep + 1);
        if (res) return res;
        i--;
    }
    return nullptr;
}

const char* min_expand(Matcher* m, const char* s, const char* p, const char* ep) {
    for (;;) {
        step(m);
        const char* res = do_match(m, s, ep + 1);
        if (res) return res;
        if (!single_matches(m, s, p, ep)) return nullptr;
        s++;
    }
}

const char* start_capture(Matcher* m, const char* s, const char* p, ptrdiff_t what) {
    if (m->level >= kMaxCaptures) luaL_error(m->L, "too many captures");
    m->capture[m->level].init = s;
    m->capture[m->level].len = what;
    m->level++;
    const char* res = do_match(m, s, p);
    if (!res) m->level--;
    return res;
}

const char* end_capture(Matcher* m, const char* s, const char* p) {
    int l = -1;
    for (int i = m->level - 1; i >= 0; i--)
        if (m->capture[i].len == kCapUnfinished) {
            l = i;
            break;
        }
    if (l < 0) luaL_error(m->L, "invalid pattern capture");
    m->capture[l].len = s - m->capture[l].init;
    const char* res = do_match(m, s, p);
    if (!res) m->capture[l].len = kCapUnfinished;
    return res;
}

int capture_index(Matcher* m, int c) {
    int l = c - '1';
    if (l < 0 || l >= m->level || m->capture[l].len == kCapUnfinished)
        luaL_error(m->L, "invalid capture index %%%d", l + 1);
    return l;
}

const char* match_backref(Matcher* m, const char* s, int c) {
    int l = capture_index(m, c);
    size_t len = static_cast<size_t>(m->capture[l].len);
    step(m, len);
    if (static_cast<size_t>(m->src_end - s) >= len && std::memcmp(m->capture[l].init, s, len) == 0) return s + len;
    return nullptr;
}

const char* do_match(Matcher* m, const char* s, const char* p) {
    if (m->depth-- == 0) luaL_error(m->L, "pattern too complex");
    step(m);
    while (s && p != m->p_end) {
        switch (*p) {
            case '(':
                if (*(p + 1) == ')') s = start_capture(m, s, p + 2, kCapPosition);
                else s = start_capture(m, s, p + 1, kCapUnfinished);
                goto done;
            case ')': s = end_capture(m, s, p + 1); goto done;
            case '$':
                if (p + 1 != m->p_end) break;  // an ordinary character
                s = (s == m->src_end) ? s : nullptr;
                goto done;
            case '%':
                switch (*(p + 1)) {
                    case 'b':
                        s = match_balance(m, s, p + 2);
                        if (s) {
                            p += 4;
                            continue;
                        }
                        goto done;
                    case 'f': {
                        p += 2;
                        if (*p != '[') luaL_error(m->L, "missing '[' after '%%f' in pattern");
                        const char* ep = class_end(m, p);
                        int prev = (s == m->src_init) ? '\0' : uc(*(s - 1));
                        int cur = (s < m->src_end) ? uc(*s) : '\0';
                        if (!set_matches(prev, p, ep - 1) && set_matches(cur, p, ep - 1)) {
                            p = ep;
                            continue;
                        }
                        s = nullptr;
                        goto done;
                    }
                    case '0':
                    case '1':
                    case '2':
                    case '3':
                    case '4':
                    case '5':
                    case '6':
                    case '7':
                    case '8':
                    case '9':
                        s = match_backref(m, s, uc(*(p + 1)));
                        if (s) {
                            p += 2;
                            continue;
                        }
                        goto done;
                    default: break;
                }
                break;
            default: break;
        }
        {  // a single character class, maybe with a quantifier
            const char* ep = class_end(m, p);
            if (!single_matches(m, s, p, ep)) {
                if (*ep == '*' || *ep == '?' || *ep == '-') {  // may match nothing
                    p = ep + 1;
                    continue;
                }
                s = nullptr;
                goto done;
            }
            switch (*ep) {
                case '?': {
                    const char* res = do_match(m, s + 1, ep + 1);
                    if (res) {
                        s = res;
                        goto done;
                    }
                    p = ep + 1;
                    continue;
                }
                case '+': s = max_expand(m, s + 1, p, ep); goto done;
                case '*': s = max_expand(m, s, p, ep); goto done;
                case '-': s = min_expand(m, s, p, ep); goto done;
                default:
                    s++;
                    p = ep;
                    step(m);
                    continue;
            }
        }
    }
done:
    m->depth++;
    return s;
}

// Pushes capture i (the whole match s..e when there are none and i == 0).
void push_capture(Matcher* m, int i, const char* s, const char* e) {
    if (i >= m->level) {
        if (i != 0) luaL_error(m->L, "invalid capture index %%%d", i + 1);
        lua_pushlstring(m->L, s, static_cast<size_t>(e - s));
        return;
    }
    ptrdiff_t l = m->capture[i].len;
    if (l == kCapUnfinished) luaL_error(m->L, "unfinished capture");
    if (l == kCapPosition) lua_pushinteger(m->L, static_cast<lua_Integer>(m->capture[i].init - m->src_init) + 1);
    else lua_pushlstring(m->L, m->capture[i].init, static_cast<size_t>(l));
}

int push_captures(Matcher* m, const char* s, const char* e) {
    int n = (m->level == 0 && s) ? 1 : m->level;
    luaL_checkstack(m->L, n, "too many captures");
    for (int i = 0; i < n; i++) push_capture(m, i, s, e);
    return n;
}

bool has_specials(const char* p, size_t lp) {
    for (size_t i = 0; i < lp; ++i)
        if (p[i] != '\0' && std::strchr(kSpecials, p[i])) return true;
    return false;
}

// Lua's posrelatI: a 1-based start position, negative counts from the end.
size_t start_position(lua_Integer pos, size_t len) {
    if (pos > 0) return static_cast<size_t>(pos);
    if (pos == 0) return 1;
    if (pos < -static_cast<lua_Integer>(len)) return 1;
    return len + static_cast<size_t>(pos) + 1;
}

int find_or_match(lua_State* L, bool find) {
    const StringMeter* meter = meter_of(L);
    size_t ls, lp;
    const char* s = luaL_checklstring(L, 1, &ls);
    const char* p = luaL_checklstring(L, 2, &lp);
    size_t init = start_position(luaL_optinteger(L, 3, 1), ls) - 1;
    if (init > ls) {
        luaL_pushfail(L);
        return 1;
    }
    if (find && (lua_toboolean(L, 4) || !has_specials(p, lp))) {
        // memmem is linear in the subject; charge for the bytes it may scan.
        meter->charge(L, (ls - init) / 16 + 1);
        const void* hit = lp == 0 ? s + init : memmem(s + init, ls - init, p, lp);
        if (hit) {
            const char* h = static_cast<const char*>(hit);
            lua_pushinteger(L, static_cast<lua_Integer>(h - s) + 1);
            lua_pushinteger(L, static_cast<lua_Integer>(h - s + lp));
            return 2;
        }
        luaL_pushfail(L);
        return 1;
    }
    Matcher m;
    bool anchor = (*p == '^');
    if (anchor) {
        p++;
        lp--;
    }
    init_matcher(&m, L, meter, s, ls, p, lp);
    const char* s1 = s + init;
    do {
        restart(&m);
        const char* e = do_match(&m, s1, p);
        if (e) {
            flush(&m);
            if (find) {
                lua_pushinteger(L, static_cast<lua_Integer>(s1 - s) + 1);
                lua_pushinteger(L, static_cast<lua_Integer>(e - s));
                return push_captures(&m, nullptr, nullptr) + 2;
            }
            return push_captures(&m, s1, e);
        }
    } while (s1++ < m.src_end && !anchor);
    flush(&m);
    luaL_pushfail(L);
    return 1;
}

int l_find(lua_State* L) noexcept { return find_or_match(L, true); }
int l_match(lua_State* L) noexcept { return find_or_match(L, false); }

struct GmatchState {
    const char* src;
    const char* p;
    const char* lastmatch;
    Matcher m;
};

int gmatch_step(lua_State* L) noexcept {
    auto* gm = static_cast<GmatchState*>(lua_touserdata(L, lua_upvalueindex(3)));
    gm->m.L = L;
    for (const char* src = gm->src; src <= gm->m.src_end; src++) {
        restart(&gm->m);
        const char* e = do_match(&gm->m, src, gm->p);
        if (e && e != gm->lastmatch) {
            gm->src = gm->lastmatch = e;
            flush(&gm->m);
            return push_captures(&gm->m, src, e);
        }
    }
    flush(&gm->m);
    return 0;
}

int l_gmatch(lua_State* L) noexcept {
    const StringMeter* meter = meter_of(L);
    size_t ls, lp;
    const char* s = luaL_checklstring(L, 1, &ls);
    const char* p = luaL_checklstring(L, 2, &lp);
    size_t init = start_position(luaL_optinteger(L, 3, 1), ls) - 1;
    if (init > ls) init = ls + 1;  // start past the end: no matches
    lua_settop(L, 2);              // the closure keeps s and p alive
    auto* gm = static_cast<GmatchState*>(lua_newuserdatauv(L, sizeof(GmatchState), 0));
    init_matcher(&gm->m, L, meter, s, ls, p, lp);
    gm->src = s + init;
    gm->p = p;
    gm->lastmatch = nullptr;
    lua_pushcclosure(L, gmatch_step, 3);
    return 1;
}

void add_replacement_string(Matcher* m, luaL_Buffer* b, const char* s, const char* e) {
    lua_State* L = m->L;
    size_t l;
    const char* news = lua_tolstring(L, 3, &l);
    const char* end = news + l;
    step(m, l);
    for (const char* p = news; p < end; ++p) {
        if (*p != '%') {
            luaL_addchar(b, *p);
            continue;
        }
        ++p;
        if (*p == '%') {
            luaL_addchar(b, '%');
        } else if (*p == '0') {
            luaL_addlstring(b, s, static_cast<size_t>(e - s));
        } else if (std::isdigit(uc(*p))) {
            push_capture(m, *p - '1', s, e);
            luaL_tolstring(L, -1, nullptr);
            lua_remove(L, -2);
            luaL_addvalue(b);
        } else {
            luaL_error(L, "invalid use of '%c' in replacement string", '%');
        }
    }
}

// Adds the replacement of match s..e; false if the original text was kept.
bool add_replacement(Matcher* m, luaL_Buffer* b, const char* s, const char* e, int tr) {
    lua_State* L = m->L;
    step(m, static_cast<uint64_t>(e - s) + 1);
    switch (tr) {
        case LUA_TFUNCTION: {
            lua_pushvalue(L, 3);
            int n = push_captures(m, s, e);
            flush(m);
            lua_call(L, n, 1);
            break;
        }
        case LUA_TTABLE:
            push_capture(m, 0, s, e);
            lua_gettable(L, 3);
            break;
        default: add_replacement_string(m, b, s, e); return true;
    }
    if (!lua_toboolean(L, -1)) {
        lua_pop(L, 1);
        luaL_addlstring(b, s, static_cast<size_t>(e - s));
        return false;
    }
    if (!lua_isstring(L, -1)) luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
    luaL_addvalue(b);
    return true;
}

int l_gsub(lua_State* L) noexcept {
    const StringMeter* meter = meter_of(L);
    size_t srcl, lp;
    const char* src = luaL_checklstring(L, 1, &srcl);
    const char* p = luaL_checklstring(L, 2, &lp);
    int tr = lua_type(L, 3);
    lua_Integer max_s = luaL_optinteger(L, 4, static_cast<lua_Integer>(srcl) + 1);
    luaL_argexpected(L, tr == LUA_TNUMBER || tr == LUA_TSTRING || tr == LUA_TFUNCTION || tr == LUA_TTABLE, 3,
                     "string/function/table");
    bool anchor = (*p == '^');
    if (anchor) {
        p++;
        lp--;
    }
    const char* lastmatch = nullptr;
    lua_Integer n = 0;
    bool changed = false;
    Matcher m;
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    init_matcher(&m, L, meter, src, srcl, p, lp);
    while (n < max_s) {
        restart(&m);
        const char* e = do_match(&m, src, p);
        if (e && e != lastmatch) {
            n++;
            changed = add_replacement(&m, &b, src, e, tr) || changed;
            src = lastmatch = e;
        } else if (src < m.src_end) {
            step(&m);
            luaL_addchar(&b, *src++);
        } else {
            break;
        }
        if (anchor) break;
    }
    flush(&m);
    if (!changed) {
        lua_pushvalue(L, 1);
    } else {
        luaL_addlstring(&b, src, static_cast<size_t>(m.src_end - src));
        luaL_pushresult(&b);
    }
    lua_pushinteger(L, n);
    return 2;
}

// string.rep(s, n [, sep]): refuses oversized results before any work, and
// returns "" at once for an empty result however large n is.
int l_rep(lua_State* L) noexcept {
    const StringMeter* meter = meter_of(L);
    size_t l, lsep;
    luaL_checklstring(L, 1, &l);
    lua_Integer n = luaL_checkinteger(L, 2);
    luaL_optlstring(L, 3, "", &lsep);
    if (n <= 0 || (l == 0 && (lsep == 0 || n == 1))) {
        lua_pushliteral(L, "");
        return 1;
    }
    // total = n*l + (n-1)*lsep, in 128 bits against overflow.
    unsigned __int128 total = static_cast<unsigned __int128>(n) * l + static_cast<unsigned __int128>(n - 1) * lsep;
    if (total > meter->max_string_bytes)
        meter->too_large(L, "string.rep", total > INT64_MAX ? INT64_MAX : static_cast<int64_t>(total));
    meter->charge(L, static_cast<uint64_t>(total) / 64 + static_cast<uint64_t>(n) / 8 + 1);
    lua_pushvalue(L, lua_upvalueindex(2));  // the library's rep
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

// table.move(a1, f, e, t [, a2]): charges e - f + 1 steps before moving.
int l_move(lua_State* L) noexcept {
    const StringMeter* meter = meter_of(L);
    lua_Integer f = luaL_checkinteger(L, 2);
    lua_Integer e = luaL_checkinteger(L, 3);
    if (e >= f) {
        unsigned long long count = static_cast<unsigned long long>(e) - static_cast<unsigned long long>(f) + 1;
        meter->charge(L, count == 0 ? ~0ull : count);  // count == 0: the whole integer range
    }
    lua_pushvalue(L, lua_upvalueindex(2));  // the library's move
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, LUA_MULTRET);
    return lua_gettop(L);
}

// --- the table library's loops over a list -----------------------------------
// table.sort, concat and unpack run in C with no hook (sorting an array built
// at load took ~150 ms against a 20 ms budget). These versions do the same
// work in the same order, and charge each element (and each string
// comparison by the bytes it may look at) to the budget as they go.

struct ListMeter {
    lua_State* L;
    const StringMeter* meter;
    uint64_t pending;
};

// The library's check of a list argument: a table, or a value whose metatable
// has __index, __len and (when written) __newindex.
void check_list(lua_State* L, bool written) {
    if (lua_type(L, 1) == LUA_TTABLE) return;
    if (lua_getmetatable(L, 1)) {
        bool ok = true;
        for (const char* key : {"__index", "__newindex", "__len"}) {
            if (!written && key[2] == 'n' && key[3] == 'e') continue;  // __newindex
            lua_pushstring(L, key);
            ok = lua_rawget(L, -2) != LUA_TNIL;
            lua_pop(L, 1);
            if (!ok) break;
        }
        lua_pop(L, 1);
        if (ok) return;
    }
    luaL_checktype(L, 1, LUA_TTABLE);
}

// table.concat(list [, sep [, i [, j]]])
int l_concat(lua_State* L) noexcept {
    ListMeter lm{L, meter_of(L), 0};
    check_list(L, false);
    lua_Integer last = luaL_len(L, 1);
    size_t lsep;
    const char* sep = luaL_optlstring(L, 2, "", &lsep);
    lua_Integer i = luaL_optinteger(L, 3, 1);
    last = luaL_optinteger(L, 4, last);
    luaL_Buffer b;
    luaL_buffinit(L, &b);
    for (; i <= last; i++) {
        lua_geti(L, 1, i);
        if (!lua_isstring(L, -1))
            luaL_error(L, "invalid value (at index %I) in table for 'concat'", static_cast<lua_Integer>(i));
        step(&lm, 1 + (lua_rawlen(L, -1) + lsep) / 64);
        luaL_addvalue(&b);
        if (i == last) break;  // last may be math.maxinteger
        luaL_addlstring(&b, sep, lsep);
    }
    luaL_pushresult(&b);
    flush(&lm);
    return 1;
}

// table.unpack(list [, i [, j]])
int l_unpack(lua_State* L) noexcept {
    ListMeter lm{L, meter_of(L), 0};
    lua_Integer i = luaL_optinteger(L, 2, 1);
    lua_Integer e = lua_isnoneornil(L, 3) ? luaL_len(L, 1) : luaL_checkinteger(L, 3);
    if (i > e) return 0;
    lua_Unsigned n = static_cast<lua_Unsigned>(e) - static_cast<lua_Unsigned>(i);
    // Room for the values and for what a budget error pushes.
    if (n >= static_cast<unsigned int>(INT_MAX - 8) || !lua_checkstack(L, static_cast<int>(++n) + 8))
        return luaL_error(L, "too many results to unpack");
    for (; i < e; i++) {
        step(&lm, 1);
        lua_geti(L, 1, i);
    }
    lua_geti(L, 1, e);
    flush(&lm);  // may raise: the values pushed are dropped with the frame
    return static_cast<int>(n);
}

// table.sort(list [, comp]): Lua 5.4's quicksort (the same comparisons and
// swaps in the same order, so the same result), each read, write and
// comparison charged.
struct Sorter {
    ListMeter lm;
    bool has_comp;
};

inline void sort_get(Sorter* so, lua_Integer i) {
    step(&so->lm, 1);
    lua_geti(so->lm.L, 1, i);
}

inline void sort_set2(Sorter* so, lua_Integer i, lua_Integer j) {
    step(&so->lm, 2);
    lua_seti(so->lm.L, 1, i);
    lua_seti(so->lm.L, 1, j);
}

// Whether the value at stack index a sorts before the one at b (negative
// indices, as in the library).
bool sort_less(Sorter* so, int a, int b) {
    lua_State* L = so->lm.L;
    if (!so->has_comp) {
        uint64_t cost = 1;  // a string comparison may read the shorter string whole
        if (lua_type(L, a) == LUA_TSTRING && lua_type(L, b) == LUA_TSTRING) {
            size_t la = lua_rawlen(L, a), lb = lua_rawlen(L, b);
            cost += (la < lb ? la : lb) / 32;
        }
        step(&so->lm, cost);
        return lua_compare(L, a, b, LUA_OPLT);
    }
    step(&so->lm, 1);
    lua_pushvalue(L, 2);
    lua_pushvalue(L, a - 1);
    lua_pushvalue(L, b - 2);
    lua_call(L, 2, 1);
    bool res = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return res;
}

using SortIdx = unsigned int;

SortIdx sort_partition(Sorter* so, SortIdx lo, SortIdx up) {
    lua_State* L = so->lm.L;
    SortIdx i = lo;
    SortIdx j = up - 1;
    for (;;) {  // invariant: a[lo .. i] <= P <= a[j .. up], a[up - 1] == P
        while (sort_get(so, ++i), sort_less(so, -1, -2)) {
            if (i == up - 1) luaL_error(L, "invalid order function for sorting");
            lua_pop(L, 1);
        }
        while (sort_get(so, --j), sort_less(so, -3, -1)) {
            if (j < i) luaL_error(L, "invalid order function for sorting");
            lua_pop(L, 1);
        }
        if (j < i) {
            lua_pop(L, 1);
            sort_set2(so, up - 1, i);
            return i;
        }
        sort_set2(so, i, j);
    }
}

unsigned int sort_random() {
    uint64_t t = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    return static_cast<unsigned int>(t ^ (t >> 32));
}

void sort_range(Sorter* so, SortIdx lo, SortIdx up, unsigned int rnd) {
    lua_State* L = so->lm.L;
    while (lo < up) {
        sort_get(so, lo);
        sort_get(so, up);
        if (sort_less(so, -1, -2)) sort_set2(so, lo, up);
        else lua_pop(L, 2);
        if (up - lo == 1) break;
        SortIdx p;
        if (up - lo < 100u || rnd == 0) {
            p = (lo + up) / 2;
        } else {
            SortIdx r4 = (up - lo) / 4;
            p = rnd % (r4 * 2) + (lo + r4);
        }
        sort_get(so, p);
        sort_get(so, lo);
        if (sort_less(so, -2, -1)) {
            sort_set2(so, p, lo);
        } else {
            lua_pop(L, 1);
            sort_get(so, up);
            if (sort_less(so, -1, -2)) sort_set2(so, p, up);
            else lua_pop(L, 2);
        }
        if (up - lo == 2) break;
        sort_get(so, p);
        lua_pushvalue(L, -1);
        sort_get(so, up - 1);
        sort_set2(so, p, up - 1);
        p = sort_partition(so, lo, up);
        SortIdx n;
        if (p - lo < up - p) {
            sort_range(so, lo, p - 1, rnd);
            n = p - lo;
            lo = p + 1;
        } else {
            sort_range(so, p + 1, up, rnd);
            n = up - p;
            up = p - 1;
        }
        if ((up - lo) / 128 > n) rnd = sort_random();
    }
}

int l_sort(lua_State* L) noexcept {
    Sorter so{{L, meter_of(L), 0}, false};
    check_list(L, true);
    lua_Integer n = luaL_len(L, 1);
    if (n > 1) {
        luaL_argcheck(L, n < INT_MAX, 1, "array too big");
        if (!lua_isnoneornil(L, 2)) luaL_checktype(L, 2, LUA_TFUNCTION);
        so.has_comp = !lua_isnoneornil(L, 2);
        lua_settop(L, 2);
        sort_range(&so, 1, static_cast<SortIdx>(n), 0);
    }
    flush(&so.lm);
    return 0;
}

void replace(lua_State* L, int lib, const char* name, lua_CFunction fn, const StringMeter* meter, bool wraps) {
    lua_pushlightuserdata(L, const_cast<StringMeter*>(meter));
    int nup = 1;
    if (wraps) {
        lua_getfield(L, lib, name);
        nup = 2;
    }
    lua_pushcclosure(L, fn, nup);
    lua_setfield(L, lib, name);
}

}  // namespace

void install_bounded_strings(lua_State* L, const StringMeter* meter) {
    lua_getglobal(L, LUA_STRLIBNAME);
    int lib = lua_gettop(L);
    replace(L, lib, "find", l_find, meter, false);
    replace(L, lib, "match", l_match, meter, false);
    replace(L, lib, "gmatch", l_gmatch, meter, false);
    replace(L, lib, "gsub", l_gsub, meter, false);
    replace(L, lib, "rep", l_rep, meter, true);
    lua_getglobal(L, LUA_TABLIBNAME);
    int table = lua_gettop(L);
    replace(L, table, "move", l_move, meter, true);
    replace(L, table, "sort", l_sort, meter, false);
    replace(L, table, "concat", l_concat, meter, false);
    replace(L, table, "unpack", l_unpack, meter, false);
    lua_pop(L, 2);
}

}  // namespace lanes
