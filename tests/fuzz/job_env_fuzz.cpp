// SPDX-License-Identifier: GPL-2.0-or-later
// The job-env decoder: what a node reads back from SPANK_LANES_* (prolog) or a
// state file, and the user's LANES_REQUEST_* entries. One "NAME=value" per line.
#include <map>

#include "core/job_env.hpp"
#include "fuzz.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto entries = lanes::fuzz::lines(lanes::fuzz::as_text(data, size));
    (void)lanes::read_user_requests(entries);
    std::map<std::string, std::string> vars;
    for (const auto& e : entries) {
        (void)lanes::is_lanes_entry(e);
        auto eq = e.find('=');
        if (eq == std::string::npos) continue;
        vars[std::string(lanes::env_entry_name(e.substr(0, eq)))] = e.substr(eq + 1);
        if (auto rate = lanes::decode_rate(e.substr(eq + 1))) {
            auto again = lanes::decode_rate(lanes::encode_rate(*rate));
            LANES_FUZZ_ASSERT(again && *again == *rate);
        }
    }
    (void)lanes::decode_directive(vars);
    return 0;
}
