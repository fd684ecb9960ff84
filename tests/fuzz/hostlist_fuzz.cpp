// SPDX-License-Identifier: GPL-2.0-or-later
// Hostlist expressions ([[nodes.nic]] nodes = "gpu[01-16,20]"): the first line is
// the expression, the second a host name to match. Expansion is bounded; every
// expanded name matches its own expression.
#include "core/hostlist.hpp"
#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto in = lanes::fuzz::lines(lanes::fuzz::as_text(data, size));
    const std::string& expr = in[0];
    const std::string host = in.size() > 1 ? in[1] : "node1";
    auto names = lanes::expand_hostlist(expr, 4096);
    if (names) {
        LANES_FUZZ_ASSERT(names->size() <= 4096);
        for (size_t i = 0; i < names->size() && i < 8; ++i) {
            auto m = lanes::hostlist_matches(expr, (*names)[i]);
            LANES_FUZZ_ASSERT(m && *m);
        }
    }
    (void)lanes::hostlist_matches(expr, host);
    return 0;
}
