// SPDX-License-Identifier: GPL-2.0-or-later
// IANA time zones read straight from TZif files (RFC 8536, versions 1-4),
// including the POSIX TZ footer rule that covers instants after the last
// transition in the file. Nothing here touches TZ, tzset() or localtime_r():
// a TimeZone is immutable once loaded and safe to share between threads.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ctld/windows.hpp"

namespace lanes {
namespace {

// A cursor over a POSIX TZ string.
class Parser {
public:
    explicit Parser(std::string_view s) : s_(s) {}
    bool at_end() const { return i_ >= s_.size(); }
    char peek() const { return at_end() ? '\0' : s_[i_]; }
    bool eat(char c) {
        if (peek() != c) return false;
        ++i_;
        return true;
    }
    // A zone abbreviation: 3+ letters, or <...> with letters, digits, + and -.
    bool abbreviation(std::string& out) {
        out.clear();
        if (eat('<')) {
            while (!at_end() && peek() != '>') {
                char c = peek();
                if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '-')) return false;
                out.push_back(c);
                ++i_;
            }
            if (!eat('>')) return false;
        } else {
            while (!at_end() && std::isalpha(static_cast<unsigned char>(peek()))) out.push_back(s_[i_++]);
        }
        return out.size() >= 3;
    }
    // [+-]hh[:mm[:ss]] with hh <= max_hours; seconds, with the sign as written.
    bool hms(int32_t& out, int max_hours) {
        int sign = 1;
        if (eat('-')) sign = -1;
        else eat('+');
        int parts[3] = {0, 0, 0};
        for (int p = 0; p < 3; ++p) {
            if (p > 0 && !eat(':')) break;
            int digits = 0, v = 0;
            while (!at_end() && std::isdigit(static_cast<unsigned char>(peek())) && digits < 3) {
                v = v * 10 + (s_[i_++] - '0');
                ++digits;
            }
            if (digits == 0) return false;
            parts[p] = v;
        }
        if (parts[0] > max_hours || parts[1] > 59 || parts[2] > 59) return false;
        out = sign * (parts[0] * 3600 + parts[1] * 60 + parts[2]);
        return true;
    }
    bool number(int& out, int min, int max) {
        int digits = 0, v = 0;
        while (!at_end() && std::isdigit(static_cast<unsigned char>(peek())) && digits < 4) {
            v = v * 10 + (s_[i_++] - '0');
            ++digits;
        }
        if (digits == 0 || v < min || v > max) return false;
        out = v;
        return true;
    }

private:
    std::string_view s_;
    size_t i_ = 0;
};

int64_t floor_div(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

}  // namespace

// The footer rule, e.g. "CET-1CEST,M3.5.0,M10.5.0/3" or "<+1030>-10:30<+11>-11,M10.1.0,M4.1.0".
struct TimeZone::PosixRule {
    struct DateRule {
        enum class Kind { JulianNoLeap, ZeroBasedDay, MonthWeekDay } kind = Kind::MonthWeekDay;
        int day = 0;              // Jn: 1..365; n: 0..365
        int month = 0;            // Mm.w.d
        int week = 0;             // 1..5, 5 = last
        int weekday = 0;          // 0 = Sunday
        int32_t time = 2 * 3600;  // local time of day of the change, seconds (RFC 8536: -167h..167h)
    };
    std::string std_abbrev;
    std::string dst_abbrev;
    int32_t std_offset = 0;  // seconds east of UTC (POSIX writes the sign the other way round)
    int32_t dst_offset = 0;
    bool has_dst = false;
    DateRule start;  // DST begins
    DateRule end;    // DST ends

    static std::optional<PosixRule> parse(std::string_view text) {
        Parser p(text);
        PosixRule r;
        int32_t off = 0;
        if (!p.abbreviation(r.std_abbrev) || !p.hms(off, 24)) return std::nullopt;
        r.std_offset = -off;
        if (p.at_end()) return r;
        if (!p.abbreviation(r.dst_abbrev)) return std::nullopt;
        r.has_dst = true;
        r.dst_offset = r.std_offset + 3600;
        if (!p.at_end() && p.peek() != ',') {
            if (!p.hms(off, 24)) return std::nullopt;
            r.dst_offset = -off;
        }
        if (p.at_end()) {
            // No rule given: POSIX leaves it to the implementation; use the US rule like glibc.
            r.start = DateRule{DateRule::Kind::MonthWeekDay, 0, 3, 2, 0, 7200};
            r.end = DateRule{DateRule::Kind::MonthWeekDay, 0, 11, 1, 0, 7200};
            return r;
        }
        if (!p.eat(',') || !parse_date_rule(p, r.start) || !p.eat(',') || !parse_date_rule(p, r.end) || !p.at_end())
            return std::nullopt;
        return r;
    }

