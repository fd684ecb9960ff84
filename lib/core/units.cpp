// SPDX-License-Identifier: GPL-2.0-or-later
// Units shared by lanes.toml, user options and lanesctl: rates, DSCP code
// points, byte sizes and durations.
//
// Rates are bits per second, SI (1000-based) prefixes, spelled the way tc
// spells bits: "bit", "Kbit", "Mbit", "Gbit", "Tbit" (case-insensitive), or a
// percentage of the link speed. "bps" is refused on purpose: tc reads
// "10Gbps" as 10 gigaBYTES per second, most people read it as gigabits, and a
// factor of 8 in a bandwidth cap is exactly the mistake nobody notices.
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "core/lanes_toml.hpp"

namespace lanes {
namespace {

char lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower(b[i])) return false;
    return true;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

// A non-negative decimal number "12", "1.5", ".5" split off the front of text.
struct Decimal {
    uint64_t integer = 0;         // digits before the point
    uint64_t fraction = 0;        // digits after the point, as an integer
    uint64_t fraction_scale = 1;  // 10^(number of fraction digits)
    bool is_zero() const { return integer == 0 && fraction == 0; }
};

// Parses the number at the front of `text`, leaves the rest (the unit) in `rest`.
Result<Decimal> split_number(std::string_view text, std::string_view& rest, std::string_view what) {
    Decimal d;
    size_t i = 0;
    bool digits = false;
    constexpr uint64_t max = std::numeric_limits<uint64_t>::max();
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
        uint64_t digit = static_cast<uint64_t>(text[i] - '0');
        if (d.integer > (max - digit) / 10) return fail(std::string(what) + " " + quoted(text) + " is too large");
        d.integer = d.integer * 10 + digit;
        digits = true;
        ++i;
    }
    if (i < text.size() && text[i] == '.') {
        ++i;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
            if (d.fraction_scale >= 1000000000000ULL)
                return fail(std::string(what) + " " + quoted(text) + " has too many decimal places");
            d.fraction = d.fraction * 10 + static_cast<uint64_t>(text[i] - '0');
            d.fraction_scale *= 10;
            digits = true;
            ++i;
        }
    }
    if (!digits) return fail(std::string(what) + " " + quoted(text) + " does not start with a number");
    rest = text.substr(i);
    return d;
}

// integer * multiplier + fraction * multiplier / scale, exactly, or an error
// when it overflows or is not a whole number.
Result<uint64_t> scale_exact(const Decimal& d, uint64_t multiplier, std::string_view text, std::string_view what,
                             std::string_view unit_of_one) {
    constexpr uint64_t max = std::numeric_limits<uint64_t>::max();
    if (d.integer != 0 && multiplier > max / d.integer)
        return fail(std::string(what) + " " + quoted(text) + " is too large");
    uint64_t whole = d.integer * multiplier;
    unsigned __int128 frac = static_cast<unsigned __int128>(d.fraction) * multiplier;
    if (frac % d.fraction_scale != 0)
        return fail(std::string(what) + " " + quoted(text) + " is not a whole number of " + std::string(unit_of_one));
    uint64_t frac_part = static_cast<uint64_t>(frac / d.fraction_scale);
    if (frac_part > max - whole) return fail(std::string(what) + " " + quoted(text) + " is too large");
    return whole + frac_part;
}

struct UnitFactor {
    std::string_view name;
    uint64_t factor;
};

constexpr std::array<UnitFactor, 9> kRateUnits{{
    {"bit", 1ULL},
    {"kbit", 1000ULL},
    {"mbit", 1000ULL * 1000},
    {"gbit", 1000ULL * 1000 * 1000},
    {"tbit", 1000ULL * 1000 * 1000 * 1000},
    {"kibit", 1024ULL},
    {"mibit", 1024ULL * 1024},
    {"gibit", 1024ULL * 1024 * 1024},
    {"tibit", 1024ULL * 1024 * 1024 * 1024},
}};

}  // namespace

