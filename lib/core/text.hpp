// Small text helpers shared across lib/ and lanesctl/.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace lanes {

// "a, b, c" from {"a", "b", "c"} and ", ".
inline std::string join(const std::vector<std::string>& items, std::string_view separator) {
    std::string out;
    for (const auto& item : items) {
        if (!out.empty()) out += separator;
        out += item;
    }
    return out;
}

}  // namespace lanes