    // The local time type in effect at `t` (UTC seconds).
    Transition at(int64_t t) const {
        if (!has_dst) return Transition{std::numeric_limits<int64_t>::min(), std_offset, std_abbrev};
        const int64_t local_days = floor_div(t + std_offset, 86400);
        const int year =
            static_cast<int>(std::chrono::year_month_day{std::chrono::sys_days{std::chrono::days{local_days}}}.year());
        // The latest change at or before t among the neighbouring years.
        int64_t best_at = std::numeric_limits<int64_t>::min();
        bool best_dst = false;
        for (int y = year - 1; y <= year + 1; ++y) {
            const int64_t s = change_instant(start, y, std_offset);
            const int64_t e = change_instant(end, y, dst_offset);
            if (s <= t && s >= best_at) {
                best_at = s;
                best_dst = true;
            }
            if (e <= t && e > best_at) {
                best_at = e;
                best_dst = false;
            }
        }
        if (best_dst) return Transition{best_at, dst_offset, dst_abbrev};
        return Transition{best_at, std_offset, std_abbrev};
    }

private:
    static bool parse_date_rule(Parser& p, DateRule& r) {
        if (p.eat('M')) {
            r.kind = DateRule::Kind::MonthWeekDay;
            if (!p.number(r.month, 1, 12) || !p.eat('.') || !p.number(r.week, 1, 5) || !p.eat('.') ||
                !p.number(r.weekday, 0, 6))
                return false;
        } else if (p.eat('J')) {
            r.kind = DateRule::Kind::JulianNoLeap;
            if (!p.number(r.day, 1, 365)) return false;
        } else {
            r.kind = DateRule::Kind::ZeroBasedDay;
            if (!p.number(r.day, 0, 365)) return false;
        }
        r.time = 7200;
        if (p.eat('/') && !p.hms(r.time, 167)) return false;
        return true;
    }

    static int64_t change_instant(const DateRule& rule, int year, int32_t offset_before) {
        using namespace std::chrono;
        const std::chrono::year y{year};
        sys_days day;
        switch (rule.kind) {
            case DateRule::Kind::JulianNoLeap: {
                int d = rule.day - 1;  // Feb 29 is never counted
                if (y.is_leap() && rule.day >= 60) d += 1;
                day = sys_days{y / January / 1} + days{d};
                break;
            }
            case DateRule::Kind::ZeroBasedDay: day = sys_days{y / January / 1} + days{rule.day}; break;
            case DateRule::Kind::MonthWeekDay: {
                const std::chrono::month m{static_cast<unsigned>(rule.month)};
                const weekday wd{static_cast<unsigned>(rule.weekday)};
                if (rule.week == 5) day = sys_days{y / m / wd[last]};
                else day = sys_days{y / m / wd[static_cast<unsigned>(rule.week)]};
                break;
            }
        }
        return static_cast<int64_t>(day.time_since_epoch().count()) * 86400 + rule.time - offset_before;
    }
};

