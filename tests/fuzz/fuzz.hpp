// SPDX-License-Identifier: GPL-2.0-or-later
// Helpers shared by the libFuzzer targets (one target per parser of admin or user
// input). A target returns 0 for every input; a crash, a sanitizer report or a
// failed LANES_FUZZ_ASSERT is a finding, and libFuzzer writes the reproducer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#define LANES_FUZZ_ASSERT(cond)                                                               \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
            std::abort();                                                                     \
        }                                                                                     \
    } while (0)

namespace lanes::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// The input cut at '\n' (several inputs for one parser from one buffer).
inline std::vector<std::string> lines(std::string_view text) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= text.size()) {
        size_t nl = text.find('\n', start);
        if (nl == std::string_view::npos) nl = text.size();
        out.emplace_back(text.substr(start, nl - start));
        start = nl + 1;
    }
    return out;
}

}  // namespace lanes::fuzz