Result<Rate> parse_rate(std::string_view input) {
    std::string_view text = trim(input);
    if (text.empty()) return fail("empty rate (write e.g. \"10Gbit\" or \"40%\")");
    std::string_view unit;
    auto number = split_number(text, unit, "rate");
    if (!number) return std::unexpected(number.error());
    unit = trim(unit);

    if (unit == "%") {
        double p = static_cast<double>(number->integer) +
                   static_cast<double>(number->fraction) / static_cast<double>(number->fraction_scale);
        if (!(p > 0.0) || p > 100.0)
            return fail("rate " + quoted(text) + " is out of range: a percentage must be above 0% and at most 100%");
        Rate r;
        r.percent = p;
        return r;
    }
    if (unit.empty()) {
        if (number->integer == 0 && number->fraction == 0)
            return fail("rate " + quoted(text) + " is zero: a rate must be above 0");
        if (number->fraction == 0 && number->integer >= 1000) {
            // A big bare number is most likely bits per second: say it in the largest exact unit.
            static const std::pair<uint64_t, const char*> units[] = {{1000ULL * 1000 * 1000 * 1000, "Tbit"},
                                                                     {1000ULL * 1000 * 1000, "Gbit"},
                                                                     {1000ULL * 1000, "Mbit"},
                                                                     {1000ULL, "Kbit"}};
            std::string as_bits = std::to_string(number->integer) + "bit";
            for (const auto& [factor, name] : units)
                if (number->integer % factor == 0) {
                    as_bits = std::to_string(number->integer / factor) + name;
                    break;
                }
            return fail("rate " + quoted(text) + " has no unit: if it is bits per second, write \"" + as_bits +
                        "\"; or give a percentage like \"40%\"");
        }
        return fail("rate " + quoted(text) + " has no unit: write bits per second with a unit, e.g. \"" +
                    std::string(text) + "Mbit\" or \"" + std::string(text) + "Gbit\", or a percentage");
    }
    for (const auto& u : kRateUnits) {
        if (!iequals(unit, u.name)) continue;
        auto bits = scale_exact(*number, u.factor, text, "rate", "bits per second");
        if (!bits) return std::unexpected(bits.error());
        if (*bits == 0) return fail("rate " + quoted(text) + " is zero: a rate must be above 0");
        Rate r;
        r.bits_per_second = *bits;
        return r;
    }
    // Ambiguous or byte-based spellings: refuse with the spelling we want.
    std::string u(unit.size(), ' ');
    for (size_t i = 0; i < unit.size(); ++i) u[i] = lower(unit[i]);
    auto prefix_of = [&](std::string_view suffix) -> std::string {
        std::string p = std::string(unit.substr(0, unit.size() - suffix.size()));
        if (p.empty()) return "";
        char c = static_cast<char>(lower(p[0]));
        switch (c) {
            case 'k': return "K";
            case 'm': return "M";
            case 'g': return "G";
            case 't': return "T";
            default: return "?";
        }
    };
    if (u.size() >= 3 && u.compare(u.size() - 3, 3, "bps") == 0) {
        std::string p = prefix_of("bps");
        return fail("rate " + quoted(text) + ": unit " + quoted(unit) +
                    " is ambiguous (tc reads \"bps\" as BYTES per second, most people as bits); write \"" +
                    std::string(text.substr(0, text.size() - unit.size())) + (p == "?" ? "" : p) +
                    "bit\" for bits per second");
    }
    return fail("rate " + quoted(text) + ": unknown unit " + quoted(unit) +
                " (use bit, Kbit, Mbit, Gbit or Tbit, 1000-based, or a percentage like \"40%\")");
}

uint64_t Rate::resolve(uint64_t link_bits_per_second) const {
    if (!is_relative()) return bits_per_second;
    if (link_bits_per_second == 0) return 0;
    long double v = static_cast<long double>(link_bits_per_second) * static_cast<long double>(percent) / 100.0L;
    if (v >= static_cast<long double>(link_bits_per_second)) return link_bits_per_second;
    uint64_t r = static_cast<uint64_t>(std::llround(v));
    return r == 0 ? 1 : r;
}

std::string format_rate(const Rate& rate, RateStyle style) {
    if (!rate.is_relative())
        return style == RateStyle::Bits ? std::to_string(rate.bits_per_second) : format_rate(rate.bits_per_second);
    char buf[32];
    // The machine form (job env, state files) is read back: the shortest text
    // that gives the same double. People get 6 significant digits.
    auto [end, ec] = style == RateStyle::Bits
                         ? std::to_chars(buf, buf + sizeof buf, rate.percent)
                         : std::to_chars(buf, buf + sizeof buf, rate.percent, std::chars_format::general, 6);
    if (ec != std::errc()) return "?%";  // not reached: 32 bytes hold any double's shortest form
    return std::string(buf, end) + "%";
}

std::string format_rate(uint64_t bits_per_second) {
    static constexpr std::array<UnitFactor, 5> units{{
        {"Tbit", 1000ULL * 1000 * 1000 * 1000},
        {"Gbit", 1000ULL * 1000 * 1000},
        {"Mbit", 1000ULL * 1000},
        {"Kbit", 1000ULL},
        {"bit", 1ULL},
    }};
    for (const auto& u : units) {
        if (bits_per_second < u.factor && u.factor != 1) continue;
        uint64_t whole = bits_per_second / u.factor;
        uint64_t rest = bits_per_second % u.factor;
        std::string out = std::to_string(whole);
        if (rest != 0) {
            // Exact decimal fraction: rest / factor, with trailing zeros trimmed.
            std::string frac;
            uint64_t f = u.factor;
            while (f > 1) {
                f /= 10;
                frac.push_back(static_cast<char>('0' + (rest / f) % 10));
            }
            while (!frac.empty() && frac.back() == '0') frac.pop_back();
            out += "." + frac;
        }
        return out + std::string(u.name);
    }
    return "0bit";
}

