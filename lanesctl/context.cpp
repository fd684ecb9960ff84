// SPDX-License-Identifier: GPL-2.0-or-later
// Shared helpers of the lanesctl program: the machine's time zone and output.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "lanesctl/commands.hpp"

namespace lanes::ctl {

std::shared_ptr<const TimeZone> load_local_zone() {
    if (const char* tz = std::getenv("TZ"); tz && *tz) {
        std::string name = tz[0] == ':' ? tz + 1 : tz;
        if (auto zone = TimeZone::load(name)) return *zone;
        // An absolute TZif path ("/usr/share/zoneinfo/Europe/Berlin").
        if (auto slash = name.rfind('/'); slash != std::string::npos && name.front() == '/')
            if (auto zone = TimeZone::load(name.substr(slash + 1), name.substr(0, slash))) return *zone;
        std::fprintf(stderr, "lanesctl: TZ=%s is not a time zone this machine knows; using UTC\n", tz);
        return nullptr;
    }
    char target[PATH_MAX] = {};
    ssize_t n = readlink("/etc/localtime", target, sizeof target - 1);
    if (n > 0) {
        std::string link(target, static_cast<size_t>(n));
        if (auto pos = link.find("zoneinfo/"); pos != std::string::npos)
            if (auto zone = TimeZone::load(link.substr(pos + 9))) return *zone;
    }
    if (auto zone = TimeZone::load("localtime", "/etc")) return *zone;
    return nullptr;
}

Result<std::shared_ptr<const TimeZone>> load_zone(const std::string& name) { return TimeZone::load(name); }

void print_json(const json::Value& value) {
    std::string text = json::write(value, 2);
    text += '\n';
    std::fwrite(text.data(), 1, text.size(), stdout);
}

void print_error(const std::string& message) { std::fprintf(stderr, "lanesctl: %s\n", message.c_str()); }

}  // namespace lanes::ctl
