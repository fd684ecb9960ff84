// SPDX-License-Identifier: GPL-2.0-or-later
// uid -> user name with a cache, so the NSS lookup (which may block on LDAP)
// happens once per user, not once per job under slurmctld's locks.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace lanes {

class UserNames {
public:
    using Lookup = std::function<std::optional<std::string>(uint32_t uid)>;
    // Default lookup: getpwuid_r.
    explicit UserNames(Lookup lookup = {}, std::chrono::seconds ttl = std::chrono::seconds{600});
    // The name, or the uid as decimal text when unknown.
    std::string name(uint32_t uid);

private:
    struct Entry {
        std::string name;
        std::chrono::steady_clock::time_point fetched;
    };
    Lookup lookup_;
    std::chrono::seconds ttl_;
    std::mutex mutex_;
    std::unordered_map<uint32_t, Entry> cache_;
};

std::optional<std::string> lookup_user_name(uint32_t uid);

}  // namespace lanes
