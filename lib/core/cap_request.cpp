// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/cap_request.hpp"

namespace lanes {

Result<CapRequest> parse_cap_request(std::string_view text) {
    CapRequest cap;
    if (text.find('=') == std::string_view::npos) {
        // The single-value form: egress, as --lanes-cap always meant.
        auto rate = parse_rate(text);
        if (!rate) return std::unexpected(rate.error());
        cap.out = *rate;
        return cap;
    }
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t comma = text.find(',', start);
        std::string_view part =
            text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
        auto eq = part.find('=');
        if (eq == std::string_view::npos) return fail("'" + std::string(part) + "' is not out=RATE or in=RATE");
        std::string_view key = part.substr(0, eq), value = part.substr(eq + 1);
        std::optional<Rate>* slot = nullptr;
        if (key == "out") slot = &cap.out;
        else if (key == "in") slot = &cap.in;
        else return fail("unknown direction '" + std::string(key) + "' (expected out= or in=)");
        if (*slot) return fail("'" + std::string(key) + "=' is given twice");
        auto rate = parse_rate(value);
        if (!rate) return fail(std::string(key) + "=" + std::string(value) + ": " + rate.error().message);
        *slot = *rate;
        if (comma == std::string_view::npos) break;
        start = comma + 1;
    }
    return cap;
}

}  // namespace lanes
