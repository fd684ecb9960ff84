// SPDX-License-Identifier: GPL-2.0-or-later
// Time specifications: lanesctl's --at/--from (first line) and the parts of a
// [[windows]] entry in lanes.toml: days (second line, comma separated), times of
// day (third) and dated exceptions (fourth). Zones come from a fixed list so the
// fuzzer does not wander the file system.
#include <chrono>
#include <memory>

#include "ctld/windows.hpp"
#include "fuzz.hpp"
#include "lanesctl/time_spec.hpp"

using namespace lanes;

namespace {
std::shared_ptr<const TimeZone> zone(const char* name) {
    auto z = TimeZone::load(name);
    return z ? *z : nullptr;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const auto berlin = zone("Europe/Berlin");
    static const auto new_york = zone("America/New_York");
    auto in = fuzz::lines(fuzz::as_text(data, size));
    ctl::ZoneLoader loader = [](const std::string& name) -> Result<std::shared_ptr<const TimeZone>> {
        if (name == "Europe/Berlin" && berlin) return berlin;
        if (name == "America/New_York" && new_york) return new_york;
        return fail("unknown time zone '" + name + "'");
    };
    const SysSeconds now{std::chrono::seconds{1796112000}};
    if (auto at = ctl::parse_time_spec(in[0], berlin.get(), now, loader)) {
        (void)ctl::format_iso(*at, berlin.get());
        (void)ctl::format_local_with_day(*at, new_york.get());
    }
    (void)ctl::parse_time_spec(in[0], nullptr, now, loader);
    if (in.size() > 1) {
        std::vector<std::string> items;
        std::string_view rest = in[1];
        while (true) {
            auto comma = rest.find(',');
            items.emplace_back(rest.substr(0, comma));
            if (comma == std::string_view::npos) break;
            rest.remove_prefix(comma + 1);
        }
        if (auto days = parse_days(items)) (void)format_days(*days);
    }
    if (in.size() > 2) {
        if (auto t = parse_time_of_day(in[2], true)) {
            LANES_FUZZ_ASSERT(t->count() >= 0 && t->count() <= 24 * 60);
            (void)format_time_of_day(*t);
        }
    }
    if (in.size() > 3) {
        if (auto r = parse_date_range(in[3])) {
            LANES_FUZZ_ASSERT(r->first.ok() && r->last.ok());
            (void)format_date(r->first);
        }
    }
    return 0;
}