Result<uint8_t> parse_dscp(std::string_view input) {
    std::string_view text = trim(input);
    if (text.empty()) return fail("empty DSCP value (write e.g. \"CS1\", \"AF41\", \"EF\" or 0..63)");
    if (text[0] >= '0' && text[0] <= '9') {
        unsigned v = 0;
        for (char c : text) {
            if (c < '0' || c > '9') return fail("DSCP " + quoted(text) + " is not a number or a DSCP name");
            v = v * 10 + static_cast<unsigned>(c - '0');
            if (v > 63) return fail("DSCP " + quoted(text) + " is out of range (0..63)");
        }
        return static_cast<uint8_t>(v);
    }
    if (iequals(text, "EF")) return uint8_t{46};
    if (iequals(text, "VA") || iequals(text, "VOICE-ADMIT")) return uint8_t{44};
    if (iequals(text, "LE")) return uint8_t{1};
    if (iequals(text, "DF") || iequals(text, "BE")) return uint8_t{0};
    if (text.size() == 3 && iequals(text.substr(0, 2), "CS") && text[2] >= '0' && text[2] <= '7')
        return static_cast<uint8_t>((text[2] - '0') * 8);
    if (text.size() == 4 && iequals(text.substr(0, 2), "AF") && text[2] >= '1' && text[2] <= '4' && text[3] >= '1' &&
        text[3] <= '3')
        return static_cast<uint8_t>((text[2] - '0') * 8 + (text[3] - '0') * 2);
    return fail("DSCP " + quoted(text) +
                " is not a DSCP name (CS0..CS7, AF11..AF43 with class 1-4 and drop precedence 1-3, EF, VA, LE) "
                "or a number 0..63");
}

std::string dscp_name(uint8_t dscp) {
    if (dscp == 46) return "EF";
    if (dscp == 44) return "VA";
    if (dscp == 1) return "LE";
    if (dscp <= 56 && dscp % 8 == 0) return "CS" + std::to_string(dscp / 8);
    unsigned cls = dscp / 8, drop = (dscp % 8) / 2;
    if (cls >= 1 && cls <= 4 && dscp % 2 == 0 && drop >= 1 && drop <= 3)
        return "AF" + std::to_string(cls) + std::to_string(drop);
    return std::to_string(dscp);
}

Result<uint64_t> parse_bytes(std::string_view input) {
    std::string_view text = trim(input);
    if (text.empty()) return fail("empty size (write e.g. \"16MiB\")");
    std::string_view unit;
    auto number = split_number(text, unit, "size");
    if (!number) return std::unexpected(number.error());
    unit = trim(unit);
    static constexpr std::array<UnitFactor, 10> units{{
        {"", 1ULL},
        {"b", 1ULL},
        {"kib", 1ULL << 10},
        {"mib", 1ULL << 20},
        {"gib", 1ULL << 30},
        {"tib", 1ULL << 40},
        // Slurm's own convention (slurm.conf, --mem): K/M/G/T are 1024-based.
        {"k", 1ULL << 10},
        {"m", 1ULL << 20},
        {"g", 1ULL << 30},
        {"t", 1ULL << 40},
    }};
    for (const auto& u : units) {
        if (!iequals(unit, u.name)) continue;
        return scale_exact(*number, u.factor, text, "size", "bytes");
    }
    if (unit.size() == 2 && (lower(unit[1]) == 'b')) {
        char p = static_cast<char>(lower(unit[0]) - 'a' + 'A');
        return fail("size " + quoted(text) + ": unit " + quoted(unit) + " is ambiguous (1000 or 1024?); write \"" +
                    std::string(text.substr(0, text.size() - unit.size())) + p + "iB\"");
    }
    return fail("size " + quoted(text) + ": unknown unit " + quoted(unit) + " (use B, KiB, MiB, GiB or TiB)");
}

Result<std::chrono::microseconds> parse_duration(std::string_view input) {
    std::string_view text = trim(input);
    if (text.empty()) return fail("empty duration (write e.g. \"20ms\")");
    std::string_view unit;
    auto number = split_number(text, unit, "duration");
    if (!number) return std::unexpected(number.error());
    unit = trim(unit);
    static constexpr std::array<UnitFactor, 5> units{{
        {"us", 1ULL},
        {"ms", 1000ULL},
        {"s", 1000ULL * 1000},
        {"min", 60ULL * 1000 * 1000},
        {"h", 3600ULL * 1000 * 1000},
    }};
    if (unit.empty())
        return fail("duration " + quoted(text) + " has no unit (write e.g. \"" + std::string(text) + "ms\")");
    for (const auto& u : units) {
        if (unit != u.name) continue;
        auto us = scale_exact(*number, u.factor, text, "duration", "microseconds");
        if (!us) return std::unexpected(us.error());
        if (*us > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            return fail("duration " + quoted(text) + " is too large");
        return std::chrono::microseconds{static_cast<int64_t>(*us)};
    }
    return fail("duration " + quoted(text) + ": unknown unit " + quoted(unit) + " (use us, ms, s, min or h)");
}

}  // namespace lanes
