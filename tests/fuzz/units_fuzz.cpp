// SPDX-License-Identifier: GPL-2.0-or-later
// Rates, byte sizes and durations (lanes.toml values, --lanes-cap, lanesctl).
// A rate that parses as absolute prints back to text that parses to the same rate.
#include "core/lanes_toml.hpp"
#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto text = lanes::fuzz::as_text(data, size);
    if (auto rate = lanes::parse_rate(text)) {
        if (rate->is_relative()) {
            LANES_FUZZ_ASSERT(rate->percent > 0 && rate->percent <= 100);
        } else {
            auto again = lanes::parse_rate(lanes::format_rate(rate->bits_per_second));
            LANES_FUZZ_ASSERT(again && again->bits_per_second == rate->bits_per_second);
        }
        (void)rate->resolve(1000000000);
        (void)rate->resolve(UINT64_MAX);
    } else {
        LANES_FUZZ_ASSERT(!rate.error().message.empty());
    }
    (void)lanes::parse_bytes(text);
    if (auto d = lanes::parse_duration(text)) LANES_FUZZ_ASSERT(d->count() >= 0);
    return 0;
}
