// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [agent]: the node agent, lanes-agent(8).
#include "core/toml_agent.hpp"

#include <chrono>

namespace lanes::config_parse {

void parse_agent_section(ConfigParse& ctx, const toml::table& t) {
    using namespace std::chrono;
    TableReader r(ctx.errors, t, "agent");
    if (auto v = r.string("textfile_dir")) {
        if (v->empty() || v->front() != '/')
            r.error(*t.get("textfile_dir"), "textfile_dir", "must be an absolute path");
        else ctx.config.agent.textfile_dir = *v;
    }
    if (auto d = read_duration(r, "resync_interval", seconds{1}, hours{1}, "1s..1h"))
        ctx.config.agent.resync_interval = duration_cast<milliseconds>(*d);
    if (auto d = read_duration(r, "debounce", milliseconds{0}, seconds{1}, "0ms..1s"))
        ctx.config.agent.debounce = duration_cast<milliseconds>(*d);
    r.finish();
}

}  // namespace lanes::config_parse
