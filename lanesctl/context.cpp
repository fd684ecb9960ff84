// SPDX-License-Identifier: GPL-2.0-or-later
// Shared helpers of the lanesctl program: the machine's time zone, time
// options, libslurm and output.
extern "C" {
#include <slurm/slurm.h>
}

#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/text.hpp"
#include "lanesctl/commands.hpp"
#include "lanesctl/time_spec.hpp"

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

std::optional<SysSeconds> time_option(const char* option, const std::string& spec, const Context& context,
                                      SysSeconds otherwise) {
    if (spec.empty()) return otherwise;
    auto parsed = parse_time_spec(spec, context.local_zone.get(), context.now, load_zone);
    if (!parsed) {
        print_error(std::string(option) + ": " + parsed.error().message);
        return std::nullopt;
    }
    return *parsed;
}

namespace {
bool g_in_libslurm = false;
void exit_as_runtime_error() {
    if (g_in_libslurm) {
        std::fflush(stdout);
        std::fputs("lanesctl: cannot use Slurm (see the messages above)\n", stderr);
        std::_Exit(kExitRuntime);
    }
}
}  // namespace

SlurmSession::SlurmSession() {
    static const bool registered = std::atexit(exit_as_runtime_error) == 0;
    (void)registered;
    g_in_libslurm = true;
    slurm_init(nullptr);
}

SlurmSession::~SlurmSession() {
    slurm_fini();
    g_in_libslurm = false;
}

void print_json(const json::Value& value) {
    std::string text = json::write(value, 2);
    text += '\n';
    std::fwrite(text.data(), 1, text.size(), stdout);
}

// Whatever a report quotes (job names, policy messages, state files, a
// Prometheus server's errors) reaches a terminal: every line escaped
// (core/text.hpp), the report's own line breaks kept.
void print_human(const std::string& text, std::FILE* to) {
    std::string safe = escape_text(text, kMaxHumanOutputBytes, true);
    std::fwrite(safe.data(), 1, safe.size(), to);
}

void print_error(const std::string& message) {
    std::fprintf(stderr, "lanesctl: %s\n", escape_text(message, kMaxHumanOutputBytes, true).c_str());
}

}  // namespace lanes::ctl
