// SPDX-License-Identifier: GPL-2.0-or-later
// plugstack.conf arguments (one per line) and the user options --lanes-class and
// --lanes-cap (checked on the first line). A cap that passes is normalised: it
// passes again unchanged.
#include "fuzz.hpp"
#include "spank/spank_args.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto args = lanes::fuzz::lines(lanes::fuzz::as_text(data, size));
    (void)lanes::parse_spank_args(args, "/etc/slurm/lanes.toml");
    (void)lanes::check_class_option(args[0]);
    if (auto cap = lanes::check_cap_option(args[0])) {
        auto again = lanes::check_cap_option(*cap);
        LANES_FUZZ_ASSERT(again && *again == *cap);
    }
    return 0;
}