namespace {

// Big-endian reader over the bytes of a TZif file.
class Bytes {
public:
    explicit Bytes(const std::string& data) : d_(data) {}
    bool has(size_t n) const { return pos_ + n <= d_.size(); }
    size_t pos() const { return pos_; }
    void skip(size_t n) { pos_ += n; }
    uint8_t u8() { return static_cast<uint8_t>(d_[pos_++]); }
    uint32_t u32() {
        uint32_t v = 0;
        for (int i = 0; i < 4; ++i) v = (v << 8) | u8();
        return v;
    }
    int64_t i64() {
        uint64_t v = 0;
        for (int i = 0; i < 8; ++i) v = (v << 8) | u8();
        return static_cast<int64_t>(v);
    }
    std::string_view rest() const { return std::string_view(d_).substr(pos_); }

private:
    const std::string& d_;
    size_t pos_ = 0;
};

struct Header {
    char version = 0;
    uint32_t isutcnt = 0, isstdcnt = 0, leapcnt = 0, timecnt = 0, typecnt = 0, charcnt = 0;
    size_t block_size(size_t time_size) const {
        return timecnt * time_size + timecnt + typecnt * 6 + charcnt + leapcnt * (time_size + 4) + isstdcnt + isutcnt;
    }
};

bool read_header(Bytes& b, Header& h) {
    if (!b.has(44)) return false;
    if (b.u8() != 'T' || b.u8() != 'Z' || b.u8() != 'i' || b.u8() != 'f') return false;
    h.version = static_cast<char>(b.u8());
    b.skip(15);
    h.isutcnt = b.u32();
    h.isstdcnt = b.u32();
    h.leapcnt = b.u32();
    h.timecnt = b.u32();
    h.typecnt = b.u32();
    h.charcnt = b.u32();
    return true;
}

bool valid_zone_name(const std::string& name) {
    if (name.empty() || name.size() > 255 || name.front() == '/') return false;
    size_t start = 0;
    while (start <= name.size()) {
        size_t slash = name.find('/', start);
        if (slash == std::string::npos) slash = name.size();
        std::string_view part(name.data() + start, slash - start);
        if (part.empty() || part == "." || part == ".." || part.front() == '.') return false;
        for (char c : part)
            if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '+' || c == '.'))
                return false;
        start = slash + 1;
    }
    return true;
}

}  // namespace

TimeZone::TimeZone(std::string name, std::vector<Transition> transitions, Transition initial,
                   std::string posix_rule_tail)
    : name_(std::move(name)), transitions_(std::move(transitions)), initial_(std::move(initial)) {
    std::sort(transitions_.begin(), transitions_.end(),
              [](const Transition& a, const Transition& b) { return a.at < b.at; });
    if (!posix_rule_tail.empty()) {
        if (auto r = PosixRule::parse(posix_rule_tail)) rule_ = std::make_shared<const PosixRule>(std::move(*r));
    }
}

Result<std::shared_ptr<const TimeZone>> TimeZone::load(const std::string& name, const std::string& zoneinfo_dir) {
    if (!valid_zone_name(name))
        return fail("time zone '" + name +
                    "' is not a valid IANA zone name (like \"Europe/Berlin\"; no absolute paths, no \"..\")");
    const std::string file = zoneinfo_dir + "/" + name;
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        if (name == "UTC" || name == "Etc/UTC")  // tzdata not installed: UTC needs no file
            return std::make_shared<const TimeZone>(name, std::vector<Transition>{},
                                                    Transition{std::numeric_limits<int64_t>::min(), 0, "UTC"}, "");
        return fail("unknown time zone '" + name + "' (no file " + file + ")");
    }
    std::string data;
    data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (data.size() > (1u << 20)) return fail("time zone '" + name + "': " + file + " is too large for a TZif file");
    auto bad = [&](const std::string& why) { return fail("time zone '" + name + "': " + file + ": " + why); };

    Bytes b(data);
    Header h;
    if (!read_header(b, h)) return bad("not a TZif file");
    size_t time_size = 4;
    if (h.version >= '2') {
        if (!b.has(h.block_size(4))) return bad("truncated TZif file");
        b.skip(h.block_size(4));
        if (!read_header(b, h)) return bad("truncated TZif file (no version 2 header)");
        time_size = 8;
    }
    if (h.typecnt == 0 || h.typecnt > 256 || h.charcnt == 0 || (h.isutcnt != 0 && h.isutcnt != h.typecnt) ||
        (h.isstdcnt != 0 && h.isstdcnt != h.typecnt))
        return bad("corrupt TZif header");
    if (h.leapcnt != 0)
        return bad("zones with leap seconds (\"right/...\") are not supported; use the zone without \"right/\"");
    if (!b.has(h.block_size(time_size))) return bad("truncated TZif file");

    std::vector<int64_t> times(h.timecnt);
    for (auto& t : times) t = time_size == 8 ? b.i64() : static_cast<int64_t>(static_cast<int32_t>(b.u32()));
    std::vector<uint8_t> idx(h.timecnt);
    for (auto& i : idx) {
        i = b.u8();
        if (i >= h.typecnt) return bad("transition names a local time type that does not exist");
    }
    struct Type {
        int32_t offset;
        uint8_t abbr;
    };
    std::vector<Type> types(h.typecnt);
    for (auto& t : types) {
        t.offset = static_cast<int32_t>(b.u32());
        b.u8();  // isdst: the offsets are what matters here
        t.abbr = b.u8();
        if (t.abbr >= h.charcnt) return bad("abbreviation index out of range");
        if (t.offset <= -25 * 3600 || t.offset >= 26 * 3600) return bad("UTC offset out of range");
    }
    std::string chars(b.rest().substr(0, h.charcnt));
    b.skip(h.charcnt);
    b.skip(h.isstdcnt + h.isutcnt);
    auto abbrev = [&](uint8_t at) { return std::string(chars.c_str() + at); };

    std::vector<Transition> transitions;
    transitions.reserve(h.timecnt);
    for (size_t i = 0; i < times.size(); ++i) {
        if (i > 0 && times[i] <= times[i - 1]) return bad("transition times are not in increasing order");
        transitions.push_back(Transition{times[i], types[idx[i]].offset, abbrev(types[idx[i]].abbr)});
    }
    Transition initial{std::numeric_limits<int64_t>::min(), types[0].offset, abbrev(types[0].abbr)};

    std::string footer;
    if (time_size == 8) {
        std::string_view rest = b.rest();
        if (rest.size() < 2 || rest.front() != '\n') return bad("missing TZ string footer");
        size_t nl = rest.find('\n', 1);
        if (nl == std::string_view::npos) return bad("unterminated TZ string footer");
        footer = std::string(rest.substr(1, nl - 1));
        if (!footer.empty() && !PosixRule::parse(footer)) return bad("cannot parse TZ string footer '" + footer + "'");
    }
    return std::make_shared<const TimeZone>(name, std::move(transitions), std::move(initial), std::move(footer));
}

