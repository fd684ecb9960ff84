// SPDX-License-Identifier: GPL-2.0-or-later
#include "core/job_env.hpp"

#include <cctype>
#include <charconv>

namespace lanes {

namespace {

constexpr std::string_view kSpankPrefix = "SPANK_";

std::string entry_value(std::string_view entry) {
    auto eq = entry.find('=');
    return eq == std::string_view::npos ? std::string() : std::string(entry.substr(eq + 1));
}

template <typename T>
Result<T> parse_unsigned(const std::string& name, const std::string& text, uint64_t max) {
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || text.empty() || value > max)
        return fail(name + ": '" + text + "' is not an integer from 0 to " + std::to_string(max));
    return static_cast<T>(value);
}

const std::string* lookup(const std::map<std::string, std::string>& vars, std::string_view name) {
    // Accept both the prolog's SPANK_LANES_X and a bare LANES_X (state files, tests).
    auto it = vars.find(std::string(kSpankPrefix) + std::string(name));
    if (it != vars.end()) return &it->second;
    it = vars.find(std::string(name));
    return it == vars.end() ? nullptr : &it->second;
}

}  // namespace

std::string_view env_entry_name(std::string_view entry) {
    auto eq = entry.find('=');
    std::string_view name = entry.substr(0, eq);
    if (name.starts_with(kSpankPrefix)) name.remove_prefix(kSpankPrefix.size());
    return name;
}

bool is_lanes_entry(std::string_view entry) { return env_entry_name(entry).starts_with(kEnvPrefix); }

UserRequests read_user_requests(const std::vector<std::string>& entries) {
    UserRequests requests;
    for (const auto& entry : entries) {
        auto name = env_entry_name(entry);
        if (name == kEnvRequestClass) requests.lanes_class = entry_value(entry);
        else if (name == kEnvRequestCap) requests.cap = entry_value(entry);
    }
    return requests;
}

Result<Rate> decode_rate(std::string_view text) {
    Rate rate;
    if (text.ends_with('%')) {
        text.remove_suffix(1);
        double percent = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), percent);
        if (ec != std::errc() || end != text.data() + text.size() || !(percent > 0 && percent <= 100))
            return fail("'" + std::string(text) + "%' is not a percentage in (0, 100]");
        rate.percent = percent;
        return rate;
    }
    uint64_t bits = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), bits);
    if (ec != std::errc() || end != text.data() + text.size() || bits == 0)
        return fail("'" + std::string(text) + "' is not a positive number of bits per second");
    rate.bits_per_second = bits;
    return rate;
}

std::vector<std::string> encode_decision(const Decision& decision) {
    std::vector<std::string> out;
    const auto& net = decision.network;
    auto put = [&out](std::string_view name, const std::string& value) {
        out.push_back(std::string(name) + "=" + value);
    };
    put(kEnvClass, decision.class_name);
    if (net.dscp) put(kEnvDscp, std::to_string(*net.dscp));
    if (net.rate) put(kEnvRate, encode_rate(*net.rate));
    if (net.ceil) put(kEnvCeil, encode_rate(*net.ceil));
    if (net.rdma_traffic_class) put(kEnvRdmaTc, std::to_string(*net.rdma_traffic_class));
    if (net.rdma_service_level) put(kEnvRdmaSl, std::to_string(*net.rdma_service_level));
    put(kEnvRank, std::to_string(net.rank));
    if (decision.nice) put(kEnvNice, std::to_string(*decision.nice));
    if (net.ingress_rate) put(kEnvIngressRate, encode_rate(*net.ingress_rate));
    if (net.ingress_ceil) put(kEnvIngressCeil, encode_rate(*net.ingress_ceil));
    return out;
}

Result<NodeDirective> decode_directive(const std::map<std::string, std::string>& vars) {
    NodeDirective directive;
    const std::string* cls = lookup(vars, kEnvClass);
    if (!cls) return fail(std::string(kEnvClass) + " is not set (job not classified by job_submit/lanes?)");
    if (cls->empty() || cls->size() > 64) return fail(std::string(kEnvClass) + ": invalid class name '" + *cls + "'");
    for (char c : *cls)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'))
            return fail(std::string(kEnvClass) + ": invalid class name '" + *cls + "'");
    directive.class_name = *cls;
    auto& net = directive.network;
    if (auto* v = lookup(vars, kEnvDscp)) {
        auto d = parse_unsigned<uint8_t>(std::string(kEnvDscp), *v, 63);
        if (!d) return std::unexpected(d.error());
        net.dscp = *d;
    }
    for (auto [name, field] :
         {std::pair{kEnvRate, &net.rate}, std::pair{kEnvCeil, &net.ceil}, std::pair{kEnvIngressRate, &net.ingress_rate},
          std::pair{kEnvIngressCeil, &net.ingress_ceil}}) {
        if (auto* v = lookup(vars, name)) {
            auto r = decode_rate(*v);
            if (!r) return fail(std::string(name) + ": " + r.error().message);
            *field = *r;
        }
    }
    if (auto* v = lookup(vars, kEnvRdmaTc)) {
        auto tc = parse_unsigned<uint8_t>(std::string(kEnvRdmaTc), *v, 255);
        if (!tc) return std::unexpected(tc.error());
        net.rdma_traffic_class = *tc;
    }
    if (auto* v = lookup(vars, kEnvRdmaSl)) {
        auto sl = parse_unsigned<uint8_t>(std::string(kEnvRdmaSl), *v, 15);
        if (!sl) return std::unexpected(sl.error());
        net.rdma_service_level = *sl;
    }
    if (auto* v = lookup(vars, kEnvRank)) {
        auto rank = parse_unsigned<uint32_t>(std::string(kEnvRank), *v, 1000000);
        if (!rank) return std::unexpected(rank.error());
        net.rank = static_cast<int>(*rank);
    }
    if (net.rate && !net.ceil) net.ceil = net.rate;
    if (net.ingress_rate && !net.ingress_ceil) net.ingress_ceil = net.ingress_rate;
    return directive;
}

}  // namespace lanes
