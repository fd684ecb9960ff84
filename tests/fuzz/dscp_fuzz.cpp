// SPDX-License-Identifier: GPL-2.0-or-later
// DSCP names and numbers (lanes.toml `dscp`, the policy's job.dscp): what parses
// is a 6-bit code point whose name parses back to it.
#include "core/lanes_toml.hpp"
#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto dscp = lanes::parse_dscp(lanes::fuzz::as_text(data, size));
    if (!dscp) return 0;
    LANES_FUZZ_ASSERT(*dscp < 64);
    auto again = lanes::parse_dscp(lanes::dscp_name(*dscp));
    LANES_FUZZ_ASSERT(again && *again == *dscp);
    return 0;
}