const TimeZone::Transition& TimeZone::lookup(int64_t at, Transition& scratch) const {
    if (rule_ && (transitions_.empty() || at >= transitions_.back().at)) {
        scratch = rule_->at(at);
        return scratch;
    }
    auto it = std::upper_bound(transitions_.begin(), transitions_.end(), at,
                               [](int64_t v, const Transition& t) { return v < t.at; });
    if (it == transitions_.begin()) return initial_;
    return *std::prev(it);
}

int32_t TimeZone::offset_at(SysSeconds instant) const {
    Transition scratch{};
    return lookup(instant.time_since_epoch().count(), scratch).offset;
}

std::string TimeZone::abbreviation_at(SysSeconds instant) const {
    Transition scratch{};
    return lookup(instant.time_since_epoch().count(), scratch).abbrev;
}

std::chrono::local_seconds TimeZone::to_local(SysSeconds instant) const {
    return std::chrono::local_seconds{instant.time_since_epoch() + std::chrono::seconds{offset_at(instant)}};
}

SysSeconds TimeZone::to_instant(std::chrono::local_seconds local) const {
    using std::chrono::seconds;
    const int64_t l = local.time_since_epoch().count();
    // Offsets a day either side; real zones never change twice within a day.
    const int64_t before = offset_at(SysSeconds{seconds{l - 86400}});
    const int64_t after = offset_at(SysSeconds{seconds{l + 86400}});
    const int64_t t_before = l - before, t_after = l - after;
    const bool ok_before = offset_at(SysSeconds{seconds{t_before}}) == before;
    const bool ok_after = offset_at(SysSeconds{seconds{t_after}}) == after;
    if (ok_before && ok_after) return SysSeconds{seconds{std::min(t_before, t_after)}};  // fold: the earlier
    if (ok_before) return SysSeconds{seconds{t_before}};
    if (ok_after) return SysSeconds{seconds{t_after}};
    // Gap: the local time does not exist. Answer the instant the gap ends, i.e.
    // the transition, which lies between the two candidates.
    int64_t lo = std::min(t_before, t_after), hi = std::max(t_before, t_after);
    const int32_t off_lo = offset_at(SysSeconds{seconds{lo}});
    if (offset_at(SysSeconds{seconds{hi}}) == off_lo) return SysSeconds{seconds{t_before}};
    while (hi - lo > 1) {  // invariant: offset(lo) == off_lo, offset(hi) != off_lo
        const int64_t mid = lo + (hi - lo) / 2;
        if (offset_at(SysSeconds{seconds{mid}}) == off_lo) lo = mid;
        else hi = mid;
    }
    return SysSeconds{seconds{hi}};
}

}  // namespace lanes
