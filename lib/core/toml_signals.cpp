// SPDX-License-Identifier: GPL-2.0-or-later
// lanes.toml [signals.NAME]: live values from a Prometheus-compatible API.
#include "core/toml_signals.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace lanes::config_parse {
namespace {

void parse_signal(ConfigParse& ctx, const std::string& name, const toml::table& t) {
    using namespace std::chrono;
    const std::string prefix = "signals." + name;
    TableReader r(ctx.errors, t, prefix);
    SignalConfig s;
    s.name = name;
    s.line = static_cast<int>(t.source().begin.line);
    bool ok = true;
    r.string("description");
    bool https = false;
    if (auto v = r.string("url")) {
        const bool http = v->rfind("http://", 0) == 0;
        https = v->rfind("https://", 0) == 0;
        const size_t host_at = http ? 7 : 8;
        if ((!http && !https) || v->size() <= host_at || (*v)[host_at] == '/' ||
            v->find_first_of(" \t\r\n?#") != std::string::npos) {
            r.error(*t.get("url"), "url",
                    "not an http:// or https:// base URL of a Prometheus API (write e.g. "
                    "\"http://127.0.0.1:9090\"; the query goes in \"query\")");
            ok = false;
        } else {
            s.url = *v;
            while (s.url.size() > host_at + 1 && s.url.back() == '/') s.url.pop_back();
        }
    } else {
        if (!t.get("url"))
            r.error_here(prefix, "missing key \"url\" (the Prometheus API, e.g. \"http://127.0.0.1:9090\")");
        ok = false;
    }
    if (auto v = r.string("query")) {
        if (v->find_first_not_of(" \t\r\n") == std::string::npos) {
            r.error(*t.get("query"), "query", "must not be empty");
            ok = false;
        } else if (v->size() > 8192) {
            r.error(*t.get("query"), "query", "too long (at most 8192 characters)");
            ok = false;
        } else {
            s.query = *v;
        }
    } else {
        if (!t.get("query")) r.error_here(prefix, "missing key \"query\" (a PromQL expression with one value)");
        ok = false;
    }
    if (auto d = read_duration(r, "interval", seconds{1}, hours{1}, "1s..1h"))
        s.interval = duration_cast<milliseconds>(*d);
    else if (t.get("interval")) ok = false;
    if (auto d = read_duration(r, "timeout", milliseconds{10}, minutes{1}, "10ms..1min"))
        s.timeout = duration_cast<milliseconds>(*d);
    else if (t.get("timeout")) ok = false;
    if (!t.get("timeout") && s.timeout > s.interval) s.timeout = s.interval;
    if (s.timeout > s.interval && t.get("timeout")) {
        r.error(*t.get("timeout"), "timeout",
                "longer than the interval: a slow server would delay every later refresh");
        ok = false;
    }
    s.stale_after = 4 * s.interval;
    if (auto d = read_duration(r, "stale_after", seconds{1}, hours{24}, "1s..24h")) {
        s.stale_after = duration_cast<milliseconds>(*d);
        if (s.stale_after < s.interval) {
            r.error(*t.get("stale_after"), "stale_after",
                    "shorter than the interval: every value would go stale before the next refresh");
            ok = false;
        }
    } else if (t.get("stale_after")) {
        ok = false;
    }
    if (auto v = read_number(r, "fallback")) s.fallback = *v;
    else if (t.get("fallback")) ok = false;
    auto file_key = [&](std::string_view k, std::string& out) {
        if (auto v = r.string(k)) {
            if (v->empty() || v->front() != '/') {
                r.error(*t.get(k), k, "must be an absolute path");
                ok = false;
            } else if (!https) {
                r.error(*t.get(k), k, "only used with an https:// url");
                ok = false;
            } else {
                out = *v;
            }
        } else if (t.get(k)) {
            ok = false;
        }
    };
    file_key("ca_file", s.ca_file);
    file_key("client_cert", s.client_cert);
    file_key("client_key", s.client_key);
    if (!s.client_key.empty() && s.client_cert.empty()) {
        r.error(*t.get("client_key"), "client_key", "needs \"client_cert\" as well");
        ok = false;
    }
    if (auto v = r.string("bearer_token_file")) {
        if (v->empty() || v->front() != '/') {
            r.error(*t.get("bearer_token_file"), "bearer_token_file", "must be an absolute path");
            ok = false;
        } else {
            s.bearer_token_file = *v;
        }
    } else if (t.get("bearer_token_file")) {
        ok = false;
    }
    if (const toml::node* n = t.get("max_body")) {
        r.get("max_body");
        Result<uint64_t> bytes = fail("");
        if (n->is_string()) bytes = parse_bytes(n->as_string()->get());
        else bytes = fail("expected a size such as \"1MiB\", got " + type_name(*n));
        if (!bytes) r.error(*n, "max_body", bytes.error().message), ok = false;
        else if (*bytes < 1024 || *bytes > (64ULL << 20))
            r.error(*n, "max_body", "out of range (1KiB..64MiB)"), ok = false;
        else s.max_body_bytes = *bytes;
    }
    r.finish();
    if (ok) ctx.config.signals[name] = std::move(s);
    else ctx.broken_signals.insert(name);
}

}  // namespace

void parse_signals_section(ConfigParse& ctx, const toml::table& t) {
    for (auto&& [k, v] : t) {
        const std::string name(k.str());
        const std::string key = "signals." + name;
        if (!valid_name(name)) {
            ctx.errors.add(k.source(), key, "signal names may use letters, digits, '-' and '_' only");
            continue;
        }
        if (const toml::table* st = v.as_table()) parse_signal(ctx, name, *st);
        else ctx.errors.add(v.source(), key, "expected a table [signals." + name + "], got " + type_name(v));
    }
}

}  // namespace lanes::config_parse
