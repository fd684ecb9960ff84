// SPDX-License-Identifier: GPL-2.0-or-later
#include "ctld/user_names.hpp"

#include <pwd.h>
#include <unistd.h>

#include <vector>

namespace lanes {

std::optional<std::string> lookup_user_name(uint32_t uid) {
    long hint = sysconf(_SC_GETPW_R_SIZE_MAX);
    std::vector<char> buf(hint > 0 ? static_cast<size_t>(hint) : 4096);
    struct passwd pw {};
    struct passwd* result = nullptr;
    while (true) {
        int rc = getpwuid_r(uid, &pw, buf.data(), buf.size(), &result);
        if (rc == ERANGE && buf.size() < (1u << 20)) {
            buf.resize(buf.size() * 2);
            continue;
        }
        if (rc != 0 || result == nullptr) return std::nullopt;
        return std::string(pw.pw_name);
    }
}

UserNames::UserNames(Lookup lookup, std::chrono::seconds ttl)
    : lookup_(lookup ? std::move(lookup) : Lookup(lookup_user_name)), ttl_(ttl) {}

std::string UserNames::name(uint32_t uid) {
    auto now = std::chrono::steady_clock::now();
    {
        std::lock_guard lock(mutex_);
        auto it = cache_.find(uid);
        if (it != cache_.end() && now - it->second.fetched < ttl_) return it->second.name;
    }
    // Look up outside the lock: a slow NSS answer must not serialise other users.
    auto found = lookup_(uid);
    std::string name = found ? *found : std::to_string(uid);
    std::lock_guard lock(mutex_);
    cache_[uid] = Entry{name, now};
    return name;
}

}  // namespace lanes
